// The plan controller's cache at the edge: what a plan's decision keeps across reconciles so that a reconcile costs in
// proportion to what changed, not to the fleet. The rules (src/rules) and the decision phases (decide/) are plain
// functions of their inputs; this folder computes the inputs they are handed (machines grouped by target, the plan's
// updates by machine, validation's problems, the soak gate's facts, each target's evaluation, labels, aborts) from the
// last reconcile's answers. Every entry is keyed by the identity of the inputs it was derived from (the informer
// store's objects are frozen and replaced on every change, so the same object reference means the same object), or by
// uids, generations and resourceVersions, and checked in full before it is reused, so a decision through the cache
// equals the decision without it (plan-cache.test.ts). Nothing here reads the clock: time-dependent answers (soak,
// verification, windows) are re-derived every reconcile from the cached time-independent parts. No I/O; the plan
// controller keeps one cache per plan and drops it with the plan.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import type { TargetEval } from '../decide/types.js';
import type { OwnFilterMemo } from '../scope.js';
import type { SoakFacts } from '../../rules/gates.js';
import type { Grouping, SkewCheck, TargetCheck } from '../../rules/upgrade-rules.js';
import { changedAt } from '../../rules/lists.js';

/** One target's machines as grouped last time: the input order, its sort by name, and the sorted list. */
export interface GroupEntry {
  input: readonly KubeObject[];
  /** Positions in `input` of the sorted list's machines. */
  perm: readonly number[];
  sorted: KubeObject[];
}

/** Per MachineUpdate (for one machine object and kubelet check): its completion time and verification mismatches. */
export interface SoakEntry extends SoakFacts {
  machine: KubeObject;
  kubelet: boolean;
}

/** The upgrade rules' per-target checks, kept for one plan generation and control-plane version (`key`). */
export interface UpgradeChecks {
  key: string;
  /** Per target label (controlPlane X, machineDeployment Y). */
  targets: Map<string, TargetCheck>;
  /** Per MachineDeployment without a version of its own. */
  skew: Map<string, SkewCheck>;
  /** The machines grouped as last checked, patched for the machines replaced since. */
  grouping?: Grouping | undefined;
}

/** Counters of reuse, for the tests and bench/decide-cpu.ts (not part of any decision). */
export interface CacheStats {
  targetHits: number;
  targetMisses: number;
  validationHits: number;
  validationMisses: number;
  upgradeHits: number;
  upgradeMisses: number;
}

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

/** The cache of one plan (see the file comment). */
export class PlanCache {
  /** Per target key, for the cluster `groupsCluster` (groups.ts). */
  readonly groups = new Map<string, GroupEntry>();
  groupsCluster: string | undefined;
  /**
   * machinesByTarget's last input and output, with each grouped machine's group and position in it: patched for the
   * machines replaced in place (groups.ts patchGroups).
   */
  byTarget:
    | {
        cluster: string;
        machines: readonly KubeObject[];
        out: Map<string, KubeObject[]>;
        where: ReadonlyMap<string, readonly [string, number]>;
      }
    | undefined;
  /** The upgrade rules' problems, the machines and key they were derived from (validation.ts). */
  upgrade: { key: string; machines: readonly KubeObject[]; problems: readonly string[] } | undefined;
  /**
   * Validation's problems that do not read the machines (validation.ts), with the facts and objects they were derived
   * from: the schema, the named objects and the updaters are checked again only when one of those changed.
   */
  validation: { key: string; refs: readonly unknown[]; head: readonly string[]; tail: readonly string[] } | undefined;
  /** The upgrade rules' per-target checks (validation.ts), for the same key. */
  upgradeGroups: UpgradeChecks | undefined;
  /** Soak/verification facts per MachineUpdate object (weak: dropped with the objects). */
  readonly soak = new WeakMap<MachineUpdate, SoakEntry>();
  soakOpen: ReadonlySet<string> = new Set();
  /**
   * This decision's changes against the last one (soakCandidates): positions in the snapshot's MachineUpdates and
   * Machines holding new objects (appended ones included); undefined when not a patch (start over).
   */
  delta:
    | {
        mus: readonly number[];
        machines: readonly number[];
        /** The lists these positions compare against (the last decision's). */
        baseMus: readonly MachineUpdate[];
        baseMachines: readonly KubeObject[];
        /** The machines `machines` are positions in (this decision's). */
        nextMachines: readonly KubeObject[];
      }
    | undefined;
  readonly stats: CacheStats = {
    targetHits: 0,
    targetMisses: 0,
    validationHits: 0,
    validationMisses: 0,
    upgradeHits: 0,
    upgradeMisses: 0,
  };
  /** Per target key. */
  readonly targets = new Map<string, TargetMemoEntry>();
  /** The name index of the last snapshot's machines (updated in place for the machines that changed). */
  byName: { machines: readonly KubeObject[]; map: Map<string, KubeObject> } | undefined;
  /** The soak gate's last inputs (soakCandidates). */
  soakLast:
    { key: string; mus: readonly MachineUpdate[]; machines: readonly KubeObject[]; position: ReadonlyMap<string, number> } | undefined;
  /** abortsThrough's last answer (actions.ts): the update to abort per machine name, and the lists it read. */
  aborts: { mus: readonly MachineUpdate[]; machines: readonly KubeObject[]; entries: Map<string, string> } | undefined;
  /**
   * labelsThrough' last answer (actions.ts): per machine to label (with its start) or unlabel, its position; the
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
  /** ownUpdates' last input and answer (stance.ts), with the position each machine's entry came from. */
  own: { planName: string; mus: readonly MachineUpdate[]; map: Map<string, MachineUpdate>; from: Map<string, number> } | undefined;
  /**
   * targetScope's MachineUpdates per target (targets.ts recordTargetMus, patchTargetMus): the plan's update map they were grouped from
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
   * The names ownUpdates set in its map (`own`) since the "not reporting" notes were last read (actions.ts
   * unreportedThrough); undefined when the map was rebuilt since.
   */
  ownTouched: Set<string> | undefined;
  /** unreportedThrough's last map and the names whose update had a note then. */
  unreportedLast: { map: ReadonlyMap<string, MachineUpdate>; withNote: Set<string> } | undefined;
  /** This decision may take evalThrough's fast path (set by evaluateThrough, targets.ts). */
  fast = false;
  /** This decision's MachineDeployments by name (set by evaluateThrough). */
  mdByName: Map<string, KubeObject> | undefined;
  /** The last decision counted every update under its own target. */
  lastCrossFree: boolean | undefined;
  /** The last decision's machines at target (its scope's set, as counted). */
  lastAtTarget: ReadonlySet<string> | undefined;
  /**
   * The targets whose machines joined or left the at-target set since the last decision (set by evaluateThrough; no
   * fast path for them); undefined: every target.
   */
  atDirty: ReadonlySet<string> | undefined;
}

/**
 * changedAt(prev, next) of two machine lists, taken from this decision's delta when it compared the same two lists
 * (several passes compare the last decision's machines with this one's; one scan of the fleet serves them all).
 */
export function machinesChangedAt(
  cache: PlanCache,
  prev: readonly KubeObject[],
  next: readonly KubeObject[],
): readonly number[] | undefined {
  const d = cache.delta;
  return d && d.baseMachines === prev && d.nextMachines === next ? d.machines : changedAt(prev, next);
}

/** changedAt(prev, next) of two MachineUpdate lists, from this decision's delta when it compared the same two lists. */
export function musChangedAt(
  cache: PlanCache,
  prev: readonly MachineUpdate[],
  next: readonly MachineUpdate[],
): readonly number[] | undefined {
  const d = cache.delta;
  return d && d.baseMus === prev && cache.soakLast?.mus === next ? d.mus : changedAt(prev, next);
}
