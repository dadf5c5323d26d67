// Bounded parallelism for the writes of one reconcile: at thousands of machines, one await per write made a
// reconcile's duration the sum of its round trips.

/**
 * Runs `fn` over `items` with at most `limit` calls in flight. After the first failure no new item starts; the
 * calls in flight finish and the first error is thrown (so a reconcile fails as a whole, as a sequential loop would).
 */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`forEachLimit: limit must be a positive integer, got ${limit}`);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        await fn(items[i]!, i);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  if (failure) throw failure.error;
}

/** True when `p` settled within `ms` (its rejection propagates); false when it is still pending (it is not cancelled). */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
