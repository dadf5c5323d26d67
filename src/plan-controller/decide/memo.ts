// What a plan's decision keeps across reconciles so that a reconcile costs in proportion to what changed, not to the
// fleet. A pure cache: every entry is keyed by the identity of the inputs it was derived from (the informer store's
// objects are frozen and replaced on every change, so the same object reference means the same object), checked in
// full before it is reused, so a decision with the memo equals the decision without it (decide-memo.test.ts). Nothing
// here reads the clock: time-dependent answers (soak, verification, windows) are re-derived every reconcile from the
// cached time-independent parts. Pure: no I/O; the plan controller keeps one per plan and drops it with the plan.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import type { UpgradeGroupMemo } from '../upgrade-rules.js';
import type { TargetEval } from './types.js';

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

/** One target's machines as grouped last time: the input order, its sort by name, and the sorted list. */
export interface GroupMemoEntry {
  input: readonly KubeObject[];
  /** Positions in `input` of the sorted list's machines. */
  perm: readonly number[];
  sorted: KubeObject[];
}

/** Per MachineUpdate (for one machine object and kubelet check): its completion time and verification mismatches. */
export interface SoakMemoEntry<M> {
  machine: KubeObject;
  kubelet: boolean;
  done: number;
  mismatches: M;
}

/** Counters of reuse, for the tests and bench/decide-cpu.ts (not part of any decision). */
export interface MemoStats {
  targetHits: number;
  targetMisses: number;
  upgradeHits: number;
  upgradeMisses: number;
}

/** The decision memo of one plan (see the file comment). */
export class DecideMemo {
  /** Per target key. */
  readonly targets = new Map<string, TargetMemoEntry>();
  /** Per target key, for the cluster `groupsCluster`. */
  readonly groups = new Map<string, GroupMemoEntry>();
  groupsCluster: string | undefined;
  /** The upgrade rules' problems, the machines and key they were derived from. */
  upgrade: { key: string; machines: readonly KubeObject[]; problems: readonly string[] } | undefined;
  /** The upgrade rules' per-target checks (upgrade-rules.ts UpgradeGroupMemo), for the same key. */
  upgradeGroups: UpgradeGroupMemo | undefined;
  /** The name index of the last snapshot's machines (updated in place for the machines that changed). */
  byName: { machines: readonly KubeObject[]; map: Map<string, KubeObject> } | undefined;
  /** Soak/verification facts per MachineUpdate object (weak: dropped with the objects). */
  readonly soak = new WeakMap<MachineUpdate, SoakMemoEntry<unknown>>();
  /** The "updater not reporting" note of a MachineUpdate object, or null (weak). */
  readonly unreported = new WeakMap<MachineUpdate, string | null>();
  /** This decision may take memoEvalTarget's fast path (set by evaluateTargets). */
  fast = false;
  /** This decision's MachineDeployments by name (set by evaluateTargets). */
  mdByName: Map<string, KubeObject> | undefined;
  /** The last decision counted every update under its own target. */
  lastCrossFree: boolean | undefined;
  /** The last decision's machines at target, joined. */
  lastAtTarget: string | undefined;
  readonly stats: MemoStats = { targetHits: 0, targetMisses: 0, upgradeHits: 0, upgradeMisses: 0 };
}

/** True when two lists hold the same objects at the same positions. */
export function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The name index of the snapshot's machines. With a memo, the last index is patched for the machines whose object
 * changed (same names at the same positions), instead of rebuilt for every machine.
 */
export function machineIndex(machines: readonly KubeObject[], memo?: DecideMemo): ReadonlyMap<string, KubeObject> {
  const prev = memo?.byName;
  if (prev && prev.machines.length === machines.length) {
    let same = true;
    const changed: number[] = [];
    for (let i = 0; i < machines.length && same; i++)
      if (machines[i] !== prev.machines[i]) {
        if (machines[i]!.metadata.name !== prev.machines[i]!.metadata.name) same = false;
        else changed.push(i);
      }
    if (same) {
      for (const i of changed) prev.map.set(machines[i]!.metadata.name ?? '', machines[i]!);
      memo!.byName = { machines, map: prev.map };
      return prev.map;
    }
  }
  const map = new Map(machines.map((m) => [m.metadata.name ?? '', m]));
  if (memo) memo.byName = { machines, map };
  return map;
}

/** Freezes a cached value and everything in it, so that a caller mutating a shared answer throws instead of corrupting it. */
export function freezeDeep<T>(v: T): T {
  const todo: unknown[] = [v];
  while (todo.length > 0) {
    const x = todo.pop();
    if (x !== null && typeof x === 'object' && !Object.isFrozen(x)) {
      Object.freeze(x);
      for (const c of Object.values(x)) if (c !== null && typeof c === 'object') todo.push(c);
    }
  }
  return v;
}
