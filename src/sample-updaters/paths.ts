// Locates files shipped with the project (CRD YAML) from source or compiled code.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute path of `rel` (e.g. crds/samples/x.yaml) under the project root, found by walking up from here. */
export function projectFile(rel: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const p = join(dir, rel);
    if (existsSync(p)) return p;
    dir = resolve(dir, '..');
  }
  throw new Error(`project file ${rel} not found above ${dirname(fileURLToPath(import.meta.url))}`);
}
