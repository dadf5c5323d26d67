// The plan controller component (docs/design.md §4.1): validates InPlaceUpdatePlans, supersedes older plans of a cluster,
// sequences the control plane before the MachineDeployments, starts machines within health and availability budgets
// (MachineUpdates), propagates aborts, and reports per-target and plan status.
//
// Plan conditions: Valid (False lists every problem), ControlPlaneUpdate, MachineDeploymentUpdate, Paused, OwnersAligned, and Ready
// (True only when the plan is updated; `kubectl wait --for=condition=Ready inplaceupdateplan/<name>`).
//
// Behaviour where docs/design.md leaves a choice:
// * A MachineDeployment with the OnDelete strategy makes the plan invalid (nothing touched): OnDelete machines are
//   never updated in place. An invalid plan is re-validated on every change (and every 15 s) and starts once valid.
//   A plan that becomes invalid after it started (e.g. a MachineDeployment deleted) starts no new machine; in-flight
//   machines finish.
// * Plan age is creationTimestamp, then name (timestamps have second precision). Only a valid, unpaused, updating
//   plan supersedes older plans: an invalid or paused plan touches nothing, including other plans.
// * A superseded plan carries the annotation inplace.cluster.x-k8s.io/superseded-by=<newer plan>.
// * maxUnavailable follows CAPI/Kubernetes: percentages of spec.replicas round down; when maxUnavailable and
//   maxSurge both resolve to 0, one machine at a time. maxUnavailable 0 (CAPI's default) surges the
//   MachineDeployment by one (original replicas in annotation surge-original-replicas) and restores it once nothing
//   more will start in the target; a replica count changed by someone else meanwhile is left alone.
// * Terminal plan statuses are final: machines that appear after a plan ended are not the plan's concern. A finished
//   plan is woken by Machine / MachineDeployment / Cluster / other plans' events only while it still holds something
//   (labels, a surge, its finalizer on deletion, a failed alignment; wake.ts), so kept plans cost no CPU.
// * A deleted plan (by the operator or the history limit) deletes the cluster's template clones whose plan is gone and
//   that nothing refers to any more (clones.ts), before its finalizer goes.
// * A failed or aborted MachineUpdate is never restarted by the same plan; a machine that is deleted mid-update has
//   its MachineUpdate moved to aborting and no longer counts.
// * Next to real Cluster API (owners.ts, docs/design.md §11): a target's KubeadmControlPlane / MachineDeployment is paused
//   (cluster.x-k8s.io/paused + inplace.cluster.x-k8s.io/paused-by-plan) before its first machine starts — except a
//   surging MachineDeployment, which must scale; when the target is updated the plan clones the infrastructure /
//   bootstrap templates, aligns the MachineSets owning the machines, the InfraMachines' cloned-from-name and the
//   owner's spec, and lifts its own pause (never an operator's). A stopped target whose machines are mixed keeps its
//   owner paused (condition OwnersAligned=False reason MixedMachines); a retry plan takes the pause over. ClusterClass
//   topologies and responsibilities no owner field can carry make the plan invalid.
import type { AlertGatePolicy, WritePolicy } from '../api/index.js';
import type { ProviderResource } from '../runtime/rbac.js';
import type { Component, PolicyRule } from '../runtime/pure/types.js';
import { CONTROLLER_NAME, setupPlanController } from './controller.js';
import { rbacFor } from './rbac.js';
import { setupHistoryController } from './history/history-controller.js';
import { DEFAULT_FINISHED_PLANS_PER_CLUSTER } from './history/history.js';

export { rbac, baseRbac, rbacFor, PROVIDER_VERBS } from './rbac.js';
export { CONTROLLER_NAME } from './controller.js';
export { previewPlan, impossiblePathReason } from '../rules/preview.js';
export type {
  PlanPreview,
  PreviewSnapshot,
  PreviewGroup,
  PreviewTarget,
  PreviewMachine,
  PreviewUpdater,
  PreviewConcurrency,
  PreviewCoverage,
  UncoveredChange,
  ImpossiblePath,
  OpenApiSchema,
} from '../rules/preview.js';
export { validatePlan } from '../rules/validate.js';
export { dryRunCommits, prestartCheck } from '../effects/prestart.js';
export { prestartResult } from '../rules/preview.js';
export {
  OWNERS_ALIGNED,
  OwnerReasons,
  OwnerEventReasons,
  PAUSED_BY_PLAN,
  CLONED_BY_PLAN,
  CLONED_FROM_NAME,
  ownerFieldFor,
  ownerProblems,
  previewOwnerChanges,
} from '../rules/owners.js';
export type { OwnerField, OwnerChangePreview } from '../rules/owners.js';
export { machineUpdateName, labelValue } from './decide/names.js';
export { CAMPAIGN_KIND, DEFAULT_FINISHED_PLANS_PER_CLUSTER, createdByCampaign } from './history/history.js';
export type { TemplateLookup, TemplateRef, ControlPlaneLookup, ValidationInput } from '../rules/inputs.js';

/** Options of the component. */
export interface PlanControllerOptions {
  /** RBAC rules for third-party template kinds the plans name (read access). */
  extraRbac?: PolicyRule[];
  /** The write policy plans are validated against (`inplace run --write-policy`; default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** Which alert endpoints and Secrets plans may use (`inplace run --alert-gate-policy`); default none: gates refused. */
  alertGatePolicy?: AlertGatePolicy;
  /** The fleet's provider kinds (the control-plane kinds are read); default DEFAULT_PROVIDERS. */
  providers?: readonly ProviderResource[];
  /** Finished plans per cluster that keep their MachineUpdates and tasks (`--finished-plans-per-cluster`; default 3; history.ts). */
  finishedPlansPerCluster?: number;
  /** Delete user-applied plans beyond that limit too (`--prune-finished-plans`; default false: the plans stay; history.ts). */
  pruneFinishedPlans?: boolean;
}

/** The component with RBAC for the fleet's provider kinds and extra RBAC for third-party template kinds. */
export function createPlanController(opts: PlanControllerOptions = {}): Component {
  return {
    name: CONTROLLER_NAME,
    rbac: [...rbacFor(opts.providers), ...(opts.extraRbac ?? [])],
    setup(mgr) {
      setupPlanController(mgr, {
        ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
        ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
      });
      setupHistoryController(mgr, {
        limit: opts.finishedPlansPerCluster ?? DEFAULT_FINISHED_PLANS_PER_CLUSTER,
        prunePlans: opts.pruneFinishedPlans === true,
      });
    },
  };
}

/** The plan controller as deployed by default (KubeadmControlPlane, sample template kinds). */
export const planController: Component = createPlanController();
