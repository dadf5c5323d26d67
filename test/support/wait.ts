// Waiting for state in tests. The timeout is a failure deadline (how long before the test gives up), never a
// performance threshold.

/** Options of `waitFor`. */
export interface WaitOptions {
  /** Give up after this long (default 20 s). */
  timeoutMs?: number;
  /** Poll period (default 20 ms). */
  intervalMs?: number;
  /** What was awaited, for the failure message. */
  message?: string;
}

/**
 * Polls `predicate` until it returns a truthy value (returned) or the deadline passes (throws with the message
 * and the last error the predicate threw, if any). The predicate may be async and may throw while waiting.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await predicate();
      if (v) return v as NonNullable<T>;
      lastErr = undefined;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const why = lastErr instanceof Error ? `; last error: ${lastErr.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.message ?? 'condition'}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Resolves after `ms` (for simulated durations in tests; keep them short). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
