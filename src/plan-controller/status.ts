// The plan's status language: conditions (setXCondition, CAPI lastTransitionTime semantics), the Ready reason that
// matches the state, Events for transitions and metric deltas. Pure: decidePlan (its phases in decide/) computes the
// rows and calls these.
import type { Condition, InPlaceUpdatePlan, InPlaceUpdatePlanStatus, MachineUpdate, TargetStatus } from '../api/index.js';
import { ConditionTypes, MessageBudget, PlanEventReasons, Reasons, boundMessage, summarizeList } from '../api/index.js';
import type { KstatusVerdict } from '../runtime/pure/conditions.js';
import { setCondition, setKstatusConditions } from '../runtime/pure/conditions.js';
import type { OwnerOutcome } from '../rules/owners.js';
import type { PlanEvent } from '../rules/inputs.js';
import { OWNERS_ALIGNED, OwnerReasons, ownersCondition } from '../rules/owners.js';

type Status = TargetStatus['updateStatus'];

/** A plan's status change as its Events tell it: the status before and after, the problems and Ready's reason. */
export interface StatusChange {
  planName: string;
  prev: InPlaceUpdatePlanStatus;
  next: InPlaceUpdatePlanStatus;
  problems: string[];
  readyReason: string;
}

/** Counter increments for the controller's metrics, derived from status changes (restart-safe). */
export interface MetricDeltas {
  started: number;
  updated: number;
  failed: number;
}

/** Validation problems for Valid/Ready and the Invalid Event; the same text each time so that repeats compare equal. */
export const problemsNote = (problems: readonly string[]): string => summarizeList(problems);

/** Machine (or plan) names for a message: the first ones and how many more. */
export const nameList = (names: readonly string[]): string =>
  summarizeList(names, { separator: ', ', maxBytes: MessageBudget.status / 2, itemMaxBytes: 256 });

const waitingFor = (olderActive: readonly InPlaceUpdatePlan[]): string => nameList(olderActive.map((p) => p.metadata?.name ?? ''));

/** Valid: True, or False listing every problem. */
export function setValidCondition(conds: Condition[], problems: readonly string[], generation: number | undefined, now: Date): Condition[] {
  const valid = problems.length === 0;
  return setCondition(
    conds,
    {
      type: ConditionTypes.valid,
      status: valid ? 'True' : 'False',
      reason: valid ? Reasons.valid : Reasons.invalid,
      message: valid ? 'the plan is valid' : problemsNote(problems),
    },
    generation,
    now,
  );
}

/** Why a plan that has not started holds every target (invalid, paused, waiting for an older plan), if it does. */
export function startGate(i: {
  valid: boolean;
  started: boolean;
  waiting: boolean;
  paused: boolean;
  /** Set while a maintenance window holds the plan: "window closed until …". */
  window?: string;
  /** The Ready reason of `window` (WaitingForMaintenanceWindow, or WaitingForAlerts for the alert gate). */
  windowReason?: string;
  olderActive: readonly InPlaceUpdatePlan[];
}): { reason: string; message: string } | undefined {
  if (i.started) return undefined;
  if (!i.valid) return { reason: Reasons.invalid, message: 'the plan is invalid' };
  // Same order as Ready: the operator's pause answers before the wait for an older plan.
  if (i.paused)
    return {
      reason: Reasons.paused,
      message: i.waiting
        ? `the plan is paused; once resumed it waits for plan ${waitingFor(i.olderActive)} to finish`
        : 'the plan is paused',
    };
  if (i.window) return { reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow, message: i.window };
  if (i.waiting) return { reason: Reasons.waitingForPreviousPlan, message: `waiting for plan ${waitingFor(i.olderActive)} to finish` };
  return undefined;
}

/** ControlPlaneUpdate and MachineDeploymentUpdate from the targets' rows. */
export function setTargetConditions(
  conds: Condition[],
  targets: { controlPlane: readonly TargetRowReason[]; machineDeployments: readonly TargetRowReason[] },
  gate: { reason: string; message: string } | undefined,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const { controlPlane, machineDeployments } = targets;
  const c1 = targetsCondition(ConditionTypes.controlPlaneUpdate, controlPlane, 'the plan has no control-plane target', gate);
  const c2 = targetsCondition(ConditionTypes.machineDeploymentUpdate, machineDeployments, 'the plan has no MachineDeployment target', gate);
  return setCondition(setCondition(conds, c1, generation, now), c2, generation, now);
}

/** Paused mirrors spec.paused. */
export function setPausedCondition(conds: Condition[], paused: boolean, generation: number | undefined, now: Date): Condition[] {
  return setCondition(
    conds,
    {
      type: ConditionTypes.paused,
      status: paused ? 'True' : 'False',
      reason: paused ? Reasons.paused : Reasons.notPaused,
      message: paused ? 'no new machines start; in-flight machines finish' : 'the plan is not paused',
    },
    generation,
    now,
  );
}

/** Ready as readyCondition derived it. */
export function setReadyCondition(
  conds: Condition[],
  ready: { status: Condition['status']; reason: string; message: string },
  generation: number | undefined,
  now: Date,
): Condition[] {
  return setCondition(conds, { type: ConditionTypes.ready, ...ready }, generation, now);
}

/**
 * How long an invalid plan that has not started stays open before it ends (Failed=True reason Invalid). Objects applied
 * together with the plan (a template, a MachineDeployment being created, a GitOps sync applying kinds in its own order)
 * reach the controller's caches a moment after the plan: they get this long to appear.
 */
export const INVALID_SETTLE_MS = 10_000;

/** What a user does about a plan that ended invalid (the spec is immutable but for updatePhase, paused and the TTL). */
export const INVALID_NEXT_STEP =
  'apply a corrected plan under a new name and delete this one; once a missing object exists, inplace pause + inplace resume (a new generation) validates this plan again';

/** What validation means for this reconcile: the problems to report and whether the plan ended invalid. */
export interface InvalidVerdict {
  problems: string[];
  /** The plan ended invalid for its generation: it stays so until its spec changes (a new generation is re-validated). */
  final: boolean;
}

/**
 * Whether an invalid plan has ended. A plan that never started and is invalid ends once it was invalid for
 * INVALID_SETTLE_MS; the end is final for its generation (a referenced object appearing later does not start a plan a
 * CI job already saw fail), and a new generation (pause/resume, the TTL: the rest of the spec is immutable) is
 * validated afresh. A plan that started is
 * never ended here: it holds (no new machine starts) until it is valid again or aborted.
 */
export function invalidVerdict(i: {
  problems: readonly string[];
  started: boolean;
  generation: number | undefined;
  prev: InPlaceUpdatePlanStatus;
  now: string;
}): InvalidVerdict {
  const problems = [...i.problems];
  if (i.started) return { problems, final: false };
  const prevValid = i.prev.conditions?.find((c) => c.type === ConditionTypes.valid);
  const prevFailed = i.prev.conditions?.find((c) => c.type === ConditionTypes.failed);
  if (prevFailed?.status === 'True' && prevFailed.reason === Reasons.invalid && prevFailed.observedGeneration === i.generation) {
    // Still the generation that ended: keep it ended, with today's problems or, when they went away, the ones it ended with.
    const kept = problems.length > 0 ? problems : (prevValid?.message ?? 'the plan was invalid').split('; ');
    return { problems: kept, final: true };
  }
  if (problems.length === 0) return { problems, final: false };
  const since = prevValid?.status === 'False' ? Date.parse(prevValid.lastTransitionTime ?? '') : NaN;
  const invalidFor = Number.isNaN(since) ? 0 : Date.parse(i.now) - since;
  return { problems, final: invalidFor >= INVALID_SETTLE_MS };
}

/** Failed: True when the plan failed or ended invalid; False carries the Ready reason (what the plan is doing). */
export function setFailedCondition(
  conds: Condition[],
  i: { updateStatus: Status; invalidFinal: boolean; problems: readonly string[]; ready: { reason: string; message: string } },
  generation: number | undefined,
  now: Date,
): Condition[] {
  const c =
    i.updateStatus === 'failed'
      ? { status: 'True' as const, reason: Reasons.failed, message: i.ready.message }
      : // Superseded or aborted after it ended invalid (never started): it still ended invalid, the condition stays.
        i.invalidFinal && (i.updateStatus === 'pending' || i.updateStatus === 'aborted')
        ? {
            status: 'True' as const,
            reason: Reasons.invalid,
            message: `the plan ended invalid and touched nothing: ${problemsNote(i.problems)}; ${INVALID_NEXT_STEP}`,
          }
        : { status: 'False' as const, reason: i.ready.reason, message: 'the plan has not failed' };
  return setCondition(conds, { type: ConditionTypes.failed, ...c }, generation, now);
}

/** Inputs of setPlanConditions. */
export interface PlanConditionsInput {
  valid: boolean;
  problems: readonly string[];
  terminal: boolean;
  started: boolean;
  waiting: boolean;
  paused: boolean;
  /** Set while a maintenance window holds the plan: "window closed until …". */
  window?: string;
  /** The Ready reason of `window`. */
  windowReason?: string;
  olderActive: readonly InPlaceUpdatePlan[];
  ready: { status: Condition['status']; reason: string; message: string };
  controlPlane: readonly TargetRowReason[];
  machineDeployments: readonly TargetRowReason[];
  /** The plan's update status after this reconcile, and whether it ended invalid (the Failed condition). */
  updateStatus: Status;
  invalidFinal: boolean;
}

/** Every plan condition for one reconcile (a terminal plan keeps its target conditions as they ended). */
export function setPlanConditions(conds: Condition[], i: PlanConditionsInput, generation: number | undefined, now: Date): Condition[] {
  let out = setValidCondition(conds, i.problems, generation, now);
  if (!i.terminal) out = setTargetConditions(out, i, startGate(i), generation, now);
  out = setPausedCondition(out, i.paused, generation, now);
  out = setReadyCondition(out, i.ready, generation, now);
  out = setFailedCondition(out, { ...i, problems: i.problems }, generation, now);
  return setKstatusConditions(out, planKstatus(i), generation, now);
}

/**
 * The plan's kstatus verdict from its update status and Ready verdict. Every state but `updated` has Reconciling or
 * Stalled True, so that kstatus (which calls an object with neither Current) never reports a plan Current before it is
 * Ready. Stalled is what needs a person: failed, aborted (superseded, deleted, a window's end), ended invalid, or a plan
 * that started and became invalid (it holds until fixed or aborted). Waiting is Reconciling: paused, a closed window, the
 * alert gate, an older plan, the short settle time of an invalid plan that has not started, aborting, aligning owners.
 */
export function planKstatus(i: {
  updateStatus: Status;
  valid: boolean;
  started: boolean;
  invalidFinal: boolean;
  problems: readonly string[];
  ready: { status: Condition['status']; reason: string; message: string };
}): KstatusVerdict {
  if (i.ready.status === 'True') return { state: 'ready', reason: i.ready.reason, message: i.ready.message };
  if (i.updateStatus === 'failed' || i.updateStatus === 'aborted')
    return { state: 'stalled', reason: i.ready.reason, message: i.ready.message };
  if (i.invalidFinal || (!i.valid && i.started))
    return {
      state: 'stalled',
      reason: Reasons.invalid,
      message: i.invalidFinal ? `the plan ended invalid: ${problemsNote(i.problems)}` : i.ready.message,
    };
  return { state: 'reconciling', reason: i.ready.reason, message: i.ready.message };
}

/** The Event for machines newly counted as already at target (none when the count did not grow). */
export function alreadyAtTargetEvents(prev: InPlaceUpdatePlanStatus, skipped: readonly string[]): PlanEvent[] {
  if (skipped.length <= (prev.skippedMachines ?? 0)) return [];
  return [
    {
      type: 'Normal',
      reason: PlanEventReasons.alreadyAtTarget,
      message: `${skipped.length} machine(s) already carry every value of the plan and count as updated without running updaters (spec.rerunMachinesAtTarget forces a re-run): ${nameList(skipped)}`,
    },
  ];
}

const rowRank: Record<Status, number> = { failed: 0, aborting: 1, aborted: 2, updating: 3, pending: 4, updated: 5 };
const reasonOf: Record<Status, string> = {
  failed: Reasons.failed,
  aborting: Reasons.aborting,
  aborted: Reasons.aborted,
  updating: Reasons.updating,
  pending: Reasons.pending,
  updated: Reasons.updated,
};

/** A target's row as this reconcile leaves it, with the reason its condition reports while pending or updating. */
export interface TargetRowReason {
  row: TargetStatus;
  reason: string;
}

/** One condition summarizing a set of target rows (worst status first); `override` answers a target not started for a plan-wide reason. */
export function targetsCondition(
  type: string,
  evals: readonly TargetRowReason[],
  none: string,
  override?: { reason: string; message: string },
): { type: string; status: Condition['status']; reason: string; message: string } {
  if (evals.length === 0) return { type, status: 'True', reason: Reasons.noTarget, message: none };
  const worst = [...evals].sort((a, b) => rowRank[a.row.updateStatus] - rowRank[b.row.updateStatus])[0]!;
  if (worst.row.updateStatus === 'updated') {
    return {
      type,
      status: 'True',
      reason: Reasons.updated,
      message: summarizeList(
        evals.map(
          (e) => `${e.row.name}: ${e.row.updated}/${e.row.machines} updated${e.row.skipped ? ` (${e.row.skipped} already at target)` : ''}`,
        ),
      ),
    };
  }
  if (override && worst.row.updateStatus === 'pending') return { type, status: 'False', ...override };
  const reason =
    worst.row.updateStatus === 'pending' || worst.row.updateStatus === 'updating' ? worst.reason : reasonOf[worst.row.updateStatus];
  const message = summarizeList(
    evals
      .filter((e) => e.row.updateStatus !== 'updated')
      .map((e) => `${e.row.name}: ${e.row.updateStatus} ${e.row.updated}/${e.row.machines}${e.row.message ? ` (${e.row.message})` : ''}`),
    { itemMaxBytes: MessageBudget.item * 2 },
  );
  return { type, status: 'False', reason, message };
}

/**
 * What in-flight MachineUpdates say when no updater reports on their task (reason UpdaterNotReporting): the plan's
 * Ready message carries it, so that `inplace status` and `kubectl get iup` show why nothing moves.
 */
export function unreportedTaskNotes(mus: Iterable<MachineUpdate>): string[] {
  const out: string[] = [];
  for (const mu of mus) {
    const c = mu.status?.conditions?.find((x) => x.type === ConditionTypes.inPlaceUpdate);
    if (c?.status === 'True' && c.reason === Reasons.updaterNotReporting)
      out.push(`machine ${mu.spec.machineRef.name}: ${c.message ?? ''}`);
  }
  return out;
}

/** One entry of status.givenUp: a machine whose updater did not end its task within the abort grace period. */
export type GivenUp = NonNullable<InPlaceUpdatePlanStatus['givenUp']>[number];

/**
 * The machines of the plan given up on while aborting (their MachineUpdate ended reason AbortTimedOut), with the
 * updater and task given up on and what state that leaves the machine in: NotStarted when no updater ever reported
 * on the task, Unknown when one had (the task's row in the MachineUpdate keeps the last status observed).
 */
export function givenUpOf(mus: Iterable<MachineUpdate>): GivenUp[] {
  const out: GivenUp[] = [];
  for (const mu of mus) {
    const c = mu.status?.conditions?.find((x) => x.type === ConditionTypes.inPlaceUpdate);
    if (c?.reason !== Reasons.abortTimedOut) continue;
    // The task given up on is the last one created: later updaters never got one.
    const row = mu.status?.tasks?.at(-1);
    const entry: GivenUp = {
      machine: mu.spec.machineRef.name,
      updater: row?.updater ?? '',
      state: row?.updateStatus ? 'Unknown' : 'NotStarted',
    };
    if (row) entry.task = `${row.kind}/${row.name}`;
    if (c.message) entry.message = boundMessage(c.message, 1024);
    out.push(entry);
  }
  return out.sort((x, y) => (x.machine < y.machine ? -1 : x.machine > y.machine ? 1 : 0));
}

/** The Ready detail of machines given up on: how many, and each one's explanation (bounded). */
export function givenUpNote(givenUp: readonly GivenUp[]): string | undefined {
  if (givenUp.length === 0) return undefined;
  const unknown = givenUp.filter((g) => g.state === 'Unknown').length;
  const head = `gave up on ${givenUp.length} machine${givenUp.length === 1 ? '' : 's'} whose updater did not end the abort in time${unknown > 0 ? ` (${unknown} in an unknown state)` : ''}`;
  return `${head}: ${summarizeList(
    givenUp.map((g) => `machine ${g.machine}: ${g.message ?? `updater ${g.updater}`}`),
    { itemMaxBytes: MessageBudget.item * 2 },
  )}`;
}

/** What the Ready condition is derived from. */
export interface ReadyInput {
  /** unreportedTaskNotes of the plan's MachineUpdates. */
  unreported?: readonly string[];
  /** givenUpNote of the plan's MachineUpdates: said first while the plan stops or once it stopped. */
  givenUp?: string;
  updateStatus: Status;
  valid: boolean;
  started: boolean;
  waiting: boolean;
  paused: boolean;
  /** Set while a gate (maintenance window, alerts) holds the plan: "window closed until …". */
  window?: string;
  /** The Ready reason of `window` (default WaitingForMaintenanceWindow). */
  windowReason?: string;
  /** Set when the alert gate halted the plan: the failed plan's message says why. */
  halt?: string;
  /** The plan stops because a window closed with machines in update (spec.maintenanceWindowEnd Abort). */
  windowEnded?: boolean;
  deleting: boolean;
  supersededBy: string | undefined;
  olderActive: InPlaceUpdatePlan[];
  problems: string[];
  progress: string;
  rows: TargetStatus[];
  stoppedByAbort: boolean;
  terminal: boolean;
  prevReady: Condition | undefined;
}

/** The Ready verdict: status, reason and message. */
export type ReadyVerdict = { status: Condition['status']; reason: string; message: string };

/** Ready is True only for an updated plan; otherwise its reason says what the plan is doing or waiting for. */
export function readyCondition(i: ReadyInput): ReadyVerdict {
  const detail = summarizeList(
    [...(i.unreported ?? []), ...i.rows.filter((r) => r.updateStatus !== 'updated' && r.message).map((r) => `${r.name}: ${r.message}`)],
    { itemMaxBytes: MessageBudget.item * 2 },
  );
  const withDetail = (s: string): string => (detail ? `${s}; ${detail}` : s);
  if (i.terminal && i.prevReady) return { status: i.prevReady.status, reason: i.prevReady.reason, message: i.prevReady.message ?? '' };
  switch (i.updateStatus) {
    case 'updated': {
      const skipped = i.rows.reduce((n, r) => n + (r.skipped ?? 0), 0);
      return {
        status: 'True',
        reason: Reasons.updated,
        message: `${i.progress} machines updated${skipped > 0 ? ` (${skipped} already at target: no updater ran)` : ''}`,
      };
    }
    case 'failed':
      return {
        status: 'False',
        reason: Reasons.failed,
        message: withDetail(`${i.halt ? `alertGate ${i.halt}; ` : ''}${i.progress} machines updated`),
      };
    case 'aborted':
    case 'aborting':
      return stoppedReady(i, withDetail);
    case 'pending':
      return pendingReady(i);
    default:
      return updatingReady(i, withDetail);
  }
}

/** Ready of a plan that stops or stopped: who stopped it (supersede, deletion, the window's end, an abort). */
function stoppedReady(i: ReadyInput, withDetail: (s: string) => string): ReadyVerdict {
  const reason = i.supersededBy
    ? Reasons.superseded
    : i.deleting && !i.stoppedByAbort
      ? Reasons.deleting
      : i.windowEnded && !i.stoppedByAbort
        ? Reasons.maintenanceWindowEnded
        : i.updateStatus === 'aborted'
          ? Reasons.aborted
          : Reasons.aborting;
  const why = i.supersededBy
    ? `superseded by plan ${i.supersededBy}`
    : i.deleting
      ? 'the plan is being deleted'
      : i.windowEnded && !i.stoppedByAbort
        ? 'the maintenance window closed with machines in update: they are aborted (spec.maintenanceWindowEnd Abort; a retry plan continues in the next window)'
        : 'the plan was aborted';
  return {
    status: 'False',
    reason,
    message: withDetail(`${why}; ${i.progress} machines updated${i.givenUp ? `; ${i.givenUp}` : ''}`),
  };
}

/** Ready of a plan that has not started: what holds it (invalid, paused, a gate, an older plan). */
function pendingReady(i: ReadyInput): ReadyVerdict {
  if (!i.valid) return { status: 'False', reason: Reasons.invalid, message: problemsNote(i.problems) };
  // The operator's pause is what holds the plan: it answers first, and names the wait that follows a resume.
  if (i.paused)
    return {
      status: 'False',
      reason: Reasons.paused,
      message: i.waiting
        ? `the plan is paused; once resumed it waits for plan ${waitingFor(i.olderActive)} to finish`
        : 'the plan is paused',
    };
  if (i.window)
    return {
      status: 'False',
      reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow,
      message: i.waiting ? `${i.window}; then it waits for plan ${waitingFor(i.olderActive)} to finish` : i.window,
    };
  if (i.waiting)
    return {
      status: 'False',
      reason: Reasons.waitingForPreviousPlan,
      message: `waiting for plan ${waitingFor(i.olderActive)} to finish`,
    };
  return { status: 'False', reason: Reasons.pending, message: 'the plan has not started' };
}

/** Ready of a plan in progress: what holds its next starts, if anything, and how far it got. */
function updatingReady(i: ReadyInput, withDetail: (s: string) => string): ReadyVerdict {
  if (!i.valid)
    return {
      status: 'False',
      reason: Reasons.invalid,
      message: `no new machines start until the plan is valid again: ${problemsNote(i.problems)}`,
    };
  if (i.paused) return { status: 'False', reason: Reasons.paused, message: withDetail(`paused at ${i.progress} machines updated`) };
  if (i.window)
    return {
      status: 'False',
      reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow,
      message: withDetail(`${i.window}; ${i.progress} machines updated`),
    };
  // A task no updater reports on (a typo in an updater name, an updater not deployed) is the likeliest stuck plan:
  // its reason says so where operators look first (the REASON column of kubectl get iup), not only the message.
  const reason = (i.unreported?.length ?? 0) > 0 ? Reasons.updaterNotReporting : Reasons.updating;
  return { status: 'False', reason, message: withDetail(`${i.progress} machines updated`) };
}

/** The actions of a decision that Events report. */
export interface EventActions {
  supersede: readonly string[];
  create: readonly { machine: string; target: { kind: string; name: string }; updaters: readonly { name: string }[] }[];
  scale: readonly { kind: 'surge' | 'restore'; name: string; replicas?: number }[];
}

/** The Events of one reconcile: transitions between the previous and the next status, and the actions taken. */
export function eventsFor(change: StatusChange, rows: TargetStatus[], d: EventActions): PlanEvent[] {
  const { planName, prev, next, problems, readyReason } = change;
  const ev = conditionEvents(prev, next, problems, readyReason);
  for (const p of d.supersede) {
    ev.push({ type: 'Normal', reason: PlanEventReasons.superseding, message: `superseding plan ${p}: it is moved to aborting` });
    ev.push({ type: 'Warning', reason: PlanEventReasons.superseded, message: `superseded by plan ${planName}: aborting`, plan: p });
  }
  const transition = prev.updateStatus !== next.updateStatus ? planTransitionEvent(next, rows) : undefined;
  if (transition) ev.push(transition);
  ev.push(...targetTransitionEvents(prev, rows), ...actionEvents(d));
  return ev;
}

/** Events of the conditions' changes: a new invalid verdict, the start of a wait for an older plan, pause and resume. */
function conditionEvents(
  prev: InPlaceUpdatePlanStatus,
  next: InPlaceUpdatePlanStatus,
  problems: string[],
  readyReason: string,
): PlanEvent[] {
  const ev: PlanEvent[] = [];
  const prevValid = prev.conditions?.find((c) => c.type === ConditionTypes.valid);
  const prevReady = prev.conditions?.find((c) => c.type === ConditionTypes.ready);
  if (problems.length > 0 && (prevValid?.status !== 'False' || prevValid.message !== problemsNote(problems)))
    ev.push({ type: 'Warning', reason: PlanEventReasons.invalid, message: problemsNote(problems) });
  if (readyReason === Reasons.waitingForPreviousPlan && prevReady?.reason !== Reasons.waitingForPreviousPlan)
    ev.push({
      type: 'Normal',
      reason: PlanEventReasons.waiting,
      message: next.conditions?.find((c) => c.type === ConditionTypes.ready)?.message ?? '',
    });
  const prevPaused = prev.conditions?.find((c) => c.type === ConditionTypes.paused)?.status === 'True';
  const nowPaused = next.conditions?.find((c) => c.type === ConditionTypes.paused)?.status === 'True';
  if (nowPaused && !prevPaused) ev.push({ type: 'Normal', reason: PlanEventReasons.paused, message: 'plan paused: no new machines start' });
  if (!nowPaused && prevPaused) ev.push({ type: 'Normal', reason: PlanEventReasons.resumed, message: 'plan resumed' });
  return ev;
}

/** The Event of the plan's new updateStatus, if it has one. */
function planTransitionEvent(next: InPlaceUpdatePlanStatus, rows: TargetStatus[]): PlanEvent | undefined {
  const progress = next.progress ?? '';
  switch (next.updateStatus) {
    case 'updating':
      return {
        type: 'Normal',
        reason: PlanEventReasons.started,
        message: `plan started: ${next.machines ?? 0} machines in ${rows.length} target(s)`,
      };
    case 'updated':
      return { type: 'Normal', reason: PlanEventReasons.completed, message: `plan updated: ${progress} machines updated` };
    case 'failed':
      return {
        type: 'Warning',
        reason: PlanEventReasons.failed,
        message: `plan failed at ${progress} machines updated: ${summarizeList(
          rows.filter((r) => r.updateStatus === 'failed').map((r) => `${r.name}: ${r.message ?? 'failed'}`),
          { maxBytes: MessageBudget.event },
        )}`,
      };
    case 'aborting':
      return { type: 'Normal', reason: PlanEventReasons.aborting, message: `plan aborting at ${progress} machines updated` };
    case 'aborted':
      return { type: 'Normal', reason: PlanEventReasons.aborted, message: `plan aborted at ${progress} machines updated` };
    default:
      return undefined;
  }
}

/** Events of the targets whose updateStatus changed: started, updated, failed. */
function targetTransitionEvents(prev: InPlaceUpdatePlanStatus, rows: TargetStatus[]): PlanEvent[] {
  const ev: PlanEvent[] = [];
  const prevRows = new Map((prev.targets ?? []).map((r) => [`${r.kind}/${r.name}`, r]));
  for (const r of rows) {
    const before = prevRows.get(`${r.kind}/${r.name}`)?.updateStatus ?? 'pending';
    if (before === r.updateStatus) continue;
    const what = `${r.kind === 'ControlPlane' ? 'control plane' : 'MachineDeployment'} ${r.name}`;
    if (r.updateStatus === 'updating' && before === 'pending')
      ev.push({ type: 'Normal', reason: PlanEventReasons.targetStarted, message: `${what} started (${r.machines} machines)` });
    if (r.updateStatus === 'updated')
      ev.push({ type: 'Normal', reason: PlanEventReasons.targetUpdated, message: `${what} updated (${r.updated}/${r.machines} machines)` });
    if (r.updateStatus === 'failed')
      ev.push({ type: 'Warning', reason: PlanEventReasons.targetFailed, message: `${what} failed: ${r.message ?? ''}` });
  }
  return ev;
}

/** Events of the actions taken: machines started, surges and their restores. */
function actionEvents(d: EventActions): PlanEvent[] {
  const ev: PlanEvent[] = d.create.map((c) => ({
    type: 'Normal',
    reason: PlanEventReasons.machineUpdateStarted,
    message: `started the update of machine ${c.machine} (${c.target.kind} ${c.target.name}) with updaters ${nameList(c.updaters.map((u) => u.name))}`,
  }));
  for (const s of d.scale) {
    if (s.kind === 'surge')
      ev.push({
        type: 'Normal',
        reason: PlanEventReasons.surged,
        message: `scaled MachineDeployment ${s.name} to ${s.replicas} replicas (maxUnavailable 0: surge by one)`,
      });
    else
      ev.push({
        type: 'Normal',
        reason: PlanEventReasons.surgeRestored,
        message: `restored MachineDeployment ${s.name}${s.replicas !== undefined ? ` to ${s.replicas} replicas` : ''}`,
      });
  }
  return ev;
}

/** Metric increments from the rows' counts against the previous status (restart-safe), and the machines started now. */
export function metricDeltas(prev: InPlaceUpdatePlanStatus, rows: TargetStatus[], d: Pick<EventActions, 'create'>): MetricDeltas {
  const prevRows = new Map((prev.targets ?? []).map((r) => [`${r.kind}/${r.name}`, r]));
  let updated = 0;
  let failed = 0;
  for (const r of rows) {
    const p = prevRows.get(`${r.kind}/${r.name}`);
    updated += Math.max(0, (r.updated ?? 0) - (p?.updated ?? 0));
    failed += Math.max(0, (r.failed ?? 0) - (p?.failed ?? 0));
  }
  return { started: d.create.length, updated, failed };
}

/** Ready reason of a plan whose machines are done while a target's owner alignment continues. */
export const ALIGNING_OWNERS = 'AligningOwners';

const TERMINAL: readonly (Status | undefined)[] = ['updated', 'failed', 'aborted'];
const TRANSITION_EVENTS: readonly string[] = [PlanEventReasons.completed, PlanEventReasons.failed, PlanEventReasons.aborted];

/** The status and events to write once the owner effects ran (settledOwnersStatus). */
export interface SettledStatus {
  status: InPlaceUpdatePlanStatus;
  events: PlanEvent[];
}

/**
 * The one place OwnersAligned is set: from the decision and the owner effects' outcomes. A plan whose machines all
 * finished while a target's owner alignment did not (a request failed, or writes are left) is not terminal yet: it
 * stays in its previous status with Ready False reason AligningOwners, and its counts are written (never frozen); the
 * next reconcile continues the alignment and then ends the plan. Returns a new status and event list: the decision
 * (`d`, with the events the effects added) is left as it was decided.
 */
export function settledOwnersStatus(
  prev: InPlaceUpdatePlanStatus,
  d: { readonly status: InPlaceUpdatePlanStatus; readonly events: readonly PlanEvent[] },
  outcomes: readonly OwnerOutcome[],
  generation: number | undefined,
  now: Date,
): SettledStatus {
  const status: InPlaceUpdatePlanStatus = { ...d.status };
  const c = ownersCondition(outcomes);
  if (c) status.conditions = setCondition(status.conditions, { ...c, message: c.message ?? '' }, generation, now);
  const aligning = c?.reason === OwnerReasons.aligning;
  if (!aligning || TERMINAL.includes(prev.updateStatus) || !TERMINAL.includes(status.updateStatus))
    return { status, events: [...d.events] };
  status.updateStatus = prev.updateStatus === 'aborting' ? 'aborting' : 'updating';
  if (prev.completionTime) status.completionTime = prev.completionTime;
  else delete status.completionTime;
  const message = `${status.progress ?? ''} machines done; aligning owners: ${
    status.conditions?.find((x) => x.type === OWNERS_ALIGNED)?.message ?? ''
  }`;
  const ready = {
    status: 'False' as const,
    reason: ALIGNING_OWNERS,
    message: summarizeList([message], { maxBytes: MessageBudget.status }),
  };
  status.conditions = setReadyCondition(status.conditions ?? [], ready, generation, now);
  // The plan is not terminal after all: kstatus must see it in progress, not stalled on the failure it reports next.
  status.conditions = setKstatusConditions(status.conditions, { state: 'reconciling', ...ready }, generation, now);
  return { status, events: d.events.filter((e) => e.plan !== undefined || !TRANSITION_EVENTS.includes(e.reason)) };
}
