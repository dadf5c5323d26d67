// V8 heap settings the long-running verbs (`local-apiserver`, `run`) take as options: parsed and applied here, once.
import { setFlagsFromString } from 'node:v8';
import { UsageError } from './verb.js';

/** `--heap-growing-percent`: an integer 0–1000 (0 = V8's own factor), or undefined when absent. */
export function heapGrowingOption(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 1000) throw new UsageError(`--heap-growing-percent must be an integer from 0 to 1000, got "${v}"`);
  return n;
}

/**
 * Sets V8's heap growing factor for this process (0 leaves V8's own). V8 reads it at every full collection, so setting
 * it at start, before the caches fill, is as good as a node flag.
 */
export function applyHeapGrowing(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
