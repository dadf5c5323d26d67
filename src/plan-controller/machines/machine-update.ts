// The MachineUpdate that starts one machine's update (contract C1), built from the decision's intent: owned by the
// plan, labelled for the machine task controller, carrying the node's boot before the update and the values the
// commit will overwrite.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { API_VERSION, InPlaceUpdatePlans, Labels, MachineUpdates, UpdatePhase } from '../../api/index.js';
import { previousValues, type RefLookup } from '../../rules/at-target.js';
import { BOOT_ID_BEFORE_ANNOTATION, bootIdBefore } from '../../rules/gates.js';
import type { MachineUpdateIntent } from '../decide/types.js';
import { labelValue } from '../decide/names.js';

/** The MachineUpdate that starts one machine's update, owned by the plan. */
export function machineUpdateFor(
  plan: InPlaceUpdatePlan & KubeObject,
  c: MachineUpdateIntent,
  machine: KubeObject | undefined,
  refs: RefLookup | undefined,
): MachineUpdate & KubeObject {
  const bootId = bootIdBefore(machine);
  // The values the commit will overwrite, from the caches the machines-at-target check read (contract C8: a
  // one-object commit still at them needs no journal write). Without those caches only the Machine's are recorded.
  const previous = previousValues(machine, c.updaters, refs);
  const name = plan.metadata.name ?? '';
  return {
    apiVersion: API_VERSION,
    kind: MachineUpdates.kind,
    metadata: {
      name: c.name,
      namespace: plan.metadata.namespace ?? '',
      labels: {
        [Labels.clusterName]: plan.spec.clusterName,
        [Labels.planName]: labelValue(name),
        [Labels.machineName]: labelValue(c.machine),
        [Labels.targetName]: labelValue(c.target.name),
      },
      // The node's boot before the update, for an updater's verify.reboot (gates.ts).
      ...(bootId !== undefined ? { annotations: { [BOOT_ID_BEFORE_ANNOTATION]: bootId } } : {}),
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: InPlaceUpdatePlans.kind,
          name,
          uid: plan.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      planName: name,
      clusterName: plan.spec.clusterName,
      target: c.target,
      machineRef: { name: c.machine },
      updatePhase: UpdatePhase.updating,
      updaters: c.updaters,
      ...(previous ? { previous } : {}),
    },
  };
}
