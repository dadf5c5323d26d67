// Which plans an event on a Machine, MachineDeployment, Cluster or another plan wakes. Waking every plan of the cluster
// made the plan controller's CPU per plan grow with the number of kept (finished) plans: a finished plan reconciled on
// every machine event of the cluster, to decide nothing. A plan is woken by such events only while it can still act;
// its own events (the For watch) and its MachineUpdates' events (Owns) always reconcile it.
//
// What a terminal plan (updated, failed, aborted) still does in decidePlan / actOwners, and so what keeps it awake:
// * a MachineDeployment surge to restore (surge-original-replicas with surge-plan naming it, or no surge-plan: legacy);
// * machines carrying its plan label (unlabel). A machine in update carries it (labelled before its MachineUpdate is
//   created, unlabelled only once not in update), and the plan's MachineUpdates wake it through Owns: they are not
//   scanned here (a kept plan's 1,000 MachineUpdates on every machine event cost more CPU than the wake-ups saved);
// * its finalizer to release while it is being deleted (waits for the labels and the surge above);
// * OwnersAligned=False AlignFailed or Aligning: the alignment goes on while no newer plan exists (ownerSteps).
// An owner left paused by a terminal plan (mixed machines) is not acted on by that plan (ownerStep is 'none' once the
// plan is terminal; a newer plan takes the pause over), so it does not keep the plan awake. A terminal plan's
// conditions other than Valid are frozen; Valid is refreshed on the plan's own events only.
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import { Annotations, Finalizers, Labels, isTerminal } from '../../api/index.js';
import type { ObjectKey, Store } from '../../runtime/pure/types.js';
import { clusterLabel, mdClusterName } from '../../api/capi/index.js';
import { labelValue } from '../decide/names.js';
import { alignmentUnfinished } from '../../rules/owners.js';

/** The informer stores the wake-up decision reads (indexed lookups only: it runs on every event). */
export interface WakeView {
  plans: Store<InPlaceUpdatePlan & KubeObject>;
  machines: Store;
  machineDeployments: Store;
}

/** True when the plan may still write something: not terminal, or terminal and still holding something (see above). */
export function planMayAct(plan: InPlaceUpdatePlan & KubeObject, view: WakeView): boolean {
  if (!isTerminal(plan.status?.updateStatus)) return true;
  const ns = plan.metadata.namespace;
  const name = plan.metadata.name ?? '';
  if (plan.metadata.deletionTimestamp && (plan.metadata.finalizers ?? []).includes(Finalizers.plan)) return true;
  if (alignmentUnfinished(plan)) return true;
  const planLabel = labelValue(name);
  if (view.machines.byLabel(Labels.planName, planLabel, ns).length > 0) return true;
  return view.machineDeployments.list(ns).some((md) => {
    if ((mdClusterName(md) ?? clusterLabel(md)) !== plan.spec.clusterName) return false;
    const a = md.metadata.annotations;
    if (a?.[Annotations.surgeOriginalReplicas] === undefined) return false;
    const by = a[Annotations.surgePlan];
    return by === undefined || by === name;
  });
}

const PLANS_BY_OWNER = 'inplace.cluster.x-k8s.io/plans-by-cluster-and-control-plane';
const planOwnerKeys = (p: InPlaceUpdatePlan & KubeObject): readonly string[] => {
  const ns = p.metadata.namespace ?? '';
  const keys: string[] = [];
  if (p.spec?.clusterName) keys.push(`cluster:${ns}/${p.spec.clusterName}`);
  if (p.spec?.controlPlane?.name) keys.push(`cp:${ns}/${p.spec.controlPlane.name}`);
  return keys;
};

/** The cached plans under one key of the plan store's index by cluster and control plane. */
function indexedPlans(plans: Store<InPlaceUpdatePlan & KubeObject>, key: string): (InPlaceUpdatePlan & KubeObject)[] {
  plans.addIndex(PLANS_BY_OWNER, planOwnerKeys);
  return plans.byIndex(PLANS_BY_OWNER, key);
}

/**
 * The cached plans of `clusterName` in `namespace`, through the plan store's index: every Machine event of a fleet's
 * namespace asks this, and filtering every plan of the namespace made each event cost O(clusters).
 */
export const plansOfCluster = (plans: Store<InPlaceUpdatePlan & KubeObject>, namespace: string, clusterName: string) =>
  indexedPlans(plans, `cluster:${namespace}/${clusterName}`);

/** The cached plans whose spec.controlPlane names `name` in `namespace` (the control plane kinds' watch mapper). */
export const plansOfControlPlane = (plans: Store<InPlaceUpdatePlan & KubeObject>, namespace: string, name: string) =>
  indexedPlans(plans, `cp:${namespace}/${name}`);

/** Keys of the plans of `clusterName` in `namespace` that may still act (the mapper of every cluster-wide watch). */
export function plansToWake(view: WakeView, namespace: string | undefined, clusterName: string | undefined): ObjectKey[] {
  if (!namespace || !clusterName) return [];
  return plansOfCluster(view.plans, namespace, clusterName)
    .filter((p) => planMayAct(p, view))
    .map((p) => ({ namespace, name: p.metadata.name! }));
}
