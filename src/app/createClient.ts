import type { CoordinatorClient } from "./client.js";
import type { CoordinatorSetupOptions } from "./options.js";
import { resolveSetup } from "./setup.js";

/**
 * A client of a coordinator from outside its Function app (a script, a service): the same options as its
 * registration (task kinds to validate submissions, connection, settings), nothing registered, nothing connected until
 * the first call. Inside the app, use the `client` that `registerCoordinator` returns.
 *
 * @throws ConfigurationError naming each bad option or setting.
 */
export function createCoordinatorClient(options: CoordinatorSetupOptions): CoordinatorClient {
  return resolveSetup(options).client;
}
