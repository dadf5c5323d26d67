// Where the CAPI CRDs the simulator, the demo and the tests install come from.
import { fileURLToPath } from 'node:url';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Directory of the project's own CAPI v1beta2 fixture CRDs (schema-equivalent to upstream for every field used). */
export const CAPI_FIXTURE_CRDS_DIR: string = fileURLToPath(new URL('./crds', import.meta.url));

/** The CAPI CRD directories to install: `CAPI_CRDS_DIR` (e.g. the real upstream CRDs) when set, else the fixtures. */
export function capiCrdDirs(): string[] {
  const fromEnv = process.env['CAPI_CRDS_DIR'];
  return fromEnv ? [fromEnv] : [CAPI_FIXTURE_CRDS_DIR];
}

/** The CRD YAML files of `capiCrdDirs()`, sorted, as absolute paths. */
export function capiCrdFiles(): string[] {
  return capiCrdDirs().flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort()
      .map((f) => join(dir, f)),
  );
}
