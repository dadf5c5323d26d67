// Phase 4 of decidePlan: the actions on machines. The MachineUpdates to create and the surge/restore patches the
// targets asked for, the aborts to propagate, and the machine labels that follow what is in flight. Pure.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import { Annotations, Labels, UpdatePhase, orderedUpdaters } from '../../api/index.js';
import { isDeleting, nameOf } from '../../api/capi/index.js';
import { machineUpdateName } from './names.js';
import type { PlanSnapshot } from '../scope.js';
import { machineState } from '../../rules/machines.js';
import type { EvaluatedTarget } from './targets.js';
import type { MachineLabelIntent, MachineUpdateIntent, ScaleIntent } from './types.js';
import type { DecideMemo } from './memo.js';

/** The MachineUpdates to create and the scale patches; an ended plan starts nothing and only restores its surges. */
export function startIntents(
  planName: string,
  ordered: readonly EvaluatedTarget[],
  terminal: boolean,
): { create: MachineUpdateIntent[]; scale: ScaleIntent[] } {
  if (terminal) return { create: [], scale: ordered.flatMap(({ e }) => (e.scale?.kind === 'restore' ? [e.scale] : [])) };
  const create: MachineUpdateIntent[] = [];
  const scale: ScaleIntent[] = [];
  for (const { t, e } of ordered) {
    for (const machine of e.starts)
      create.push({
        name: machineUpdateName(planName, machine),
        machine,
        target: { kind: t.kind, name: t.target.name },
        updaters: orderedUpdaters(t.target.updaters),
      });
    if (e.scale) scale.push(e.scale);
  }
  return { create, scale };
}

/**
 * The in-flight MachineUpdates to abort: all of them when the plan stops, else those whose machine is going away. With
 * a memo and this decision's delta, only the machines whose Machine or MachineUpdate is a new object are looked at
 * again (a machine gone is a removal: no delta, the full pass).
 */
export function abortsOf(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  stopping: boolean,
  machineByName?: ReadonlyMap<string, KubeObject>,
  memo?: DecideMemo,
): string[] {
  const machinesByName = machineByName ?? new Map(snap.machines.map((m) => [nameOf(m), m]));
  const last = memo?.aborts;
  const delta = memo?.delta;
  const position = memo?.soakLast?.position;
  if (memo && !stopping && position && memo.soakLast!.mus === snap.machineUpdates) {
    const abortOf = (name: string): string | undefined => {
      const mu = mus.get(name);
      if (!mu || machineState(mu) !== 'inFlight' || mu.spec.updatePhase === UpdatePhase.aborting) return undefined;
      const m = machinesByName.get(name);
      return !m || isDeleting(m) ? (mu.metadata?.name ?? '') : undefined;
    };
    let entries: Map<string, string>;
    if (last && delta && last.mus === delta.baseMus && last.machines === delta.baseMachines) {
      entries = last.entries;
      const names = new Set<string>();
      for (const i of delta.machines) names.add(nameOf(snap.machines[i]!));
      for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
      for (const n of names) {
        const a = abortOf(n);
        if (a === undefined) entries.delete(n);
        else entries.set(n, a);
      }
    } else {
      entries = new Map();
      for (const n of mus.keys()) {
        const a = abortOf(n);
        if (a !== undefined) entries.set(n, a);
      }
    }
    memo.aborts = { mus: snap.machineUpdates, machines: snap.machines, entries };
    // In the order of the updates (their machine's first update in the snapshot), as the full pass.
    return [...entries]
      .map(([n, a]) => [position.get(n) ?? Infinity, a] as const)
      .sort((x, y) => x[0] - y[0])
      .map(([, a]) => a);
  }
  if (memo) memo.aborts = undefined;
  const abort: string[] = [];
  for (const mu of mus.values()) {
    if (machineState(mu) !== 'inFlight' || mu.spec.updatePhase === UpdatePhase.aborting) continue;
    const m = machinesByName.get(mu.spec.machineRef.name);
    // Abort on request, and for machines that are going away (their update cannot complete).
    if (stopping || !m || isDeleting(m)) abort.push(mu.metadata?.name ?? '');
  }
  return abort;
}

/**
 * The machine labels that follow what is in flight: label machines in update (with their start), unlabel the rest.
 * With a memo and this decision's delta (memo.delta: the positions of the Machines and MachineUpdates that are new
 * objects since the last decision), only those machines, the ones started now or last time and the ones whose start
 * time was the clock are looked at again (labelsThroughMemo).
 */
export function labelChanges(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  create: readonly MachineUpdateIntent[],
  memo?: DecideMemo,
): { label: MachineLabelIntent[]; unlabel: string[] } {
  if (memo) return labelsThroughMemo(snap, mus, planLabel, create, memo);
  return labelsOfAll(snap, mus, planLabel, create);
}

/** What one machine needs: a label with its start time (`now`: the start time is the clock's), an unlabel, or nothing. */
function labelOf(
  m: KubeObject,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  created: ReadonlySet<string>,
  now: string,
): { startedAt?: string; now?: boolean; unlabel?: boolean } | undefined {
  if (isDeleting(m)) return undefined;
  const name = nameOf(m);
  let startedAt: string | undefined;
  let clock = false;
  if (created.has(name)) {
    startedAt = now;
    clock = true;
  } else {
    const mu = mus.get(name);
    if (mu && machineState(mu) === 'inFlight') {
      startedAt = mu.status?.startTime ?? mu.metadata?.creationTimestamp;
      if (startedAt === undefined) {
        startedAt = now;
        clock = true;
      }
    }
  }
  const labelled = m.metadata.labels?.[Labels.planName] === planLabel;
  if (startedAt !== undefined && (!labelled || m.metadata.annotations?.[Annotations.updateStartedAt] === undefined))
    return { startedAt, ...(clock ? { now: true } : {}) };
  if (startedAt === undefined && labelled) return { unlabel: true };
  return clock ? { now: true } : undefined;
}

/** labelChanges through the memo (see there); the full pass when there is no delta to patch. */
function labelsThroughMemo(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  create: readonly MachineUpdateIntent[],
  memo: DecideMemo,
): { label: MachineLabelIntent[]; unlabel: string[] } {
  const created = new Set(create.map((c) => c.machine));
  const last = memo.labels;
  const delta = memo.delta;
  const machines = snap.machines;
  let state: NonNullable<DecideMemo['labels']>;
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
  memo.labels = state;
  const ordered = [...state.entries].sort((a, b) => a[1].pos - b[1].pos);
  const label: MachineLabelIntent[] = [];
  const unlabel: string[] = [];
  for (const [machine, e] of ordered) {
    if (e.startedAt !== undefined) label.push({ machine, startedAt: e.startedAt });
    else unlabel.push(machine);
  }
  return { label, unlabel };
}

/** labelChanges over every machine. */
function labelsOfAll(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  create: readonly MachineUpdateIntent[],
): { label: MachineLabelIntent[]; unlabel: string[] } {
  const inUpdate = new Map<string, string>();
  for (const mu of mus.values())
    if (machineState(mu) === 'inFlight')
      inUpdate.set(mu.spec.machineRef.name, mu.status?.startTime ?? mu.metadata?.creationTimestamp ?? snap.now);
  for (const c of create) inUpdate.set(c.machine, snap.now);
  const label: MachineLabelIntent[] = [];
  const unlabel: string[] = [];
  for (const m of snap.machines) {
    if (isDeleting(m)) continue;
    const labelled = m.metadata.labels?.[Labels.planName] === planLabel;
    const startedAt = inUpdate.get(nameOf(m));
    if (startedAt !== undefined && (!labelled || m.metadata.annotations?.[Annotations.updateStartedAt] === undefined))
      label.push({ machine: nameOf(m), startedAt });
    else if (startedAt === undefined && labelled) unlabel.push(nameOf(m));
  }
  return { label, unlabel };
}
