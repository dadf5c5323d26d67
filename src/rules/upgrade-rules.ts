// Upgrade rules KCP and kubeadm enforce (docs/design.md §11), as plan validation: a plan that sets Machine /spec/version must
// name a semantic version, never downgrade a machine, never skip a minor, never put workers ahead of the control
// plane, and keep every worker within the kubelet skew. Pure: works on the validation snapshot.
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { Labels } from '../api/index.js';
import { cpVersion, isDeleting, machineVersion, nameOf } from '../api/capi/index.js';
import { changedAt } from './lists.js';

/** Kubernetes versions as CAPI and kubeadm accept them: vMAJOR.MINOR.PATCH with optional pre-release/build. */
export const K8S_VERSION = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
/** How many minors a kubelet may be older than the control plane (Kubernetes version-skew policy since 1.28). */
export const KUBELET_MAX_SKEW = 3;

/** A parsed version. */
export interface Semver {
  major: number;
  minor: number;
  patch: number;
}

/** Parses vX.Y.Z (pre-release and build ignored), or undefined. */
export function parseVersion(v: unknown): Semver | undefined {
  if (typeof v !== 'string') return undefined;
  const m = K8S_VERSION.exec(v);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } : undefined;
}

/** Negative when a < b, 0 when equal, positive when a > b (major, minor, patch). */
export const compareVersions = (a: Semver, b: Semver): number => a.major - b.major || a.minor - b.minor || a.patch - b.patch;
const fmt = (v: Semver): string => `v${v.major}.${v.minor}.${v.patch}`;

/** What the upgrade rules read. */
export interface UpgradeInput {
  plan: InPlaceUpdatePlan;
  /** Machines of the plan's cluster. */
  machines: KubeObject[];
  /** The control-plane object (KubeadmControlPlane), when found. */
  controlPlane?: KubeObject | undefined;
}

// The value a target's updaters set on Machine /spec/version (the last one wins, as in the commit).
function versionValue(target: { updaters?: unknown }): { value: unknown; updater: string } | undefined {
  let out: { value: unknown; updater: string } | undefined;
  for (const u of Array.isArray(target.updaters) ? (target.updaters as { name?: string; responsibilities?: unknown }[]) : []) {
    for (const r of Array.isArray(u.responsibilities)
      ? (u.responsibilities as { selectResource?: string; path?: string; value?: unknown }[])
      : []) {
      if (r.selectResource === 'Machine' && r.path === '/spec/version') out = { value: r.value, updater: u.name ?? '' };
    }
  }
  return out;
}

const lowest = (vs: Semver[]): Semver | undefined => [...vs].sort(compareVersions)[0];

/** What a target's check found for one list of machines (the plan's cache keeps it while they are the same objects). */
export interface TargetCheck {
  machines: readonly KubeObject[];
  value: string;
  problems: string[];
  want: Semver | undefined;
}

/** A MachineDeployment without a version of its own: its workers and the first of them outside the skew of `cp`. */
export interface SkewCheck {
  machines: readonly KubeObject[];
  /** The control plane's version after the plan (vX.Y.Z). */
  cp: string;
  /** Position in `machines` of the first worker outside the skew (-1: none). */
  first: number;
}

/**
 * What upgradeProblems may be handed, derived already for this input (the plan controller's cache patches them from
 * the last reconcile's): the machines grouped, each target's check by its label, each MachineDeployment's skew check.
 * A check is used only when it was derived from the same value and the same machine list (by identity), else derived.
 */
export interface UpgradeGiven {
  grouping: Grouping;
  checks: ReadonlyMap<string, TargetCheck>;
  skew: ReadonlyMap<string, SkewCheck>;
}

/** Where one input machine sits in the grouping's lists (-1: not in that list). */
interface Slot {
  cp: number;
  anyCp: number;
  md: string | undefined;
  inMd: number;
}

/**
 * The machines the rules read, grouped: the plan's control-plane machines, any control plane's machines, and the workers
 * per MachineDeployment with each worker's position in the input (the order problems are listed in). A list is never
 * changed once built: a patch copies the lists it changes, so a per-target check can tell its machines by identity.
 */
export interface Grouping {
  cluster: string;
  cpName: string | undefined;
  machines: readonly KubeObject[];
  cp: KubeObject[];
  anyCp: KubeObject[];
  workersOf: Map<string, KubeObject[]>;
  /** Per MachineDeployment: the input positions of its workers (same order as workersOf's list). */
  atOf: Map<string, number[]>;
  /** Per input position: its place in the lists, or undefined (another cluster's or deleting). */
  slots: (Slot | undefined)[];
}

/** Groups every machine (one pass; the rules' reference order: input order within each group). */
export function groupAll(machines: readonly KubeObject[], cluster: string, cpName: string | undefined): Grouping {
  const g: Grouping = { cluster, cpName, machines, cp: [], anyCp: [], workersOf: new Map(), atOf: new Map(), slots: [] };
  machines.forEach((m, i) => {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== cluster || isDeleting(m)) return void g.slots.push(undefined);
    const slot: Slot = { cp: -1, anyCp: -1, md: undefined, inMd: -1 };
    const cp = labels[Labels.controlPlaneName];
    if (cp !== undefined) {
      slot.anyCp = g.anyCp.push(m) - 1;
      if (cpName !== undefined && cp === cpName) slot.cp = g.cp.push(m) - 1;
    }
    const md = labels[Labels.deploymentName];
    if (md !== undefined) {
      let list = g.workersOf.get(md);
      if (!list) {
        g.workersOf.set(md, (list = []));
        g.atOf.set(md, []);
      }
      slot.md = md;
      slot.inMd = list.push(m) - 1;
      g.atOf.get(md)!.push(i);
    }
    g.slots.push(slot);
  });
  return g;
}

/** What grouping reads of a machine: its cluster, control plane and MachineDeployment labels, and whether it is deleting. */
function sameGroupFacts(a: KubeObject, b: KubeObject): boolean {
  const la = a.metadata.labels;
  const lb = b.metadata.labels;
  return (
    la?.[Labels.clusterName] === lb?.[Labels.clusterName] &&
    la?.[Labels.controlPlaneName] === lb?.[Labels.controlPlaneName] &&
    la?.[Labels.deploymentName] === lb?.[Labels.deploymentName] &&
    isDeleting(a) === isDeleting(b)
  );
}

/**
 * The grouping of `machines`, patched from `g` when only machines replaced in place (same name, same group facts)
 * differ: O(changed machines + their groups' sizes) instead of a pass over the fleet. Undefined when a machine was
 * added, removed, moved or regrouped (the caller groups afresh).
 */
export function patchGrouping(
  g: Grouping,
  machines: readonly KubeObject[],
  at: readonly number[] | undefined = changedAt(g.machines, machines),
): Grouping | undefined {
  if (!at) return undefined;
  const out: Grouping = { ...g, machines };
  const copied = new Set<KubeObject[]>();
  const own = (list: KubeObject[]): KubeObject[] => {
    if (copied.has(list)) return list;
    const c = [...list];
    copied.add(c);
    return c;
  };
  let workersCopied = false;
  for (const i of at) {
    const was = g.machines[i];
    const m = machines[i]!;
    if (!was || !sameGroupFacts(was, m)) return undefined;
    const slot = g.slots[i];
    if (!slot) continue;
    if (slot.cp >= 0) (out.cp = own(out.cp))[slot.cp] = m;
    if (slot.anyCp >= 0) (out.anyCp = own(out.anyCp))[slot.anyCp] = m;
    if (slot.md !== undefined) {
      if (!workersCopied) {
        out.workersOf = new Map(out.workersOf);
        workersCopied = true;
      }
      const list = own(out.workersOf.get(slot.md)!);
      list[slot.inMd] = m;
      out.workersOf.set(slot.md, list);
    }
  }
  return out;
}

/**
 * Kubernetes versions of machines: a fleet's handful of distinct versions is parsed once each (every reconcile
 * validates against every machine).
 */
export class VersionReader {
  private readonly parsed = new Map<unknown, Semver | undefined>();

  /** The machine's version, or undefined when it has none or not a Kubernetes one. */
  readonly of = (m: KubeObject): Semver | undefined => {
    const raw = machineVersion(m);
    if (!this.parsed.has(raw)) this.parsed.set(raw, parseVersion(raw));
    return this.parsed.get(raw);
  };

  /** The versions of the machines that have one. */
  readonly ofAll = (ms: readonly KubeObject[]): Semver[] => ms.map(this.of).filter((v): v is Semver => !!v);
}

/** One run of the rules: the problems found so far (in rule order), the versions read, what it was handed. */
interface RulesRun {
  problems: string[];
  versions: VersionReader;
  given: UpgradeGiven | undefined;
}

/** The machines the rules read: the plan's control plane's, any control plane's, and the workers per MachineDeployment. */
interface RuleMachines {
  cp: KubeObject[];
  anyCp: KubeObject[];
  /** Every worker in input order (filled without a given grouping only: with one its positions tell the order). */
  workers: KubeObject[];
  workersOf: Map<string, KubeObject[]>;
  grouped: Grouping | undefined;
}

/**
 * One pass sorts the machines (control plane, workers by MachineDeployment): filtering all workers per target cost
 * O(targets × machines) per reconcile (a quarter of the plan controller's CPU at 10,003 machines in 200 targets). A
 * given grouping (of these machines) is used as it is.
 */
function ruleMachines(input: UpgradeInput, given: UpgradeGiven | undefined): RuleMachines {
  const cluster = input.plan.spec.clusterName;
  const cpName = input.plan.spec.controlPlane?.name;
  const g = given?.grouping;
  if (g && g.machines === input.machines && g.cluster === cluster && g.cpName === cpName)
    return { cp: g.cp, anyCp: g.anyCp, workers: [], workersOf: g.workersOf, grouped: g };
  const out: RuleMachines = { cp: [], anyCp: [], workers: [], workersOf: new Map(), grouped: undefined };
  for (const m of input.machines) {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== cluster || isDeleting(m)) continue;
    const cp = labels[Labels.controlPlaneName];
    if (cp !== undefined) {
      out.anyCp.push(m);
      if (cpName !== undefined && cp === cpName) out.cp.push(m);
    }
    const md = labels[Labels.deploymentName];
    if (md === undefined) continue;
    out.workers.push(m);
    let list = out.workersOf.get(md);
    if (!list) out.workersOf.set(md, (list = []));
    list.push(m);
  }
  return out;
}

/**
 * Per target: the value is a version, and it neither downgrades nor skips a minor for any current machine. Returns the
 * version the target sets (undefined: none, or not a version). A given check of the same value and machines is used.
 */
function checkTarget(run: RulesRun, label: string, target: { updaters?: unknown }, machines: KubeObject[]): Semver | undefined {
  const set = versionValue(target);
  if (!set) return undefined;
  const given = run.given?.checks.get(label);
  if (given && given.value === checkValue(set) && sameList(given.machines, machines)) {
    run.problems.push(...given.problems);
    return given.want;
  }
  return checkTargetNow(run, label, set, machines);
}

/** The value of a target's check: its version value and updater. */
const checkValue = (set: { value: unknown; updater: string }): string => JSON.stringify([set.value, set.updater]) ?? '';

/** A target's check over its machines (undefined when the target sets no version), for the plan's cache to keep. */
export function targetCheck(
  label: string,
  target: { updaters?: unknown },
  machines: KubeObject[],
  versions: VersionReader,
): TargetCheck | undefined {
  const set = versionValue(target);
  if (!set) return undefined;
  const run: RulesRun = { problems: [], versions, given: undefined };
  const want = checkTargetNow(run, label, set, machines);
  return { machines, value: checkValue(set), problems: run.problems, want };
}

/** Whether a given check stands for a target's value and machines (see targetCheck). */
export function checkHolds(c: TargetCheck, target: { updaters?: unknown }, machines: readonly KubeObject[]): boolean {
  const set = versionValue(target);
  return set !== undefined && c.value === checkValue(set) && sameList(c.machines, machines);
}

/** checkTarget's rules semver, no-downgrade and no-skipped-minor, computed. */
function checkTargetNow(
  run: RulesRun,
  label: string,
  set: { value: unknown; updater: string },
  machines: KubeObject[],
): Semver | undefined {
  const where = `${label} updater ${set.updater}: Machine /spec/version`;
  const want = parseVersion(set.value);
  if (!want) {
    const shown =
      typeof set.value === 'string'
        ? JSON.stringify(set.value.length > 64 ? `${set.value.slice(0, 64)}…` : set.value)
        : (JSON.stringify(set.value)?.slice(0, 64) ?? 'nothing');
    run.problems.push(`${where} ${shown} breaks upgrade rule semver: a Kubernetes version is a string vMAJOR.MINOR.PATCH such as v1.30.1`);
    return undefined;
  }
  const older = machines.filter((m) => {
    const have = run.versions.of(m);
    return have && compareVersions(want, have) < 0;
  });
  if (older.length > 0)
    run.problems.push(
      `${where} ${fmt(want)} breaks upgrade rule no-downgrade: ${older.length} machine(s) run a newer version (${nameOf(older[0]!)} runs ${machineVersion(older[0]!)})`,
    );
  const low = lowest(run.versions.ofAll(machines));
  if (low && (want.major !== low.major || want.minor > low.minor + 1))
    run.problems.push(
      `${where} ${fmt(want)} breaks upgrade rule no-skipped-minor: the oldest machine runs v${low.major}.${low.minor}, so the next version is at most v${low.major}.${low.minor + 1}.x`,
    );
  return want;
}

/**
 * Each MachineDeployment target's checks and the rule workers-not-ahead-of-control-plane against the control plane's
 * version after the plan; returns the version each MachineDeployment target sets.
 */
function checkMachineDeployments(
  run: RulesRun,
  plan: InPlaceUpdatePlan,
  workersOf: ReadonlyMap<string, KubeObject[]>,
  cpAfter: Semver | undefined,
): Map<string, Semver> {
  const mdWant = new Map<string, Semver>();
  for (const md of plan.spec.machineDeployments ?? []) {
    const mine = workersOf.get(md.name) ?? [];
    const want = checkTarget(run, `machineDeployment ${md.name}`, md, mine);
    if (!want) continue;
    mdWant.set(md.name, want);
    // Minor granularity, as the Kubernetes version-skew policy and kubeadm's kubelet check: a worker patch release ahead is fine.
    if (cpAfter && (want.major > cpAfter.major || (want.major === cpAfter.major && want.minor > cpAfter.minor)))
      run.problems.push(
        `machineDeployment ${md.name}: Machine /spec/version ${fmt(want)} breaks upgrade rule workers-not-ahead-of-control-plane: the control plane runs ${fmt(cpAfter)} after this plan (a kubelet is never a minor newer than its API server)`,
      );
  }
  return mdWant;
}

/** Whether a worker's version after the plan is outside the kubelet skew of the control plane's. */
const outsideSkew = (cpWant: Semver, after: Semver | undefined): boolean =>
  !!after && (after.major !== cpWant.major || cpWant.minor - after.minor > KUBELET_MAX_SKEW);

/**
 * Rule version-skew: only a plan that moves the control plane can open it; every worker after the plan must be within
 * range. One problem per MachineDeployment left behind, in the order of its first worker outside the skew.
 */
function checkSkew(
  run: RulesRun,
  cp: { name: string | undefined; want: Semver },
  ms: RuleMachines,
  mdWant: ReadonlyMap<string, Semver>,
): void {
  const cpWant = cp.want;
  const outside = (after: Semver | undefined): boolean => outsideSkew(cpWant, after);
  const behind = new Map<string, Semver>();
  if (!run.given || !ms.grouped)
    for (const m of ms.workers) {
      const md = m.metadata.labels?.[Labels.deploymentName] ?? '';
      const after = mdWant.get(md) ?? run.versions.of(m);
      if (outside(after) && !behind.has(md)) behind.set(md, after!);
    }
  else for (const f of firstsOutside(run, run.given, ms.grouped, mdWant, cpWant)) behind.set(f.md, f.v);
  for (const [md, v] of behind)
    run.problems.push(
      `controlPlane ${cp.name}: Machine /spec/version ${fmt(cpWant)} breaks upgrade rule version-skew: MachineDeployment ${md} stays at ${fmt(v)}, more than ${KUBELET_MAX_SKEW} minors behind (update its workers in the same plan or first)`,
    );
}

/**
 * Per MachineDeployment: its first worker outside the skew, by its position in the input (the order of the workers, so
 * the order the problems are listed in); a given skew check of the same control-plane version and workers is used.
 */
function firstsOutside(
  run: RulesRun,
  given: UpgradeGiven,
  grouped: Grouping,
  mdWant: ReadonlyMap<string, Semver>,
  cpWant: Semver,
): { at: number; md: string; v: Semver }[] {
  const outside = (after: Semver | undefined): boolean => outsideSkew(cpWant, after);
  const { atOf, workersOf } = grouped;
  const firsts: { at: number; md: string; v: Semver }[] = [];
  const cpKey = fmt(cpWant);
  for (const [md, list] of workersOf) {
    const want = mdWant.get(md);
    if (want) {
      if (outside(want)) firsts.push({ at: atOf.get(md)![0]!, md, v: want });
      continue;
    }
    const e = given.skew.get(md);
    const first = e && e.cp === cpKey && sameList(e.machines, list) ? e.first : firstOutsideSkew(list, cpWant, run.versions);
    if (first >= 0) firsts.push({ at: atOf.get(md)![first]!, md, v: run.versions.of(list[first]!)! });
  }
  return firsts.sort((a, b) => a.at - b.at);
}

/** The position of the first worker outside the skew of the control plane's version `cpWant` (-1: none). */
export function firstOutsideSkew(list: readonly KubeObject[], cpWant: Semver, versions: VersionReader): number {
  return list.findIndex((m) => outsideSkew(cpWant, versions.of(m)));
}

/** A control plane's version as skew checks are keyed (vX.Y.Z). */
export const versionKey = fmt;

/**
 * Every upgrade-rule problem of the plan (empty = none), each naming its rule. `given` (UpgradeGiven: the plan
 * controller's cache derives it, src/plan-controller/cache/validation.ts) hands in the grouping and the per-target
 * checks derived already: a finished machine re-checks its own target only.
 */
export function upgradeProblems(input: UpgradeInput, given?: UpgradeGiven, versions = new VersionReader()): string[] {
  const { plan } = input;
  const run: RulesRun = { problems: [], versions, given };
  const ms = ruleMachines(input, given);
  const cpWant = plan.spec.controlPlane
    ? checkTarget(run, `controlPlane ${plan.spec.controlPlane.name}`, plan.spec.controlPlane, ms.cp)
    : undefined;
  // The control plane's version after the plan: the plan's value, else the control plane's spec.version, else its oldest machine.
  const cpAfter =
    cpWant ??
    parseVersion(input.controlPlane ? cpVersion(input.controlPlane) : undefined) ??
    lowest(run.versions.ofAll(ms.cp)) ??
    lowest(run.versions.ofAll(ms.anyCp));
  const mdWant = checkMachineDeployments(run, plan, ms.workersOf, cpAfter);
  if (cpWant) checkSkew(run, { name: plan.spec.controlPlane?.name, want: cpWant }, ms, mdWant);
  return run.problems;
}

/** What the upgrade rules read of one machine (its name, target labels, deletion and version). */
export function sameUpgradeFacts(a: KubeObject, b: KubeObject): boolean {
  const la = a.metadata.labels;
  const lb = b.metadata.labels;
  return (
    a.metadata.name === b.metadata.name &&
    la?.[Labels.clusterName] === lb?.[Labels.clusterName] &&
    la?.[Labels.controlPlaneName] === lb?.[Labels.controlPlaneName] &&
    la?.[Labels.deploymentName] === lb?.[Labels.deploymentName] &&
    isDeleting(a) === isDeleting(b) &&
    machineVersion(a) === machineVersion(b)
  );
}

/** True when two lists hold the same objects at the same positions. */
function sameList(a: readonly KubeObject[], b: readonly KubeObject[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
