// Which MachineUpdate puts a machine "in update": a machine's current update among its MachineUpdates, by plan and
// creation order. Older, superseded updates are history and never count.
import { Labels, UpdateStatus, isTerminal } from '../../api/index.js';
import type { Machine, MachineUpdate } from '../scope.js';
import { byName } from './eligibility.js';

/** The machine a MachineUpdate is for (spec.machineRef is authoritative; the label may be a shortened form). */
export const machineOfUpdate = (u: MachineUpdate): string => u.spec?.machineRef?.name ?? u.metadata.labels?.[Labels.machineName] ?? '';

/** MachineUpdates grouped by machine name, in one pass (deleting ones left out: they no longer put a machine in update). */
export function updatesByMachine(updates: readonly MachineUpdate[]): Map<string, MachineUpdate[]> {
  const out = new Map<string, MachineUpdate[]>();
  for (const u of updates) {
    if (u.metadata.deletionTimestamp) continue;
    const name = machineOfUpdate(u);
    const list = out.get(name);
    if (list) list.push(u);
    else out.set(name, [u]);
  }
  return out;
}

/** Creation order, then name (creationTimestamp has second precision: plans created in the same second tie). */
const byCreation = (a: MachineUpdate, b: MachineUpdate): number =>
  byName(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') || byName(a.metadata.name ?? '', b.metadata.name ?? '');

/**
 * A machine's current update among its MachineUpdates (deleting ones already left out): while a plan labels the
 * machine, the latest MachineUpdate of that plan (none yet: the plan has not created it, and no older update
 * counts); otherwise its latest MachineUpdate. An older update superseded by a newer one, whatever the newer one's
 * outcome, is history: it never puts the machine in update, so an old failure never triggers remediation.
 */
export function currentUpdateOf(m: Machine, mine: readonly MachineUpdate[]): MachineUpdate | undefined {
  const plan = m.metadata.labels?.[Labels.planName];
  let latest: MachineUpdate | undefined;
  for (const u of mine) {
    if (plan !== undefined && u.metadata.labels?.[Labels.planName] !== plan) continue;
    if (!latest || byCreation(latest, u) < 0) latest = u;
  }
  return latest;
}

/** True when this update puts its machine in update: still running (not terminal), or failed (remediation candidate). */
export const putsInUpdate = (u: MachineUpdate): boolean =>
  !isTerminal(u.status?.updateStatus) || u.status?.updateStatus === UpdateStatus.failed;

/** The MachineUpdate that puts a machine "in update": its current update when running or failed, else none. */
export function activeUpdateOf(m: Machine, updates: readonly MachineUpdate[]): MachineUpdate | undefined {
  const u = currentUpdateOf(m, updatesByMachine(updates).get(m.metadata.name ?? '') ?? []);
  return u && putsInUpdate(u) ? u : undefined;
}

/**
 * True when the end-of-update restore is the plan controller's: the machine still carries a plan's label, and that plan
 * exists (`planExists`: the plan controller protects a machine in the patch that labels it, before its MachineUpdate
 * exists, and unlabels it, restoring skip-remediation in the same patch, even when the plan is deleted: its finalizer
 * waits for that) or a MachineUpdate of that plan for it exists (not deleting). Once the label is gone, or the plan and
 * its MachineUpdates are (a finalizer removed by hand), the extension restores itself. Only the restore moves: lifting
 * a timed-out or failed machine's protection stays here.
 */
export function restoreDeferredToPlan(m: Machine, updates: readonly MachineUpdate[], planExists = false): boolean {
  const plan = m.metadata.labels?.[Labels.planName];
  if (plan === undefined) return false;
  if (planExists) return true;
  const name = m.metadata.name ?? '';
  return updates.some((u) => !u.metadata.deletionTimestamp && machineOfUpdate(u) === name && u.metadata.labels?.[Labels.planName] === plan);
}
