// Small file helpers shared by the CLI, the benchmark and the cdk8s synthesis (which may not import src/cli).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** YAML files directly in `dir`, sorted (deterministic order); none when the directory does not exist. */
export function yamlFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => join(dir, e.name))
    .sort();
}
