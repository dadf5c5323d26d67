// The history reconciler: one key per cluster (namespace/clusterName). Reads the cluster's plans from the informer,
// lets history.ts decide which finished plans go, deletes them with a uid precondition, and records one Event on the
// newest finished plan (the deleted plans are gone; that plan stays). MachineUpdates and tasks follow their plan
// through ownerReferences (garbage collection); the plan's finalizer is released by the plan controller, which sees a
// deleted terminal plan with nothing left to undo.
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { Clusters, InPlaceUpdatePlans, MachineDeployments, PlanEventReasons } from '../api/index.js';
import { clusterControlPlaneRef } from '../api/capi/index.js';
import { isConflict, isNotFound } from '../runtime/pure/errors.js';
import type { Controller, Logger, Manager, ObjectKey, Store } from '../runtime/pure/types.js';
import { Action } from '../runtime/pure/types.js';
import { pausedByPlan } from './owners.js';
import type { PlanToPrune } from './history.js';
import { pruneFinishedPlans, prunedMessage } from './history.js';
import { settlesWithin } from '../runtime/parallel.js';

/** Name of the history reconciler (its log name). */
export const HISTORY_CONTROLLER_NAME = 'plan-history';
/** How long a reconcile waits for the control plane's kind to be listed before it leaves the pruning for later. */
const CONTROL_PLANE_SYNC_MS = 10_000;
/** When an owner could not be read: try again after this long. */
const RETRY_MS = 60_000;

interface HistoryDeps {
  mgr: Manager;
  plans: Store<InPlaceUpdatePlan & KubeObject>;
  machineDeployments: Store;
  clusters: Store;
  limit: number;
}

/** Registers the history reconciler: keeps at most `limit` finished plans per cluster (history.ts). */
export function setupHistoryController(mgr: Manager, limit: number): Controller {
  const deps: HistoryDeps = {
    mgr,
    limit,
    plans: mgr.informer<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans).store,
    machineDeployments: mgr.informer(MachineDeployments).store,
    clusters: mgr.informer(Clusters).store,
  };
  return (
    mgr
      .controller(HISTORY_CONTROLLER_NAME)
      // Keyed by cluster: a Cluster's key is its own; a plan maps to its cluster's key (the Cluster need not exist).
      .for(Clusters)
      .watches<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, (p) =>
        p.spec?.clusterName ? [{ ...(p.metadata.namespace ? { namespace: p.metadata.namespace } : {}), name: p.spec.clusterName }] : [],
      )
      .reconcile((key, ctx) => reconcileHistory(deps, key, ctx.log))
  );
}

/** Deletes the finished plans of one cluster beyond the limit (level-based: from the informer's plans). */
export async function reconcileHistory(deps: HistoryDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const ns = key.namespace ?? '';
  const plans = deps.plans.list(ns).filter((p) => p.spec?.clusterName === key.name);
  // Owners are read only when something would go (the common reconcile is a filter over the cluster's plans).
  if (pruneFinishedPlans(plans, deps.limit).prune.length === 0) return Action.awaitChange();
  const pinned = await pausingPlans(deps, ns, key.name);
  if (!pinned) return Action.requeue(RETRY_MS);
  const d = pruneFinishedPlans(plans, deps.limit, pinned);
  const deleted: PlanToPrune[] = [];
  for (const p of d.prune) {
    try {
      await deps.mgr.client.delete(InPlaceUpdatePlans, ns, p.name, { preconditions: { uid: p.uid }, propagationPolicy: 'Background' });
      deleted.push(p);
    } catch (err) {
      // Gone already, or a new plan under the same name (uid precondition): nothing of ours to delete.
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
  if (deleted.length === 0) return Action.awaitChange();
  log.info(
    { cluster: key.name, deleted: deleted.map((p) => p.name), limit: deps.limit },
    'deleted finished plans beyond the history limit',
  );
  const newest = d.newestFinished ? deps.plans.peek(ns, d.newestFinished) : undefined;
  if (newest) deps.mgr.events.event(newest, 'Normal', PlanEventReasons.pruned, prunedMessage(deleted, deps.limit));
  return Action.awaitChange();
}

/**
 * Plans an owner of the cluster still names as its pause holder (MachineDeployments of the namespace and the cluster's
 * control plane); undefined when the control plane's kind could not be read in time.
 */
async function pausingPlans(deps: HistoryDeps, ns: string, clusterName: string): Promise<Set<string> | undefined> {
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
  return new Set(owners.map(pausedByPlan).filter((n): n is string => !!n));
}
