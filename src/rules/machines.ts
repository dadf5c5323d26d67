// How the plan counts machines and plans: the machine state of a MachineUpdate, machines grouped by target, the
// supersede order. Pure; shared by the decision phases, the preview, owner alignment and the pre-start checks.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, TargetKind } from '../api/index.js';
import { Labels, UpdateStatus } from '../api/index.js';
import { controlPlaneNameOf, deploymentNameOf, nameOf } from '../api/capi/index.js';
import type { RulesMemo } from './memo.js';
import { machinesChangedAt, sameRefs } from './memo.js';

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

/**
 * Machines of a cluster grouped by target, each group sorted by name (one pass, whatever the number of targets). With a
 * memo, a group whose machines are the same objects (or the same names) in the same input order as last time reuses
 * its sort (the store keeps a bucket's order, store.ts): the sorted list itself when nothing in it changed.
 */
export function machinesByTarget(clusterName: string, machines: readonly KubeObject[], memo?: RulesMemo): Map<string, KubeObject[]> {
  const patched = memo ? patchGroups(memo, clusterName, machines) : undefined;
  if (patched) return patched;
  const out = groupMachines(clusterName, machines, memo);
  if (memo) {
    const where = new Map<string, readonly [string, number]>();
    for (const [key, list] of out) list.forEach((m, i) => where.set(nameOf(m), [key, i]));
    memo.byTarget = { cluster: clusterName, machines, out, where };
  }
  return out;
}

/** The target key a machine is grouped under by machinesByTarget (undefined: none). */
function groupOf(clusterName: string, m: KubeObject): string | undefined {
  const labels = m.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return undefined;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== undefined) return targetKey('ControlPlane', cp);
  const md = labels[Labels.deploymentName];
  return md !== undefined ? targetKey('MachineDeployment', md) : undefined;
}

/**
 * The last grouping patched for the machines replaced in place (same names at the same positions, none added or
 * removed, each still in its group): only their groups are copied, the others are the same arrays as last time (so a
 * target's memo entry sees the same list). Undefined when that does not hold: the caller groups them all again.
 */
function patchGroups(memo: RulesMemo, clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> | undefined {
  const prev = memo.byTarget;
  if (!prev || prev.cluster !== clusterName || prev.machines.length !== machines.length) return undefined;
  // Same length: changedAt's positions are machines replaced in place (a removal or a move gives undefined).
  const changed = machinesChangedAt(memo, prev.machines, machines);
  if (!changed) return undefined;
  const copies = new Map<string, KubeObject[]>();
  for (const i of changed) {
    const m = machines[i]!;
    const old = prev.machines[i]!;
    const name = nameOf(m);
    const key = groupOf(clusterName, m);
    if (key !== groupOf(clusterName, old)) return undefined;
    if (key === undefined) continue;
    const at = prev.where.get(name);
    if (!at || at[0] !== key) return undefined;
    let copy = copies.get(key);
    if (!copy) copies.set(key, (copy = [...prev.out.get(key)!]));
    copy[at[1]] = m;
  }
  const out = new Map(prev.out);
  // Frozen like sortedGroup's lists: shared with the next reconciles.
  for (const [key, copy] of copies) out.set(key, Object.freeze(copy) as KubeObject[]);
  memo.byTarget = { cluster: clusterName, machines, out, where: prev.where };
  return out;
}

/** machinesByTarget's full pass over every machine. */
function groupMachines(clusterName: string, machines: readonly KubeObject[], memo?: RulesMemo): Map<string, KubeObject[]> {
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
  if (memo && memo.groupsCluster !== clusterName) {
    memo.groups.clear();
    memo.groupsCluster = clusterName;
  }
  for (const [kind, groups] of [
    ['ControlPlane', cps],
    ['MachineDeployment', mds],
  ] as const)
    for (const [name, list] of groups) {
      const key = targetKey(kind, name);
      out.set(key, memo ? sortedGroup(memo, key, list) : list.sort((a, b) => byName(nameOf(a), nameOf(b))));
    }
  if (memo) for (const key of memo.groups.keys()) if (!out.has(key)) memo.groups.delete(key);
  return out;
}

/** A group sorted by name through the memo (see machinesByTarget). */
function sortedGroup(memo: RulesMemo, key: string, input: KubeObject[]): KubeObject[] {
  const prev = memo.groups.get(key);
  if (prev && sameRefs(prev.input, input)) return prev.sorted;
  let perm: number[];
  if (prev && prev.input.length === input.length && input.every((m, i) => nameOf(m) === nameOf(prev.input[i]!))) perm = [...prev.perm];
  else perm = input.map((_, i) => i).sort((a, b) => byName(nameOf(input[a]!), nameOf(input[b]!)));
  // Frozen: the list is shared with the next reconciles, a caller that sorted or pushed into it would corrupt them.
  const sorted = Object.freeze(perm.map((i) => input[i]!)) as KubeObject[];
  memo.groups.set(key, { input, perm, sorted });
  return sorted;
}

/** The machines of a target (deleting ones included): CP machines by control-plane-name, MD machines by deployment-name. */
export function machinesOfTarget(kind: TargetKind, name: string, clusterName: string, machines: readonly KubeObject[]): KubeObject[] {
  return machinesByTarget(clusterName, machines).get(targetKey(kind, name)) ?? [];
}
