// Which MachineUpdate puts a machine "in update": a machine's current update among its MachineUpdates, by plan and
// creation order. Older, superseded updates are history and never count.
import { Annotations, Labels, UpdateStatus, isTerminal } from '../../api/index.js';
import type { Machine, MachineUpdate } from './objects.js';
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
 * How long a machine's plan label may name a plan that is in neither cache yet (no plan, no MachineUpdate of it): the
 * plan controller labels (and protects) a machine ~10 ms after it sees a new plan, and the plan's watch event reaches
 * this extension on another stream than the machine's, sometimes after it. Restoring then undid the protection the
 * label patch had just set, and set it again once the MachineUpdate came: two writes and a moment unprotected.
 */
export const PLAN_CACHE_GRACE_MS = 30_000;

/** Until when (ms) a labelled machine's restore waits for its plan to show in the caches: its label's start + the grace. */
export function planGraceEndsAt(m: Machine): number | undefined {
  if (m.metadata.labels?.[Labels.planName] === undefined) return undefined;
  const started = Date.parse(m.metadata.annotations?.[Annotations.updateStartedAt] ?? '');
  return Number.isFinite(started) ? started + PLAN_CACHE_GRACE_MS : undefined;
}

/**
 * True when the end-of-update restore is the plan controller's: the machine still carries a plan's label, and that plan
 * exists (`planExists`: the plan controller protects a machine in the patch that labels it, before its MachineUpdate
 * exists, and unlabels it, restoring skip-remediation in the same patch, even when the plan is deleted: its finalizer
 * waits for that), a MachineUpdate of that plan for it exists (not deleting), or the label is younger than
 * PLAN_CACHE_GRACE_MS at `nowMs` (the plan's event may still be on its way). Once the label is gone, or the plan and
 * its MachineUpdates are (a finalizer removed by hand) and the grace passed, the extension restores itself. Only the
 * restore moves: lifting a timed-out or failed machine's protection stays here.
 */
export function restoreDeferredToPlan(m: Machine, updates: readonly MachineUpdate[], planExists = false, nowMs?: number): boolean {
  const plan = m.metadata.labels?.[Labels.planName];
  if (plan === undefined) return false;
  if (planExists) return true;
  const name = m.metadata.name ?? '';
  if (updates.some((u) => !u.metadata.deletionTimestamp && machineOfUpdate(u) === name && u.metadata.labels?.[Labels.planName] === plan))
    return true;
  const graceEnd = planGraceEndsAt(m);
  return nowMs !== undefined && graceEnd !== undefined && nowMs < graceEnd;
}
