// The part of a plan's decision memo that the shared rules read and keep (validation, upgrade rules, soak facts,
// machine grouping): the plan controller's DecideMemo extends it with its own entries. A pure cache, keyed by the
// identity of the inputs each entry was derived from (informer objects are frozen and replaced on change), checked in
// full before reuse, so an answer with the memo equals the answer without it. Nothing here reads the clock.
import type { KubeObject, MachineUpdate } from '../api/index.js';
import type { UpgradeGroupMemo } from './upgrade-rules.js';

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
  validationHits: number;
  validationMisses: number;
  upgradeHits: number;
  upgradeMisses: number;
}

/** What the shared rules keep across one plan's reconciles (see the file comment). */
export class RulesMemo {
  /** Per target key, for the cluster `groupsCluster`. */
  readonly groups = new Map<string, GroupMemoEntry>();
  groupsCluster: string | undefined;
  /**
   * machinesByTarget's last input and output, with each grouped machine's group and position in it: patched for the
   * machines replaced in place (decide/machines.ts patchGroups).
   */
  byTarget:
    | {
        cluster: string;
        machines: readonly KubeObject[];
        out: Map<string, KubeObject[]>;
        where: ReadonlyMap<string, readonly [string, number]>;
      }
    | undefined;
  /** The upgrade rules' problems, the machines and key they were derived from. */
  upgrade: { key: string; machines: readonly KubeObject[]; problems: readonly string[] } | undefined;
  /**
   * Validation's problems that do not read the machines (validate.ts), with the facts and objects they were derived
   * from: the schema, the named objects and the updaters are checked again only when one of those changed.
   */
  validation: { key: string; refs: readonly unknown[]; head: readonly string[]; tail: readonly string[] } | undefined;
  /** The upgrade rules' per-target checks (upgrade-rules.ts UpgradeGroupMemo), for the same key. */
  upgradeGroups: UpgradeGroupMemo | undefined;
  /** Soak/verification facts per MachineUpdate object (weak: dropped with the objects). */
  readonly soak = new WeakMap<MachineUpdate, SoakMemoEntry<unknown>>();
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
  readonly stats: MemoStats = {
    targetHits: 0,
    targetMisses: 0,
    validationHits: 0,
    validationMisses: 0,
    upgradeHits: 0,
    upgradeMisses: 0,
  };
}

/** True when two lists hold the same objects at the same positions. */
export function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Positions where `next` holds another object than `prev` (appended ones included), or undefined when an object was
 * removed or moved (names differ at a position): then the caller starts over. The store appends new objects and keeps
 * changed ones in place (store.ts), so creations and changes are patches; removals are not.
 */
export function changedAt<T extends { metadata?: { name?: string } }>(prev: readonly T[], next: readonly T[]): number[] | undefined {
  if (next.length < prev.length) return undefined;
  const out: number[] = [];
  for (let i = 0; i < prev.length; i++)
    if (next[i] !== prev[i]) {
      if (next[i]!.metadata?.name !== prev[i]!.metadata?.name) return undefined;
      out.push(i);
    }
  for (let i = prev.length; i < next.length; i++) out.push(i);
  return out;
}

/**
 * changedAt(prev, next) of two machine lists, taken from this decision's delta when it compared the same two lists
 * (several passes compare the last decision's machines with this one's; one scan of the fleet serves them all).
 */
export function machinesChangedAt(
  memo: RulesMemo,
  prev: readonly KubeObject[],
  next: readonly KubeObject[],
): readonly number[] | undefined {
  const d = memo.delta;
  return d && d.baseMachines === prev && d.nextMachines === next ? d.machines : changedAt(prev, next);
}
