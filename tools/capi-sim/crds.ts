// Where the CAPI CRDs the simulator, the demo and the tests install come from.
import { fileURLToPath } from 'node:url';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Directory of the project's own CAPI v1beta2 fixture CRDs (schema-equivalent to upstream for every field used). */
export const CAPI_FIXTURE_CRDS_DIR: string = fileURLToPath(new URL('./crds', import.meta.url));

/** Directory of the project's fixture of CAPI's ExtensionConfig CRD (runtime.cluster.x-k8s.io; the in-place hooks flow). */
export const CAPI_RUNTIME_CRDS_DIR: string = fileURLToPath(new URL('./crds-runtime', import.meta.url));

/**
 * The CAPI CRD directories to install: `CAPI_CRDS_DIR` (e.g. the real upstream CRDs) when set, else the fixtures; the
 * ExtensionConfig fixture too unless `CAPI_CRDS_DIR` has its own.
 */
export function capiCrdDirs(): string[] {
  const fromEnv = process.env['CAPI_CRDS_DIR'];
  if (!fromEnv) return [CAPI_FIXTURE_CRDS_DIR, CAPI_RUNTIME_CRDS_DIR];
  let hasRuntime = false;
  try {
    hasRuntime = readdirSync(fromEnv).some((f) => f.startsWith('runtime.cluster.x-k8s.io_'));
  } catch {
    // An unreadable directory fails later, where the CRDs are installed, with a clearer error.
  }
  return hasRuntime ? [fromEnv] : [fromEnv, CAPI_RUNTIME_CRDS_DIR];
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
