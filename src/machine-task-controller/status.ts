// Pure status of a MachineUpdate from a decision: updateStatus, currentUpdater, task rows, times, message and the
// InPlaceUpdate / Ready conditions. Other conditions on the object (e.g. the MHC extension's) are kept as they are.
import { ConditionTypes, MessageBudget, Reasons, boundMessage, isTerminal, type Condition, type MachineUpdateStatus } from '../api/index.js';
import { taskUpdateStatus } from '../contract/index.js';
import { setCondition, toKubeTime } from '../runtime/conditions.js';
import type { MachineUpdateStatusValue } from './decide.js';
import type { Scope, TaskRow } from './scope.js';

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
    const updateStatus = current ?? old?.updateStatus;
    if (updateStatus) row.updateStatus = updateStatus;
    if (st?.startTime) row.startTime = st.startTime;
    if (st?.completionTime && current) row.completionTime = st.completionTime;
    rows.push(row);
  }
  return rows;
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

  let conditions: Condition[] = old.conditions ?? [];
  conditions = setCondition(
    conditions,
    terminal
      ? { type: ConditionTypes.inPlaceUpdate, status: 'False', reason: s.reason, message }
      : { type: ConditionTypes.inPlaceUpdate, status: 'True', reason: s.reason, message },
    gen,
    now,
  );
  conditions = setCondition(
    conditions,
    s.updateStatus === 'updated'
      ? { type: ConditionTypes.ready, status: 'True', reason: Reasons.updated, message }
      : { type: ConditionTypes.ready, status: 'False', reason: s.reason, message },
    gen,
    now,
  );

  const out: MachineUpdateStatus = {
    ...old,
    updateStatus: s.updateStatus,
    tasks: taskRows(scope),
    startTime: old.startTime ?? toKubeTime(now),
    message,
    conditions,
  };
  if (gen !== undefined) out.observedGeneration = gen;
  if (currentName) out.currentUpdater = currentName;
  if (terminal) out.completionTime = old.completionTime ?? toKubeTime(now);
  return out;
}
