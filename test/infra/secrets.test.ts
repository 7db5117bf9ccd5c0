import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { listFiles } from "../../scripts/verification/infraCheck/compile";
import { describeCompiled, useCompiledInfra } from "./compiled";

/**
 * No keys, SAS or secret connection strings in what the templates compile to. The ARM JSON is where every `list*()`
 * call, every key property read and every setting ends up, whatever Bicep syntax wrote it (`storage.listKeys()`,
 * `listKeys(storage.id, …)`, a variable, a module output); bicepconfig.json's linter rules (outputs-should-not-contain-
 * secrets, secure parameters) cover the rest.
 */

const PATTERNS: readonly [RegExp, string][] = [
  [/\blist[A-Z]\w*\(/g, "calls a list*() function, which returns secrets"],
  [/AccountKey=|SharedAccessSignature=|SharedAccessKey=|[?&]sig=/gi, "holds key or SAS text"],
  [
    /\.(keys|primaryKey|secondaryKey|primaryMasterKey|primaryConnectionString|secondaryConnectionString)\b/g,
    "reads a key",
  ],
  [
    /"(APPINSIGHTS_INSTRUMENTATIONKEY|AzureWebJobsDashboard|WEBSITE_CONTENTAZUREFILECONNECTIONSTRING|AzureWebJobsStorage)"\s*:/g,
    "sets a key-bearing setting",
  ],
];

/** Every secret-bearing construct in a compiled template's text, as `<what>: <match>`. */
function secretViolations(text: string): string[] {
  return PATTERNS.flatMap(([pattern, what]) => [...text.matchAll(pattern)].map((match) => `${what}: ${match[0]}`));
}

describeCompiled("no keys or secret connection strings", () => {
  const infra = useCompiledInfra();

  it("no compiled template calls list*(), reads a key, embeds AccountKey=/SAS text or sets a key-bearing setting", () => {
    const compiled = listFiles(infra().dir, ".", ".json").filter((file) => !file.startsWith("snapshots"));
    expect(compiled.length).toBeGreaterThan(5);
    const found = compiled.flatMap((file) =>
      secretViolations(readFileSync(path.join(infra().dir, file), "utf8")).map((problem) => `${file}: ${problem}`),
    );
    expect(found).toEqual([]);
  });

  it("the check names listKeys() in both compiled forms, .keys, AccountKey=, SAS, the instrumentation key and a connection-string AzureWebJobsStorage", () => {
    const sample = JSON.stringify({
      a: "[format('DefaultEndpointsProtocol=https;AccountKey={0}', listKeys(resourceId('Microsoft.Storage/storageAccounts', 'x'), '2026-06-01').keys[0].value)]",
      b: "https://x.blob.core.windows.net/c?sv=2022&sig=abc",
      APPINSIGHTS_INSTRUMENTATIONKEY: "k",
      AzureWebJobsStorage: "UseDevelopmentStorage=true",
      c: "[listAccountSas('x', '2026-06-01', parameters('p')).accountSasToken]",
    });
    expect(secretViolations(sample)).toEqual([
      "calls a list*() function, which returns secrets: listKeys(",
      "calls a list*() function, which returns secrets: listAccountSas(",
      "holds key or SAS text: AccountKey=",
      "holds key or SAS text: &sig=",
      "reads a key: .keys",
      'sets a key-bearing setting: "APPINSIGHTS_INSTRUMENTATIONKEY":',
      'sets a key-bearing setting: "AzureWebJobsStorage":',
    ]);
  });
});
