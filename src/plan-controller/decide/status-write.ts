// Whether a plan's status change may wait: at 10,000 machines nearly every reconcile changes only the live progress
// (counters, "n/m machines updated", which machines are in update), and its awaited /status patch held the next
// reconcile, so the next freed slot, for one more round trip. Such a change is written at most PROGRESS_WRITE_MS after
// the last write (the reconcile requeues itself for then: the status never freezes); everything else (updateStatus,
// a condition's status or reason, a target's verdict or failures, gate fields, times, generation) is written at once.
// Pure.
import type { InPlaceUpdatePlanStatus, TargetStatus } from '../../api/index.js';
import { PlanEventReasons } from '../../api/index.js';

/**
 * True for the Events of this reconcile's own actions (a machine started, a surge and its restore): they report writes
 * already done, not the status, so they go out whether or not the status write waits (and count as no change).
 */
export const isActionEvent = (reason: string): boolean =>
  reason === PlanEventReasons.machineUpdateStarted || reason === PlanEventReasons.surged || reason === PlanEventReasons.surgeRestored;

/** How late a progress-only status change may be written. */
export const PROGRESS_WRITE_MS = 1000;

/** The parts of a plan's status that are written at once when they change (see the file comment). */
function significant(s: InPlaceUpdatePlanStatus | undefined): string {
  if (!s) return '';
  return JSON.stringify([
    s.updateStatus,
    s.observedGeneration,
    s.startTime,
    s.completionTime,
    s.maintenanceWindow,
    s.alertGate,
    s.gateFailures,
    (s.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.lastTransitionTime, c.observedGeneration]),
    (s.targets ?? []).map((t) => [t.kind, t.name, t.sequence, t.updateStatus, t.failed, t.aborted, t.machines]),
  ]);
}

/** True when `next` differs from `prev` in live progress only (counters and messages): that write may wait. */
export function progressOnly(prev: InPlaceUpdatePlanStatus | undefined, next: InPlaceUpdatePlanStatus): boolean {
  if (!prev) return false;
  // Anything this function does not know (a field added later) counts as significant.
  const known = new Set([
    'updateStatus',
    'observedGeneration',
    'startTime',
    'completionTime',
    'maintenanceWindow',
    'alertGate',
    'gateFailures',
    'conditions',
    'targets',
    'progress',
    'machines',
    'updatedMachines',
    'skippedMachines',
  ]);
  for (const k of new Set([...Object.keys(prev), ...Object.keys(next)]))
    if (!known.has(k) && JSON.stringify((prev as Record<string, unknown>)[k]) !== JSON.stringify((next as Record<string, unknown>)[k]))
      return false;
  if ((prev.machines ?? 0) !== (next.machines ?? 0)) return false;
  return significant(prev) === significant(next);
}

/**
 * How long the status write of this reconcile may wait (0: write now): a progress-only change (no events but action
 * events (`events` counts the others), no finalizer
 * change, no failed effect) waits until PROGRESS_WRITE_MS after the last write (`lastWriteAt`, undefined after a restart:
 * write now).
 */
export function statusWriteDelay(input: {
  prev: InPlaceUpdatePlanStatus | undefined;
  next: InPlaceUpdatePlanStatus;
  events: number;
  finalizer: boolean;
  failed: boolean;
  lastWriteAt: number | undefined;
  nowMs: number;
}): number {
  const { prev, next, lastWriteAt, nowMs } = input;
  if (input.events > 0 || input.finalizer || input.failed || lastWriteAt === undefined) return 0;
  if (!progressOnly(prev, next)) return 0;
  return Math.max(0, lastWriteAt + PROGRESS_WRITE_MS - nowMs);
}

/** The counts of a target row last counted into the metrics, by `kind/name`. */
export type CountedRows = ReadonlyMap<string, Pick<TargetStatus, 'kind' | 'name' | 'updated' | 'failed'>>;

/**
 * What the metric deltas are counted from: the written status, with the rows counted since (a reconcile whose write
 * waited still counts its progress, so a count that rose and fell between two writes is not lost, as every reconcile
 * counted when each wrote). Without counted rows (after a restart) the written status, as before.
 */
export function countedBaseline(written: InPlaceUpdatePlanStatus, counted: CountedRows | undefined): InPlaceUpdatePlanStatus {
  if (!counted || counted.size === 0) return written;
  const rows = new Map<string, Pick<TargetStatus, 'kind' | 'name' | 'updated' | 'failed'>>();
  for (const r of written.targets ?? []) rows.set(`${r.kind}/${r.name}`, r);
  for (const [k, r] of counted) rows.set(k, r);
  return { targets: [...rows.values()] as TargetStatus[] };
}

/** The rows as counted now (see countedBaseline). */
export function countedRows(rows: readonly TargetStatus[]): CountedRows {
  return new Map(rows.map((r) => [`${r.kind}/${r.name}`, { kind: r.kind, name: r.name, updated: r.updated ?? 0, failed: r.failed ?? 0 }]));
}
