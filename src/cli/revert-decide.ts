// Pure: the plan that reverts a finished or aborted plan (`inplace revert`). Its MachineUpdates keep what each commit
// changed (status.committed: every written path's value before and after); the revert plan sets the values before
// again, on the same targets with the same sequences and updaters (so the same ordering and the owners' budgets),
// only where each machine still holds the plan's value. The upgrade rules hold: a Kubernetes version is never set
// back (kubeadm does not support a downgrade); everything else reverts. Problems refuse the whole revert.
import { isDeepStrictEqual } from 'node:util';
import {
  API_VERSION,
  GROUP,
  isTerminal,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
  type PlanTarget,
  type PlanUpdater,
  type Responsibility,
} from '../api/index.js';
import { shortenName } from '../contract/index.js';
import { compareVersions, parseVersion, upgradeProblems } from '../rules/upgrade-rules.js';
import { getPointer } from '../runtime/pure/jsonpointer.js';

/** On a revert plan: the plan it reverts. */
export const REVERTS_ANNOTATION = `${GROUP}/reverts`;

type Select = Responsibility['selectResource'];

/** A machine's objects as the API server has them now (undefined: gone). */
export interface LiveMachine {
  Machine?: KubeObject;
  InfraMachine?: KubeObject;
  BootstrapConfig?: KubeObject;
}

/** What the revert reads. */
export interface RevertInput {
  plan: InPlaceUpdatePlan & KubeObject;
  /** The plan's MachineUpdates (owned by it). */
  machineUpdates: readonly MachineUpdate[];
  /** Each machine of those MachineUpdates, by name. */
  live: ReadonlyMap<string, LiveMachine>;
  /** The cluster's machines and its control plane (the upgrade rules read them). */
  machines: readonly KubeObject[];
  controlPlane?: KubeObject;
  /** Name of the revert plan (default `<plan>-revert`). */
  name?: string;
}

/** One value a machine gets back. */
export interface RevertValue {
  target: string;
  machine: string;
  updater: string;
  selectResource: Select;
  path: string;
  /** The plan's value, on the machine now. */
  from: unknown;
  /** The value before the plan's commit. */
  to: unknown;
}

/** A value the revert leaves as it is, and why. */
export interface RevertRefusal {
  target: string;
  machine: string;
  selectResource: Select;
  path: string;
  why: string;
  /** The value that stays, and the one before the plan (a Kubernetes version). */
  kept?: { now: unknown; before: unknown };
}

/** The outcome: the revert plan (undefined when nothing can be reverted) or the problems that refuse it. */
export interface RevertDecision {
  plan?: InPlaceUpdatePlan & KubeObject;
  values: RevertValue[];
  refused: RevertRefusal[];
  /** Machines already back at the values before (nothing to do). */
  alreadyReverted: string[];
  /** Each refuses the whole revert: nothing is created. */
  problems: string[];
  /** What the revert plan may break, for the operator to check before applying it (nothing is refused for it). */
  warnings: string[];
}

const decode = (s: string | undefined): unknown => (s === undefined ? undefined : (JSON.parse(s) as unknown));
const read = (o: unknown, path: string): unknown => {
  try {
    return getPointer(o, path);
  } catch {
    return undefined;
  }
};
const show = (v: unknown): string => (v === undefined ? '(absent)' : JSON.stringify(v));
const targetLabel = (t: MachineUpdate['spec']['target']): string =>
  `${t.kind === 'ControlPlane' ? 'controlPlane' : 'machineDeployment'} ${t.name}`;

type Ref = { apiGroup?: string; kind?: string; name?: string } | undefined;
const sameRef = (r: Ref, o: { apiGroup: string; kind: string; name: string }): boolean =>
  !!r && r.apiGroup === o.apiGroup && r.kind === o.kind && r.name === o.name;

/** Which object of the machine a journaled object is now, or undefined when the machine no longer references it. */
function selectOf(machine: KubeObject, o: { apiGroup: string; kind: string; name: string }): Select | undefined {
  if (o.kind === 'Machine' && o.apiGroup === 'cluster.x-k8s.io' && o.name === machine.metadata.name) return 'Machine';
  const spec = (machine as KubeObject & { spec?: { infrastructureRef?: Ref; bootstrap?: { configRef?: Ref } } }).spec;
  if (sameRef(spec?.infrastructureRef, o)) return 'InfraMachine';
  if (sameRef(spec?.bootstrap?.configRef, o)) return 'BootstrapConfig';
  return undefined;
}

/** The plan's own MachineUpdates expected from its status: fewer found means the history pruned them. */
function expectedRecords(plan: InPlaceUpdatePlan): number {
  const s = plan.status ?? {};
  return Math.max(0, (s.updatedMachines ?? 0) - (s.skippedMachines ?? 0));
}

/** Builds the revert of a finished or aborted plan. */
export function decideRevert(i: RevertInput): RevertDecision {
  const { plan } = i;
  const out: RevertDecision = { values: [], refused: [], alreadyReverted: [], problems: [], warnings: [] };
  const planName = plan.metadata.name ?? '';
  const status = plan.status?.updateStatus ?? 'pending';
  if (!isTerminal(status)) {
    out.problems.push(
      `InPlaceUpdatePlan ${planName} is ${status}: only a finished (updated, failed) or aborted plan can be reverted; abort it first (inplace abort ${planName})`,
    );
    return out;
  }
  const updated = i.machineUpdates.filter((mu) => mu.status?.updateStatus === 'updated');
  const expected = expectedRecords(plan);
  if (updated.length < expected) {
    out.problems.push(
      `the journal of InPlaceUpdatePlan ${planName} was pruned: its status counts ${expected} machine${expected === 1 ? '' : 's'} updated through a MachineUpdate, ${updated.length} MachineUpdate${updated.length === 1 ? ' is' : 's are'} left (the plan history deletes the MachineUpdates of older finished plans: --finished-plans-per-cluster); without them the values before the plan are unknown`,
    );
    return out;
  }
  // Per target, updater and path: the value each machine gets back (the same for every machine of the target).
  const byKey = new Map<string, RevertValue[]>();
  for (const mu of updated) revertMachine(i, mu, { out, byKey });
  for (const values of byKey.values()) {
    const distinct = [...new Map(values.map((v) => [JSON.stringify(v.to), v])).values()];
    if (distinct.length > 1)
      out.problems.push(
        `${values[0]!.target}: its machines held different values before the plan at ${values[0]!.selectResource} ${values[0]!.path} (${distinct
          .map((v) => `${v.machine}: ${show(v.to)}`)
          .join(', ')}); a plan sets one value per target, so revert them with plans of your own`,
      );
    out.values.push(...values);
  }
  if (out.problems.length > 0) return out;
  if (out.values.length === 0) return out;
  out.warnings.push(...versionKeptWarnings(out));
  const revert = revertPlan(i, out.values);
  // Upgrade rules on the revert plan itself (skew, skipped minors): the same check the controller's validation runs.
  const rules = upgradeProblems({ plan: revert, machines: [...i.machines], ...(i.controlPlane ? { controlPlane: i.controlPlane } : {}) });
  if (rules.length > 0) {
    out.problems.push(...rules);
    return out;
  }
  out.plan = revert;
  return out;
}

/** Where the revert of each machine goes: the decision, and the values per target, updater and path. */
interface RevertAcc {
  out: RevertDecision;
  byKey: Map<string, RevertValue[]>;
}

/** One updated machine: each journaled entry is reverted, already reverted, refused, or a problem. */
function revertMachine(i: RevertInput, mu: MachineUpdate, { out, byKey }: RevertAcc): void {
  const machineName = mu.spec.machineRef.name;
  const target = targetLabel(mu.spec.target);
  const committed = mu.status?.committed;
  if (!committed) {
    out.problems.push(
      `MachineUpdate ${mu.metadata?.name ?? ''} (machine ${machineName}) has no record of the values before its commit (status.committed: it finished before the platform kept one)`,
    );
    return;
  }
  const live = i.live.get(machineName);
  const machine = live?.Machine;
  if (!machine) {
    if ((committed.objects ?? []).length > 0)
      out.problems.push(`machine ${machineName} (${target}) changed since the plan: it no longer exists`);
    return;
  }
  let pending = 0;
  for (const o of committed.objects ?? []) {
    const select = selectOf(machine, o);
    if (!select) {
      out.problems.push(`machine ${machineName} (${target}) changed since the plan: it no longer references ${o.kind} ${o.name}`);
      continue;
    }
    const entries = o.entries ?? [];
    for (const e of entries) {
      // A parent the commit created only to hold a deeper value: the deeper entry says what to revert.
      if (e.before === undefined && entries.some((x) => x.path.startsWith(`${e.path}/`))) continue;
      const v = revertEntry({ mu, target, select, obj: live[select], entry: e }, out);
      if (!v) continue;
      pending++;
      const key = `${target}\u0000${v.updater}\u0000${select}\u0000${e.path}`;
      byKey.set(key, [...(byKey.get(key) ?? []), v]);
    }
  }
  const left = out.refused.some((r) => r.machine === machineName) || out.problems.some((p) => p.includes(`machine ${machineName} `));
  if (pending === 0 && (committed.objects ?? []).length > 0 && !left) out.alreadyReverted.push(machineName);
}

/** One journaled entry of a machine's object, with what it belongs to. */
interface JournaledEntry {
  mu: MachineUpdate;
  target: string;
  select: Select;
  obj: KubeObject | undefined;
  entry: { path: string; before?: string | undefined; after?: string | undefined };
}

/** The value an entry goes back to, or undefined when it is already back, changed since (a problem), or refused. */
function revertEntry({ mu, target, select, obj, entry: e }: JournaledEntry, out: RevertDecision): RevertValue | undefined {
  const machineName = mu.spec.machineRef.name;
  const now = read(obj, e.path);
  const before = decode(e.before);
  const after = decode(e.after);
  if (isDeepStrictEqual(now, before)) return undefined;
  if (!isDeepStrictEqual(now, after)) {
    out.problems.push(
      `machine ${machineName} (${target}) changed since the plan: ${select} ${e.path} is ${show(now)}, the plan wrote ${show(after)}`,
    );
    return undefined;
  }
  const updater = mu.spec.updaters.find((u) => u.responsibilities.some((r) => r.selectResource === select && r.path === e.path));
  const refuse = (why: string, kept?: RevertRefusal['kept']): undefined =>
    void out.refused.push({ target, machine: machineName, selectResource: select, path: e.path, why, ...(kept ? { kept } : {}) });
  if (!updater) return refuse('no updater of the plan is responsible for it');
  if (before === undefined) return refuse('the plan added this field; a plan sets values and cannot remove one');
  if (select === 'Machine' && e.path === '/spec/version') {
    const [b, a] = [parseVersion(before), parseVersion(after)];
    if (b && a && compareVersions(b, a) < 0)
      return refuse(
        `Kubernetes version ${show(after)} back to ${show(before)} is a downgrade, which kubeadm does not support (upgrade rule no-downgrade)`,
        { now: after, before },
      );
  }
  return { target, machine: machineName, updater: updater.name, selectResource: select, path: e.path, from: after, to: before };
}

/** The revert plan: the original's targets with only the reverted values, its other settings kept. */
function revertPlan(i: RevertInput, values: readonly RevertValue[]): InPlaceUpdatePlan & KubeObject {
  const { plan } = i;
  const planName = plan.metadata.name ?? '';
  const revertTarget = <T extends PlanTarget>(t: T, label: string): T | undefined => {
    const updaters: PlanUpdater[] = [];
    for (const u of t.updaters) {
      const responsibilities: Responsibility[] = [];
      for (const r of u.responsibilities) {
        const v = values.find(
          (x) => x.target === label && x.updater === u.name && x.selectResource === r.selectResource && x.path === r.path,
        );
        if (v) responsibilities.push({ ...r, value: v.to as Responsibility['value'] });
      }
      if (responsibilities.length > 0) updaters.push({ ...structuredClone(u), responsibilities });
    }
    return updaters.length > 0 ? { ...structuredClone(t), updaters } : undefined;
  };
  const spec = plan.spec;
  const cp = spec.controlPlane ? revertTarget(spec.controlPlane, `controlPlane ${spec.controlPlane.name}`) : undefined;
  const mds = (spec.machineDeployments ?? []).flatMap((md) => revertTarget(md, `machineDeployment ${md.name}`) ?? []);
  const {
    controlPlane: _cp,
    machineDeployments: _mds,
    updatePhase: _phase,
    paused: _paused,
    rerunMachinesAtTarget: _rerun,
    ...kept
  } = spec;
  const name = i.name ?? shortenName(`${planName}-revert`, 253);
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name, namespace: plan.metadata.namespace ?? '', annotations: { [REVERTS_ANNOTATION]: planName } },
    spec: { ...structuredClone(kept), ...(cp ? { controlPlane: cp } : {}), ...(mds.length > 0 ? { machineDeployments: mds } : {}) },
  };
}

/**
 * A Kubernetes version that stays (no downgrade) next to other values that go back on the same target: the values put
 * back were chosen for the old version (an OS image built for 1.29 with its kubelet, a configuration), and may not
 * work with the kubelet kept at the new one. Said once per target, with the values concerned.
 */
function versionKeptWarnings(d: RevertDecision): string[] {
  const out: string[] = [];
  const kept = new Map(d.refused.filter((r) => r.kept).map((r) => [r.target, r.kept!]));
  for (const [target, version] of kept) {
    const values = d.values.filter((v) => v.target === target);
    const back = [...new Map(values.map((v) => [`${v.selectResource} ${v.path}`, v])).values()];
    if (back.length === 0) continue;
    const machines = new Set(values.map((v) => v.machine)).size;
    out.push(
      `${target}: the Kubernetes version stays at ${show(version.now)} (${show(version.before)} before the plan) while ${back
        .map((v) => `${v.selectResource} ${v.path} goes back to ${show(v.to)}`)
        .join(
          ', ',
        )} on ${machines} machine${machines === 1 ? '' : 's'}: those values were chosen for ${show(version.before)}; check that they work with ${show(version.now)} (an OS image built for the old kubelet, for instance) before applying the revert`,
    );
  }
  return out;
}
