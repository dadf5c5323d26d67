// Controllers: informer events -> keys -> de-duplicating work queue -> reconcile workers.
import type { KubeObject, ResourceType } from '../api/kube.js';
import { parseApiVersion, resourceKey } from '../api/kube.js';
import { isConflict, isRetryable } from './pure/errors.js';
import type { SharedInformer } from './informer.js';
import { errorFields } from './log.js';
import type { RuntimeMetrics } from './metrics.js';
import { WorkQueue, type WorkQueueOptions } from './queue.js';
import { keyOf } from './store.js';
import type { Controller, ControllerBuilder, CooldownFn, Logger, Mapper, ObjectKey, ReconcileFn, ScopedCache } from './pure/types.js';

/** Parses a queue key (`namespace/name` or `name`) back into an ObjectKey. */
export function parseKey(key: string): ObjectKey {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** Queue key of an ObjectKey. */
export const formatKey = (k: ObjectKey): string => keyOf(k.namespace, k.name);

/** Maps an object to itself (the `for` resource). */
export const selfMapper: Mapper = (o) => [
  { ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: o.metadata.name ?? '' },
];

/** Maps an object to the owner named by its controller ownerReference, if that owner is of `owner`'s group and kind. */
export function ownerMapper(owner: Pick<ResourceType, 'group' | 'kind'>): Mapper {
  return (o) => {
    const ref = o.metadata.ownerReferences?.find((r) => r.controller === true);
    if (!ref || ref.kind !== owner.kind || parseApiVersion(ref.apiVersion).group !== owner.group) return [];
    return [{ ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: ref.name }];
  };
}

/** What a controller needs from its manager. */
export interface ControllerHost {
  /** The shared informer of a resource (started if the host runs). */
  informer<T extends KubeObject>(res: ResourceType): SharedInformer<T>;
  readonly log: Logger;
  readonly metrics?: RuntimeMetrics | undefined;
  readonly defaultConcurrency: number;
  /** Backoff of the controllers' queues. */
  readonly queueOptions?: WorkQueueOptions | undefined;
  /** Called when a controller is complete (reconcile() called). */
  register(c: ControllerImpl): void;
}

/**
 * A running controller. Reconciles each key with at most one run at a time, `concurrency` keys in parallel;
 * a thrown error re-queues the key with per-key exponential backoff, a TerminalError waits for the next change.
 */
export class ControllerImpl implements Controller {
  private queue: WorkQueue;
  private readonly watched = new Map<string, { res: ResourceType; informer: SharedInformer }>();
  private readonly scopedWatched = new Set<ScopedCache>();
  private workers: Promise<void>[] = [];
  private running = false;
  /** Guards against a stop+start while an earlier start still waits for sync. */
  private generation = 0;
  private readonly log: Logger;
  private primary: ResourceType | undefined;

  constructor(
    readonly name: string,
    private readonly host: ControllerHost,
    private readonly reconcileFn: ReconcileFn,
    private readonly concurrency: number,
    private readonly cooldownOf?: CooldownFn,
  ) {
    this.log = host.log.child({ controller: name });
    this.queue = this.newQueue();
  }

  /** Keys waiting in the queue. */
  get depth(): number {
    return this.queue.depth;
  }

  /** True while the workers run. */
  get isRunning(): boolean {
    return this.running;
  }

  /**
   * Adds a watched resource; events enqueue the keys the mapper returns (for both the new and the previous
   * version, so that a changed owner or label enqueues both). With `onlyIfNew`, a resource already watched
   * is left alone (dynamic watches are idempotent per resource).
   */
  addWatch<T extends KubeObject>(
    res: ResourceType,
    mapper: Mapper<T>,
    opts: { primary?: boolean; onlyIfNew?: boolean } = {},
  ): SharedInformer<T> {
    const rk = resourceKey(res);
    if (opts.primary) this.primary = res;
    const existing = this.watched.get(rk);
    if (existing && opts.onlyIfNew) return existing.informer as unknown as SharedInformer<T>;
    const informer = this.host.informer<T>(res);
    this.watched.set(rk, { res, informer: informer as unknown as SharedInformer });
    informer.onChange((obj, old) => {
      for (const k of mapper(obj)) this.enqueue(k);
      if (old) for (const k of mapper(old)) this.enqueue(k);
    });
    return informer;
  }

  watchScoped<T extends KubeObject>(cache: ScopedCache<T>, mapper: Mapper<T>): void {
    if (this.scopedWatched.has(cache as unknown as ScopedCache)) return;
    this.scopedWatched.add(cache as unknown as ScopedCache);
    cache.onChange((obj, old) => {
      for (const k of mapper(obj)) this.enqueue(k);
      if (old) for (const k of mapper(old)) this.enqueue(k);
    });
  }

  async watch<T extends KubeObject>(res: ResourceType, mapper: Mapper<T>): Promise<void> {
    const isNew = !this.watched.has(resourceKey(res));
    const informer = this.addWatch(res, mapper, { onlyIfNew: true });
    if (isNew) this.log.info({ resource: resourceKey(res) }, 'watching another resource');
    await informer.synced();
  }

  enqueue(key: ObjectKey, afterMs?: number): void {
    if (afterMs && afterMs > 0) this.queue.addAfter(formatKey(key), afterMs);
    else this.queue.add(formatKey(key));
  }

  /** Waits for every watched informer to sync, then starts the workers. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const gen = ++this.generation;
    await Promise.all([...this.watched.values()].map((w) => w.informer.synced()));
    if (!this.running || gen !== this.generation) return;
    if (this.queue.isShutDown) {
      // Restarted (e.g. leadership regained): start from every primary object, level-based.
      this.queue = this.newQueue();
      if (this.primary) for (const o of this.host.informer(this.primary).store.list()) this.queue.add(formatKey(selfMapper(o)[0]!));
    }
    this.log.info({ concurrency: this.concurrency }, 'controller started');
    this.workers = Array.from({ length: this.concurrency }, () => this.worker());
  }

  /** Stops handing out keys and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.queue.shutDown();
    await Promise.all(this.workers);
    this.workers = [];
    this.host.metrics?.queueDepth.set({ controller: this.name }, 0);
    this.log.info('controller stopped');
  }

  private newQueue(): WorkQueue {
    const m = this.host.metrics;
    return new WorkQueue({
      ...this.host.queueOptions,
      onDepth: (d) => m?.queueDepth.set({ controller: this.name }, d),
      onRetry: () => m?.queueRetries.inc({ controller: this.name }),
    });
  }

  private async worker(): Promise<void> {
    const q = this.queue;
    for (;;) {
      const key = await q.get();
      if (key === undefined) return;
      const cooldownOf = this.cooldownOf;
      // Timed only for controllers with a cooldown: the machine task controller runs 100,000s of reconciles.
      const started = cooldownOf ? { wall: performance.now(), cpu: process.cpuUsage() } : undefined;
      try {
        await this.process(q, key);
      } finally {
        if (cooldownOf && started) {
          const used = process.cpuUsage(started.cpu);
          q.done(key, cooldownOf(performance.now() - started.wall, (used.user + used.system) / 1000, key));
        } else q.done(key);
      }
    }
  }

  private async process(q: WorkQueue, key: string): Promise<void> {
    const log = this.log.child({ key });
    const m = this.host.metrics;
    const started = performance.now();
    let result: 'success' | 'requeue' | 'error' | 'terminal';
    try {
      const action = await this.reconcileFn(parseKey(key), { log });
      q.forget(key);
      if (action.kind === 'requeue') {
        q.addAfter(key, action.afterMs);
        result = 'requeue';
      } else result = 'success';
    } catch (err) {
      m?.reconcileErrors.inc({ controller: this.name });
      if (!isRetryable(err)) {
        q.forget(key);
        result = 'terminal';
        log.error(errorFields(err), 'reconcile failed terminally; waiting for a change');
      } else {
        const delayMs = q.addRateLimited(key);
        result = 'error';
        const fields = { ...errorFields(err), retryInMs: delayMs, attempt: q.retries(key) };
        // Conflicts are the normal price of optimistic concurrency.
        if (isConflict(err)) log.debug(fields, 'reconcile conflicted; retrying');
        else log.error(fields, 'reconcile failed; retrying with backoff');
      }
    }
    m?.reconcileTotal.inc({ controller: this.name, result });
    m?.reconcileDuration.observe({ controller: this.name }, (performance.now() - started) / 1000);
  }
}

/** Fluent builder (`for/owns/watches/withConcurrency/reconcile`). */
export class Builder<T extends KubeObject = KubeObject> implements ControllerBuilder<T> {
  private primary: ResourceType | undefined;
  private readonly owned: ResourceType[] = [];
  private readonly others: { res: ResourceType; mapper: Mapper }[] = [];
  private concurrency: number | undefined;
  private cooldown: CooldownFn | undefined;

  constructor(
    private readonly name: string,
    private readonly host: ControllerHost,
  ) {}

  for(res: ResourceType): ControllerBuilder<T> {
    this.primary = res;
    return this;
  }

  owns(res: ResourceType): ControllerBuilder<T> {
    this.owned.push(res);
    return this;
  }

  watches<W extends KubeObject>(res: ResourceType, mapper: Mapper<W>): ControllerBuilder<T> {
    this.others.push({ res, mapper: mapper as Mapper });
    return this;
  }

  withConcurrency(n: number): ControllerBuilder<T> {
    if (!Number.isInteger(n) || n < 1) throw new Error(`controller ${this.name}: concurrency must be a positive integer, got ${n}`);
    this.concurrency = n;
    return this;
  }

  withCooldown(fn: CooldownFn): ControllerBuilder<T> {
    this.cooldown = fn;
    return this;
  }

  reconcile(fn: ReconcileFn): Controller {
    if (!this.primary) throw new Error(`controller ${this.name}: for(resource) is required before reconcile()`);
    const c = new ControllerImpl(this.name, this.host, fn, this.concurrency ?? this.host.defaultConcurrency, this.cooldown);
    c.addWatch(this.primary, selfMapper, { primary: true });
    for (const o of this.owned) c.addWatch(o, ownerMapper(this.primary));
    for (const w of this.others) c.addWatch(w.res, w.mapper);
    this.host.register(c);
    return c;
  }
}
