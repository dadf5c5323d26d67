// The plan controller component (DESIGN §4.1): validates InPlaceUpdatePlans, supersedes older plans of a cluster,
// sequences the control plane before the MachineDeployments, starts machines within health and availability budgets
// (MachineUpdates), propagates aborts, and reports per-target and plan status.
//
// Plan conditions: Valid (False lists every problem), ControlPlaneUpdate, MachineDeploymentUpdate, Paused, and Ready
// (True only when the plan is updated; `kubectl wait --for=condition=Ready inplaceupdateplan/<name>`).
// A MachineDeployment with the OnDelete strategy makes the plan invalid: OnDelete machines are never updated in place.
import type { Component, PolicyRule } from '../runtime/types.js';
import { CONTROLLER_NAME, setupPlanController } from './controller.js';
import { rbac } from './rbac.js';

export { rbac } from './rbac.js';
export { CONTROLLER_NAME } from './controller.js';
export { previewPlan, impossiblePathReason } from './preview.js';
export type { PlanPreview, PreviewSnapshot, PreviewGroup, PreviewTarget, PreviewMachine, PreviewUpdater, PreviewConcurrency, PreviewCoverage, UncoveredChange, ImpossiblePath, OpenApiSchema } from './preview.js';
export { validatePlan } from './validate.js';
export { machineUpdateName, labelValue } from './names.js';
export type { TemplateLookup, TemplateRef, ControlPlaneLookup, ValidationInput } from './scope.js';

/** Options of the component. */
export interface PlanControllerOptions {
  /** RBAC rules for third-party template kinds or control-plane kinds the plans name (read access). */
  extraRbac?: PolicyRule[];
}

/** The component with extra RBAC for third-party template or control-plane kinds. */
export function createPlanController(opts: PlanControllerOptions = {}): Component {
  return {
    name: CONTROLLER_NAME,
    rbac: [...rbac, ...(opts.extraRbac ?? [])],
    setup(mgr) {
      setupPlanController(mgr);
    },
  };
}

/** The plan controller as deployed by default (KubeadmControlPlane, sample template kinds). */
export const planController: Component = createPlanController();
