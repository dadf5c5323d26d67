// The writes to a plan's MachineDeployments and their template clones: the surge for maxUnavailable 0 and its
// restore, and the collection of clones nothing refers to once a deleted plan has nothing left to undo.
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import { MachineDeployments } from '../../api/index.js';
import type { Logger } from '../../runtime/pure/types.js';
import type { PlanDeps } from '../deps.js';
import type { PlanDecision } from '../decide/types.js';
import { finishedAt } from '../history/history.js';
import { collectClones } from '../owners/clones-act.js';
import type { PlanSnapshot } from '../scope.js';
import { FIELD_MANAGER, ignoreNotFound } from './writes.js';

/** Surge: scales a MachineDeployment up by one for maxUnavailable 0, or restores it (guarded by resourceVersion). */
export async function reconcileSurge(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: Readonly<PlanDecision>,
  log: Logger,
): Promise<void> {
  const ns = plan.metadata.namespace ?? '';
  for (const s of d.scale) {
    const body: Record<string, unknown> = {
      metadata: { ...(s.resourceVersion ? { resourceVersion: s.resourceVersion } : {}), annotations: s.annotations },
    };
    if (s.replicas !== undefined) body['spec'] = { replicas: s.replicas };
    await ignoreNotFound(deps.client.patch(MachineDeployments, ns, s.name, body, { type: 'merge', fieldManager: FIELD_MANAGER }));
    log.info(
      { machineDeployment: s.name, replicas: s.replicas, kind: s.kind },
      s.kind === 'surge' ? 'surged MachineDeployment' : 'restored MachineDeployment',
    );
  }
}

/**
 * Template clones: once a deleted plan has nothing left to undo (its finalizer is released in this reconcile), the
 * cluster's clones whose plan is gone and that nothing refers to are deleted (clones.ts), before the finalizer goes.
 */
export async function reconcileClones(deps: PlanDeps, snap: PlanSnapshot, d: Readonly<PlanDecision>, log: Logger): Promise<void> {
  if (d.finalizer !== 'remove') return;
  const ns = snap.plan.metadata?.namespace ?? '';
  // A plan of the cluster in flight may be about to name a clone an older plan created (names are content-addressed):
  // the history reconciler sweeps once the cluster is quiet.
  const inFlight = deps.plans
    .list(ns)
    .some((p) => p.spec?.clusterName === snap.plan.spec.clusterName && !p.metadata.deletionTimestamp && finishedAt(p) === undefined);
  if (inFlight) return;
  const livePlans = new Set(
    deps.plans
      .list(ns)
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => p.metadata.name ?? ''),
  );
  const cp = snap.controlPlane?.object;
  await collectClones(
    { client: deps.client },
    {
      namespace: ns,
      clusterName: snap.plan.spec.clusterName,
      livePlans,
      owners: [...deps.machineDeployments.list(ns), ...(cp ? [cp] : [])],
      machines: snap.machines,
    },
    log,
  );
}
