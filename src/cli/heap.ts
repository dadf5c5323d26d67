// V8 heap settings the long-running verbs (`local-apiserver`, `run`) take as options: parsed and applied here, once.
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

/** `--heap-compaction`: "on" or "off", or undefined when absent. */
export function heapCompactionOption(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (v !== 'on' && v !== 'off') throw new UsageError(`--heap-compaction must be "on" or "off", got "${v}"`);
  return v === 'on';
}

/** How long the process must have been quiet (IDLE_COMPACTION_QUIET_WRITES at most) before it compacts its heap. */
export const IDLE_COMPACTION_QUIET_MS = 2_000;
/**
 * Writes that still count as quiet over IDLE_COMPACTION_QUIET_MS: in the seconds after a plan the plan controller
 * still writes about 2 a second, for longer than the bench's pause between plans.
 */
export const IDLE_COMPACTION_QUIET_WRITES = 10;
/** Writes since the last compaction that earn the next one: work, not a trickle (a plan of 1,003 machines writes ~8,000). */
export const IDLE_COMPACTION_REARM_WRITES = 1_000;

/** The bounds of IdleCompactionClock. */
export interface IdleCompactionBounds {
  quietMs: number;
  quietWrites: number;
  rearmWrites: number;
}

/**
 * When to compact: once per quiet spell that follows work. `tick` is given the process's progress counter (the API
 * server's resourceVersion: it moves by one per write) and the time. It answers true when the counter moved by at most
 * `quietWrites` over the last `quietMs` and by at least `rearmWrites` since the last compaction (or the start), so an
 * idle or trickling server compacts once, not on every tick.
 */
export class IdleCompactionClock {
  /** (time, progress) samples of the last quietMs and one older, oldest first. */
  private samples: { at: number; progress: number }[] = [];
  private compactedAt: number | undefined;
  /** The bounds in effect (defaults filled in). */
  readonly b: IdleCompactionBounds;

  constructor(bounds: Partial<IdleCompactionBounds> = {}) {
    this.b = {
      quietMs: bounds.quietMs ?? IDLE_COMPACTION_QUIET_MS,
      quietWrites: bounds.quietWrites ?? IDLE_COMPACTION_QUIET_WRITES,
      rearmWrites: bounds.rearmWrites ?? IDLE_COMPACTION_REARM_WRITES,
    };
  }

  /** Whether to compact now. */
  tick(progress: number, now: number): boolean {
    this.compactedAt ??= progress;
    this.samples.push({ at: now, progress });
    // Keep one sample at least quietMs old: the progress over the whole window is measured from it.
    while (this.samples.length > 1 && this.samples[1]!.at <= now - this.b.quietMs) this.samples.shift();
    const from = this.samples[0]!;
    if (now - from.at < this.b.quietMs) return false;
    if (progress - from.progress > this.b.quietWrites) return false;
    if (progress - this.compactedAt < this.b.rearmWrites) return false;
    this.compactedAt = progress;
    return true;
  }
}

/**
 * One full collection that compacts the whole old space. V8 otherwise moves objects off only a few fragmented pages
 * per collection, and a server whose objects die at mixed ages (a version replaced, a watch event leaving its window, a
 * pruned plan's MachineUpdates) keeps pages partly used: the API server's old space grew 47 → 75 MiB over 20 plans
 * while its live data grew 12 MiB. Compacting at every full collection instead cost 20 % more CPU and 150 MiB more
 * peak RSS at 10,003 machines, so the flag is set for this one collection only.
 */
export function compactHeap(): void {
  const gc = exposedGc();
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}

let gcFunction: (() => void) | undefined;

/** V8's gc(), exposed once for the process (a context created after `--expose-gc` is set has it). */
function exposedGc(): () => void {
  if (!gcFunction) {
    setFlagsFromString('--expose-gc');
    gcFunction = runInNewContext('gc') as () => void;
  }
  return gcFunction;
}

/** What one idle compaction did: V8's heap pages (used or not) before and after, and how long it took. */
export interface Compaction {
  heapBeforeBytes: number;
  heapAfterBytes: number;
  ms: number;
}

/**
 * Compacts the heap (compactHeap) when IdleCompactionClock says the process went quiet after work; `done` hears of each
 * compaction. Returns a stop function.
 */
export function startIdleCompaction(
  progress: () => number,
  done: (c: Compaction) => void = () => undefined,
  bounds: Partial<IdleCompactionBounds> = {},
): () => void {
  const clock = new IdleCompactionClock(bounds);
  const timer = setInterval(
    () => {
      if (!clock.tick(progress(), Date.now())) return;
      const heapBeforeBytes = getHeapStatistics().total_heap_size;
      const t0 = performance.now();
      compactHeap();
      done({ heapBeforeBytes, heapAfterBytes: getHeapStatistics().total_heap_size, ms: performance.now() - t0 });
    },
    Math.max(100, Math.floor(clock.b.quietMs / 4)),
  );
  timer.unref();
  return () => clearInterval(timer);
}
