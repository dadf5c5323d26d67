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

/** The in-flight MachineUpdates to abort: all of them when the plan stops, else those whose machine is going away. */
export function abortsOf(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  stopping: boolean,
  machineByName?: ReadonlyMap<string, KubeObject>,
): string[] {
  const machinesByName = machineByName ?? new Map(snap.machines.map((m) => [nameOf(m), m]));
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
 * Whether one machine's in-flight update is to be aborted because its machine is going away (abortsOf of a plan not
 * stopping, for one name): the update's name, or undefined.
 */
export function abortOf(
  name: string,
  mus: ReadonlyMap<string, MachineUpdate>,
  machineByName: ReadonlyMap<string, KubeObject>,
): string | undefined {
  const mu = mus.get(name);
  if (!mu || machineState(mu) !== 'inFlight' || mu.spec.updatePhase === UpdatePhase.aborting) return undefined;
  const m = machineByName.get(name);
  return !m || isDeleting(m) ? (mu.metadata?.name ?? '') : undefined;
}

/** The machine labels that follow what is in flight: label machines in update (with their start), unlabel the rest. */
export function labelChanges(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  planLabel: string,
  create: readonly MachineUpdateIntent[],
): { label: MachineLabelIntent[]; unlabel: string[] } {
  return labelsOfAll(snap, mus, planLabel, create);
}

/** What one machine needs: a label with its start time (`now`: the start time is the clock's), an unlabel, or nothing. */
export function labelOf(
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
