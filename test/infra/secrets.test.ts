import path from "node:path";
import { describe, expect, it } from "vitest";
import { FIXTURES_DIR, INFRA_DIR, listFiles, parseBicepFile } from "./bicep";
import { secretViolations } from "./checks";

describe("no keys or secret connection strings", () => {
  it("no template calls list*() functions, reads .keys/primaryKey, embeds AccountKey=/SAS text, or sets key-bearing settings", async () => {
    const templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
    expect(templates).not.toHaveLength(0);
    expect(secretViolations(templates)).toEqual([]);
  });

  it("the check rejects listKeys() in both call styles, .keys, AccountKey=, SAS and the instrumentation key (fixtures/secrets.bicep)", async () => {
    const violations = secretViolations([await parseBicepFile(path.join(FIXTURES_DIR, "secrets.bicep"))]);
    expect(violations).toEqual([
      "test/infra/fixtures/secrets.bicep:11: calls listKeys(), which returns secrets", // storage.listKeys()
      "test/infra/fixtures/secrets.bicep:20: calls listKeys(), which returns secrets", // listKeys(storage.id, …)
      "test/infra/fixtures/secrets.bicep:11: string contains 'AccountKey=' (a key or SAS)",
      "test/infra/fixtures/secrets.bicep:19: string contains '&sig=' (a key or SAS)",
      "test/infra/fixtures/secrets.bicep:11: reads .keys, which holds a key",
      "test/infra/fixtures/secrets.bicep:20: reads .keys, which holds a key",
      "test/infra/fixtures/secrets.bicep:18: app setting APPINSIGHTS_INSTRUMENTATIONKEY carries a key",
    ]);
  });
});
