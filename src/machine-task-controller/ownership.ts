// Only plans drive machines: a MachineUpdate is acted on only when an existing InPlaceUpdatePlan controls it and
// that plan labelled the machine. Anyone allowed to create MachineUpdates could otherwise run updaters and write
// CAPI objects through the platform's service account. Pure: decides from the cached objects.
import { GROUP, InPlaceUpdatePlans, Labels, type KubeObject } from '../api/index.js';
import { toLabelValue } from '../contract/index.js';
import type { MachineUpdateObject } from './scope.js';

/** The plan that controls a MachineUpdate according to its ownerReferences (name and uid), if any. */
export function controllingPlanRef(mu: KubeObject): { name: string; uid: string } | undefined {
  const ref = mu.metadata.ownerReferences?.find((r) => r.controller);
  if (!ref || ref.kind !== InPlaceUpdatePlans.kind || !ref.apiVersion.startsWith(`${GROUP}/`)) return undefined;
  return { name: ref.name, uid: ref.uid };
}

/**
 * Why the controller must not act on `mu` (undefined when it may): no controlling InPlaceUpdatePlan, the plan does
 * not exist (or is another object under the same name: the uid differs), spec.planName names another plan, or the
 * machine does not carry the plan's label. `plan` is the plan named by the owner reference, looked up in the same
 * namespace; `machine` the Machine (a missing machine is not a problem here: the update then aborts without tasks).
 */
export function ownershipProblem(
  mu: MachineUpdateObject,
  plan: KubeObject | undefined,
  machine: KubeObject | undefined,
): string | undefined {
  const ref = controllingPlanRef(mu);
  const owner = mu.metadata.ownerReferences?.find((r) => r.controller);
  if (!ref) {
    const what = owner ? `its controller is ${owner.kind} ${owner.name}` : 'it has no controller ownerReference';
    return `not acted on: MachineUpdates are created by InPlaceUpdatePlans only, and ${what}`;
  }
  if (!plan) return `not acted on: its controlling InPlaceUpdatePlan ${ref.name} does not exist`;
  if (plan.metadata.uid !== ref.uid)
    return `not acted on: InPlaceUpdatePlan ${ref.name} is not the plan that owns it (uid ${plan.metadata.uid ?? '(none)'}, owner reference uid ${ref.uid})`;
  if (mu.spec.planName !== ref.name) return `not acted on: spec.planName ${mu.spec.planName} is not its controlling plan ${ref.name}`;
  if (machine && machine.metadata.labels?.[Labels.planName] !== toLabelValue(ref.name)) {
    return `not acted on: Machine ${machine.metadata.name ?? ''} does not carry the label ${Labels.planName}=${toLabelValue(ref.name)} of plan ${ref.name}`;
  }
  return undefined;
}
