// Phase 3 of decidePlan: every target evaluated against the snapshot, in ascending sequence groups (a group may start
// machines only when every lower group is updated). Each target is counted, sized, given a verdict, then (start.ts)
// its next machines and (surge.ts) the restore of its surge. Pure.
import type { KubeObject, MachineUpdate, TargetKind } from '../../api/index.js';
import { Annotations, Labels, MessageBudget, Reasons, UpdatePhase, boundMessage } from '../../api/index.js';
import { cpReplicas, isDeleting, mdReplicas, nameOf } from '../../api/capi/index.js';
import { mdSurge } from '../../rules/concurrency.js';
import { labelValue } from './names.js';
import type { PlanSnapshot } from '../scope.js';
import { nameList } from '../status.js';
import type { NamedTarget } from '../../rules/validate.js';
import { targetsOf } from '../../rules/validate.js';
import type { PlanStance } from './mode.js';
import { machineState, machinesByTarget, targetKey } from '../../rules/machines.js';
import { failureNote } from './target-notes.js';
import { rolloutTarget } from './start.js';
import { restoreSurge } from './surge.js';
import type { MachineGroups, Mode, TargetCount, TargetEval, TargetReading, TargetScope, TargetSize, UpdateStatusValue } from './types.js';

/** A target and its evaluation, in the plan's order. */
export interface EvaluatedTarget {
  t: NamedTarget;
  e: TargetEval;
}

/**
 * What targetScope derives from the snapshot and the stance (scopeInputs); the plan controller's cache hands it these
 * patched from the last reconcile's (src/plan-controller/cache/targets.ts), equal to scopeInputs'.
 */
export interface ScopeInputs {
  /** The cluster's machines by target key, each list sorted by name (machinesByTarget). */
  machines: Map<string, KubeObject[]>;
  /** The rollout's MachineUpdates per target key (groupTargetMus). */
  targetMus: Map<string, MachineUpdate[]>;
}

/** targetScope's inputs derived from the snapshot and the stance. */
export function scopeInputs(snap: PlanSnapshot, s: PlanStance): ScopeInputs {
  return { machines: machinesByTarget(snap.plan.spec.clusterName, snap.machines), targetMus: groupTargetMus(s) };
}

/** The snapshot indexed by target for the evaluation of every target. */
export function targetScope(snap: PlanSnapshot, s: PlanStance, given: ScopeInputs = scopeInputs(snap, s)): TargetScope {
  const plan = snap.plan;
  // A machine at target counts as updated once the plan may start (or has started): a plan that waits, is paused or
  // invalid before starting reports nothing as done. spec.rerunMachinesAtTarget runs the updaters regardless.
  const skipping = plan.spec.rerunMachinesAtTarget !== true && (s.mayStart || s.startedBefore);
  return {
    snap,
    machines: given.machines,
    targetMus: given.targetMus,
    planName: s.planName,
    planLabel: labelValue(s.planName),
    halt: (plan.spec.failurePolicy ?? 'Halt') === 'Halt',
    mus: s.rolloutMus,
    atTarget: new Set(skipping ? (snap.atTarget ?? []) : []),
  };
}

/** The rollout's MachineUpdates per target key, in the order of s.rolloutMus. */
export function groupTargetMus(s: PlanStance): Map<string, MachineUpdate[]> {
  const targetMus = new Map<string, MachineUpdate[]>();
  // Grouped by the raw target names first and keyed once per group (no `kind/name` string per MachineUpdate).
  const byKind = new Map<string, Map<string, MachineUpdate[]>>();
  for (const mu of s.rolloutMus.values()) {
    const { kind, name } = mu.spec.target;
    let names = byKind.get(kind);
    if (!names) byKind.set(kind, (names = new Map()));
    let list = names.get(name);
    if (!list) names.set(name, (list = []));
    list.push(mu);
  }
  for (const [kind, names] of byKind) for (const [name, list] of names) targetMus.set(targetKey(kind as TargetKind, name), list);
  return targetMus;
}

/** True when the machine is grouped (machinesByTarget) under another target than the update's. */
export function targetOfMu(clusterName: string, m: KubeObject | undefined, kind: string, name: string): boolean {
  const labels = m?.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return false;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== undefined) return kind !== 'ControlPlane' || cp !== name;
  const md = labels[Labels.deploymentName];
  return md !== undefined && (kind !== 'MachineDeployment' || md !== name);
}

/** Evaluates every target in ascending sequence groups; soak notes join the rows of a plan that is not stopping. */
export function evaluateTargets(scope: TargetScope, s: PlanStance): EvaluatedTarget[] {
  const ordered = inSequence(planTargets(scope.snap.plan), (t, reached) => evalTarget(scope, t, s.mode, reached));
  return withSoakNotes(ordered, s);
}

/** The plan's targets that name one, in the plan's order. */
export function planTargets(plan: PlanSnapshot['plan']): NamedTarget[] {
  return targetsOf(plan).filter((t) => typeof t.target?.name === 'string');
}

/**
 * The targets evaluated in ascending sequence groups, returned in the plan's order: a group is reached (may start
 * machines) only when every lower group is updated. `evaluate` is evalTarget for the scope and mode.
 */
export function inSequence(targets: readonly NamedTarget[], evaluate: (t: NamedTarget, reached: boolean) => TargetEval): EvaluatedTarget[] {
  const sequences = [...new Set(targets.map((t) => t.target.sequence))].sort((a, b) => a - b);
  const evals = new Map<NamedTarget, TargetEval>();
  let lowerUpdated = true;
  const bySeq = new Map<number, NamedTarget[]>();
  for (const t of targets) {
    let g = bySeq.get(t.target.sequence);
    if (!g) bySeq.set(t.target.sequence, (g = []));
    g.push(t);
  }
  for (const seq of sequences) {
    const group = bySeq.get(seq)!;
    for (const t of group) evals.set(t, evaluate(t, lowerUpdated));
    lowerUpdated = lowerUpdated && group.every((t) => evals.get(t)!.row.updateStatus === 'updated');
  }
  return targets.map((t) => ({ t, e: evals.get(t)! }));
}

/** The soak notes joined to the rows of their targets, unless the plan stops. */
export function withSoakNotes(ordered: EvaluatedTarget[], s: PlanStance): EvaluatedTarget[] {
  if (!s.stopping)
    for (const { t, e } of ordered) {
      const notes = s.soak.soaking.get(targetKey(t.kind, t.target.name));
      if (notes) e.row.message = boundMessage([e.row.message, ...notes].filter((x) => x).join('; '), MessageBudget.status);
    }
  return ordered;
}

/** Counts a target's machines by state. */
export function countTarget(scope: TargetScope, t: NamedTarget): TargetCount {
  const key = targetKey(t.kind, t.target.name);
  const all = scope.machines.get(key) ?? [];
  // No copy in the common case (nothing being deleted): this runs for every target on every reconcile.
  const current = all.some(isDeleting) ? all.filter((m) => !isDeleting(m)) : all;
  const groups: MachineGroups = { notStarted: [], inFlight: [], updated: [], failed: [], aborted: [] };
  const skipped: string[] = [];
  for (const m of current) {
    const name = nameOf(m);
    const st = machineState(scope.mus.get(name));
    // Already at target (issue 15): updated without running updaters; its own record, if any, decides instead.
    if (st === 'notStarted' && scope.atTarget.has(name)) {
      groups.updated.push(name);
      skipped.push(name);
    } else groups[st].push(name);
  }
  const targetMus = scope.targetMus.get(key) ?? [];
  // Failures are the target's history: a failed machine the MHC has since replaced still counts (its replacement
  // would otherwise restart the rollout). Updates we aborted because their machine went away do not.
  const failedMus = targetMus.filter((mu) => machineState(mu) === 'failed');
  const currentNames = failedMus.length > 0 ? new Set(current.map(nameOf)) : undefined;
  const failed = failedMus
    .filter((mu) => currentNames!.has(mu.spec.machineRef.name) || mu.spec.updatePhase !== UpdatePhase.aborting)
    .map((mu) => mu.spec.machineRef.name);
  return {
    all,
    current,
    groups,
    skipped,
    started: targetMus.length > 0 || skipped.length > 0,
    inFlight: groups.inFlight.length,
    unsuccessful: groups.failed.length + groups.aborted.length,
    failed,
    everFailed: failed.length + groups.aborted.length,
  };
}

/** A target's object, its desired size and whether it got there. */
export function sizeTarget(scope: TargetScope, t: NamedTarget, current: number): TargetSize {
  const { snap } = scope;
  const md = t.kind === 'MachineDeployment' ? snap.machineDeployments.find((o) => nameOf(o) === t.target.name) : undefined;
  const cp = snap.controlPlane?.object;
  const desired = t.kind === 'ControlPlane' ? (cp ? cpReplicas(cp) : undefined) : md ? mdReplicas(md) : undefined;
  const surge = md ? mdSurge(md, scope.planName) : { surged: false };
  // A paused owner (the plan pauses it for its target, docs/design.md §11) acts on no replica count, as CAPI's controllers
  // skip paused objects: waiting for its size would wait forever. The machines that exist are the target; those it
  // creates once unpaused are born from the templates the plan aligned.
  const owner = t.kind === 'ControlPlane' ? cp : md;
  const sized = desired !== undefined && owner?.metadata.annotations?.[Annotations.paused] === undefined;
  return {
    ...(md ? { md } : {}),
    ...(desired !== undefined ? { desired } : {}),
    surged: surge.surged,
    ...(surge.recorded !== undefined ? { surgeOrig: surge.recorded } : {}),
    allCreated: !sized || current >= desired,
    // Updated means the target settled at its desired size: a scale-down (e.g. after the surge) is still in progress.
    settled: !sized || current === desired,
    // A target whose object does not exist (an invalid plan) has no machines: "0/0 updated" would be a lie.
    missing: t.kind === 'ControlPlane' ? !cp : !md,
  };
}

/**
 * Halt stops at the first failure. Continue goes on, but not forever: once as many updates failed as the target has
 * machines the failure is systematic, and remediated replacements would otherwise fail and be replaced in a loop.
 */
export function isHalted(scope: TargetScope, c: TargetCount, size: TargetSize): boolean {
  const breaker = Math.max(1, size.desired ?? c.current.length);
  return scope.halt ? c.everFailed > 0 : c.failed.length >= breaker;
}

/** A target's verdict before anything starts: its updateStatus, Ready-style reason and message. */
export interface TargetVerdict {
  status: UpdateStatusValue;
  reason: string;
  message: string;
}

/** The target's updateStatus from its counts, its size and the plan's mode. */
export function targetVerdict(scope: TargetScope, reading: TargetReading, mode: Mode, reached: boolean): TargetVerdict {
  const { t, c, size, halted } = reading;
  const allDone = c.groups.notStarted.length === 0 && c.inFlight === 0;
  if (size.missing && !c.started) return { status: 'pending', reason: Reasons.pending, message: `${t.kind} ${t.target.name} not found` };
  if (mode === 'stop') {
    if (c.inFlight > 0)
      return {
        status: 'aborting',
        reason: Reasons.aborting,
        message: `waiting for ${c.inFlight} machine(s) to stop: ${nameList(c.groups.inFlight)}`,
      };
    if (allDone && c.unsuccessful === 0 && size.allCreated && c.started) return { status: 'updated', reason: Reasons.updated, message: '' };
    if (c.failed.length > 0) return { status: 'failed', reason: Reasons.failed, message: `failed: ${failureNote(scope, c.failed)}` };
    return { status: 'aborted', reason: Reasons.aborted, message: '' };
  }
  if (allDone && c.unsuccessful === 0 && size.settled && !size.surged) return { status: 'updated', reason: Reasons.updated, message: '' };
  if (c.inFlight === 0 && c.everFailed > 0 && (halted || (c.groups.notStarted.length === 0 && size.allCreated)))
    return { status: 'failed', reason: Reasons.failed, message: failedMessage(scope, c, halted) };
  if (c.started || size.surged) return { status: 'updating', reason: Reasons.updating, message: '' };
  if (reached) return { status: 'pending', reason: Reasons.pending, message: '' };
  return {
    status: 'pending',
    reason: Reasons.waitingForSequence,
    message: `waiting for the targets with a lower sequence than ${t.target.sequence} to be updated`,
  };
}

/** Why a target failed: the halt, the failed machines with their messages, the aborted ones. */
function failedMessage(scope: TargetScope, c: TargetCount, halted: boolean): string {
  const why = halted
    ? scope.halt
      ? 'halted (failurePolicy Halt); '
      : `halted: ${c.failed.length} updates failed, as many as the target has machines; `
    : '';
  const failed = c.failed.length ? `failed: ${failureNote(scope, c.failed)}` : '';
  const aborted = c.groups.aborted.length ? `${c.failed.length ? '; ' : ''}aborted: ${nameList(c.groups.aborted)}` : '';
  return `${why}${failed}${aborted}`;
}

/** Evaluates one target: count, size, verdict, then what starts (rollout) and the surge's restore. */
export function evalTarget(scope: TargetScope, t: NamedTarget, mode: Mode, reached: boolean): TargetEval {
  const c = countTarget(scope, t);
  const size = sizeTarget(scope, t, c.current.length);
  const halted = isHalted(scope, c, size);
  const reading: TargetReading = { t, c, size, halted };
  const verdict = targetVerdict(scope, reading, mode, reached);
  const ev: TargetEval = {
    row: {
      kind: t.kind,
      name: t.target.name,
      sequence: t.target.sequence,
      updateStatus: verdict.status,
      machines: c.current.length,
      updated: c.groups.updated.length,
      ...(c.skipped.length > 0 ? { skipped: c.skipped.length } : {}),
      updating: c.inFlight,
      failed: c.failed.length,
      aborted: c.groups.aborted.length,
    },
    reason: verdict.reason,
    starts: [],
    inFlight: c.inFlight,
    started: c.started,
    skipped: c.skipped,
  };
  let message = verdict.message;
  const open = verdict.status !== 'updated' && verdict.status !== 'failed';
  if (mode === 'rollout' && reached && open) message = rolloutTarget(scope, reading, ev) ?? message;
  else if (mode === 'hold' && open && c.inFlight > 0)
    message = `no new machines start; ${c.inFlight} machine(s) in update: ${nameList(c.groups.inFlight)}`;
  message = restoreSurge(reading, mode, ev) ?? message;
  if (message) ev.row.message = boundMessage(message, MessageBudget.status);
  return ev;
}
