// Machines at target (rules/at-target.ts machinesAtTarget) through the plan's cache: each machine's answer kept by the
// resourceVersions of the objects it read and the plan's generation, and each Machine object's last finding kept by
// position, so a reconcile looks again only at the machines whose objects changed. The plan controller builds the
// snapshot's at-target set through it; the answers equal machinesAtTarget's (at-target.test.ts, plan-cache.test.ts).
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import type { ContractRef } from '../../api/capi/index.js';
import { isDeleting, machineBootstrapRef, machineInfraRef, nameOf } from '../../api/capi/index.js';
import type { RefLookup, TargetValues } from '../../rules/at-target.js';
import { candidateValues, machineAtTarget, valuesByTargetOf } from '../../rules/at-target.js';
import { changedAt } from '../../rules/lists.js';

/**
 * Memo of machineAtTarget answers for one plan: per machine, keyed by the resourceVersions of the objects the answer
 * read (Machine, and InfraMachine / BootstrapConfig when the target's values live there) and the plan's generation
 * (its values). Checking every machine without an update cost ~27 ms per reconcile at 10,000 machines; unchanged
 * machines are now answered from the memo. Bounded: entries of machines no longer passed in are dropped, and the
 * memo never holds more than `maxEntries`; the controller drops the whole memo with the plan.
 */
export class AtTargetMemo {
  private generation: number | undefined;
  private readonly entries = new Map<string, MemoEntry>();
  /**
   * The last call's machines and, per position, what was found for that Machine object (before the MachineUpdate
   * check): a machine that is the same object at the same position is answered without a lookup (refs: only while the
   * referenced kinds' stores are unchanged, `stamp`).
   */
  last: { machines: readonly KubeObject[]; states: Uint8Array; stamp: string | undefined } | undefined;
  /**
   * excluded()'s last input and set (patched in place while the updates are patches of the last list), and the names
   * it added since machinesAtTarget last read it (undefined: the set was rebuilt, so it may also have lost names).
   */
  private excl: { mus: readonly MachineUpdate[]; set: Set<string> } | undefined;
  private added: Set<string> | undefined;
  /** Answers served from the memo (for tests and metrics). */
  hits = 0;
  /** Answers computed. */
  misses = 0;

  /**
   * @param maxEntries the most machines remembered (then it starts over)
   * @param slack entries past the current candidates kept before they are swept (machinesAtTarget)
   */
  constructor(
    private readonly maxEntries = 200_000,
    readonly slack = 1024,
  ) {}

  /** Number of machines remembered. */
  get size(): number {
    return this.entries.size;
  }

  /** Forgets everything when the plan's generation (its values) changed. */
  begin(generation: number | undefined): void {
    if (generation !== this.generation) {
      this.entries.clear();
      this.last = undefined;
    }
    this.generation = generation;
  }

  /** machineAtTarget, answered from the memo while the objects it reads are unchanged. */
  check(m: KubeObject, values: TargetValues, lookup: RefLookup): boolean {
    const ns = m.metadata.namespace ?? '';
    const rv = m.metadata.resourceVersion;
    const name = nameOf(m);
    const hit = this.entries.get(name);
    // Same Machine version: same references; only the referenced objects' versions need a look (one map get each).
    if (hit && rv !== undefined && hit.rv === rv && hit.values === values.size) {
      let same = true;
      for (const r of hit.refs) {
        if (lookup(ns, r.ref)?.metadata.resourceVersion !== r.rv) {
          same = false;
          break;
        }
      }
      if (same) {
        this.hits++;
        return hit.atTarget;
      }
    }
    this.misses++;
    const atTarget = machineAtTarget(m, values, lookup);
    // Without a resourceVersion nothing identifies an object's state: not remembered.
    let keyed = rv !== undefined;
    const refs: MemoEntry['refs'] = [];
    for (const sel of values.keys()) {
      if (sel === 'Machine') continue;
      const ref = sel === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
      if (!ref) continue;
      const obj = lookup(ns, ref);
      if (obj && obj.metadata.resourceVersion === undefined) keyed = false;
      refs.push({ ref, rv: obj?.metadata.resourceVersion });
    }
    if (keyed) {
      if (this.entries.size >= this.maxEntries && !this.entries.has(name)) this.entries.clear();
      this.entries.set(name, { rv: rv!, values: values.size, refs, atTarget });
    } else this.entries.delete(name);
    return atTarget;
  }

  /**
   * The names of the machines these MachineUpdates are for (machinesAtTarget's `exclude`): last call's set, with the
   * names of the positions holding new objects added, when the list is a patch of the last (store.ts keeps objects in
   * place and appends new ones); built afresh otherwise (an update removed or moved).
   */
  excluded(mus: readonly MachineUpdate[]): ReadonlySet<string> {
    const last = this.excl;
    const at = last ? changedAt(last.mus, mus) : undefined;
    if (at && at.every((i) => i >= last!.mus.length || last!.mus[i]!.spec.machineRef.name === mus[i]!.spec.machineRef.name)) {
      for (const i of at) {
        const name = mus[i]!.spec.machineRef.name;
        if (!last!.set.has(name)) {
          last!.set.add(name);
          this.added?.add(name);
        }
      }
      this.excl = { mus, set: last!.set };
      return last!.set;
    }
    const set = new Set(mus.map((m) => m.spec.machineRef.name));
    this.excl = { mus, set };
    this.added = undefined;
    return set;
  }

  /**
   * The names excluded() added since the last call of this (then it starts collecting again), or undefined when
   * `exclude` is not the set excluded() keeps or that set was rebuilt since.
   */
  takeAdded(exclude: ReadonlySet<string>): ReadonlySet<string> | undefined {
    const added = this.excl?.set === exclude && this.lastExclude === exclude ? this.added : undefined;
    this.added = new Set();
    this.lastExclude = exclude;
    return added;
  }
  private lastExclude: ReadonlySet<string> | undefined;

  /** Name → position of the machines of the last positionsOf call (dup: a name occurs twice, not usable). */
  private index: { machines: readonly KubeObject[]; map: Map<string, number>; dup: boolean } | undefined;

  /**
   * The positions in `machines` of these names, ascending (names of no machine left out), or undefined when a name
   * occurs twice. The index is kept across calls while the list is a patch of the last (same names at the same
   * positions, some appended: a pass of reference checks), so a call costs the names and the changes, not the fleet.
   */
  positionsOf(machines: readonly KubeObject[], names: ReadonlySet<string>): number[] | undefined {
    const last = this.index;
    const at = last ? changedAt(last.machines, machines) : undefined;
    if (last && at) {
      for (const i of at) {
        if (i < last.machines.length) continue;
        const n = nameOf(machines[i]!);
        if (last.map.has(n)) last.dup = true;
        else last.map.set(n, i);
      }
      this.index = { ...last, machines };
    } else {
      const map = new Map<string, number>();
      let dup = false;
      for (let i = 0; i < machines.length; i++) {
        const n = nameOf(machines[i]!);
        if (map.has(n)) dup = true;
        else map.set(n, i);
      }
      this.index = { machines, map, dup };
    }
    if (this.index.dup) return undefined;
    const out: number[] = [];
    for (const n of names) {
      const p = this.index.map.get(n);
      if (p !== undefined) out.push(p);
    }
    return out.sort((a, b) => a - b);
  }

  /** Drops the entries of machines not in `seen` (deleted, moved to another cluster, or now with a MachineUpdate). */
  retain(seen: ReadonlySet<string>): void {
    if (this.entries.size <= seen.size) return;
    for (const name of this.entries.keys()) if (!seen.has(name)) this.entries.delete(name);
  }
}

interface MemoEntry {
  /** The Machine's resourceVersion the answer was computed at. */
  rv: string;
  /** Number of selectResources of the target's values (a machine moved to a target with other kinds recomputes). */
  values: number;
  /** The referenced objects read, with their resourceVersion then (undefined: not found). */
  refs: { ref: ContractRef; rv: string | undefined }[];
  atTarget: boolean;
}

/** Whether a last answer stands for the same Machine object: always by its own values, by read objects only when their stores are unchanged. */
function lastAnswerHolds(was: number, refsSame: boolean): boolean {
  return was === NONE || was === AT_M || was === NOT_M || (refsSame && (was === AT_R || was === NOT_R));
}

/** What was found for a candidate, to remember. */
function stateOf(values: TargetValues, at: boolean): number {
  if (values.size === 1 && values.has('Machine')) return at ? AT_M : NOT_M;
  return at ? AT_R : NOT_R;
}

/**
 * Names excluded since the last call, when `exclude` only grew since (memo.excluded): then a machine excluded last
 * time (NEW) that is the same object is still excluded, and only the others need a look in `added`, no name lookup
 * in the whole set per machine. With the positions of those names (ascending), so that an unchanged machine is decided
 * from the arrays alone: reading every machine's name to look it up was most of the pass at 30,003 machines (a cache
 * miss per machine object).
 */
function excludedSinceLast(
  memo: AtTargetMemo,
  machines: readonly KubeObject[],
  exclude: ReadonlySet<string>,
): { added: ReadonlySet<string> | undefined; addedAt: number[] | undefined } {
  const added = memo.takeAdded(exclude);
  if (added === undefined) return { added, addedAt: undefined };
  return { added, addedAt: added.size === 0 ? [] : memo.positionsOf(machines, added) };
}

/** Records this pass in the memo, dropping entries of machines no longer candidates once there are many of them. */
function rememberPass(
  memo: AtTargetMemo,
  machines: readonly KubeObject[],
  states: Uint8Array,
  stamp: string | undefined,
  candidates: number,
): void {
  memo.last = { machines, states, stamp };
  // Entries of machines no longer candidates (now with an update, deleted, moved) are dropped once they are a
  // quarter more than the candidates: an entry is keyed by its machine's version, so one kept longer is never wrong.
  if (memo.size > candidates + Math.max(memo.slack, candidates / 4)) {
    const seen = new Set<string>();
    for (let i = 0; i < machines.length; i++) if (states[i] !== NEW && states[i] !== NONE) seen.add(nameOf(machines[i]!));
    memo.retain(seen);
  }
}

/**
 * machinesAtTarget (rules/at-target.ts) through the plan's at-target memo: unchanged machines are answered from it
 * (same answers). `stamp` names the state of the referenced kinds' stores (unchanged: their objects too).
 */
export function atTargetThrough(
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  lookup: RefLookup,
  exclude: ReadonlySet<string>,
  cache: { memo: AtTargetMemo; stamp?: string | undefined },
): string[] {
  const { memo, stamp } = cache;
  memo.begin(plan.metadata?.generation);
  const valuesByTarget = valuesByTargetOf(plan);
  const out: string[] = [];
  // Candidates counted, not collected: a set of every candidate's name per reconcile was a third of this function's
  // cost at 30,003 machines, and the memo needs it only to drop entries (see rememberPass).
  let candidates = 0;
  if (valuesByTarget.size === 0) return out;
  // One pass over the machines (no grouping and sorting per target): the answer is sorted once at the end.
  const clusterName = plan.spec.clusterName;
  const last = memo.last;
  const refsSame = stamp !== undefined && last?.stamp === stamp;
  const states = new Uint8Array(machines.length);
  const { added, addedAt } = excludedSinceLast(memo, machines, exclude);
  let ai = 0;
  for (let i = 0; i < machines.length; i++) {
    const m = machines[i]!;
    const same = last !== undefined && last.machines[i] === m;
    if (added && same && last.states[i] === NEW) continue;
    // Machines with a MachineUpdate first (cheapest, and most of the fleet once a rollout is under way).
    let name: string | undefined;
    if (added && same && addedAt) {
      while (ai < addedAt.length && addedAt[ai]! < i) ai++;
      if (addedAt[ai] === i) continue;
    } else {
      name = nameOf(m);
      if (added && same ? added.size > 0 && added.has(name) : exclude.has(name)) continue;
    }
    // The same Machine object at the same position: its last answer, unless it read objects whose stores changed.
    const was = same ? last.states[i]! : NEW;
    if (lastAnswerHolds(was, refsSame)) {
      states[i] = was;
      if (was === NONE) continue;
      candidates++;
      if (was === AT_M || was === AT_R) out.push(name ?? nameOf(m));
      continue;
    }
    name ??= nameOf(m);
    const values = candidateValues(m, clusterName, valuesByTarget);
    if (!values || isDeleting(m)) {
      states[i] = NONE;
      continue;
    }
    candidates++;
    const at = memo.check(m, values, lookup);
    if (at) out.push(name);
    states[i] = stateOf(values, at);
  }
  rememberPass(memo, machines, states, stamp, candidates);
  return out.sort();
}

// What machinesAtTarget found for a Machine object (AtTargetMemo.last): not looked at (excluded), not a candidate, at
// target or not by its own values (_M), or by values that read referenced objects (_R).
const NEW = 0;
const NONE = 1;
const AT_M = 2;
const NOT_M = 3;
const AT_R = 4;
const NOT_R = 5;
