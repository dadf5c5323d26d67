// Machines already at target (issue 15): a machine whose Machine / InfraMachine / BootstrapConfig objects already
// carry every value its target's responsibilities would commit is counted as updated without a MachineUpdate, so a
// retry plan does not re-run updaters on hosts that are done. Same check as the commit's read-back (verifyValues).
// Pure: the objects come from the snapshot; the plan controller and the preview compute it alike.
import type { InPlaceUpdatePlan, KubeObject, PlanUpdater, PreviousValue, Responsibility } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { isDeleting, machineBootstrapRef, machineInfraRef, nameOf } from '../api/capi/index.js';
import { verifyValues, type PointerValue } from '../runtime/pure/set-patch.js';
import { getPointer } from '../runtime/pure/jsonpointer.js';
import { targetKey, targetOfMachine } from './machines.js';
import { Labels } from '../api/index.js';
import { JSON_POINTER, targetsOf } from './validate.js';
import { changedAt } from './lists.js';
import type { MachineUpdate } from '../api/index.js';

/** Looks up the object a Machine's reference names: undefined when it is not known (not listed, not found). */
export type RefLookup = (namespace: string, ref: ContractRef) => KubeObject | undefined;

/** The responsibilities of a target per selectResource, or undefined when the target cannot be at target by values. */
export function targetValues(
  updaters: readonly PlanUpdater[] | undefined,
): Map<Responsibility['selectResource'], PointerValue[]> | undefined {
  if (!Array.isArray(updaters) || updaters.length === 0) return undefined;
  const out = new Map<Responsibility['selectResource'], PointerValue[]>();
  for (const u of updaters) {
    const resps = Array.isArray(u.responsibilities)
      ? u.responsibilities.filter((r: Responsibility) => typeof r.path === 'string' && JSON_POINTER.test(r.path) && r.value !== undefined)
      : [];
    // An updater that declares no value does something values cannot show (a reboot, a manual step): never skipped.
    if (resps.length === 0) return undefined;
    for (const r of resps) {
      let list = out.get(r.selectResource);
      if (!list) out.set(r.selectResource, (list = []));
      list.push({ path: r.path, value: r.value });
    }
  }
  return out;
}

/** True when every value of `values` is held by the machine's objects (an object that cannot be looked up holds none). */
export function machineAtTarget(
  m: KubeObject,
  values: ReadonlyMap<Responsibility['selectResource'], PointerValue[]>,
  lookup: RefLookup,
): boolean {
  const ns = m.metadata.namespace ?? '';
  for (const [sel, items] of values) {
    let obj: KubeObject | undefined;
    if (sel === 'Machine') obj = m;
    else {
      const ref = sel === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
      obj = ref ? lookup(ns, ref) : undefined;
    }
    if (!obj || verifyValues(obj, items).length > 0) return false;
  }
  return true;
}

/** Most bytes of a MachineUpdate's recorded previous values (spec.previous, paths included); past it none is recorded. */
export const MAX_PREVIOUS_BYTES = 64 * 1024;

/**
 * spec.previous of a new MachineUpdate: the value each responsibility's path holds now in the machine's objects
 * (JSON-encoded; no value when the path does not exist), so that a commit to one object still at those values needs no
 * journal write (contract C8). An object that cannot be looked up (no `lookup`, not in cache) gets no entries; undefined
 * when nothing is known or the values would exceed MAX_PREVIOUS_BYTES (then every commit is journaled, as before).
 */
export function previousValues(
  m: KubeObject | undefined,
  updaters: readonly PlanUpdater[],
  lookup?: RefLookup,
): PreviousValue[] | undefined {
  if (!m) return undefined;
  const ns = m.metadata.namespace ?? '';
  const out = new Map<string, PreviousValue>();
  let bytes = 0;
  for (const u of updaters) {
    for (const r of u.responsibilities ?? []) {
      const key = JSON.stringify([r.selectResource, r.path]);
      if (out.has(key)) continue;
      let obj: KubeObject | undefined = m;
      if (r.selectResource !== 'Machine') {
        const ref = r.selectResource === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
        obj = ref && lookup ? lookup(ns, ref) : undefined;
      }
      if (!obj) continue;
      let now: unknown;
      try {
        now = getPointer(obj, r.path);
      } catch {
        // Steps through a non-object: the path does not exist.
        now = undefined;
      }
      const value = now === undefined ? undefined : JSON.stringify(now);
      bytes += Buffer.byteLength(value ?? '', 'utf8') + Buffer.byteLength(r.path, 'utf8');
      if (bytes > MAX_PREVIOUS_BYTES) return undefined;
      out.set(key, { selectResource: r.selectResource, path: r.path, ...(value === undefined ? {} : { value }) });
    }
  }
  return out.size > 0 ? [...out.values()] : undefined;
}

/** The selectResources other than Machine that the plan's values live on (the objects the snapshot must provide). */
export function referencedKinds(plan: InPlaceUpdatePlan, machines: readonly KubeObject[]): ContractRef[] {
  const sels = new Set<string>();
  for (const t of targetsOf(plan)) for (const sel of targetValues(t.target?.updaters)?.keys() ?? []) sels.add(sel);
  // Values on the Machine only (a version rollout): no reference to read, no pass over every machine per reconcile.
  if (!sels.has('InfraMachine') && !sels.has('BootstrapConfig')) return [];
  const kinds = new Map<string, ContractRef>();
  for (const m of machines) {
    for (const ref of [
      sels.has('InfraMachine') ? machineInfraRef(m) : undefined,
      sels.has('BootstrapConfig') ? machineBootstrapRef(m) : undefined,
    ]) {
      if (ref) kinds.set(`${ref.apiGroup}/${ref.kind}`, ref);
    }
  }
  return [...kinds.values()];
}

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
  check(m: KubeObject, values: ReadonlyMap<Responsibility['selectResource'], PointerValue[]>, lookup: RefLookup): boolean {
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

type TargetValues = ReadonlyMap<Responsibility['selectResource'], PointerValue[]>;

/** The values of each of the plan's targets that can be at target by values, by targetKey. */
function valuesByTargetOf(plan: InPlaceUpdatePlan): Map<string, TargetValues> {
  const out = new Map<string, TargetValues>();
  for (const t of targetsOf(plan)) {
    if (typeof t.target?.name !== 'string') continue;
    const values = targetValues(t.target.updaters);
    if (values) out.set(targetKey(t.kind, t.target.name), values);
  }
  return out;
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

/** The values a machine is checked against, or undefined when it is not a candidate (another cluster, no target by values). */
function candidateValues(m: KubeObject, clusterName: string, valuesByTarget: ReadonlyMap<string, TargetValues>): TargetValues | undefined {
  if (m.metadata.labels?.[Labels.clusterName] !== clusterName) return undefined;
  const k = targetOfMachine(m);
  return k === undefined ? undefined : valuesByTarget.get(k);
}

/**
 * Names excluded since the last call, when `exclude` only grew since (memo.excluded): then a machine excluded last
 * time (NEW) that is the same object is still excluded, and only the others need a look in `added`, no name lookup
 * in the whole set per machine. With the positions of those names (ascending), so that an unchanged machine is decided
 * from the arrays alone: reading every machine's name to look it up was most of the pass at 30,003 machines (a cache
 * miss per machine object).
 */
function excludedSinceLast(
  memo: AtTargetMemo | undefined,
  machines: readonly KubeObject[],
  exclude: ReadonlySet<string>,
): { added: ReadonlySet<string> | undefined; addedAt: number[] | undefined } {
  const added = memo?.takeAdded(exclude);
  if (!memo || added === undefined) return { added, addedAt: undefined };
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
 * Names of the current machines of the plan's targets that are already at target (sorted). `exclude` are machines the
 * plan already has a MachineUpdate for (their record decides, not their objects). With `memo`, unchanged machines are
 * answered from it (same answers).
 */
export function machinesAtTarget(
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  lookup: RefLookup,
  exclude: ReadonlySet<string> = new Set(),
  cache?: { memo: AtTargetMemo; stamp?: string | undefined },
): string[] {
  const memo = cache?.memo;
  const stamp = cache?.stamp;
  memo?.begin(plan.metadata?.generation);
  const valuesByTarget = valuesByTargetOf(plan);
  const out: string[] = [];
  // Candidates counted, not collected: a set of every candidate's name per reconcile was a third of this function's
  // cost at 30,003 machines, and the memo needs it only to drop entries (see rememberPass).
  let candidates = 0;
  if (valuesByTarget.size === 0) return out;
  // One pass over the machines (no grouping and sorting per target): the answer is sorted once at the end.
  const clusterName = plan.spec.clusterName;
  const last = memo?.last;
  const refsSame = stamp !== undefined && last?.stamp === stamp;
  const states = memo ? new Uint8Array(machines.length) : undefined;
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
      states![i] = was;
      if (was === NONE) continue;
      candidates++;
      if (was === AT_M || was === AT_R) out.push(name ?? nameOf(m));
      continue;
    }
    name ??= nameOf(m);
    const values = candidateValues(m, clusterName, valuesByTarget);
    if (!values || isDeleting(m)) {
      if (states) states[i] = NONE;
      continue;
    }
    candidates++;
    const at = memo ? memo.check(m, values, lookup) : machineAtTarget(m, values, lookup);
    if (at) out.push(name);
    if (states) states[i] = stateOf(values, at);
  }
  if (memo) rememberPass(memo, machines, states!, stamp, candidates);
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
