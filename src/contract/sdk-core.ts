// Pure: the SDK's core, what an updater's handler may return, and how a result (or a terminal task) becomes the
// task's next status under the contract (C4 terminal never left, C5 observedGeneration, C6 Ready condition).
import { ConditionTypes, MessageBudget, Reasons, boundMessage, isTerminal } from '../api/index.js';
import { setCondition } from '../runtime/pure/conditions.js';
import { jsonEqual } from '../runtime/pure/merge-patch.js';
import { taskGeneration, taskPhase, type Task, type TaskStatus, type TaskUpdateStatus } from './accessors.js';

/**
 * A precise timestamp for status.startTime/completionTime: RFC 3339 with microseconds (the metav1.MicroTime
 * layout; the schemas' `format: date-time` accepts it). Durations measured from it are exact, where a
 * second-truncated startTime made a 1.5 s update end after 0.5–1.5 s.
 */
export const toMicroTime = (d: Date): string => d.toISOString().replace(/Z$/, '000Z');

/**
 * Longest wait an updater's requeue is honoured for before the task is looked at again (a resync). Timers cannot
 * wait longer than 2^31-1 ms (Node fires them at once), and a periodic look is cheap: nothing is written when
 * nothing changed.
 */
export const MAX_REQUEUE_MS = 10 * 60_000;

/** The requeue delay for a handler's `requeueAfterMs`: never negative, never longer than MAX_REQUEUE_MS. */
export const requeueDelay = (requeueAfterMs: number): number =>
  Number.isFinite(requeueAfterMs) ? Math.min(MAX_REQUEUE_MS, Math.max(0, requeueAfterMs)) : MAX_REQUEUE_MS;

/** Extra status fields an updater keeps in the task status (e.g. the step it reached, to resume after a restart). */
export type StatusFields = Record<string, unknown>;

/** What an updater's update/abort handler returns. */
export type Result =
  | { type: 'progress'; requeueAfterMs?: number; message?: string; fields?: StatusFields }
  | { type: 'done'; message?: string; fields?: StatusFields }
  | { type: 'failed'; message: string; fields?: StatusFields }
  | { type: 'aborted'; message?: string; fields?: StatusFields };

/**
 * Still working: report `message`, look again after `requeueAfterMs` (or on the next change of the task). For a
 * deadline pass `deadline - now`: the SDK waits that long (capped at MAX_REQUEUE_MS, then asks again), never polls.
 */
export const progress = (requeueAfterMs?: number, message?: string, fields?: StatusFields): Result => ({
  type: 'progress',
  ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  ...(message !== undefined ? { message } : {}),
  ...(fields ? { fields } : {}),
});
/** The update is finished: updated (terminal). */
export const done = (message?: string, fields?: StatusFields): Result => ({
  type: 'done',
  ...(message !== undefined ? { message } : {}),
  ...(fields ? { fields } : {}),
});
/** The update failed (terminal); `message` says why and is shown on the MachineUpdate and the plan. */
export const failed = (message: string, fields?: StatusFields): Result => ({ type: 'failed', message, ...(fields ? { fields } : {}) });
/** The update was aborted (terminal); only valid once the task is aborting. */
export const aborted = (message?: string, fields?: StatusFields): Result => ({
  type: 'aborted',
  ...(message !== undefined ? { message } : {}),
  ...(fields ? { fields } : {}),
});

/** Reason of the Ready condition for each status the SDK writes. */
const READY: Record<TaskUpdateStatus, { status: 'True' | 'False'; reason: string; message: string }> = {
  updating: { status: 'False', reason: Reasons.updating, message: 'update in progress' },
  updated: { status: 'True', reason: Reasons.updated, message: 'update finished' },
  failed: { status: 'False', reason: Reasons.failed, message: 'update failed' },
  aborted: { status: 'False', reason: Reasons.aborted, message: 'update aborted' },
};

/**
 * The status a task should have after a handler returned `result`, or undefined when nothing changes.
 * `startTime` is kept from the status (so restarts resume), or set to `startedAt` (default `now`) on the first
 * report; both times are written to the microsecond (toMicroTime).
 */
export function statusForResult(task: Task, result: Result, now: Date, startedAt: Date = now): TaskStatus {
  const old = task.status ?? {};
  const gen = taskGeneration(task);
  const phase = taskPhase(task);
  let updateStatus: TaskUpdateStatus;
  let message: string | undefined = result.message;
  let reason: string | undefined;
  switch (result.type) {
    case 'progress':
      updateStatus = 'updating';
      if (phase === 'aborting') reason = Reasons.aborting;
      break;
    case 'done':
      updateStatus = 'updated';
      break;
    case 'failed':
      updateStatus = 'failed';
      message = result.message || READY.failed.message;
      break;
    case 'aborted':
      if (phase !== 'aborting') {
        // C4: aborted only answers aborting; an updater that gives up on its own has failed.
        updateStatus = 'failed';
        message = `the updater returned aborted although the task is not aborting${result.message ? `: ${result.message}` : ''}`;
      } else updateStatus = 'aborted';
      break;
  }
  const ready = READY[updateStatus];
  // An updater's own text (often a command's stderr) is cut here, so one chatty failure cannot fail the status write.
  const next: TaskStatus = {
    ...old,
    ...(result.fields ?? {}),
    updateStatus,
    observedGeneration: gen,
    startTime: old.startTime ?? toMicroTime(startedAt),
    conditions: setCondition(
      old.conditions,
      {
        type: ConditionTypes.ready,
        status: ready.status,
        reason: reason ?? ready.reason,
        message: boundMessage(message || ready.message, MessageBudget.condition),
      },
      gen,
      now,
    ),
  };
  if (isTerminal(updateStatus)) next.completionTime = old.completionTime ?? toMicroTime(now);
  return next;
}

/**
 * The status of a task that is already terminal: unchanged (C4), except that observedGeneration follows a
 * newer generation (C5) so the platform can trust it. Undefined when nothing needs writing.
 */
export function statusForTerminal(task: Task): TaskStatus | undefined {
  const old = task.status ?? {};
  const gen = taskGeneration(task);
  if ((old.observedGeneration ?? 0) >= gen) return undefined;
  return {
    ...old,
    observedGeneration: gen,
    ...(old.conditions
      ? { conditions: old.conditions.map((c) => (c.type === ConditionTypes.ready ? { ...c, observedGeneration: gen } : c)) }
      : {}),
  };
}

/** The status to report while a handler keeps failing with an error (still updating, Ready says why). */
export function statusForError(task: Task, err: unknown, now: Date, startedAt: Date = now): TaskStatus {
  const why = err instanceof Error ? err.message : String(err);
  return statusForResult(task, progress(undefined, `retrying after an error: ${why}`), now, startedAt);
}

/** True when `next` differs from the task's current status (so a write is needed). */
export const statusChanged = (task: Task, next: TaskStatus): boolean => !jsonEqual(task.status ?? {}, next);

/** True when the task is terminal regardless of generation (the SDK never leaves a terminal status, C4). */
export const isTerminalTask = (task: Task): boolean => isTerminal(task.status?.updateStatus);
