// Pure decisions of the machine task controller (docs/design.md §4.2): from a snapshot of a MachineUpdate, its machine
// and its tasks, what to do next and what the MachineUpdate's status says. No client, no clock: table-tested.
import { Reasons, UpdatePhase, isTerminal, type MachineUpdateStatus } from '../api/index.js';
import { taskPhase, taskReadyMessage, taskUpdateStatus } from '../contract/index.js';
import type { CommitResult } from './commit.js';
import type { MachineUpdateObject, Scope } from './scope.js';

/** The one action a reconcile takes. */
export type Step =
  /** The MachineUpdate is terminal: nothing to do, ever. */
  | { kind: 'none' }
  /** Create the task of views[index]. */
  | { kind: 'createTask'; index: number }
  /** Set spec.updatePhase: aborting on the task of views[index]. */
  | { kind: 'abortTask'; index: number }
  /** Delete a terminal task of another (earlier) MachineUpdate that holds our deterministic name. */
  | { kind: 'deleteForeignTask'; index: number }
  /** Wait for the task of views[index] to change (event driven), or for a foreign task to finish. */
  | { kind: 'wait'; index: number; foreign?: boolean }
  /** Every updater is updated: commit the responsibilities (C8), then finish updated. */
  | { kind: 'commit' }
  /** End the MachineUpdate aborted or failed; nothing is committed. */
  | { kind: 'finish'; updateStatus: 'aborted' | 'failed' };

/** MachineUpdate status values. */
export type MachineUpdateStatusValue = NonNullable<MachineUpdateStatus['updateStatus']>;

/** What to do and how to report it. */
export interface Decision {
  step: Step;
  /** The MachineUpdate's updateStatus after this step (for commit: still in progress until the commit is verified). */
  updateStatus: MachineUpdateStatusValue;
  /** Index (into the views) of the updater in flight, if any. */
  current?: number;
  /** Condition reason and human message for the status. */
  reason: string;
  message: string;
}

/** Why the MachineUpdate is stopping, when it is: the spec asks to abort, or the machine is gone. */
function abortCause(scope: Scope): string | undefined {
  if (scope.machine === 'missing') return `machine ${scope.mu.spec.machineRef.name} no longer exists`;
  if (scope.machine === 'deleting') return `machine ${scope.mu.spec.machineRef.name} is being deleted`;
  if (scope.mu.spec.updatePhase === UpdatePhase.aborting) return 'the update is aborting';
  return undefined;
}

/** Decides the next step of a MachineUpdate (level-based: the same snapshot always gives the same answer). */
export function decide(scope: Scope): Decision {
  const mu = scope.mu;
  const prev = mu.status?.updateStatus;
  if (isTerminal(prev))
    return {
      step: { kind: 'none' },
      updateStatus: prev as MachineUpdateStatusValue,
      reason: reasonOfTerminal(prev!),
      message: mu.status?.message ?? '',
    };
  if (mu.metadata.deletionTimestamp)
    return {
      step: { kind: 'none' },
      updateStatus: prev || inFlightStatus(false),
      reason: Reasons.deleting,
      message: 'the MachineUpdate is being deleted',
    };

  const abort = abortCause(scope);
  const inFlight = inFlightStatus(abort !== undefined);
  const n = scope.views.length;

  for (let i = 0; i < n; i++) {
    const v = scope.views[i]!;
    const name = v.updater.name;
    const where = `${v.kind} ${v.taskName}`;

    if (!v.task && v.foreign) {
      if (abort) return finish('aborted', Reasons.aborted, `aborted before updater ${name} started: ${abort}`);
      const foreignStatus = taskUpdateStatus(v.foreign);
      if (isTerminal(foreignStatus) || v.foreign.metadata.deletionTimestamp) {
        return {
          step: { kind: 'deleteForeignTask', index: i },
          updateStatus: inFlight,
          current: i,
          reason: Reasons.waitingForUpdater,
          message: `replacing the finished task ${where} of an earlier update`,
        };
      }
      return {
        step: { kind: 'wait', index: i, foreign: true },
        updateStatus: inFlight,
        current: i,
        reason: Reasons.waitingForUpdater,
        message: `task name ${v.taskName} is still used by the in-flight update of another MachineUpdate`,
      };
    }

    const task = v.task;
    if (!task) {
      if (abort)
        return finish(
          'aborted',
          Reasons.aborted,
          i === 0 ? `aborted before any updater started: ${abort}` : `aborted before updater ${name} started: ${abort}`,
        );
      return {
        step: { kind: 'createTask', index: i },
        updateStatus: inFlight,
        current: i,
        reason: Reasons.updating,
        message: `updater ${name} (${i + 1}/${n}) started: ${where}`,
      };
    }

    const st = taskUpdateStatus(task);
    const said = taskReadyMessage(task);
    if (st === 'updated') continue;
    if (st === 'failed') return finish('failed', Reasons.failed, `updater ${name} failed: ${said ?? 'the updater gave no message'}`);
    if (st === 'aborted') {
      if (abort || taskPhase(task) === 'aborting')
        return finish('aborted', Reasons.aborted, `updater ${name} aborted${said ? `: ${said}` : ''}`);
      return finish(
        'failed',
        Reasons.failed,
        `updater ${name} reported aborted although its task was never asked to abort${said ? `: ${said}` : ''}`,
      );
    }

    if (abort && taskPhase(task) !== 'aborting') {
      return {
        step: { kind: 'abortTask', index: i },
        updateStatus: 'aborting',
        current: i,
        reason: Reasons.aborting,
        message: `aborting updater ${name}: ${abort}`,
      };
    }
    const waitingFor = st === undefined ? 'waiting for the updater to report on the current generation' : said || st;
    return {
      step: { kind: 'wait', index: i },
      updateStatus: inFlight,
      current: i,
      reason: abort ? Reasons.aborting : Reasons.waitingForUpdater,
      message: `updater ${name} (${i + 1}/${n}) ${abort ? 'aborting' : 'updating'}: ${waitingFor}`,
    };
  }
  // Every updater finished updated — even if an abort arrived meanwhile, the machine is fully updated, so the
  // values are committed rather than left stale on the CAPI objects.
  return {
    step: { kind: 'commit' },
    updateStatus: inFlight,
    reason: Reasons.committing,
    message: `all ${n} updaters updated; committing responsibilities`,
  };
}

function finish(updateStatus: 'aborted' | 'failed', reason: string, message: string): Decision {
  return { step: { kind: 'finish', updateStatus }, updateStatus, reason, message };
}

function inFlightStatus(aborting: boolean): MachineUpdateStatusValue {
  return aborting ? 'aborting' : 'updating';
}

/** The condition reason that goes with a terminal status. */
export function reasonOfTerminal(s: string): string {
  if (s === 'updated') return Reasons.updated;
  if (s === 'aborted') return Reasons.aborted;
  return Reasons.failed;
}

/** How a MachineUpdate ends: its terminal status with the condition reason and message that explain it. */
export interface Ending {
  updateStatus: 'updated' | 'failed' | 'aborted';
  reason: string;
  message: string;
}

/**
 * The ending a commit's result gives the MachineUpdate. Values that were all already on the objects (verified, nothing
 * written) end `updated` with reason AlreadyInPlace, so that nothing counts them as committed by this update.
 */
export function commitEnding(result: CommitResult, updaters: number): Ending {
  if (result.ok) {
    if (result.written.length > 0)
      return {
        updateStatus: 'updated',
        reason: Reasons.updated,
        message: `updated by ${updaters} updater(s); committed ${result.written.join(', ')}`,
      };
    // A restart after the commit but before this status write, or values that were already at target: verified in place.
    return {
      updateStatus: 'updated',
      reason: Reasons.alreadyInPlace,
      message: `updated by ${updaters} updater(s); every value was already in place (verified), nothing written`,
    };
  }
  switch (result.outcome) {
    case 'machine-gone':
      // Deleted under the update (the cache had not shown it): aborted, as a deletion seen earlier would be; no Halt.
      return { updateStatus: 'aborted', reason: Reasons.aborted, message: result.message };
    case 'rolled-back':
      return { updateStatus: 'failed', reason: Reasons.commitRolledBack, message: result.message };
    case 'restore-failed':
      return { updateStatus: 'failed', reason: Reasons.commitRestoreFailed, message: result.message };
    case 'nothing-committed':
      return { updateStatus: 'failed', reason: Reasons.commitFailed, message: result.message };
  }
}

/** How long after its creation a refused MachineUpdate is still re-checked on a timer (cache lag); then events only. */
export const REFUSAL_RECHECK_WINDOW_MS = 60_000;
/** Re-check period of a refused MachineUpdate within that window. */
export const REFUSAL_RECHECK_MS = 3_000;

/**
 * When to look again at a MachineUpdate refused for want of a plan that owns it and labelled its machine: every few
 * seconds while it is young (the plan labels the machine just before it creates the MachineUpdate, and the Machine
 * cache may lag), then only on events (its plan's and its Machine's changes wake it), so a stray MachineUpdate costs
 * nothing while it waits. Undefined: wait for a change.
 */
export function refusalRecheckMs(mu: MachineUpdateObject, now: Date): number | undefined {
  const created = Date.parse(mu.metadata.creationTimestamp ?? '');
  if (Number.isNaN(created)) return REFUSAL_RECHECK_MS;
  return now.getTime() - created < REFUSAL_RECHECK_WINDOW_MS ? REFUSAL_RECHECK_MS : undefined;
}
