// A keyed, de-duplicating work queue (client-go workqueue semantics) with per-key exponential backoff and delays.

/** Backoff and instrumentation options of a work queue. */
export interface WorkQueueOptions {
  /** First retry delay after an error (default 5 ms). */
  baseDelayMs?: number;
  /** Cap of the per-key retry delay (default 60 s). */
  maxDelayMs?: number;
  /** Called whenever the number of waiting keys changes. */
  onDepth?: (depth: number) => void;
  /** Called when a key is scheduled for retry after an error, with the delay chosen. */
  onRetry?: (key: string, delayMs: number) => void;
}

/** The longest delay setTimeout honours (2^31-1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Work queue of string keys.
 * - A key waits at most once (adding a waiting key is a no-op).
 * - A key is never handed out twice at once: adding a key that is being processed marks it dirty, and it is
 *   queued again when `done(key)` is called.
 * - `addAfter` schedules an add; when a key already has a pending delayed add the earliest one wins, and
 *   handing the key out satisfies (cancels) the pending delayed add — the run decides what comes next.
 * - `addRateLimited` retries with a per-key exponential delay; `forget` resets it after a success.
 * - `done(key, cooldownMs)` keeps the key from being handed out again for that long: adds meanwhile collapse into
 *   one run at the end of the cooldown (kube-runtime's debounce; bounds how often one expensive key runs).
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  /** key -> time before which it is not handed out again. */
  private readonly cooldown = new Map<string, number>();
  /** Size of `cooldown` at which expired entries are swept (keys of deleted objects are never added again). */
  private sweepCooldownAt = 64;
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
  }

  /** Keys waiting to be handed out. */
  get depth(): number {
    return this.queue.length - this.head;
  }

  /** Keys currently handed out and not yet done. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Keys with a pending delayed add. */
  get pendingDelayed(): number {
    return this.delayed.size;
  }

  /** Keys with a cooldown entry (expired ones included until the next sweep). */
  get coolingDown(): number {
    return this.cooldown.size;
  }

  /** True once `shutDown` was called. */
  get isShutDown(): boolean {
    return this.shuttingDown;
  }

  /** Queues a key now (de-duplicated; deferred until `done` if it is being processed). */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    const until = this.cooldown.get(key);
    if (until !== undefined) {
      const left = until - Date.now();
      if (left > 0) {
        this.addAfter(key, left);
        return;
      }
      this.cooldown.delete(key);
    }
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Queues a key after `ms`; the earliest pending delayed add of a key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const cur = this.delayed.get(key);
    if (cur && cur.at <= at) return;
    if (cur) clearTimeout(cur.timer);
    this.delayed.set(key, { at, timer: this.timerUntil(key, at) });
  }

  /**
   * A timer that adds `key` at `at`. Node fires a delay above 2^31-1 ms (24.8 days) after 1 ms instead (with a
   * TimeoutOverflowWarning): a requeue at a deadline 1000 h away (an MHC in-place timeout) became a busy loop. Longer
   * waits are chained in steps that fit.
   */
  private timerUntil(key: string, at: number): NodeJS.Timeout {
    const wait = Math.max(0, at - Date.now());
    const timer = setTimeout(
      () => {
        const d = this.delayed.get(key);
        if (d?.timer !== timer) return;
        if (wait > MAX_TIMER_MS) {
          d.timer = this.timerUntil(key, at);
          return;
        }
        this.delayed.delete(key);
        this.add(key);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
    timer.unref?.();
    return timer;
  }

  /** Queues a key after its next backoff delay (base * 2^failures, capped) and counts the failure. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(n, 40));
    this.opts.onRetry?.(key, delay);
    this.addAfter(key, delay);
    return delay;
  }

  /** Number of consecutive failures recorded for a key. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Resets the backoff of a key (after a successful run). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Waits for the next key; undefined once the queue is shut down. Call `done(key)` when finished. */
  get(): Promise<string | undefined> {
    if (this.depth > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key finished; re-queues it if it was added while in flight (after `cooldownMs`, when given). */
  done(key: string, cooldownMs = 0): void {
    this.processing.delete(key);
    if (cooldownMs > 0) {
      this.cooldown.set(key, Date.now() + cooldownMs);
      if (this.cooldown.size >= this.sweepCooldownAt) this.sweepCooldowns();
    } else this.cooldown.delete(key);
    if (!this.dirty.has(key) || this.shuttingDown) return;
    if (cooldownMs > 0) {
      this.dirty.delete(key);
      this.addAfter(key, cooldownMs);
    } else this.push(key);
  }

  /** Stops handing out keys: waiting `get` calls resolve undefined, timers are cleared. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const d of this.delayed.values()) clearTimeout(d.timer);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  // Amortised: the threshold doubles with what is still cooling down, so a sweep costs O(1) per done() on average.
  private sweepCooldowns(): void {
    const now = Date.now();
    for (const [k, until] of this.cooldown) if (until <= now) this.cooldown.delete(k);
    this.sweepCooldownAt = Math.max(64, 2 * this.cooldown.size);
  }

  private push(key: string): void {
    const w = this.waiters.shift();
    if (w) {
      this.markTaken(key);
      w(key);
      return;
    }
    this.queue.push(key);
    this.opts.onDepth?.(this.depth);
  }

  private take(): string {
    const key = this.queue[this.head++]!;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.markTaken(key);
    this.opts.onDepth?.(this.depth);
    return key;
  }

  private markTaken(key: string): void {
    this.dirty.delete(key);
    this.processing.add(key);
    const d = this.delayed.get(key);
    if (d) {
      clearTimeout(d.timer);
      this.delayed.delete(key);
    }
  }
}
