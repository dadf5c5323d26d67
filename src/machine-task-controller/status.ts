// Pure status of a MachineUpdate from a decision: updateStatus, currentUpdater, task rows, times, message and the
// InPlaceUpdate / Ready conditions. Other conditions on the object (e.g. the MHC extension's) are kept as they are.
import {
  ConditionTypes,
  MessageBudget,
  Reasons,
  boundMessage,
  isTerminal,
  type Condition,
  type MachineUpdateStatus,
} from '../api/index.js';
import { isDeepStrictEqual } from 'node:util';
import { taskUpdateStatus } from '../contract/index.js';
import { setCondition, toKubeTime } from '../runtime/pure/conditions.js';
import { reasonOfTerminal, type MachineUpdateStatusValue } from './decide.js';
import type { MachineUpdateObject, Scope, TaskRow } from './scope.js';

/** What the status says after a reconcile: the decided (or, after a commit, final) status and its explanation. */
export interface StatusInput {
  updateStatus: MachineUpdateStatusValue;
  current?: number;
  reason: string;
  message: string;
}

/** Rows of status.tasks for every task this MachineUpdate controls, in run order (previous rows kept for tasks not seen now). */
export function taskRows(scope: Scope): TaskRow[] {
  const prev = new Map((scope.mu.status?.tasks ?? []).map((r) => [r.updater, r]));
  const rows: TaskRow[] = [];
  for (const v of scope.views) {
    const old = prev.get(v.updater.name);
    if (!v.task) {
      if (old) rows.push(old);
      continue;
    }
    const st = v.task.status;
    const current = taskUpdateStatus(v.task);
    const row: TaskRow = { updater: v.updater.name, apiVersion: v.apiVersion, kind: v.kind, name: v.taskName };
    // Last observed: a status behind the task's generation (C5) still says the updater had reported, which an abort
    // given up on needs (never started, or in an unknown state).
    const updateStatus = current ?? old?.updateStatus ?? st?.updateStatus;
    if (updateStatus) row.updateStatus = updateStatus;
    if (st?.startTime) row.startTime = st.startTime;
    if (st?.completionTime && current) row.completionTime = st.completionTime;
    rows.push(row);
  }
  return rows;
}

/** Sets the InPlaceUpdate condition: True while the update is in progress, False (with the ending's reason) once terminal. */
export function setInPlaceUpdateCondition(
  conditions: readonly Condition[],
  s: StatusInput,
  message: string,
  generation: number | undefined,
  now: Date,
): Condition[] {
  return setCondition(
    [...conditions],
    { type: ConditionTypes.inPlaceUpdate, status: isTerminal(s.updateStatus) ? 'False' : 'True', reason: s.reason, message },
    generation,
    now,
  );
}

/** Sets the Ready condition: True only once the MachineUpdate is updated (reason Updated or AlreadyInPlace). */
export function setReadyCondition(
  conditions: readonly Condition[],
  s: StatusInput,
  message: string,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const ready = s.updateStatus === 'updated';
  return setCondition(
    [...conditions],
    {
      type: ConditionTypes.ready,
      status: ready ? 'True' : 'False',
      reason: ready && s.reason !== Reasons.alreadyInPlace ? Reasons.updated : s.reason,
      message,
    },
    generation,
    now,
  );
}

/** The full new status of the MachineUpdate. */
export function buildStatus(scope: Scope, s: StatusInput, now: Date): MachineUpdateStatus {
  const mu = scope.mu;
  const old = mu.status ?? {};
  const gen = mu.metadata.generation;
  const terminal = isTerminal(s.updateStatus);
  const currentName = s.current !== undefined ? scope.views[s.current]?.updater.name : undefined;
  // The message usually quotes an updater's own text: bounded once, so status.message and both conditions agree.
  const message = boundMessage(s.message, MessageBudget.status);
  const conditions = setReadyCondition(setInPlaceUpdateCondition(old.conditions ?? [], s, message, gen, now), s, message, gen, now);

  const { currentUpdater: _previous, ...kept } = old;
  const out: MachineUpdateStatus = {
    ...kept,
    updateStatus: s.updateStatus,
    tasks: taskRows(scope),
    // The update started when its first task was created: the first status write may come later (firstStatusOnly).
    startTime: old.startTime ?? scope.views[0]?.task?.metadata.creationTimestamp ?? toKubeTime(now),
    message,
    conditions,
  };
  if (gen !== undefined) out.observedGeneration = gen;
  // Only an updater whose task is in flight is current: none while committing, none once terminal (the UPDATER column).
  if (currentName && !terminal) out.currentUpdater = currentName;
  if (terminal) out.completionTime = old.completionTime ?? toKubeTime(now);
  return out;
}

/** The status of a MachineUpdate the controller refuses to act on: the reason in the message and InPlaceUpdate, the rest kept. */
export function refusalStatus(mu: MachineUpdateObject, message: string, now: Date): MachineUpdateStatus {
  const old = mu.status ?? {};
  return {
    ...old,
    message,
    conditions: setCondition(
      [...(old.conditions ?? [])],
      { type: ConditionTypes.inPlaceUpdate, status: 'False', reason: Reasons.notOwnedByPlan, message },
      mu.metadata.generation,
      now,
    ),
  };
}

/**
 * How often at most a MachineUpdate's status is written for an updater's progress alone (a progress message, a task
 * turning in progress). A progress-only change waits for this long after the last status write (or rides on the next
 * write that happens anyway: a phase change, the commit journal, the end), so a chatty updater costs at most one
 * write per interval while a long update still shows live progress.
 */
export const PROGRESS_WRITE_INTERVAL_MS = 5_000;

/** What of a status a progress-only change leaves as it was: no message, conditions without messages, task rows without times or in-flight states. */
function progressShape(s: MachineUpdateStatus | undefined): unknown {
  const { message: _m, conditions, tasks, ...rest } = s ?? {};
  return {
    ...rest,
    conditions: (conditions ?? []).map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
    tasks: (tasks ?? []).map(({ startTime: _s, updateStatus, ...row }) => ({
      ...row,
      // A row's way from no status to updating is progress; its end (terminal) never is.
      state: isTerminal(updateStatus) ? updateStatus : 'in-flight',
    })),
  };
}

/**
 * True when `next` differs from `old` only in what an updater's progress moves: the message (and the conditions'
 * messages), a task row's start time or its in-flight state. A phase, an updater, a reason, a task's end, the commit
 * journal or any other field changing is not progress-only.
 */
export function progressOnly(old: MachineUpdateStatus | undefined, next: MachineUpdateStatus): boolean {
  return !isTerminal(next.updateStatus) && isDeepStrictEqual(progressShape(old), progressShape(next));
}

/**
 * True when `next` is the first status of a MachineUpdate whose first task was just created and says only that: nothing
 * was written on it before (no updateStatus, no InPlaceUpdate condition, e.g. a refusal), it is `updating`, waiting for
 * or following its updater, with no journal. The created task is the visible step; this status is held like progress
 * and carried by the next write that happens anyway (for an update shorter than the interval: the journal's, with
 * "committing"), so `updating` still shows before `updated`. A failure, an abort or a stuck updater is written at once.
 */
export function firstStatusOnly(old: MachineUpdateStatus | undefined, next: MachineUpdateStatus): boolean {
  if (old?.updateStatus !== undefined || old?.conditions?.some((c) => c.type === ConditionTypes.inPlaceUpdate)) return false;
  // Only the first updater's start: the next updater's is written at once (a task's end is never progress).
  if (next.updateStatus !== 'updating' || next.commit !== undefined || (next.tasks?.length ?? 0) > 1) return false;
  const reason = next.conditions?.find((c) => c.type === ConditionTypes.inPlaceUpdate)?.reason;
  return reason === Reasons.updating || reason === Reasons.waitingForUpdater;
}

/**
 * How long to hold back the status write of `next` (undefined: write now): only a progress-only change or the first
 * status of a just-started update (firstStatusOnly) is held, until the interval has passed since the last visible step
 * (`lastWriteMs`: our last status write or task create; unknown after a restart: written at once).
 */
export function progressHoldMs(
  old: MachineUpdateStatus | undefined,
  next: MachineUpdateStatus,
  lastWriteMs: number | undefined,
  nowMs: number,
  intervalMs = PROGRESS_WRITE_INTERVAL_MS,
): number | undefined {
  // Nothing changed: nothing to hold (apply sends nothing).
  if (lastWriteMs === undefined || isDeepStrictEqual(old, next)) return undefined;
  if (!progressOnly(old, next) && !firstStatusOnly(old, next)) return undefined;
  const left = lastWriteMs + intervalMs - nowMs;
  return left > 0 ? left : undefined;
}

/** An Event to record for a status transition. */
export interface StatusEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * The Event a status write records: the update ended failed or aborted (Warning), or it became stuck on a task no
 * updater reports on (Warning, once per stretch: `beforeReason` is the InPlaceUpdate reason before); undefined
 * otherwise. A start and a successful end record none: one Normal Event per machine repeated what the MachineUpdate's
 * status (startTime, completionTime, conditions) and the plan's progress and Events already show, and cost a request
 * per machine (issue 25).
 */
export function statusEvent(before: MachineUpdateStatus['updateStatus'], s: StatusInput, beforeReason?: string): StatusEvent | undefined {
  if (s.reason === Reasons.updaterNotReporting && beforeReason !== s.reason)
    return { type: 'Warning', reason: Reasons.updaterNotReporting, message: s.message };
  if (before !== s.updateStatus && isTerminal(s.updateStatus) && s.updateStatus !== 'updated')
    return { type: 'Warning', reason: reasonOfTerminal(s.updateStatus), message: s.message };
  return undefined;
}
