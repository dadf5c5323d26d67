// Pure decisions of the machine task controller (docs/design.md §4.2): from a snapshot of a MachineUpdate, its machine
// and its tasks, what to do next and what the MachineUpdate's status says. No client, no clock: table-tested.
import { Annotations, Reasons, UpdatePhase, isTerminal, type MachineUpdateStatus } from '../api/index.js';
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
  /** Look again after this long even if nothing changes (a task's no-first-status deadline). */
  recheckAfterMs?: number;
}

/** How long a task may go without a first status from any updater before the MachineUpdate says so (2 minutes). */
export const DEFAULT_UNREPORTED_TASK_MS = 120_000;

/**
 * How long an updater has to end a task it was asked to abort before the platform gives up on it (5 minutes): the
 * MachineUpdate then ends `aborted` (reason AbortTimedOut) so that abort, deletion and supersede of its plan end
 * whatever the updater does (never answered, ignores the abort, or is gone). Long enough for an updater honouring the
 * contract to reach a safe point; `--abort-grace-period` changes it.
 */
export const DEFAULT_ABORT_GRACE_MS = 300_000;

/** The clock and limits decide() needs for time-derived status (passed in: decide itself reads no clock). */
export interface DecideOptions {
  now: Date;
  /** See DEFAULT_UNREPORTED_TASK_MS. */
  unreportedTaskMs: number;
  /** See DEFAULT_ABORT_GRACE_MS; without it an abort waits for the updater however long it takes. */
  abortGraceMs?: number;
}

/** A duration as people write it: 2m, 90s, 1m30s, 1h. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const parts = [h ? `${h}h` : '', m ? `${m}m` : '', sec || s === 0 ? `${sec}s` : ''].filter(Boolean);
  return parts.join('');
}

/**
 * Whether a task never got a first status from an updater past the limit: the sign that no updater serves it (a typo
 * in the updater name, an updater not deployed or stopped). Derived from the task's age, so it holds level-based.
 * Returns the message when overdue, or how long until it would be.
 */
export function unreportedTask(
  task: { metadata: { creationTimestamp?: string }; status?: { updateStatus?: string } },
  view: { kind: string; taskName: string; updater: { name: string }; generic: boolean },
  opts: DecideOptions,
): { overdue: true; message: string } | { overdue: false; inMs: number } | undefined {
  if (task.status?.updateStatus) return undefined;
  const created = Date.parse(task.metadata.creationTimestamp ?? '');
  if (Number.isNaN(created)) return undefined;
  const left = created + opts.unreportedTaskMs - opts.now.getTime();
  if (left > 0) return { overdue: false, inMs: left };
  const name = view.updater.name;
  const serving = view.generic ? `serving \`${name}\`` : `serving ${view.kind}`;
  return {
    overdue: true,
    message: `no updater has reported on task ${view.kind} ${view.taskName} for updater \`${name}\` for ${formatDuration(opts.unreportedTaskMs)} — is an updater ${serving} running?`,
  };
}

/** Clock skew tolerated on an abort-requested-at stamp from the future (another replica's clock). */
const ABORT_STAMP_SKEW_MS = 60_000;

/**
 * When the task was asked to abort (its abort-requested-at annotation), in ms; undefined when not stamped, unreadable,
 * or further in the future than clock skew explains: such a stamp would put the bound off, so it is stamped again.
 */
export function abortRequestedAt(task: { metadata: { annotations?: Record<string, string> } }, now: Date): number | undefined {
  const at = Date.parse(task.metadata.annotations?.[Annotations.abortRequestedAt] ?? '');
  return Number.isNaN(at) || at > now.getTime() + ABORT_STAMP_SKEW_MS ? undefined : at;
}

/**
 * Whether the platform gives up on a task asked to abort: its updater did not end it within the grace period. The
 * message says what the machine is left as: a task no updater ever reported on was, as far as the platform can tell,
 * never started (nothing was done to the machine); one that reported is in an unknown state (it may be partly
 * updated). Returns how long until then while within the period.
 */
export function abortGiveUp(
  task: { metadata: { annotations?: Record<string, string> }; status?: { updateStatus?: string } },
  view: { kind: string; taskName: string; updater: { name: string } },
  said: string | undefined,
  opts: DecideOptions | undefined,
): { overdue: true; message: string } | { overdue: false; inMs: number } | undefined {
  if (opts?.abortGraceMs === undefined) return undefined;
  const asked = abortRequestedAt(task, opts.now);
  if (asked === undefined) return undefined;
  const left = asked + opts.abortGraceMs - opts.now.getTime();
  if (left > 0) return { overdue: false, inMs: left };
  const st = task.status?.updateStatus;
  const head = `gave up on updater ${view.updater.name}: it did not end task ${view.kind} ${view.taskName} within the abort grace period (${formatDuration(opts.abortGraceMs)})`;
  return {
    overdue: true,
    message: st
      ? `${head}; it last reported ${st}${said ? ` (${said})` : ''}, so the machine's state is unknown: it may be partly updated. Nothing was committed; check the machine (or replace it) before relying on it`
      : `${head}; no updater ever reported on the task, so nothing was started on the machine as far as the platform can tell. Nothing was committed`,
  };
}

/** Why the MachineUpdate is stopping, when it is: the spec asks to abort, or the machine is gone. */
function abortCause(scope: Scope): string | undefined {
  if (scope.machine === 'missing') return `machine ${scope.mu.spec.machineRef.name} no longer exists`;
  if (scope.machine === 'deleting') return `machine ${scope.mu.spec.machineRef.name} is being deleted`;
  if (scope.mu.spec.updatePhase === UpdatePhase.aborting) return 'the update is aborting';
  return undefined;
}

/** The MachineUpdate needs nothing more: terminal (its status stands) or being deleted. Undefined while it runs. */
function settledDecision(mu: MachineUpdateObject): Decision | undefined {
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
  return undefined;
}

/** What one updater's turn shares: its view's index, the number of updaters, the abort cause and the in-flight status. */
interface Turn {
  i: number;
  n: number;
  abort: string | undefined;
  inFlight: MachineUpdateStatusValue;
}

/** Our task name is held by another MachineUpdate's task: replace it once finished, else wait (abort ends us first). */
function foreignTaskStep(v: Scope['views'][number], t: Turn): Decision {
  const { i, abort, inFlight } = t;
  if (abort) return finish('aborted', Reasons.aborted, `aborted before updater ${v.updater.name} started: ${abort}`);
  const foreignStatus = taskUpdateStatus(v.foreign!);
  if (isTerminal(foreignStatus) || v.foreign!.metadata.deletionTimestamp) {
    return {
      step: { kind: 'deleteForeignTask', index: i },
      updateStatus: inFlight,
      current: i,
      reason: Reasons.waitingForUpdater,
      message: `replacing the finished task ${v.kind} ${v.taskName} of an earlier update`,
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

/** The updater has no task yet: create it, unless the update is stopping. */
function startStep(v: Scope['views'][number], t: Turn): Decision {
  const { i, n, abort, inFlight } = t;
  const name = v.updater.name;
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
    message: `updater ${name} (${i + 1}/${n}) started: ${v.kind} ${v.taskName}`,
  };
}

/** The updater's task exists: follow its status (undefined when it finished updated: on to the next updater). */
function taskStep(
  v: Scope['views'][number],
  task: NonNullable<Scope['views'][number]['task']>,
  t: Turn,
  opts: DecideOptions | undefined,
): Decision | undefined {
  const { i, n, abort, inFlight } = t;
  const name = v.updater.name;
  const st = taskUpdateStatus(task);
  const said = taskReadyMessage(task);
  if (st === 'updated') return undefined;
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

  // The ask carries its time (abort-requested-at): a task asked before that stamp existed gets it now.
  if (abort && (taskPhase(task) !== 'aborting' || (opts?.abortGraceMs !== undefined && abortRequestedAt(task, opts.now) === undefined))) {
    return {
      step: { kind: 'abortTask', index: i },
      updateStatus: 'aborting',
      current: i,
      reason: Reasons.aborting,
      message: `aborting updater ${name}: ${abort}`,
    };
  }
  const waitingFor = st === undefined ? 'waiting for the updater to report on the current generation' : said || st;
  const giveUp = abort ? abortGiveUp(task, v, said, opts) : undefined;
  if (giveUp?.overdue) return finish('aborted', Reasons.abortTimedOut, giveUp.message);
  if (giveUp)
    return {
      recheckAfterMs: giveUp.inMs,
      step: { kind: 'wait', index: i },
      updateStatus: inFlight,
      current: i,
      reason: Reasons.aborting,
      message: `updater ${name} (${i + 1}/${n}) aborting: ${waitingFor}; given up on at ${new Date(opts!.now.getTime() + giveUp.inMs).toISOString()} if it has not ended the task`,
    };
  const silent = !abort && opts ? unreportedTask(task, { ...v, generic: !v.updater.updaterUpdateTemplateRef }, opts) : undefined;
  if (silent?.overdue)
    return {
      step: { kind: 'wait', index: i },
      updateStatus: inFlight,
      current: i,
      reason: Reasons.updaterNotReporting,
      message: silent.message,
    };
  return {
    ...(silent ? { recheckAfterMs: silent.inMs } : {}),
    step: { kind: 'wait', index: i },
    updateStatus: inFlight,
    current: i,
    reason: abort ? Reasons.aborting : Reasons.waitingForUpdater,
    message: `updater ${name} (${i + 1}/${n}) ${abort ? 'aborting' : 'updating'}: ${waitingFor}`,
  };
}

/** Decides the next step of a MachineUpdate (level-based: the same snapshot always gives the same answer). */
export function decide(scope: Scope, opts?: DecideOptions): Decision {
  const settled = settledDecision(scope.mu);
  if (settled) return settled;
  const abort = abortCause(scope);
  const inFlight = inFlightStatus(abort !== undefined);
  const n = scope.views.length;
  // Updaters run in order: the first one not finished updated decides the step.
  for (let i = 0; i < n; i++) {
    const v = scope.views[i]!;
    const turn: Turn = { i, n, abort, inFlight };
    if (!v.task && v.foreign) return foreignTaskStep(v, turn);
    if (!v.task) return startStep(v, turn);
    const step = taskStep(v, v.task, turn, opts);
    if (step) return step;
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
