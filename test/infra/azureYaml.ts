import { readFileSync } from "node:fs";
import { parse } from "yaml";

/** What azd reads of an azure.yaml (its schema's keys that the repository's and the template's use). */
export interface AzureYaml {
  name: string;
  services: Record<
    string,
    {
      project: string;
      language: string;
      host: string;
      dist?: string;
      remoteBuild?: boolean;
      hooks?: Record<string, { shell?: string; run: string }>;
    }
  >;
  infra: { provider: string; path: string; module: string };
}

/** Reads an azure.yaml. */
export function readAzureYaml(file: string): AzureYaml {
  return parse(readFileSync(file, "utf8")) as AzureYaml;
}
