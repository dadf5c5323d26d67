// How the plan counts machines and plans: the machine state of a MachineUpdate, machines grouped by target, the
// supersede order. Pure; shared by the decision phases, the preview, owner alignment and the pre-start checks.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, TargetKind } from '../api/index.js';
import { Labels, UpdateStatus } from '../api/index.js';
import { controlPlaneNameOf, deploymentNameOf, nameOf } from '../api/capi/index.js';

/** How a machine of a target stands in this plan. */
export type MachineState = 'notStarted' | 'inFlight' | 'updated' | 'failed' | 'aborted';

/** Orders names bytewise (the same order on every machine, whatever the locale). */
export const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Orders plans oldest first: creationTimestamp, then name (the supersede order). */
export const planAge = (a: InPlaceUpdatePlan, b: InPlaceUpdatePlan): number =>
  byName(a.metadata?.creationTimestamp ?? '', b.metadata?.creationTimestamp ?? '') ||
  byName(a.metadata?.name ?? '', b.metadata?.name ?? '');

/** The state of a MachineUpdate as the plan counts it. */
export function machineState(mu: MachineUpdate | undefined): MachineState {
  if (!mu) return 'notStarted';
  switch (mu.status?.updateStatus) {
    case UpdateStatus.updated:
      return 'updated';
    case UpdateStatus.failed:
      return 'failed';
    case UpdateStatus.aborted:
      return 'aborted';
    default:
      return 'inFlight';
  }
}

/** Key of a target in the per-target indexes. */
export const targetKey = (kind: TargetKind, name: string): string => `${kind}/${name}`;

/** The target a Machine belongs to by its CAPI labels (control plane first), if any. */
export function targetOfMachine(m: KubeObject): string | undefined {
  const cp = controlPlaneNameOf(m);
  if (cp !== undefined) return targetKey('ControlPlane', cp);
  const md = deploymentNameOf(m);
  return md !== undefined ? targetKey('MachineDeployment', md) : undefined;
}

/** Machines of a cluster grouped by target, each group sorted by name (one pass, whatever the number of targets). */
export function machinesByTarget(clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> {
  const out = groupByTarget(clusterName, machines);
  for (const list of out.values()) list.sort((a, b) => byName(nameOf(a), nameOf(b)));
  return out;
}

/** The target key a machine is grouped under by machinesByTarget (undefined: none). */
export function groupOf(clusterName: string, m: KubeObject): string | undefined {
  const labels = m.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return undefined;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== undefined) return targetKey('ControlPlane', cp);
  const md = labels[Labels.deploymentName];
  return md !== undefined ? targetKey('MachineDeployment', md) : undefined;
}

/** The groups of machinesByTarget in input order (not sorted yet): control planes first, then MachineDeployments. */
export function groupByTarget(clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> {
  // Grouped by the raw label values first and keyed once per group: building a `kind/name` key per machine was a
  // string and a hash per machine on every reconcile.
  const cps = new Map<string, KubeObject[]>();
  const mds = new Map<string, KubeObject[]>();
  for (const m of machines) {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== clusterName) continue;
    const cp = labels[Labels.controlPlaneName];
    const md = cp === undefined ? labels[Labels.deploymentName] : undefined;
    const groups = cp !== undefined ? cps : md !== undefined ? mds : undefined;
    if (!groups) continue;
    const name = (cp ?? md)!;
    let list = groups.get(name);
    if (!list) groups.set(name, (list = []));
    list.push(m);
  }
  const out = new Map<string, KubeObject[]>();
  for (const [name, list] of cps) out.set(targetKey('ControlPlane', name), list);
  for (const [name, list] of mds) out.set(targetKey('MachineDeployment', name), list);
  return out;
}

/** The machines of a target (deleting ones included): CP machines by control-plane-name, MD machines by deployment-name. */
export function machinesOfTarget(kind: TargetKind, name: string, clusterName: string, machines: readonly KubeObject[]): KubeObject[] {
  return machinesByTarget(clusterName, machines).get(targetKey(kind, name)) ?? [];
}
