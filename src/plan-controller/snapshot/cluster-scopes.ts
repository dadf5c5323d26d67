// The plan controller's caches of the per-machine kinds (Machines, MachineUpdates, and the InfraMachine and
// BootstrapConfig kinds the machines reference), held per cluster: a cluster's objects are listed and watched while a
// reconcile of one of its plans runs or while one of its plans may still act (wake.ts), and forgotten once it is idle.
// A fleet of 1,000 clusters updated 100 at a time holds about 100 clusters' objects, not 1,000 (runtime/scoped.ts; the
// same shape as Cluster API's ClusterCache, one cache per workload cluster).
import type { KubeObject, MachineUpdate, ResourceType } from '../../api/index.js';
import { Labels, MachineUpdates, Machines } from '../../api/index.js';
import { machineBootstrapRef, machineInfraRef, type ContractRef } from '../../api/capi/index.js';
import { KubeApiError, RetryableError } from '../../runtime/pure/errors.js';
import type { Manager, ScopedCache, ScopeLease, Store } from '../../runtime/pure/types.js';
import { settlesWithin } from '../../runtime/parallel.js';

/** How long a cluster's first list may take before the reconcile is retried instead of waiting on. */
export const CLUSTER_SYNC_MS = 10_000;

/** One cluster held by running reconciles: the leases they share, released when the last one ends. */
interface Held {
  count: number;
  ready: Promise<void>;
  leases: ScopeLease[];
  /** Provider kinds (group/kind) acquired for this hold, with their first list. */
  kinds: Map<string, Promise<void>>;
}

/** A reconcile's hold on its cluster's caches. */
export interface ClusterHold {
  /** Resolves once the cluster's Machines and MachineUpdates are listed. */
  readonly ready: Promise<void>;
  /** Ends the hold (idempotent). */
  end(): void;
}

const kindKey = (ref: { apiGroup: string; kind: string }): string => `${ref.apiGroup}/${ref.kind}`;
const heldKey = (ns: string, cluster: string): string => `${ns}/${cluster}`;

/** The per-cluster caches of one manager, shared by its plan and history controllers. */
export class ClusterScopes {
  readonly machines: ScopedCache;
  readonly machineUpdates: ScopedCache<MachineUpdate & KubeObject>;
  private readonly kinds = new Map<string, ScopedCache>();
  /** Kinds (group/kind) the cached machines reference: InfraMachine and BootstrapConfig kinds, cached per cluster. */
  private readonly machineKinds = new Set<string>();
  private readonly held = new Map<string, Held>();
  /** First lists known to have ended (a lease's `synced`), so that later reads of the scope wait on nothing. */
  private readonly listed = new WeakSet<Promise<void>>();
  private keep: (namespace: string, cluster: string) => boolean = () => false;
  private onKind: ((cache: ScopedCache) => void) | undefined;

  constructor(private readonly mgr: Manager) {
    this.machines = mgr.scopedInformer(Machines, Labels.clusterName);
    this.machineUpdates = mgr.scopedInformer<MachineUpdate & KubeObject>(MachineUpdates, Labels.clusterName);
  }

  /** Which clusters stay cached while no reconcile holds them (the plan controller: a plan of it may still act). */
  keepWhile(keep: (namespace: string, cluster: string) => boolean): void {
    this.keep = keep;
    for (const c of this.caches()) c.keepWhile((ns, v) => this.keep(ns, v));
  }

  /** Called with each provider kind's cache when it is created (the plan controller watches it). */
  onKindCache(fn: (cache: ScopedCache) => void): void {
    this.onKind = fn;
    for (const c of this.kinds.values()) fn(c);
  }

  /** Holds the cluster's Machines and MachineUpdates (and the provider kinds read meanwhile) until `end`. */
  enter(namespace: string, cluster: string): ClusterHold {
    const k = heldKey(namespace, cluster);
    let h = this.held.get(k);
    if (!h) {
      const leases = [this.machines.acquire(namespace, cluster), this.machineUpdates.acquire(namespace, cluster)];
      h = { count: 0, leases, ready: Promise.all(leases.map((l) => l.synced)).then(() => undefined), kinds: new Map() };
      this.held.set(k, h);
    }
    const entry = h;
    entry.count++;
    let ended = false;
    return {
      ready: entry.ready,
      end: () => {
        if (ended) return;
        ended = true;
        if (--entry.count > 0) return;
        this.held.delete(k);
        for (const l of entry.leases) l.end();
      },
    };
  }

  /** Records the provider kinds these machines reference (their objects are then read per cluster). */
  noteMachines(machines: readonly KubeObject[]): void {
    for (const m of machines)
      for (const r of [machineInfraRef(m), machineBootstrapRef(m)])
        if (r && !this.machineKinds.has(kindKey(r))) this.machineKinds.add(kindKey(r));
  }

  /** True when machines reference the kind (InfraMachine, BootstrapConfig): it is cached per cluster, not fleet-wide. */
  isMachineKind(ref: ContractRef | { apiGroup: string; kind: string }): boolean {
    return this.machineKinds.has(kindKey(ref));
  }

  /**
   * The store of a provider kind with the cluster's objects listed: held with the cluster's hold when a reconcile holds
   * it, else for idleMs. Throws a 403-like KubeApiError naming the kind when the first list takes longer than
   * CLUSTER_SYNC_MS (the informer retries a list it may not make forever).
   */
  async kindStore(res: ResourceType, ref: { apiGroup: string; kind: string }, namespace: string, cluster: string): Promise<Store> {
    const gk = kindKey(ref);
    let cache = this.kinds.get(gk);
    if (!cache) {
      cache = this.mgr.scopedInformer(res, Labels.clusterName);
      cache.keepWhile((ns, v) => this.keep(ns, v));
      this.kinds.set(gk, cache);
      this.onKind?.(cache);
    }
    const h = this.held.get(heldKey(namespace, cluster));
    let synced = h?.kinds.get(gk);
    if (!synced) {
      const lease = cache.acquire(namespace, cluster);
      synced = lease.synced;
      if (h) {
        h.leases.push(lease);
        h.kinds.set(gk, synced);
      } else lease.end();
    }
    // Listed already: no timer per read (owner alignment reads an InfraMachine per machine).
    if (this.listed.has(synced)) return cache.store;
    // As a fleet-wide kind's informer that did not sync (reader.ts cachedKind): most often a kind not granted.
    if (!(await settlesWithin(synced, CLUSTER_SYNC_MS)))
      throw new KubeApiError(
        `list ${res.plural}.${res.group} of cluster ${namespace}/${cluster}`,
        403,
        undefined,
        new Error(`not listed within ${CLUSTER_SYNC_MS / 1000}s (is it granted to the plan controller?)`),
      );
    this.listed.add(synced);
    return cache.store;
  }

  /** Clusters held by running reconciles now. */
  get heldCount(): number {
    return this.held.size;
  }

  private caches(): ScopedCache[] {
    return [this.machines, this.machineUpdates as unknown as ScopedCache, ...this.kinds.values()];
  }
}

const perManager = new WeakMap<Manager, ClusterScopes>();

/** The manager's ClusterScopes (one per manager: the plan and history controllers share the leases and the caches). */
export function clusterScopesOf(mgr: Manager): ClusterScopes {
  let s = perManager.get(mgr);
  if (!s) perManager.set(mgr, (s = new ClusterScopes(mgr)));
  return s;
}

/** Waits for a hold's lists, or throws a retryable error naming the cluster after CLUSTER_SYNC_MS. */
export async function heldReady(hold: ClusterHold, namespace: string, cluster: string): Promise<void> {
  if (!(await settlesWithin(hold.ready, CLUSTER_SYNC_MS)))
    throw new RetryableError(
      `list the machines of cluster ${namespace}/${cluster}`,
      new Error(`not listed within ${CLUSTER_SYNC_MS / 1000}s`),
    );
}
