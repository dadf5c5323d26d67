// The real Cluster API v1beta2 CRDs some tests compare the fixtures (and what the simulator writes) against. Locally a
// missing folder skips those tests with a message; in CI (CI set) or when CAPI_CRDS_DIR names a folder that does not
// exist, it fails them: a comparison that silently skips proves nothing.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The folder of the real CAPI CRDs: CAPI_CRDS_DIR, else ../shared/reference/capi-crds beside the checkout. */
export function realCapiCrdsDir(): string {
  const fromEnv = process.env['CAPI_CRDS_DIR'];
  return fromEnv ? path.resolve(fromEnv) : path.resolve(repoRoot, '../shared/reference/capi-crds');
}

/** Thrown when the real CRDs are required (CI, or CAPI_CRDS_DIR set) but `dir` does not exist. */
export class RealCapiCrdsMissingError extends Error {
  constructor(dir: string) {
    super(
      `the real Cluster API CRDs are required here (${process.env['CI'] ? 'CI is set' : 'CAPI_CRDS_DIR is set'}) but ${dir} does not exist`,
    );
    this.name = 'RealCapiCrdsMissingError';
  }
}

/**
 * Makes the running test (or hook) need `dir` (default: the real CRDs): returns when it exists; otherwise fails in CI
 * or when CAPI_CRDS_DIR is set, and skips the test with a message locally.
 */
export function requireRealCapiCrds(ctx: Mocha.Context, dir: string = realCapiCrdsDir()): void {
  if (existsSync(dir)) return;
  if (process.env['CI'] || process.env['CAPI_CRDS_DIR']) throw new RealCapiCrdsMissingError(dir);
  console.log(`    (skipped: no Cluster API CRDs at ${dir}; set CAPI_CRDS_DIR to compare against them; CI fails here)`);
  ctx.skip();
}
