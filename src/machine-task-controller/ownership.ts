// Only plans drive machines: a MachineUpdate is acted on only when an existing InPlaceUpdatePlan controls it and
// that plan labelled the machine. Anyone allowed to create MachineUpdates could otherwise run updaters and write
// CAPI objects through the platform's service account. The one other way in is Cluster API's own in-place update
// (the runtime extension's MachineUpdates): controlled by the Machine itself, labelled as requested by the runtime
// extension, while Cluster API has the Machine in update. Pure: decides from the cached objects.
import {
  Annotations,
  GROUP,
  InPlaceUpdatePlans,
  Labels,
  REQUESTED_BY_RUNTIME_EXTENSION,
  type KubeObject,
  type OwnerReference,
} from '../api/index.js';
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
  if (owner && isMachineRef(owner)) return hookRequestProblem(mu, owner, machine);
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

const isMachineRef = (r: OwnerReference): boolean => r.kind === 'Machine' && r.apiVersion.startsWith('cluster.x-k8s.io/');

/**
 * Why a MachineUpdate controlled by a Machine must not be acted on (undefined when it may): it must be the runtime
 * extension's (label), for its own machine (name and uid), and Cluster API must have that machine in an in-place
 * update (its update-in-progress annotation, which only who may write Machines can set). A missing machine is refused:
 * the uid cannot be checked, and the garbage collector removes the MachineUpdate with its owner.
 */
export function hookRequestProblem(mu: MachineUpdateObject, owner: OwnerReference, machine: KubeObject | undefined): string | undefined {
  const prefix = "not acted on: a MachineUpdate controlled by a Machine is Cluster API's in-place update through the runtime extension";
  if (mu.metadata.labels?.[Labels.requestedBy] !== REQUESTED_BY_RUNTIME_EXTENSION)
    return `${prefix}, and it lacks the label ${Labels.requestedBy}=${REQUESTED_BY_RUNTIME_EXTENSION}`;
  if (owner.name !== mu.spec.machineRef.name)
    return `${prefix}, and its controller Machine ${owner.name} is not spec.machineRef ${mu.spec.machineRef.name}`;
  if (!machine) return `${prefix}, and Machine ${owner.name} does not exist`;
  if (machine.metadata.uid !== owner.uid)
    return `${prefix}, and Machine ${owner.name} is not the machine that owns it (uid ${machine.metadata.uid ?? '(none)'}, owner reference uid ${owner.uid})`;
  if (machine.metadata.annotations?.[Annotations.capiUpdateInProgress] === undefined)
    return `${prefix}, and Machine ${owner.name} is not in an in-place update (no ${Annotations.capiUpdateInProgress} annotation)`;
  return undefined;
}
