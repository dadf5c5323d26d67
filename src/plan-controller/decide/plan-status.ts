// Phase 5 of decidePlan: the plan's status from its target rows. The plan's updateStatus, the counters, the gates'
// status fields, then every condition through the status language of status.ts. Pure.
import type { InPlaceUpdatePlanStatus } from '../../api/index.js';
import { ConditionTypes, Reasons, UpdatePhase, isTerminal } from '../../api/index.js';
import type { PlanSnapshot } from '../scope.js';
import type { ReadyVerdict } from '../status.js';
import { givenUpNote, givenUpOf, readyCondition, setPlanConditions, unreportedTaskNotes } from '../status.js';
import { windowStatus } from '../../rules/gates.js';
import type { PlanStance } from './mode.js';
import type { EvaluatedTarget } from './targets.js';
import type { UpdateStatusValue } from './types.js';

/** Machines in flight over every target. */
/** How far the plan's targets got this decision: what its status, conditions and finalizer are derived from. */
export interface PlanProgress {
  /** The targets in sequence order, each with its evaluation. */
  ordered: readonly EvaluatedTarget[];
  /** A machine of the plan was started (now or before). */
  started: boolean;
  /** Machines counted updated without a MachineUpdate (already at target). */
  skipped: number;
  /** The plan's updateStatus (planUpdateStatus). */
  updateStatus: UpdateStatusValue;
}

export const inFlightTotal = (ordered: readonly EvaluatedTarget[]): number => ordered.reduce((n, { e }) => n + e.inFlight, 0);

/** The plan's updateStatus from its targets; an ended plan keeps its own. */
export function planUpdateStatus(s: PlanStance, ordered: readonly EvaluatedTarget[], started: boolean): UpdateStatusValue {
  const rows = ordered.map(({ e }) => e.row);
  const inFlight = inFlightTotal(ordered);
  const allUpdated = rows.every((r) => r.updateStatus === 'updated');
  if (s.terminal) return s.prev.updateStatus!;
  // An abort that arrives after the last machine finished does not undo the result (contract C4).
  if (s.stopping) return inFlight > 0 ? 'aborting' : started && allUpdated && s.valid ? 'updated' : 'aborted';
  // Halted by the alert gate: the machines in flight finish, then the plan ends failed.
  if (s.valid && s.alerts.halted && inFlight === 0 && !(started && allUpdated)) return 'failed';
  if (!started && !s.mayStart) return 'pending';
  if (allUpdated) return 'updated';
  const reachedActive = ordered.some(
    ({ e }) => (e.row.updateStatus === 'pending' || e.row.updateStatus === 'updating') && e.reason !== Reasons.waitingForSequence,
  );
  return rows.some((r) => r.updateStatus === 'failed') && !reachedActive && inFlight === 0 ? 'failed' : 'updating';
}

/** The plan's status without its conditions: rows, counters, times and the gates' fields (an ended plan keeps its own). */
export function planStatusFields(snap: PlanSnapshot, s: PlanStance, progress: PlanProgress): InPlaceUpdatePlanStatus {
  const { ordered, skipped, started, updateStatus } = progress;
  const { prev, terminal } = s;
  const rows = ordered.map(({ e }) => e.row);
  const machines = rows.reduce((n, r) => n + (r.machines ?? 0), 0);
  const updated = rows.reduce((n, r) => n + (r.updated ?? 0), 0);
  if (terminal) {
    const status: InPlaceUpdatePlanStatus = { ...prev, conditions: [...(prev.conditions ?? [])] };
    if (s.generation !== undefined) status.observedGeneration = s.generation;
    return status;
  }
  const status: InPlaceUpdatePlanStatus = {
    ...prev,
    updateStatus,
    targets: rows,
    machines,
    updatedMachines: updated,
    skippedMachines: skipped,
    progress: `${updated}/${machines}`,
  };
  if (s.generation !== undefined) status.observedGeneration = s.generation;
  if ((started || updateStatus === 'updating') && !status.startTime) status.startTime = snap.now;
  if (isTerminal(updateStatus)) status.completionTime = snap.now;
  const ws = windowStatus(prev.maintenanceWindow, s.win, snap.now);
  if (ws) status.maintenanceWindow = ws;
  else delete status.maintenanceWindow;
  if (s.soak.failures.length > 0) status.gateFailures = s.soak.failures.slice(0, 1000);
  // Only a stopping plan gives up on machines (the machine task controller's abort grace period).
  const givenUp = s.stopping ? givenUpOf(s.mus.values()) : [];
  if (givenUp.length > 0) status.givenUp = givenUp.slice(0, 1000);
  else delete status.givenUp;
  if (s.alerts.status) status.alertGate = s.alerts.status;
  else delete status.alertGate;
  return status;
}

/**
 * Every condition of the plan; returns the Ready verdict too (its reason names the plan's Events). `unreported`: the
 * "updater not reporting" notes of the plan's updates (unreportedTaskNotes; the plan controller's cache hands them in).
 */
export function planConditions(
  s: PlanStance,
  progress: PlanProgress,
  status: InPlaceUpdatePlanStatus,
  unreported: string[] = unreportedTaskNotes(s.mus.values()),
): { conditions: NonNullable<InPlaceUpdatePlanStatus['conditions']>; ready: ReadyVerdict } {
  const { ordered, started, updateStatus } = progress;
  const { prev, terminal, valid, problems, waiting, paused, olderActive } = s;
  const rows = ordered.map(({ e }) => e.row);
  const windowNote = s.windowClosed ? s.win.state!.message : s.alertHeld ? s.alerts.message : undefined;
  const window = windowNote
    ? { window: windowNote, windowReason: s.windowClosed ? Reasons.waitingForMaintenanceWindow : Reasons.waitingForAlerts }
    : {};
  const machines = rows.reduce((n, r) => n + (r.machines ?? 0), 0);
  const updated = rows.reduce((n, r) => n + (r.updated ?? 0), 0);
  const finalStatus = terminal ? prev.updateStatus! : updateStatus;
  const ready = readyCondition({
    updateStatus: finalStatus,
    valid,
    started,
    waiting,
    paused,
    ...window,
    ...(s.alertHeld && s.alerts.halted ? { halt: s.alerts.message ?? 'halted by the alert gate' } : {}),
    windowEnded: s.windowEnded,
    deleting: s.deleting,
    supersededBy: s.supersededBy,
    olderActive,
    problems,
    progress: `${updated}/${machines}`,
    rows,
    stoppedByAbort: s.phase === UpdatePhase.aborting,
    terminal,
    prevReady: prev.conditions?.find((c) => c.type === ConditionTypes.ready),
    unreported,
    ...(status.givenUp ? { givenUp: givenUpNote(status.givenUp) } : {}),
  });
  const conditions = setPlanConditions(
    status.conditions ?? [],
    {
      valid,
      problems,
      terminal,
      started,
      waiting,
      paused,
      ...window,
      olderActive,
      ready,
      controlPlane: ordered.filter(({ t }) => t.kind === 'ControlPlane').map(({ e }) => e),
      machineDeployments: ordered.filter(({ t }) => t.kind === 'MachineDeployment').map(({ e }) => e),
      updateStatus: finalStatus,
      invalidFinal: s.verdict.final && !started,
    },
    s.generation,
    s.now,
  );
  return { conditions, ready };
}
