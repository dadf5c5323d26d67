// Where the plan controller reads from: the informer stores, and for kinds named at run time (control plane,
// templates, provider kinds) discovery plus a watch started on first use. Also which plans an object's event wakes
// (the mappers those watches are given).
import type { KubeObject, ResourceType } from '../../api/index.js';
import { CustomResourceDefinitions, Labels, MachineDeployments, Machines } from '../../api/index.js';
import {
  clusterLabel,
  machineBootstrapRef,
  machineInfraRef,
  ownerBootstrapTemplateRef,
  ownerInfraTemplateRef,
  type ContractRef,
} from '../../api/capi/index.js';
import { crdName } from '../../contract/index.js';
import { toKubeTime } from '../../runtime/pure/conditions.js';
import { isNotFound, KubeApiError } from '../../runtime/pure/errors.js';
import { settlesWithin } from '../../runtime/parallel.js';
import type { ObjectKey, Store } from '../../runtime/pure/types.js';
import type { PlanDeps } from '../deps.js';
import type { ScopeReader } from '../scope.js';
import { planMayAct, plansOfCluster, plansOfControlPlane, plansToWake, type WakeView } from './wake.js';

/**
 * How long a reconcile waits for the first list of a kind named at run time (control plane, template). A list that is
 * forbidden (the kind is not granted) is retried by the informer forever; the plan reports it instead of hanging.
 */
export const CONTROL_PLANE_SYNC_MS = 10_000;

/** How long a task kind's CRD lookup is reused (CRDs change rarely; a plan reconciles often). */
const TASK_CRD_TTL_MS = 15_000;

/** Maps a CAPI object to the plans of its cluster (by its cluster-name label) that may still act (wake.ts). */
export const byClusterOf =
  (deps: WakeView) =>
  (o: KubeObject): ObjectKey[] =>
    plansToWake(deps, o.metadata.namespace, clusterLabel(o));

/** Maps an object to the plans of its namespace that may still act (wake.ts). */
export const namespacePlansOf =
  (deps: PlanDeps) =>
  (o: KubeObject): ObjectKey[] =>
    deps.plans
      .list(o.metadata.namespace)
      .filter((p) => planMayAct(p, deps))
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name! }));

/** The cluster a read is for: its per-cluster caches (cluster-scopes.ts) serve the kinds machines reference. */
export interface ReadScope {
  namespace: string;
  cluster: string;
}

/**
 * The informer store of a provider kind (InfraMachine, BootstrapConfig, their templates), started on first use. A kind
 * the machines reference is read from the cluster's own cache when `scope` names it (`scoped`: a miss may be an object
 * without the cluster label, not a missing one). A kind not served throws (404 resolve); one not listed within
 * CONTROL_PLANE_SYNC_MS throws a 403-like error naming it.
 */
export async function cachedKind(
  deps: PlanDeps,
  ref: { apiGroup: string; kind: string },
  scope?: ReadScope,
): Promise<{ res: ResourceType; store: Store; typed: (o: KubeObject | undefined) => KubeObject | undefined; scoped: boolean }> {
  const res = await deps.client.resolve(ref.apiGroup, ref.kind);
  const apiVersion = res.group ? `${res.group}/${res.version}` : res.version;
  // List items may omit kind and apiVersion; a clone copies them from its source, the checks compare kinds.
  const typed = (o: KubeObject | undefined): KubeObject | undefined => (o ? { ...o, kind: res.kind, apiVersion } : undefined);
  // They wake the plans of their namespace that may still act (an alignment or a check may wait on them).
  return { res, typed, ...(await kindStore(deps, res, ref, scope, namespacePlansOf(deps))) };
}

/**
 * Where a kind is cached: with a scope, a machine kind (InfraMachine, BootstrapConfig) in the cluster's own cache;
 * anything else in the kind's fleet-wide informer, whose events `mapper` turns into plans to wake. A kind not listed
 * within CONTROL_PLANE_SYNC_MS throws a 403-like error naming it.
 */
export async function kindStore(
  deps: PlanDeps,
  res: ResourceType,
  ref: { apiGroup: string; kind: string },
  scope: ReadScope | undefined,
  mapper: (o: KubeObject) => ObjectKey[],
): Promise<{ store: Store; scoped: boolean }> {
  if (scope && deps.scopes?.isMachineKind(ref))
    return { store: await deps.scopes.kindStore(res, ref, scope.namespace, scope.cluster), scoped: true };
  if (!(await settlesWithin(deps.ctrl().watch(res, mapper), CONTROL_PLANE_SYNC_MS)))
    throw new KubeApiError(
      `list ${res.plural}.${res.group}`,
      403,
      undefined,
      new Error(`not listed within ${CONTROL_PLANE_SYNC_MS / 1000}s (is it granted to the plan controller?)`),
    );
  return { store: deps.mgr.informer(res).store, scoped: false };
}

/** The plan controller's ScopeReader: the informer stores, and for kinds named at run time discovery plus a watch. */
export function storeReader(deps: PlanDeps): ScopeReader {
  const mapToNamespacePlans = namespacePlansOf(deps);
  const controlPlanePlans = (cp: KubeObject): ObjectKey[] =>
    plansOfControlPlane(deps.plans, cp.metadata.namespace ?? '', cp.metadata.name ?? '')
      .filter((p) => planMayAct(p, deps))
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name! }));
  return {
    now: () => toKubeTime(new Date()),
    cluster: async (ns, name) => deps.clusters.peek(ns, name),
    machineDeployments: async (ns, names) => names.map((n) => deps.machineDeployments.peek(ns, n)).filter((o): o is KubeObject => !!o),
    machines: async (ns, clusterName) => sharedByLabel(deps.machines, Labels.clusterName, clusterName, ns),
    machineUpdates: async (ns, planLabel) => sharedByLabel(deps.machineUpdates, Labels.planName, planLabel, ns),
    plans: async (ns, clusterName) => plansOfCluster(deps.plans, ns, clusterName),
    async read(ns, apiGroup, kind, name, purpose) {
      let res: ResourceType;
      try {
        res = await deps.client.resolve(apiGroup, kind);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return { notServed: (err as Error).message };
      }
      // A kind the plan controller may not list must not block the worker: the plan reports it instead of hanging.
      if (
        !(await settlesWithin(
          deps.ctrl().watch(res, purpose === 'controlPlane' ? controlPlanePlans : mapToNamespacePlans),
          CONTROL_PLANE_SYNC_MS,
        ))
      ) {
        const hint = purpose === 'controlPlane' ? "is it in the plan controller's provider list?" : 'is it granted to the plan controller?';
        return {
          unreadable: `${res.plural}.${res.group} could not be listed within ${CONTROL_PLANE_SYNC_MS / 1000}s (${hint} see docs/operations.md)`,
        };
      }
      const object = deps.mgr.informer(res).store.peek(ns, name);
      return object ? { object } : {};
    },
    taskCrd: async (group, kind) => (await lookupTaskCrd(deps, group, kind)).crd,
  };
}

/**
 * The store's shared, frozen list of a label's objects (store.ts byLabelView: no copy, the same array while the bucket
 * is unchanged), or a copy from a store without it. Frozen: a caller that sorted or pushed into it would throw.
 */
function sharedByLabel<T extends KubeObject>(store: Store<T>, key: string, value: string, ns: string): T[] {
  const view = (store as { byLabelView?: (k: string, v: string, n?: string) => readonly T[] }).byLabelView;
  return (view ? view.call(store, key, value, ns) : store.byLabel(key, value, ns)) as T[];
}

/** The CRD of a task kind (crd absent when the kind is not served or has no CRD), cached for TASK_CRD_TTL_MS. */
async function lookupTaskCrd(deps: PlanDeps, group: string, kind: string): Promise<{ crd?: KubeObject }> {
  const key = `${kind}.${group}`;
  const hit = deps.taskCrds.get(key);
  if (hit && Date.now() - hit.at < TASK_CRD_TTL_MS) return hit.crd ? { crd: hit.crd } : {};
  let crd: KubeObject | undefined;
  try {
    const res = await deps.client.resolve(group, kind);
    crd = await deps.client.get(CustomResourceDefinitions, undefined, crdName(res.plural, res.group));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  remember(deps.taskCrds, key, { ...(crd ? { crd } : {}), at: Date.now() });
  return crd ? { crd } : {};
}

/**
 * Most kinds a fleet-wide cache keeps (task CRDs, provider kinds that failed): plans may name any kind, a typo
 * included, so these are bounded like the per-plan states are by the plans.
 */
export const MAX_KINDS_CACHED = 256;

/** Sets `key` in a fleet-wide cache keyed by kind, forgetting the oldest entry beyond MAX_KINDS_CACHED. */
export function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > MAX_KINDS_CACHED) cache.delete(cache.keys().next().value!);
}

/**
 * Starts, once the machines are listed, the watches of the provider kinds they and their MachineDeployments reference
 * (InfraMachine, BootstrapConfig and their templates), with the mappers a plan's first reconcile would give them.
 * Started lazily, a plan's first reconcile listed them (its pre-start check reads every InfraMachine and
 * BootstrapConfig): ~0.4 s of 10,003-machine lists before its first machine. The watches are kept once a plan started
 * them anyway, so this moves that cost to the controller's start. A kind that is not served or may not be listed is
 * not watched ahead: the plan that needs it handles it as before.
 */
export async function warmProviderKinds(deps: PlanDeps): Promise<void> {
  // Machines cached per cluster (cluster-scopes.ts) are not listed here, nor the kinds they reference.
  if (!deps.scopes) await deps.mgr.informer(Machines).synced();
  await deps.mgr.informer(MachineDeployments).synced();
  const machineKinds = new Map<string, ContractRef>();
  for (const m of deps.scopes ? [] : deps.machines.list())
    for (const r of [machineInfraRef(m), machineBootstrapRef(m)]) if (r) machineKinds.set(`${r.apiGroup}/${r.kind}`, r);
  const templateKinds = new Map<string, ContractRef>();
  for (const md of deps.machineDeployments.list())
    for (const r of [ownerInfraTemplateRef(md), ownerBootstrapTemplateRef(md)]) if (r) templateKinds.set(`${r.apiGroup}/${r.kind}`, r);
  const watched: string[] = [];
  const watch = async (ref: ContractRef, mapper: (o: KubeObject) => ObjectKey[]): Promise<void> => {
    try {
      const res = await deps.client.resolve(ref.apiGroup, ref.kind);
      // One object first: an informer retries a list it may not make forever and keeps /readyz at 503, so a kind this
      // controller is not granted is left to the plan that needs it, which names the problem (refLookup, cachedKind).
      await deps.client.list(res, deps.mgr.namespace, { limit: 1 });
      await deps.ctrl().watch(res, mapper);
      watched.push(`${res.plural}.${res.group}`);
    } catch {
      // Not served, not granted, or the API server failed the probe: the plan starts the watch itself.
    }
  };
  // Machine-referenced kinds as refLookup watches them (their objects carry the cluster label), templates as
  // cachedKind does.
  await Promise.all([
    ...[...machineKinds.values()].map((r) => watch(r, byClusterOf(deps))),
    ...[...templateKinds.values()].map((r) => watch(r, namespacePlansOf(deps))),
  ]);
  // Once every kind that could be listed is: from here a plan's first reconcile lists nothing.
  deps.mgr.log.info({ kinds: watched.sort() }, 'provider kinds watched ahead of plans');
}
