import { join } from "node:path";
import type { InvocationContext } from "@azure/functions";
import { checkHostJsonFile, describeHostJsonFindings } from "../app/hostJsonCheck.js";
import { currentPlatform } from "../app/hostPlatform.js";

/**
 * The app's word at start on its host.json (docs/HOST-JSON.md): at the first timer tick of the process, a warning
 * through the invocation's logger (so to Application Insights) naming each setting the coordinator relies on that the
 * host.json lacks, and what it costs. The host.json is the one in the app's root folder (`AzureWebJobsScriptRoot`, as
 * the host sets it; the current directory otherwise).
 */
export function hostJsonNotice(env: Record<string, string | undefined>): (context: InvocationContext) => void {
  let said = false;
  return (context) => {
    if (said) return;
    said = true;
    const path = join(env.AzureWebJobsScriptRoot ?? process.cwd(), "host.json");
    // On the instance: its processors and WEBSITE_SKU set the host's default newBatchThreshold.
    const findings = checkHostJsonFile(path, currentPlatform(env));
    if (findings.length > 0) context.warn(describeHostJsonFindings(findings, path));
  };
}
