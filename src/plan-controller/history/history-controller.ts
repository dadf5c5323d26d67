// The history reconciler: one key per cluster (namespace/clusterName). Reads the cluster's plans from the informer,
// lets history.ts decide, then deletes with uid preconditions: the MachineUpdates of old finished plans (their tasks
// follow through ownerReferences; the plans stay with their status, one Event each), and the plans that opted in to
// deletion (TTL), that plan pruning covers (--prune-finished-plans) or that a campaign created (one Event on the newest
// finished plan). A deleted plan's MachineUpdates and tasks follow it (garbage collection); its finalizer is released by
// the plan controller, which sees a deleted terminal plan with nothing left to undo. The template clones of plans whose
// records went (and of deleted plans) go too once nothing refers to them, swept while no plan of the cluster is in
// flight: an in-flight plan may be about to name a clone an older plan created (clone names are content-addressed).
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { Clusters, InPlaceUpdatePlans, Labels, MachineDeployments, MachineUpdates, PlanEventReasons } from '../../api/index.js';
import { labelValue } from '../decide/names.js';
import { clusterControlPlaneRef } from '../../api/capi/index.js';
import { isConflict, isNotFound } from '../../runtime/pure/errors.js';
import type { Controller, Logger, Manager, ObjectKey, Store } from '../../runtime/pure/types.js';
import { Action } from '../../runtime/pure/types.js';
import { pausedByPlan } from '../../rules/owners.js';
import type { HistoryOptions, PlanToPrune } from './history.js';
import { decideHistory, finishedAt, prunedMessage, recordsPrunedMessage } from './history.js';
import { collectClones } from '../owners/clones-act.js';
import { forEachLimit, settlesWithin } from '../../runtime/parallel.js';
import { plansOfCluster } from '../snapshot/wake.js';
import { clusterScopesOf, heldReady, type ClusterScopes } from '../snapshot/cluster-scopes.js';

/** Name of the history reconciler (its log name). */
export const HISTORY_CONTROLLER_NAME = 'plan-history';
/** How long a reconcile waits for the control plane's kind to be listed before it leaves the pruning for later. */
const CONTROL_PLANE_SYNC_MS = 10_000;
/** When an owner could not be read: try again after this long. */
const RETRY_MS = 60_000;
/** A plan kept only because an owner still names it as pause holder: look again after this long (the control plane's
 * kind is not watched here; MachineDeployments are). */
const PINNED_RECHECK_MS = 30_000;
/** MachineUpdate deletes in flight at once when a finished plan's records go. */
const DELETES_IN_FLIGHT = 8;

interface HistoryDeps {
  mgr: Manager;
  plans: Store<InPlaceUpdatePlan & KubeObject>;
  machineUpdates: Store<MachineUpdate & KubeObject>;
  machineDeployments: Store;
  machines: Store;
  clusters: Store;
  /** The per-cluster caches behind machines and machineUpdates (shared with the plan controller). */
  scopes?: ClusterScopes;
  /** Per cluster key: the plans of the last clone sweep (a sweep runs again only when they changed). */
  swept: Map<string, string>;
  limit: number;
  prunePlans: boolean;
  /** The current time (RFC 3339). */
  now: () => string;
}

/** How the history reconciler keeps the history (history.ts). */
export interface HistorySetup {
  /** Finished plans per cluster that keep their MachineUpdates and tasks (`--finished-plans-per-cluster`). */
  limit: number;
  /** Delete user-applied plans beyond the limit too (`--prune-finished-plans`; default false: only their records go). */
  prunePlans?: boolean;
}

/** Registers the history reconciler: prunes old finished plans' records, and plans that opted in or were allowed (history.ts). */
export function setupHistoryController(mgr: Manager, setup: HistorySetup): Controller {
  const scopes = clusterScopesOf(mgr);
  const deps: HistoryDeps = {
    mgr,
    limit: setup.limit,
    prunePlans: setup.prunePlans === true,
    now: () => new Date().toISOString(),
    plans: mgr.informer<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans).store,
    machineUpdates: scopes.machineUpdates.store,
    machineDeployments: mgr.informer(MachineDeployments).store,
    machines: scopes.machines.store,
    clusters: mgr.informer(Clusters).store,
    scopes,
    swept: new Map(),
  };
  return (
    mgr
      .controller(HISTORY_CONTROLLER_NAME)
      // Keyed by cluster: a Cluster's key is its own; a plan maps to its cluster's key (the Cluster need not exist).
      .for(Clusters)
      .watches<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, (p) =>
        p.spec?.clusterName ? [{ ...(p.metadata.namespace ? { namespace: p.metadata.namespace } : {}), name: p.spec.clusterName }] : [],
      )
      // An owner that lets go of its pause holder (unpaused after alignment) frees that plan's records for pruning.
      .watches(MachineDeployments, (md) => {
        const cluster = (md.spec as { clusterName?: string } | undefined)?.clusterName ?? md.metadata.labels?.[Labels.clusterName];
        return cluster ? [{ ...(md.metadata.namespace ? { namespace: md.metadata.namespace } : {}), name: cluster }] : [];
      })
      .reconcile((key, ctx) => reconcileHistory(deps, key, ctx.log))
  );
}

/** Prunes one cluster's history (level-based: from the informer's plans and MachineUpdates). */
export async function reconcileHistory(deps: HistoryDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const ns = key.namespace ?? '';
  const plans = plansOfCluster(deps.plans, ns, key.name);
  const opts: HistoryOptions = { limit: deps.limit, prunePlans: deps.prunePlans, now: deps.now() };
  // The cluster's MachineUpdates and Machines are read only for records to prune or a clone sweep: then it is held.
  const { pruneRecords } = decideHistory(plans, opts);
  const needsCaches = pruneRecords.length > 0 || sweepDue(deps, key, plans, pruneRecords);
  const hold = needsCaches ? deps.scopes?.enter(ns, key.name) : undefined;
  try {
    if (hold) await heldReady(hold, ns, key.name);
    return await pruneHistory(deps, key, log, opts);
  } finally {
    hold?.end();
  }
}

/** The history decision and its deletes (records, plans, clones), from the cluster's plans and cached records. */
async function pruneHistory(deps: HistoryDeps, key: ObjectKey, log: Logger, opts: HistoryOptions): Promise<Action> {
  const ns = key.namespace ?? '';
  const plans = plansOfCluster(deps.plans, ns, key.name);
  const recordsOf = (name: string): (MachineUpdate & KubeObject)[] => {
    const plan = deps.plans.peek(ns, name);
    // Only the plan's own records (the controller owner's uid): never another plan's of the same name.
    // The plan-name label is indexed: no pass over every MachineUpdate of the namespace on each plan change.
    return deps.machineUpdates
      .byLabel(Labels.planName, labelValue(name), ns)
      .filter((m) => m.spec?.planName === name && m.metadata.ownerReferences?.some((r) => r.controller && r.uid === plan?.metadata.uid));
  };
  const work = (d: ReturnType<typeof decideHistory>): boolean =>
    d.prune.length > 0 || d.pruneRecords.some((name) => recordsOf(name).some((m) => !m.metadata.deletionTimestamp));
  // Owners are read only when something would go (the common reconcile is a filter over the cluster's plans).
  const first = decideHistory(plans, opts);
  if (!work(first)) {
    if (sweepDue(deps, key, plans, first.pruneRecords)) {
      const owners = await clusterOwners(deps, ns, key.name);
      if (!owners) return Action.requeue(RETRY_MS);
      await sweepClones(deps, key, { plans, pruneRecords: first.pruneRecords, owners }, log);
    }
    return next(first);
  }
  const owners = await clusterOwners(deps, ns, key.name);
  if (!owners) return Action.requeue(RETRY_MS);
  const pinned = new Set(owners.map(pausedByPlan).filter((n): n is string => !!n));
  const d = decideHistory(plans, opts, pinned);

  for (const name of d.pruneRecords) {
    const records = recordsOf(name).filter((m) => !m.metadata.deletionTimestamp);
    let deleted = 0;
    // A plan of 10,000 machines has as many records: a few deletes in flight, not one at a time.
    await forEachLimit(records, DELETES_IN_FLIGHT, async (m) => {
      if (await deleteIfSame(deps, MachineUpdates, ns, m.metadata.name!, m.metadata.uid)) deleted++;
    });
    if (deleted === 0) continue;
    log.info(
      { cluster: key.name, plan: name, machineUpdates: deleted, limit: deps.limit },
      'deleted the MachineUpdates of a finished plan',
    );
    const plan = deps.plans.peek(ns, name);
    if (plan) deps.mgr.events.event(plan, 'Normal', PlanEventReasons.machineUpdatesPruned, recordsPrunedMessage(deleted, deps.limit));
  }

  const deleted: PlanToPrune[] = [];
  for (const p of d.prune) if (await deleteIfSame(deps, InPlaceUpdatePlans, ns, p.name, p.uid)) deleted.push(p);
  if (deleted.length > 0) {
    log.info({ cluster: key.name, deleted: deleted.map((p) => `${p.name} (${p.why})`), limit: deps.limit }, 'deleted finished plans');
    const newest = d.newestFinished ? deps.plans.peek(ns, d.newestFinished) : undefined;
    if (newest) deps.mgr.events.event(newest, 'Normal', PlanEventReasons.pruned, prunedMessage(deleted, deps.limit));
  }
  if (sweepDue(deps, key, plansOfCluster(deps.plans, ns, key.name), d.pruneRecords))
    await sweepClones(deps, key, { plans, pruneRecords: d.pruneRecords, owners }, log);
  // Something held back only by a pause holder: the control plane that holds it is not watched here, so look again.
  const held = first.prune.length + first.pruneRecords.length > d.prune.length + d.pruneRecords.length;
  const action = next(d);
  return held && (d.requeueAfterMs === undefined || d.requeueAfterMs > PINNED_RECHECK_MS) ? Action.requeue(PINNED_RECHECK_MS) : action;
}

/** Waits for a change, or for the next TTL to fall due. */
const next = (d: { requeueAfterMs?: number }): Action =>
  d.requeueAfterMs !== undefined ? Action.requeue(Math.max(1000, Math.ceil(d.requeueAfterMs))) : Action.awaitChange();

/** Deletes an object if it is still the one decided on (uid precondition); false when it is gone or was replaced. */
async function deleteIfSame(
  deps: HistoryDeps,
  res: typeof InPlaceUpdatePlans | typeof MachineUpdates,
  ns: string,
  name: string,
  uid: string | undefined,
): Promise<boolean> {
  try {
    await deps.mgr.client.delete(res, ns, name, { ...(uid ? { preconditions: { uid } } : {}), propagationPolicy: 'Background' });
    return true;
  } catch (err) {
    // Gone already, or a new object under the same name (uid precondition): nothing of ours to delete.
    if (!isNotFound(err) && !isConflict(err)) throw err;
    return false;
  }
}

/**
 * The cluster's owners: the namespace's MachineDeployments and the cluster's control plane; undefined when the control
 * plane's kind could not be read in time. Their pause holders pin plans; their templates keep clones.
 */
async function clusterOwners(deps: HistoryDeps, ns: string, clusterName: string): Promise<KubeObject[] | undefined> {
  const owners: KubeObject[] = [...deps.machineDeployments.list(ns)];
  const ref = deps.clusters.peek(ns, clusterName) ? clusterControlPlaneRef(deps.clusters.peek(ns, clusterName)!) : undefined;
  if (ref?.name) {
    try {
      const res = await deps.mgr.client.resolve(ref.apiGroup, ref.kind);
      const informer = deps.mgr.informer(res);
      if (!(await settlesWithin(informer.synced(), CONTROL_PLANE_SYNC_MS))) return undefined;
      const cp = informer.store.peek(ns, ref.name);
      if (cp) owners.push(cp);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return owners;
}

/** What a clone sweep is keyed on: the cluster's plans and which of them lost their records. */
const sweepSignature = (plans: readonly InPlaceUpdatePlan[], pruneRecords: readonly string[]): string =>
  JSON.stringify([plans.map((p) => `${p.metadata?.name ?? ''}/${p.metadata?.uid ?? ''}`).sort(), [...pruneRecords].sort()]);

/**
 * True when the cluster's clones should be swept now: some finished plan lost its records (or plans were deleted since
 * the last sweep), no plan of the cluster is in flight, and the plans changed since the last sweep (level-based: after
 * a restart every such cluster is swept once).
 */
function sweepDue(deps: HistoryDeps, key: ObjectKey, plans: readonly InPlaceUpdatePlan[], pruneRecords: readonly string[]): boolean {
  const id = `${key.namespace ?? ''}/${key.name}`;
  const last = deps.swept.get(id);
  if (pruneRecords.length === 0 && last === undefined) return false;
  if (plans.some((p) => finishedAt(p) === undefined && !p.metadata?.deletionTimestamp)) return false;
  return last !== sweepSignature(plans, pruneRecords);
}

/** Deletes the cluster's clones of plans that are gone or lost their records, where nothing refers to them (clones.ts). */
async function sweepClones(
  deps: HistoryDeps,
  key: ObjectKey,
  seen: { plans: readonly InPlaceUpdatePlan[]; pruneRecords: readonly string[]; owners: readonly KubeObject[] },
  log: Logger,
): Promise<void> {
  const { plans, pruneRecords, owners } = seen;
  const ns = key.namespace ?? '';
  const gone = new Set(pruneRecords);
  const livePlans = new Set(
    deps.plans
      .list(ns)
      .filter((p) => !p.metadata.deletionTimestamp && !gone.has(p.metadata.name ?? ''))
      .map((p) => p.metadata.name ?? ''),
  );
  const machines = deps.machines.byLabel(Labels.clusterName, key.name, ns);
  await collectClones({ client: deps.mgr.client }, { namespace: ns, clusterName: key.name, livePlans, owners, machines }, log);
  deps.swept.set(`${ns}/${key.name}`, sweepSignature(plans, pruneRecords));
}
