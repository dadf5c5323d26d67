// The plan controller's snapshot of one plan: the shared builder (scope.ts buildScope) over the informer stores, plus
// what only the controller computes from its own memory of the plan (snapshot/plan-state.ts): MachineUpdates it
// created that the informer does not show yet, the machines already at target, the pre-start check of the
// generation and the alert gate's last read.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, ResourceType } from '../../api/index.js';
import { Secrets, UpdatePhase, isTerminal } from '../../api/index.js';
import { isNotFound, KubeApiError } from '../../runtime/pure/errors.js';
import type { ObjectKey, Store } from '../../runtime/pure/types.js';
import { prestartCheck } from '../../effects/prestart.js';
import { referencedKinds, type RefLookup } from '../../rules/at-target.js';
import { atTargetThrough } from '../cache/at-target.js';
import { ALERTS_POLL_MS } from '../../rules/gates.js';
import type { AlertsRead, PrestartResult } from '../../rules/inputs.js';
import { readAlerts, type GateSecret } from './alerts.js';
import type { PlanDeps } from '../deps.js';
import type { PlanSnapshot } from '../scope.js';
import { buildScope, ownedBy } from './build-scope.js';
import { atTargetMemo, decideMemo, type PlanState } from './plan-state.js';
import { byClusterOf, cachedKind, kindStore, remember, storeReader, type ReadScope } from './reader.js';

/** How long a pre-start check that found problems stands before it runs again (a passing one stands for the generation). */
const PRESTART_RECHECK_MS = 60_000;
/** How long a created MachineUpdate is assumed to exist before the informer shows it. */
const EXPECTATION_TTL_MS = 30_000;
/** How long a provider kind whose list did not sync is not waited for again (its machines are then not at target). */
const REF_KIND_RETRY_MS = 60_000;

/** Reads everything the decision needs from the informer stores (and discovery for kinds named at run time). */
export async function buildSnapshot(deps: PlanDeps, state: PlanState, plan: InPlaceUpdatePlan & KubeObject): Promise<PlanSnapshot> {
  const snap = await buildScope(plan, storeReader(deps), decideMemo(state, plan)?.ownFilter);
  // The kinds these machines reference are read from the cluster's own caches from here on.
  deps.scopes?.noteMachines(snap.machines);
  // The store may lag behind our own creates; a created MachineUpdate counts until the informer shows it.
  snap.machineUpdates = withExpectations(deps, state, plan, snap.machineUpdates);
  if (deps.writePolicy) snap.writePolicy = deps.writePolicy;
  if (deps.alertGatePolicy) snap.alertGatePolicy = deps.alertGatePolicy;
  if (plan.spec.rerunMachinesAtTarget !== true && !isTerminal(plan.status?.updateStatus)) {
    const refs = await refLookup(deps, plan, snap.machines, byClusterOf(deps));
    const memo = atTargetMemo(state);
    // The memo keeps the set of names with an update, patched for the updates that are new objects.
    snap.atTarget = atTargetThrough(plan, snap.machines, refs.lookup, memo.excluded(snap.machineUpdates), { memo, stamp: refs.stamp });
    snap.refObjects = refs.lookup;
  } else state.atTarget = undefined;
  const prestart = await prestartFor(deps, state, snap);
  if (prestart) snap.prestart = prestart;
  // spec.alertGate: the endpoint is read once per ALERTS_POLL_MS per active plan (alerts.ts; bounded by its timeout),
  // once the operator's policy allows its url and Secret (readAlerts refuses before any read or request otherwise).
  if (plan.spec.alertGate && !isTerminal(plan.status?.updateStatus)) snap.alerts = await gateRead(deps, state, plan, plan.spec.alertGate);
  else state.alertRead = undefined;
  return snap;
}

/**
 * The plan's alert-gate result: the last read while it is younger than ALERTS_POLL_MS and read the same thing (plan
 * uid, url, Secret), else a new read. A reconcile woken by anything else (a machine, a task, its own status write)
 * reuses it: the endpoint and the Secret are read at the documented interval, not per reconcile.
 */
async function gateRead(
  deps: PlanDeps,
  state: PlanState,
  plan: InPlaceUpdatePlan & KubeObject,
  gate: NonNullable<InPlaceUpdatePlan['spec']['alertGate']>,
): Promise<AlertsRead> {
  const key = JSON.stringify([plan.metadata.uid ?? '', gate.url, gate.secretRef?.name ?? null]);
  const nowMs = Date.now();
  const hit = state.alertRead;
  if (hit && hit.key === key && nowMs - hit.at >= 0 && nowMs - hit.at < ALERTS_POLL_MS) return hit.result;
  const read = await readAlerts(
    (ns, name) => deps.client.get<KubeObject & GateSecret>(Secrets, ns, name),
    plan.metadata.namespace ?? '',
    gate,
    deps.alertGatePolicy,
  );
  // Timed from the start of the read: a slow endpoint does not stretch the interval.
  const result: AlertsRead = { ...read, at: new Date(nowMs).toISOString() };
  state.alertRead = { key, at: nowMs, result };
  return result;
}

/**
 * The pre-start check of this plan generation: run while the plan has started no machine (a passing result stands for
 * the generation; one with problems is re-run after PRESTART_RECHECK_MS, the cluster may have been fixed), then kept.
 */
async function prestartFor(deps: PlanDeps, state: PlanState, snap: PlanSnapshot): Promise<PrestartResult | undefined> {
  const { plan } = snap;
  const generation = plan.metadata?.generation ?? 0;
  const cached = state.prestart;
  const fresh = cached && cached.generation === generation ? cached : undefined;
  const started =
    snap.machineUpdates.length > 0 ||
    !!plan.status?.startTime ||
    !!plan.metadata?.deletionTimestamp ||
    plan.spec.updatePhase === UpdatePhase.aborting ||
    isTerminal(plan.status?.updateStatus);
  if (started || !snap.cluster) return fresh?.result;
  const passed =
    fresh && fresh.result.schemaProblems.length === 0 && (fresh.result.uncovered.length === 0 || plan.spec.acceptUncoveredChanges === true);
  if (fresh && (passed || Date.now() - fresh.at < PRESTART_RECHECK_MS)) return fresh.result;
  // Reads from the informer caches by name: the check costs its dry-runs only, and reads the objects of this plan's
  // machines, not every object of their kinds in the namespace (a fleet's namespace holds every cluster's). A kind
  // that cannot be cached is read live.
  const uncached = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      if (isNotFound(err) || (err instanceof KubeApiError && err.code === 403)) return undefined;
      throw err;
    }
  };
  const scope = { namespace: plan.metadata?.namespace ?? '', cluster: plan.spec.clusterName };
  const result = await prestartCheck(deps.client, snap, {
    list: (ns, ref) =>
      uncached(async () => {
        const { store, typed } = await cachedKind(deps, ref, scope);
        return store.list(ns).map((o) => typed(o)!);
      }),
    async get(ns, ref) {
      const cached = await uncached(() => cachedKind(deps, ref, scope));
      const hit = cached?.typed(cached.store.peek(ns, ref.name));
      if (cached && (hit || !cached.scoped)) return hit;
      // Not cached (not served, or not listable; or, from a cluster's cache, an object without the cluster label): read
      // live, so that a refusal is reported as one (it names the resource the plan controller is not granted), not as
      // an object that is missing.
      const res = await uncached(() => deps.client.resolve(ref.apiGroup, ref.kind));
      return res ? deps.client.get(res, ns, ref.name) : undefined;
    },
  });
  state.prestart = { generation, at: Date.now(), result };
  return result;
}

/** A number per store instance (a restarted informer's new store never shares a stamp with the old one). */
const storeIds = new WeakMap<object, number>();
let nextStoreId = 0;
const storeId = (store: object): number => {
  let id = storeIds.get(store);
  if (id === undefined) storeIds.set(store, (id = ++nextStoreId));
  return id;
};

/**
 * The InfraMachines / BootstrapConfigs the plan's values live on, from informers of the kinds the machines reference
 * (watched at run time, like templates). A kind that is not served or cannot be listed makes its machines "not at
 * target": their updaters run, as before this check existed.
 */
async function refLookup(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  mapper: (o: KubeObject) => ObjectKey[],
): Promise<{ lookup: RefLookup; stamp?: string }> {
  const stores = new Map<string, Store>();
  const ns = plan.metadata?.namespace ?? '';
  for (const ref of referencedKinds(plan, machines)) {
    const key = `${ref.kind}.${ref.apiGroup}`;
    const failedAt = deps.refKindFailures.get(key);
    if (failedAt !== undefined && Date.now() - failedAt < REF_KIND_RETRY_MS) continue;
    let res: ResourceType;
    try {
      res = await deps.client.resolve(ref.apiGroup, ref.kind);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      remember(deps.refKindFailures, key, Date.now());
      continue;
    }
    const store = await refStore(deps, res, ref, { namespace: ns, cluster: plan.spec.clusterName }, mapper);
    if (!store) {
      remember(deps.refKindFailures, key, Date.now());
      continue;
    }
    deps.refKindFailures.delete(key);
    stores.set(`${ref.apiGroup}/${ref.kind}`, store);
  }
  const lookup: RefLookup = (ns, ref) => stores.get(`${ref.apiGroup}/${ref.kind}`)?.peek(ns, ref.name);
  // The referenced kinds' stores and their change counts (store.ts): unchanged, no answer that read them can change.
  const counts: string[] = [];
  for (const [k, store] of stores) {
    const changes = (store as { changes?: unknown }).changes;
    if (typeof changes !== 'number') return { lookup };
    counts.push(`${k}=${storeId(store)}:${changes}`);
  }
  return { lookup, stamp: counts.join(',') };
}

/** The store of a kind the machines reference (reader.ts `kindStore`); undefined when it was not listed in time. */
async function refStore(
  deps: PlanDeps,
  res: ResourceType,
  ref: { apiGroup: string; kind: string },
  scope: ReadScope,
  mapper: (o: KubeObject) => ObjectKey[],
): Promise<Store | undefined> {
  try {
    return (await kindStore(deps, res, ref, scope, mapper)).store;
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 403) return undefined;
    throw err;
  }
}

/** The plan's MachineUpdates with those it created that the informer does not show yet (within EXPECTATION_TTL_MS). */
function withExpectations(
  deps: PlanDeps,
  state: PlanState,
  plan: InPlaceUpdatePlan & KubeObject,
  fromStore: MachineUpdate[],
): MachineUpdate[] {
  const ns = plan.metadata.namespace ?? '';
  const exp = state.expectations;
  // Seen = in the store as this plan's own (as buildScope keeps them): one lookup per expectation, not a set of every
  // MachineUpdate of the plan per reconcile.
  let out: MachineUpdate[] | undefined;
  for (const [name, e] of exp) {
    const cached = deps.machineUpdates.peek(ns, name);
    const seen = cached !== undefined && cached.spec?.planName === plan.metadata.name && ownedBy(cached, plan);
    if (seen || Date.now() - e.at > EXPECTATION_TTL_MS) exp.delete(name);
    else (out ??= [...fromStore]).push(e.mu);
  }
  return out ?? fromStore;
}
