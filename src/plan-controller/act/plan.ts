// The writes to plans: supersede older plans of the cluster, add the finalizer before anything is touched, and the one
// status patch (with the finalizer's release last, once a deletion has nothing left to undo).
import type { InPlaceUpdatePlan, InPlaceUpdatePlanStatus, KubeObject } from '../../api/index.js';
import { Finalizers, InPlaceUpdatePlans, PlanAnnotations, UpdatePhase } from '../../api/index.js';
import { snapshot as patchSnapshot } from '../../runtime/patch.js';
import type { Logger } from '../../runtime/pure/types.js';
import type { PlanDeps } from '../deps.js';
import type { PlanDecision } from '../decide/types.js';
import { FIELD_MANAGER, ignoreNotFound } from './writes.js';

/** Supersede: moves every older active plan of the cluster to aborting, naming this plan. */
export async function reconcileSupersede(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: Readonly<PlanDecision>,
  log: Logger,
): Promise<void> {
  const ns = plan.metadata.namespace ?? '';
  const name = plan.metadata.name ?? '';
  for (const other of d.supersede) {
    await ignoreNotFound(
      deps.client.patch(
        InPlaceUpdatePlans,
        ns,
        other,
        { metadata: { annotations: { [PlanAnnotations.supersededBy]: name } }, spec: { updatePhase: UpdatePhase.aborting } },
        { type: 'merge', fieldManager: FIELD_MANAGER },
      ),
    );
    log.info({ superseded: other }, 'superseded an older plan of the cluster');
  }
}

/** Finalizer: added before anything is touched, so that a deletion can always undo what the plan did. Returns the plan as written. */
export async function reconcileFinalizer(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: Readonly<PlanDecision>,
): Promise<InPlaceUpdatePlan & KubeObject> {
  if (d.finalizer !== 'add') return plan;
  const ph = patchSnapshot(plan);
  plan.metadata.finalizers = [...(plan.metadata.finalizers ?? []), Finalizers.plan];
  return ph.apply(deps.client, InPlaceUpdatePlans, plan, { fieldManager: FIELD_MANAGER });
}

/** What the status write sends: the status, and the finalizer's release when deletion has nothing left to undo. */
export interface StatusWrite {
  readonly status: InPlaceUpdatePlanStatus;
  readonly finalizer?: 'add' | 'remove';
}

/** The one status write (and the finalizer release, last, once deletion has nothing left to undo). Returns the plan as written. */
export async function reconcileStatus(
  deps: Pick<PlanDeps, 'client'>,
  plan: InPlaceUpdatePlan & KubeObject,
  w: StatusWrite,
): Promise<InPlaceUpdatePlan & KubeObject> {
  const ph = patchSnapshot(plan);
  // A shallow copy (nothing below mutates it): apply diffs it against the snapshot once and sends nothing when nothing
  // changed, instead of a deep copy of the plan and a check that computed the same diff first (300 targets' rows).
  const next: InPlaceUpdatePlan & KubeObject = { ...plan, status: w.status };
  if (w.finalizer === 'remove')
    next.metadata = { ...plan.metadata, finalizers: (plan.metadata.finalizers ?? []).filter((f) => f !== Finalizers.plan) };
  const written = await ph.apply(deps.client, InPlaceUpdatePlans, next, { fieldManager: FIELD_MANAGER });
  // Unchanged: the plan as read (the caller tells a write by identity).
  return written === next ? plan : written;
}
