// Capped, jittered exponential backoff and an abortable sleep.

/** Parameters of an exponential backoff. */
export interface BackoffOptions {
  /** Delay of the first retry (default 200 ms). */
  baseMs?: number;
  /** Upper bound of any delay (default 30 s). */
  maxMs?: number;
  /** Random source in [0,1) for jitter (injectable for tests). */
  random?: () => number;
}

/**
 * Delay before retry number `attempt` (1-based): base * 2^(attempt-1), capped, then scaled by a random factor
 * in [0.5, 1) so that many clients restarting together spread out.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions = {}): number {
  const base = opts.baseMs ?? 200;
  const max = opts.maxMs ?? 30_000;
  const raw = Math.min(max, base * 2 ** Math.max(0, Math.min(attempt - 1, 40)));
  return Math.round(raw * (0.5 + 0.5 * (opts.random ?? Math.random)()));
}

/** Sleeps `ms`, returning early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
