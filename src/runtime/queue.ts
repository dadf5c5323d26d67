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
    // Node fires a timer of more than 2^31-1 ms at once: a far requeue would be a busy loop. Waking early is harmless.
    ms = Math.min(ms, 2 ** 31 - 1);
    const at = Date.now() + ms;
    const cur = this.delayed.get(key);
    if (cur && cur.at <= at) return;
    if (cur) clearTimeout(cur.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref?.();
    this.delayed.set(key, { at, timer });
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
    if (cooldownMs > 0) this.cooldown.set(key, Date.now() + cooldownMs);
    else this.cooldown.delete(key);
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
