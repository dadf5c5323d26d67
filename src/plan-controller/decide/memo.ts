// What a plan's decision keeps across reconciles so that a reconcile costs in proportion to what changed, not to the
// fleet. A pure cache: every entry is keyed by the identity of the inputs it was derived from (the informer store's
// objects are frozen and replaced on every change, so the same object reference means the same object), checked in
// full before it is reused, so a decision with the memo equals the decision without it (decide-memo.test.ts). Nothing
// here reads the clock: time-dependent answers (soak, verification, windows) are re-derived every reconcile from the
// cached time-independent parts. Pure: no I/O; the plan controller keeps one per plan and drops it with the plan.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import type { TargetEval } from './types.js';
import type { OwnFilterMemo } from '../scope.js';
import { RulesMemo, changedAt, machinesChangedAt } from '../../rules/memo.js';

/** A target's evaluation and every input it read, position by position. */
export interface TargetMemoEntry {
  /** The plan's identity, generation, mode and the target's place in the sequence (see targets.ts evalKey). */
  key: string;
  /** The target's object (MachineDeployment or control plane). */
  owner: KubeObject | undefined;
  /** The target's machines as counted (sorted by name). */
  machines: readonly KubeObject[];
  /** Each machine's MachineUpdate of this plan (same positions as machines). */
  mus: readonly (MachineUpdate | undefined)[];
  /** Each machine's membership of the at-target set (same positions). */
  atTarget: readonly boolean[];
  /** The target's MachineUpdates of this plan, in snapshot order. */
  targetMus: readonly MachineUpdate[];
  /** The evaluation (frozen: callers get a copy of its row). */
  ev: TargetEval;
}

/** The decision memo of one plan (see the file comment). */
export class DecideMemo extends RulesMemo {
  /** Per target key. */
  readonly targets = new Map<string, TargetMemoEntry>();
  /** The name index of the last snapshot's machines (updated in place for the machines that changed). */
  byName: { machines: readonly KubeObject[]; map: Map<string, KubeObject> } | undefined;
  /** The soak gate's last inputs (soakCandidates) and the updates it left open (held, failed, or read again). */
  soakLast:
    { key: string; mus: readonly MachineUpdate[]; machines: readonly KubeObject[]; position: ReadonlyMap<string, number> } | undefined;
  /** abortsOf's last answer (decide/actions.ts): the update to abort per machine name, and the lists it read. */
  aborts: { mus: readonly MachineUpdate[]; machines: readonly KubeObject[]; entries: Map<string, string> } | undefined;
  /**
   * labelChanges' last answer (decide/actions.ts): per machine to label (with its start) or unlabel, its position; the
   * machines whose start time was the clock's; the machines started then; every machine's position; the lists it read.
   */
  labels:
    | {
        planLabel: string;
        machines: readonly KubeObject[];
        mus: readonly MachineUpdate[];
        entries: Map<string, { pos: number; startedAt?: string }>;
        clock: Set<string>;
        pos: Map<string, number>;
        created: ReadonlySet<string>;
      }
    | undefined;
  /** The snapshot's ownership filter of the plan's MachineUpdates (scope.ts ownMachineUpdates). */
  readonly ownFilter: OwnFilterMemo = {};
  /** ownUpdates' last input and answer (decide/mode.ts), with the position each machine's entry came from. */
  own: { planName: string; mus: readonly MachineUpdate[]; map: Map<string, MachineUpdate>; from: Map<string, number> } | undefined;
  /**
   * targetScope's MachineUpdates per target (targets.ts groupTargetMus): the plan's update map they were grouped from
   * (patched in place by ownUpdates), the lists, each update's list and position, and the names the soak gate replaced.
   */
  targetMus:
    | {
        own: ReadonlyMap<string, MachineUpdate>;
        lists: Map<string, MachineUpdate[]>;
        where: ReadonlyMap<string, readonly [string, number]>;
        subst: Set<string>;
      }
    | undefined;
  /** The names the soak gate read this decision (soakCandidates' answer, kept by it; undefined: all of them). */
  soakRead: readonly string[] | undefined;
  /** Machine names whose update counts under another target than the machine's (targets.ts), as of the last decision. */
  cross: Set<string> | undefined;
  /** The "updater not reporting" note of a MachineUpdate object, or null (weak). */
  readonly unreported = new WeakMap<MachineUpdate, string | null>();
  /**
   * The names ownUpdates set in its map (memo.own) since the "not reporting" notes were last read (plan-status.ts
   * memoUnreported); undefined when the map was rebuilt since.
   */
  ownTouched: Set<string> | undefined;
  /** memoUnreported's last map and the names whose update had a note then. */
  unreportedLast: { map: ReadonlyMap<string, MachineUpdate>; withNote: Set<string> } | undefined;
  /** This decision may take memoEvalTarget's fast path (set by evaluateTargets). */
  fast = false;
  /** This decision's MachineDeployments by name (set by evaluateTargets). */
  mdByName: Map<string, KubeObject> | undefined;
  /** The last decision counted every update under its own target. */
  lastCrossFree: boolean | undefined;
  /** The last decision's machines at target (its scope's set, as counted). */
  lastAtTarget: ReadonlySet<string> | undefined;
  /**
   * The targets whose machines joined or left the at-target set since the last decision (set by evaluateTargets; no
   * fast path for them); undefined: every target.
   */
  atDirty: ReadonlySet<string> | undefined;
}

/**
 * The name index of the snapshot's machines. With a memo, the last index is patched for the machines whose object
 * changed (same names at the same positions), instead of rebuilt for every machine.
 */
export function machineIndex(machines: readonly KubeObject[], memo?: DecideMemo): ReadonlyMap<string, KubeObject> {
  const prev = memo?.byName;
  if (prev && prev.machines.length === machines.length) {
    // Same length: changedAt's positions are machines replaced in place (names moved: undefined, rebuilt).
    const changed = machinesChangedAt(memo!, prev.machines, machines);
    if (changed) {
      for (const i of changed) prev.map.set(machines[i]!.metadata.name ?? '', machines[i]!);
      memo!.byName = { machines, map: prev.map };
      return prev.map;
    }
  }
  const map = new Map(machines.map((m) => [m.metadata.name ?? '', m]));
  if (memo) memo.byName = { machines, map };
  return map;
}

/** changedAt(prev, next) of two MachineUpdate lists, from this decision's delta when it compared the same two lists. */
export function musChangedAt(
  memo: DecideMemo,
  prev: readonly MachineUpdate[],
  next: readonly MachineUpdate[],
): readonly number[] | undefined {
  const d = memo.delta;
  return d && d.baseMus === prev && memo.soakLast?.mus === next ? d.mus : changedAt(prev, next);
}

/**
 * The machine names the soak gate reads this decision, in the snapshot's order of updates: those it left open last
 * time and those whose update or machine is a new object. Undefined (read them all) on the first decision, when the
 * key (plan generation, recorded gate failures) changed, or when updates or machines were added or removed.
 */
export function soakCandidates(
  memo: DecideMemo,
  key: string,
  mus: readonly MachineUpdate[],
  machines: readonly KubeObject[],
): string[] | undefined {
  const last = memo.soakLast;
  memo.delta = undefined;
  // The ownership filter (scope.ts) patched this list from the last decision's: its positions, no scan of the updates.
  const f = memo.ownFilter.last;
  const musChanged =
    last && last.key === key ? (f?.changed && f.out === mus && f.base === last.mus ? [...f.changed] : changedAt(last.mus, mus)) : undefined;
  const machinesChanged = musChanged && changedAt(last!.machines, machines);
  if (!musChanged || !machinesChanged) {
    // Read them all; the position of each machine's first update, for the next decisions' order.
    const position = new Map<string, number>();
    mus.forEach((mu, i) => {
      if (!position.has(mu.spec.machineRef.name)) position.set(mu.spec.machineRef.name, i);
    });
    memo.soakLast = { key, mus, machines, position };
    return (memo.soakRead = undefined);
  }
  // Same names at the same positions (and some appended): the positions still hold, the appended ones join.
  const position = last!.position as Map<string, number>;
  for (let i = last!.mus.length; i < mus.length; i++)
    if (!position.has(mus[i]!.spec.machineRef.name)) position.set(mus[i]!.spec.machineRef.name, i);
  memo.soakLast = { key, mus, machines, position };
  memo.delta = { mus: musChanged, machines: machinesChanged, baseMus: last!.mus, baseMachines: last!.machines, nextMachines: machines };
  const names = new Set(memo.soakOpen);
  for (const i of musChanged) names.add(mus[i]!.spec.machineRef.name);
  for (const i of machinesChanged) names.add(machines[i]!.metadata.name ?? '');
  const at: [number, string][] = [];
  for (const n of names) {
    const i = last!.position.get(n);
    if (i !== undefined) at.push([i, n]);
  }
  return (memo.soakRead = at.sort((a, b) => a[0] - b[0]).map(([, n]) => n));
}

/**
 * The plan's MachineUpdates by machine name (the last one in snapshot order wins). With a memo, last decision's map is
 * patched for the positions holding new objects when the list is a patch of the last (same names at the same
 * positions, some appended), instead of a map of every update built per reconcile; otherwise built afresh.
 */
export function ownUpdates(mus: readonly MachineUpdate[], planName: string, memo?: DecideMemo): Map<string, MachineUpdate> {
  const last = memo?.own;
  const at = last && last.planName === planName ? musChangedAt(memo!, last.mus, mus) : undefined;
  if (at) {
    const { map, from } = last!;
    let patched = true;
    for (const i of at) {
      const mu = mus[i]!;
      const was = last!.mus[i];
      // An update now naming another machine or plan (not a change the API allows, but the memo must not trust
      // that) leaves a stale entry behind: start over.
      if (was && (was.spec.machineRef.name !== mu.spec.machineRef.name || was.spec.planName !== mu.spec.planName)) {
        patched = false;
        break;
      }
      if (mu.spec.planName !== planName) continue;
      const name = mu.spec.machineRef.name;
      // A later position holds this machine's entry: it wins, as in the full pass.
      if ((from.get(name) ?? -1) > i) continue;
      map.set(name, mu);
      from.set(name, i);
      memo!.ownTouched?.add(name);
    }
    if (patched) {
      memo!.own = { planName, mus, map, from };
      return map;
    }
  }
  const map = new Map<string, MachineUpdate>();
  const from = new Map<string, number>();
  mus.forEach((mu, i) => {
    if (mu.spec.planName !== planName) return;
    map.set(mu.spec.machineRef.name, mu);
    from.set(mu.spec.machineRef.name, i);
  });
  if (memo) {
    memo.own = { planName, mus, map, from };
    memo.ownTouched = undefined;
  }
  return map;
}
