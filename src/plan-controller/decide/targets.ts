// Phase 3 of decidePlan: every target evaluated against the snapshot, in ascending sequence groups (a group may start
// machines only when every lower group is updated). Each target is counted, sized, given a verdict, then (start.ts)
// its next machines and (surge.ts) the restore of its surge. Pure.
import type { KubeObject, MachineUpdate, TargetKind } from '../../api/index.js';
import { Annotations, Labels, MessageBudget, Reasons, UpdatePhase, boundMessage } from '../../api/index.js';
import { cpReplicas, isDeleting, mdReplicas, nameOf } from '../../api/capi/index.js';
import { OverlayMap } from '../../rules/gates.js';
import { mdSurge } from '../../rules/concurrency.js';
import { labelValue } from './names.js';
import type { PlanSnapshot } from '../scope.js';
import { nameList } from '../status.js';
import type { NamedTarget } from '../../rules/validate.js';
import { targetsOf } from '../../rules/validate.js';
import type { PlanStance } from './mode.js';
import { machineState, machinesByTarget, targetKey } from '../../rules/machines.js';
import { failureNote } from './target-notes.js';
import type { DecideMemo } from './memo.js';
import { deepFreeze } from '../../runtime/pure/freeze.js';
import { sameRefs } from '../../rules/memo.js';
import { rolloutTarget } from './start.js';
import { restoreSurge } from './surge.js';
import type { MachineGroups, Mode, TargetCount, TargetEval, TargetReading, TargetScope, TargetSize, UpdateStatusValue } from './types.js';

/** A target and its evaluation, in the plan's order. */
export interface EvaluatedTarget {
  t: NamedTarget;
  e: TargetEval;
}

/** The snapshot indexed by target for the evaluation of every target (memo: decide/memo.ts). */
export function targetScope(snap: PlanSnapshot, s: PlanStance, memo?: DecideMemo): TargetScope {
  const plan = snap.plan;
  // With a memo: the machines whose update counts under another target than theirs (labels changed since). Kept across
  // decisions: only the updates and machines that are new objects (memo.delta) are looked at again.
  const cluster = plan.spec.clusterName;
  const crossOf = (name: string): boolean => {
    const mu = s.rolloutMus.get(name);
    return !!mu && targetOfMu(cluster, s.machineByName.get(name), mu.spec.target.kind, mu.spec.target.name);
  };
  const delta = memo?.delta;
  const cross = memo && delta && memo.cross ? memo.cross : memo ? new Set<string>() : undefined;
  if (memo && delta && memo.cross) {
    const names = new Set<string>();
    for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
    for (const i of delta.machines) names.add(snap.machines[i]!.metadata.name ?? '');
    for (const n of memo.cross) names.add(n);
    for (const n of names) {
      if (crossOf(n)) cross!.add(n);
      else cross!.delete(n);
    }
  }
  const full = memo !== undefined && !(delta && memo.cross);
  if (full) for (const mu of s.rolloutMus.values()) if (crossOf(mu.spec.machineRef.name)) cross!.add(mu.spec.machineRef.name);
  if (memo) memo.cross = cross;
  const crossTarget = (cross?.size ?? 0) > 0;
  const targetMus = (memo && patchTargetMus(snap, s, memo)) ?? groupTargetMus(s, memo);
  // A machine at target counts as updated once the plan may start (or has started): a plan that waits, is paused or
  // invalid before starting reports nothing as done. spec.rerunMachinesAtTarget runs the updaters regardless.
  const skipping = plan.spec.rerunMachinesAtTarget !== true && (s.mayStart || s.startedBefore);
  return {
    snap,
    machines: machinesByTarget(plan.spec.clusterName, snap.machines, memo),
    targetMus,
    planName: s.planName,
    planLabel: labelValue(s.planName),
    halt: (plan.spec.failurePolicy ?? 'Halt') === 'Halt',
    mus: s.rolloutMus,
    atTarget: new Set(skipping ? (snap.atTarget ?? []) : []),
    crossTarget,
  };
}

/** The rollout's MachineUpdates per target key, in the order of s.rolloutMus; with a memo, recorded for the patch. */
function groupTargetMus(s: PlanStance, memo?: DecideMemo): Map<string, MachineUpdate[]> {
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
  if (memo) {
    const where = new Map<string, readonly [string, number]>();
    for (const [key, list] of targetMus) list.forEach((mu, i) => where.set(mu.spec.machineRef.name, [key, i]));
    // The soak gate's substitutes (held, failed): read again next time, whether or not their update changed.
    const subst = new Set<string>();
    // The soak gate's overlay names them (every override is a new object); any other map is compared in full.
    if (s.rolloutMus instanceof OverlayMap && s.rolloutMus.base === s.mus) for (const n of s.rolloutMus.overrides.keys()) subst.add(n);
    else if (s.rolloutMus !== s.mus) for (const [n, mu] of s.rolloutMus) if (s.mus.get(n) !== mu) subst.add(n);
    memo.targetMus = { own: s.mus, lists: targetMus, where, subst };
  }
  return targetMus;
}

/**
 * groupTargetMus patched from the last decision's answer for the names whose entry may differ (memo.delta's updates, the
 * names the soak gate read, the soak's substitutes of last time): the lists of their targets are copied and changed,
 * every other list is the same array as last time (memoEvalTarget sees it unchanged at once). The names outside that
 * set hold the same objects (their update is the same object and no gate replaced it). Undefined (group afresh) on
 * the first decision, without a delta, when the plan's update map was rebuilt (its order may differ), or when an
 * update now names another target.
 */
function patchTargetMus(snap: PlanSnapshot, s: PlanStance, memo: DecideMemo): Map<string, MachineUpdate[]> | undefined {
  const last = memo.targetMus;
  const delta = memo.delta;
  const read = memo.soakRead;
  // The same map object: ownUpdates patched it in place (existing names keep their order, new ones come last).
  if (!last || !delta || !read || last.own !== s.mus) return undefined;
  // The snapshot's changed updates first, in position order: the only source of new names, appended in map order.
  const names = new Set<string>();
  for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
  for (const n of last.subst) names.add(n);
  for (const n of read) names.add(n);
  const lists = new Map(last.lists);
  const copied = new Set<MachineUpdate[]>();
  const own = (key: string): MachineUpdate[] => {
    const list = lists.get(key);
    if (list && copied.has(list)) return list;
    const c = list ? [...list] : [];
    copied.add(c);
    lists.set(key, c);
    return c;
  };
  const where = last.where as Map<string, readonly [string, number]>;
  const added: [string, readonly [string, number]][] = [];
  for (const n of names) {
    const mu = s.rolloutMus.get(n);
    const at = where.get(n);
    if (!mu) {
      if (at) return undefined; // gone from the plan's updates (not a patch the store makes, but never trusted)
      continue;
    }
    const key = targetKey(mu.spec.target.kind, mu.spec.target.name);
    if (!at) {
      const list = own(key);
      added.push([n, [key, list.push(mu) - 1]]);
      continue;
    }
    if (at[0] !== key) return undefined;
    if (last.lists.get(key)![at[1]] !== mu) own(key)[at[1]] = mu;
  }
  for (const [n, at] of added) where.set(n, at);
  for (const n of names) {
    const mu = s.rolloutMus.get(n);
    if (mu && s.mus.get(n) !== mu) last.subst.add(n);
    else last.subst.delete(n);
  }
  memo.targetMus = { own: s.mus, lists, where, subst: last.subst };
  return lists;
}

/** True when the machine is grouped (machinesByTarget) under another target than the update's. */
function targetOfMu(clusterName: string, m: KubeObject | undefined, kind: string, name: string): boolean {
  const labels = m?.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return false;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== undefined) return kind !== 'ControlPlane' || cp !== name;
  const md = labels[Labels.deploymentName];
  return md !== undefined && (kind !== 'MachineDeployment' || md !== name);
}

/**
 * Evaluates every target in ascending sequence groups; soak notes join the rows of a plan that is not stopping. With a
 * memo, a target whose inputs are all the same objects as last time keeps its evaluation (memoEvalTarget).
 */
export function evaluateTargets(scope: TargetScope, s: PlanStance, memo?: DecideMemo): EvaluatedTarget[] {
  const targets = targetsOf(scope.snap.plan).filter((t) => typeof t.target?.name === 'string');
  const sequences = [...new Set(targets.map((t) => t.target.sequence))].sort((a, b) => a - b);
  const evals = new Map<NamedTarget, TargetEval>();
  if (memo) {
    // The fast path of memoEvalTarget holds when this decision and the last one both had every update counted under its
    // own target: a target's updates then cover what its machines' lookups would read. The at-target set is compared
    // per target: the targets of the machines that joined or left it since the last decision are not fast.
    memo.atDirty = atTargetDirty(scope, memo);
    memo.fast = !scope.crossTarget && memo.lastCrossFree === true && memo.atDirty !== undefined;
    memo.lastCrossFree = !scope.crossTarget;
    memo.lastAtTarget = scope.atTarget;
    // One name index of the MachineDeployments per decision (a search per target was O(targets²)).
    memo.mdByName = new Map();
    for (const o of scope.snap.machineDeployments) if (!memo.mdByName.has(nameOf(o))) memo.mdByName.set(nameOf(o), o);
  }
  let lowerUpdated = true;
  const bySeq = new Map<number, NamedTarget[]>();
  for (const t of targets) {
    let g = bySeq.get(t.target.sequence);
    if (!g) bySeq.set(t.target.sequence, (g = []));
    g.push(t);
  }
  for (const seq of sequences) {
    const group = bySeq.get(seq)!;
    for (const t of group)
      evals.set(t, memo ? memoEvalTarget(memo, scope, t, s.mode, lowerUpdated) : evalTarget(scope, t, s.mode, lowerUpdated));
    lowerUpdated = lowerUpdated && group.every((t) => evals.get(t)!.row.updateStatus === 'updated');
  }
  if (memo) {
    const keys = new Set(targets.map((t) => targetKey(t.kind, t.target.name)));
    for (const key of memo.targets.keys()) if (!keys.has(key)) memo.targets.delete(key);
  }
  const ordered = targets.map((t) => ({ t, e: evals.get(t)! }));
  if (!s.stopping)
    for (const { t, e } of ordered) {
      const notes = s.soak.soaking.get(targetKey(t.kind, t.target.name));
      if (notes) e.row.message = boundMessage([e.row.message, ...notes].filter((x) => x).join('; '), MessageBudget.status);
    }
  return ordered;
}

/**
 * The target keys whose machines' at-target membership may differ from the last decision's: the groups
 * (machinesByTarget, this decision's) of the names in one set and not the other. A name in no group is in no target's
 * machine list now, so a target that listed it last time has another list (no memo hit). Undefined (every target) on
 * the first decision or when the grouping's name index is not one-to-one (two machines of one name).
 */
function atTargetDirty(scope: TargetScope, memo: DecideMemo): Set<string> | undefined {
  const last = memo.lastAtTarget;
  const byTarget = memo.byTarget;
  if (!last || !byTarget || byTarget.out !== scope.machines) return undefined;
  let grouped = 0;
  for (const list of byTarget.out.values()) grouped += list.length;
  if (grouped !== byTarget.where.size) return undefined;
  const dirty = new Set<string>();
  const mark = (name: string): void => {
    const at = byTarget.where.get(name);
    if (at) dirty.add(at[0]);
  };
  const now = scope.atTarget;
  if (now === last) return dirty;
  for (const n of now) if (!last.has(n)) mark(n);
  for (const n of last) if (!now.has(n)) mark(n);
  return dirty;
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
function evalTarget(scope: TargetScope, t: NamedTarget, mode: Mode, reached: boolean): TargetEval {
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

/** The target's object as sizeTarget reads it (the first MachineDeployment of its name, as its search). */
function ownerOf(scope: TargetScope, t: NamedTarget, memo: DecideMemo): KubeObject | undefined {
  if (t.kind === 'ControlPlane') return scope.snap.controlPlane?.object;
  return memo.mdByName?.get(t.target.name) ?? scope.snap.machineDeployments.find((o) => nameOf(o) === t.target.name);
}

/**
 * evalTarget through the memo. Its inputs: the plan (uid, generation: the target's spec, failure policy), the mode and
 * whether the sequence reached the target, the target's object, its machines, each machine's MachineUpdate and
 * at-target membership, and the target's MachineUpdates; all compared by identity, position by position. No clock.
 */
function memoEvalTarget(memo: DecideMemo, scope: TargetScope, t: NamedTarget, mode: Mode, reached: boolean): TargetEval {
  const plan = scope.snap.plan;
  const generation = plan.metadata?.generation;
  if (generation === undefined) return evalTarget(scope, t, mode, reached);
  const tk = targetKey(t.kind, t.target.name);
  const key = `${plan.metadata?.uid ?? ''}/${generation}/${scope.planName}/${mode}/${reached}`;
  const owner = ownerOf(scope, t, memo);
  const machines = scope.machines.get(tk) ?? [];
  const targetMus = scope.targetMus.get(tk) ?? [];
  const prev = memo.targets.get(tk);
  let hit =
    prev !== undefined &&
    prev.key === key &&
    prev.owner === owner &&
    sameRefs(prev.machines, machines) &&
    sameRefs(prev.targetMus, targetMus);
  // Fast path (see evaluateTargets): the same machines and the same updates of the target read the same records, so no
  // per-machine lookup; the entry's per-machine inputs stay those it was derived from (they are unchanged).
  if (hit && memo.fast && !memo.atDirty!.has(tk)) {
    memo.stats.targetHits++;
    return { ...prev!.ev, row: { ...prev!.ev.row } };
  }
  const mus: (MachineUpdate | undefined)[] = new Array<MachineUpdate | undefined>(machines.length);
  const atTarget: boolean[] = new Array<boolean>(machines.length);
  for (let i = 0; i < machines.length; i++) {
    const name = nameOf(machines[i]!);
    mus[i] = scope.mus.get(name);
    atTarget[i] = scope.atTarget.has(name);
    if (hit && (mus[i] !== prev!.mus[i] || atTarget[i] !== prev!.atTarget[i])) hit = false;
  }
  let ev: TargetEval;
  if (hit) {
    memo.stats.targetHits++;
    ev = prev!.ev;
  } else {
    memo.stats.targetMisses++;
    ev = deepFreeze(evalTarget(scope, t, mode, reached));
  }
  memo.targets.set(tk, { key, owner, machines, mus, atTarget, targetMus, ev });
  // The row is the caller's to annotate (soak notes, status); the rest is read-only.
  return { ...ev, row: { ...ev.row } };
}
