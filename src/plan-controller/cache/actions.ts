// The machine actions of a decision (decide/actions.ts) and the "updater not reporting" notes through the plan's
// cache: with this decision's delta, only the machines whose Machine or MachineUpdate is a new object are looked at
// again; the full pass otherwise. Each answer equals the plain phase's.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import { nameOf } from '../../api/capi/index.js';
import { abortOf, abortsOf, labelOf } from '../decide/actions.js';
import type { MachineLabelIntent, MachineUpdateIntent } from '../decide/types.js';
import type { PlanSnapshot } from '../scope.js';
import { unreportedTaskNotes } from '../status.js';
import type { PlanCache } from './plan-cache.js';

/**
 * abortsOf through the cache: with this decision's delta, only the machines whose Machine or MachineUpdate is a new
 * object are looked at again (a machine gone is a removal: no delta, the full pass).
 */
export function abortsThrough(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  stopping: boolean,
  machineByName: ReadonlyMap<string, KubeObject>,
  cache: PlanCache,
): string[] {
  const last = cache.aborts;
  const delta = cache.delta;
  const position = cache.soakLast?.position;
  if (stopping || !position || cache.soakLast!.mus !== snap.machineUpdates) {
    cache.aborts = undefined;
    return abortsOf(snap, mus, stopping, machineByName);
  }
  let entries: Map<string, string>;
  if (last && delta && last.mus === delta.baseMus && last.machines === delta.baseMachines) {
    entries = last.entries;
    const names = new Set<string>();
    for (const i of delta.machines) names.add(nameOf(snap.machines[i]!));
    for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
    for (const n of names) {
      const a = abortOf(n, mus, machineByName);
      if (a === undefined) entries.delete(n);
      else entries.set(n, a);
    }
  } else {
    entries = new Map();
    for (const n of mus.keys()) {
      const a = abortOf(n, mus, machineByName);
      if (a !== undefined) entries.set(n, a);
    }
  }
  cache.aborts = { mus: snap.machineUpdates, machines: snap.machines, entries };
  // In the order of the updates (their machine's first update in the snapshot), as the full pass.
  return [...entries]
    .map(([n, a]) => [position.get(n) ?? Infinity, a] as const)
    .sort((x, y) => x[0] - y[0])
    .map(([, a]) => a);
}

/**
 * labelChanges through the cache: with this decision's delta (the positions of the Machines and MachineUpdates that
 * are new objects since the last decision), only those machines, the ones started now or last time and the ones whose
 * start time was the clock are looked at again; the full pass when there is no delta to patch.
 */
export function labelsThrough(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  create: readonly MachineUpdateIntent[],
  cache: PlanCache,
): { label: MachineLabelIntent[]; unlabel: string[] } {
  const created = new Set(create.map((c) => c.machine));
  const last = cache.labels;
  const delta = cache.delta;
  const machines = snap.machines;
  let state: NonNullable<PlanCache['labels']>;
  const look = (name: string, i: number): void => {
    const m = machines[i];
    state.entries.delete(name);
    state.clock.delete(name);
    if (!m || nameOf(m) !== name) return;
    const r = labelOf(m, mus, planLabel, created, snap.now);
    if (r?.now) state.clock.add(name);
    if (r?.startedAt !== undefined || r?.unlabel)
      state.entries.set(name, { pos: i, ...(r.startedAt !== undefined ? { startedAt: r.startedAt } : {}) });
  };
  if (last && delta && last.planLabel === planLabel && last.machines === delta.baseMachines && last.mus === delta.baseMus) {
    state = { planLabel, machines, mus: snap.machineUpdates, entries: last.entries, clock: new Set(), pos: last.pos, created };
    for (let i = last.machines.length; i < machines.length; i++) state.pos.set(nameOf(machines[i]!), i);
    const names = new Set<string>([...last.clock, ...last.created, ...created]);
    for (const i of delta.machines) names.add(nameOf(machines[i]!));
    for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
    for (const n of names) {
      const i = state.pos.get(n);
      if (i === undefined) state.entries.delete(n);
      else look(n, i);
    }
  } else {
    state = { planLabel, machines, mus: snap.machineUpdates, entries: new Map(), clock: new Set(), pos: new Map(), created };
    for (let i = 0; i < machines.length; i++) {
      const name = nameOf(machines[i]!);
      state.pos.set(name, i);
      look(name, i);
    }
  }
  cache.labels = state;
  const ordered = [...state.entries].sort((a, b) => a[1].pos - b[1].pos);
  const label: MachineLabelIntent[] = [];
  const unlabel: string[] = [];
  for (const [machine, e] of ordered) {
    if (e.startedAt !== undefined) label.push({ machine, startedAt: e.startedAt });
    else unlabel.push(machine);
  }
  return { label, unlabel };
}

/** unreportedTaskNotes with each MachineUpdate object's note kept in the cache (a condition search per update per reconcile). */
export function unreportedThrough(cache: PlanCache, mus: ReadonlyMap<string, MachineUpdate>): string[] {
  const noteOf = (mu: MachineUpdate): string | null => {
    let note = cache.unreported.get(mu);
    if (note === undefined) cache.unreported.set(mu, (note = unreportedTaskNotes([mu])[0] ?? null));
    return note;
  };
  const last = cache.unreportedLast;
  const touched = cache.ownTouched;
  cache.ownTouched = new Set();
  // The same map as last time, patched in place by ownUpdates for `touched` only: when no update has a note (every
  // updater reports, the common case) only those need a look. With notes, the full pass keeps the map's order.
  if (last && touched && last.map === mus && cache.own?.map === mus) {
    for (const n of touched) {
      const mu = mus.get(n);
      if (mu && noteOf(mu) !== null) last.withNote.add(n);
      else last.withNote.delete(n);
    }
    if (last.withNote.size === 0) return [];
  }
  const out: string[] = [];
  const withNote = new Set<string>();
  for (const [n, mu] of mus) {
    const note = noteOf(mu);
    if (note === null) continue;
    out.push(note);
    withNote.add(n);
  }
  cache.unreportedLast = { map: mus, withNote };
  return out;
}
