// A scoped informer: one kind cached only for the label values (e.g. the clusters) that something currently needs, each
// value its own label-selected list+watch, merged into one store. Cluster API's ClusterCache keeps one cache per
// workload cluster for the same reason: a controller that acts on a few clusters of a fleet at a time holds those
// clusters' objects, not the fleet's.
import type { KubeObject, ResourceType } from '../api/kube.js';
import { SharedInformer, type ChangeHandler, type InformerOptions } from './informer.js';
import { errorFields, noopLogger } from './log.js';
import { MemoryStore, objectKey } from './store.js';
import type { KubeClient, Logger, ScopedCache, ScopeLease } from './pure/types.js';

/** Options of a scoped informer. */
export interface ScopedInformerOptions extends Omit<InformerOptions, 'namespace' | 'labelSelector' | 'labelIndex'> {
  /** How long a scope nothing holds and nothing keeps stays cached before it is dropped (default 30 s). */
  idleMs?: number;
  /** How often idle scopes are looked for (default 10 s). */
  sweepMs?: number;
}

interface Scope<T extends KubeObject> {
  informer: SharedInformer<T>;
  leases: number;
  lastUsed: number;
}

/** Store key of a scope: its namespace and label value. */
const scopeKey = (namespace: string, value: string): string => `${namespace}\u0000${value}`;

/**
 * One resource cached per (namespace, label value) on demand: `acquire` starts a list+watch selected by
 * `labelKey=value` in the namespace, and its objects appear in `store` and reach `onChange` handlers like a shared
 * informer's. A scope no lease holds, that `keep` does not claim and that was not used for `idleMs` is stopped and its
 * objects leave the store without change events (they were not deleted; nothing of them is known any more).
 */
export class ScopedInformer<T extends KubeObject = KubeObject> implements ScopedCache<T> {
  /** Every object of every cached scope. */
  readonly store = new MemoryStore<T>();
  private readonly handlers: ChangeHandler<T>[] = [];
  private readonly scopes = new Map<string, Scope<T>>();
  private readonly log: Logger;
  private keep: (namespace: string, value: string) => boolean = () => false;
  private sweeper: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    readonly resource: ResourceType,
    readonly labelKey: string,
    private readonly opts: ScopedInformerOptions = {},
  ) {
    this.log = (opts.log ?? noopLogger).child({ informer: resource.plural, scopedBy: labelKey });
  }

  /** Scopes cached now. */
  get scopeCount(): number {
    return this.scopes.size;
  }

  /** Whether the scope is cached (listed or being listed). */
  has(namespace: string, value: string): boolean {
    return this.scopes.has(scopeKey(namespace, value));
  }

  /** Registers a handler; objects already cached are replayed to it as `add`. */
  onChange(handler: ChangeHandler<T>): void {
    this.handlers.push(handler);
    for (const [, o] of this.store.entries()) this.call(handler, o, undefined, 'add');
  }

  /** Nothing is listed before a scope is acquired: synced at once. */
  synced(): Promise<void> {
    return Promise.resolve();
  }

  /** Which scopes stay cached while no lease holds them (e.g. the clusters with a plan that may still act). */
  keepWhile(keep: (namespace: string, value: string) => boolean): void {
    this.keep = keep;
  }

  /** Holds a scope, starting its list+watch when it is not cached. */
  acquire(namespace: string, value: string): ScopeLease {
    if (this.stopped) return { synced: new Promise<void>(() => undefined), end: () => undefined };
    const k = scopeKey(namespace, value);
    let scope = this.scopes.get(k);
    if (!scope) {
      scope = { informer: this.startScope(namespace, value), leases: 0, lastUsed: Date.now() };
      this.scopes.set(k, scope);
      this.sweeper ??= setInterval(() => this.sweep(), this.opts.sweepMs ?? 10_000).unref();
    }
    const held = scope;
    held.leases++;
    let ended = false;
    return {
      synced: held.informer.synced(),
      end: () => {
        if (ended) return;
        ended = true;
        held.leases--;
        held.lastUsed = Date.now();
      },
    };
  }

  /** Drops the scopes that are idle (no lease, unused for idleMs) and not kept; returns how many. */
  sweep(now = Date.now()): number {
    let dropped = 0;
    for (const [k, s] of this.scopes) {
      if (s.leases > 0 || now - s.lastUsed < (this.opts.idleMs ?? 30_000)) continue;
      const [namespace, value] = k.split('\u0000') as [string, string];
      let kept: boolean;
      try {
        kept = this.keep(namespace, value);
      } catch (err) {
        this.log.error({ ...errorFields(err) }, 'keep predicate threw; the scope stays');
        kept = true;
      }
      if (kept) {
        s.lastUsed = now;
        continue;
      }
      this.scopes.delete(k);
      void s.informer.stop();
      for (const [, o] of s.informer.store.entries()) this.forget(o, value);
      dropped++;
    }
    if (this.scopes.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    if (dropped > 0) this.log.debug({ dropped, left: this.scopes.size }, 'idle scopes dropped');
    return dropped;
  }

  /** Stops every scope; later acquires never sync. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const all = [...this.scopes.values()];
    this.scopes.clear();
    await Promise.all(all.map((s) => s.informer.stop()));
  }

  private startScope(namespace: string, value: string): SharedInformer<T> {
    const { idleMs: _idle, sweepMs: _sweep, ...informerOpts } = this.opts;
    const informer = new SharedInformer<T>(this.client, this.resource, {
      ...informerOpts,
      ...(this.resource.namespaced && namespace ? { namespace } : {}),
      labelSelector: `${this.labelKey}=${value}`,
      // Read by label in the merged store only: indexed once there.
      labelIndex: false,
    });
    informer.onChange((obj, old, type) => {
      if (type === 'delete') {
        // An object relabelled into another cached scope may have been added there first: leave that one.
        if (this.forget(obj, value)) this.emit(obj, old, type);
        return;
      }
      this.store.upsert(obj);
      this.emit(obj, old, type);
    });
    informer.start();
    return informer;
  }

  /** Removes an object from the merged store unless it now belongs to another scope's value; true when removed. */
  private forget(obj: T, value: string): boolean {
    const cached = this.store.peek(obj.metadata.namespace, obj.metadata.name ?? '');
    if (!cached) return false;
    const now = cached.metadata.labels?.[this.labelKey];
    if (now !== value && now !== undefined && this.has(obj.metadata.namespace ?? '', now)) return false;
    this.store.remove(obj.metadata.namespace, obj.metadata.name ?? '');
    return true;
  }

  private emit(obj: T, old: T | undefined, type: 'add' | 'update' | 'delete'): void {
    for (const h of this.handlers) this.call(h, obj, old, type);
  }

  private call(h: ChangeHandler<T>, obj: T, old: T | undefined, type: 'add' | 'update' | 'delete'): void {
    try {
      h(obj, old, type);
    } catch (err) {
      this.log.error({ ...errorFields(err), type, key: objectKey(obj) }, 'change handler threw');
    }
  }
}
