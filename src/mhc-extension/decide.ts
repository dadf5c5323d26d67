// Pure decisions of the MHC extension: timeouts, remediation budget, skip-remediation bookkeeping, a machine's
// current update, and the whole per-MHC plan (which annotations to patch on which machine, which MachineUpdate
// conditions and Events to record, when to look again). No client, no clock: the controller acts on the result.
import {
  Annotations,
  ConditionTypes,
  Labels,
  MessageBudget,
  MhcEventReasons,
  Reasons,
  UpdateStatus,
  boundMessage,
  isTerminal,
} from '../api/index.js';
import { scaleIntOrPercent } from '../api/capi/index.js';
import { InvalidDurationError, parseGoDuration } from '../api/duration.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './scope.js';
import { fmtDuration, type ConditionWish, type EventWish } from './status.js';

/** CAPI's default nodeStartupTimeoutSeconds (10 minutes, set by its defaulting webhook when absent). */
const DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS = 600;

/** The MHC's in-place timeout: absent (MHC not configured), valid (ms), or invalid (with the reason). */
export type TimeoutConfig = { kind: 'absent' } | { kind: 'valid'; ms: number } | { kind: 'invalid'; value: string; message: string };

/** Reads the in-place update timeout annotation of an MHC; zero and negative durations are invalid. */
export function readTimeoutAnnotation(mhc: MachineHealthCheck): TimeoutConfig {
  const value = mhc.metadata.annotations?.[Annotations.inPlaceUpdateTimeout];
  if (value === undefined) return { kind: 'absent' };
  try {
    const ms = parseGoDuration(value.trim());
    if (ms <= 0)
      return {
        kind: 'invalid',
        value,
        message: `${Annotations.inPlaceUpdateTimeout} must be a positive duration, got ${JSON.stringify(value)}`,
      };
    return { kind: 'valid', ms };
  } catch (err) {
    if (err instanceof InvalidDurationError)
      return {
        kind: 'invalid',
        value,
        message: `${Annotations.inPlaceUpdateTimeout}: ${err.message} (want a Go duration such as 30m or 1h30m)`,
      };
    throw err;
  }
}

/** True when the machine's node exists and its infrastructure and bootstrap data are ready (CAPI's "node started"). */
export function isNodeInitialized(m: Machine): boolean {
  const init = m.status?.initialization;
  return !!m.status?.nodeRef?.name && init?.infrastructureProvisioned === true && init.bootstrapDataSecretCreated === true;
}

/** How long a machine may stay in update: the in-place timeout, plus the node startup timeout if its node is not initialized. */
export function updateTimeoutMs(inPlaceMs: number, nodeStartupTimeoutSeconds: number | undefined, nodeInitialized: boolean): number {
  return nodeInitialized ? inPlaceMs : inPlaceMs + (nodeStartupTimeoutSeconds ?? DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS) * 1000;
}

/** Thrown for a triggerIf value CAPI itself would reject. */
export class InvalidTriggerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTriggerError';
  }
}

/** The remediation window of an MHC: at most `max` unhealthy machines, and (unhealthyInRange) at least `min`. */
export interface RemediationWindow {
  min: number;
  max: number;
}

/**
 * maxAllowedUnhealthy of an MHC for `expected` selected machines, as CAPI computes it: unhealthyInRange `[a-b]`
 * takes precedence; else unhealthyLessThanOrEqualTo (int or percent, rounded down); absent = 100%.
 */
export function remediationWindow(mhc: MachineHealthCheck, expected: number): RemediationWindow {
  const t = mhc.spec.remediation?.triggerIf;
  if (t?.unhealthyInRange) {
    const m = /^\[(\d+)-(\d+)\]$/.exec(t.unhealthyInRange);
    if (!m) throw new InvalidTriggerError(`invalid unhealthyInRange ${JSON.stringify(t.unhealthyInRange)}`);
    const [min, max] = [Number(m[1]), Number(m[2])];
    if (max < min) throw new InvalidTriggerError(`unhealthyInRange: max value ${max} cannot be less than min value ${min}`);
    return { min, max };
  }
  // CAPI's GetScaledValueFromIntOrPercent(v, expected, roundUp=false): a percentage rounds down.
  const max = scaleIntOrPercent(t?.unhealthyLessThanOrEqualTo ?? '100%', expected, false);
  if (!max.ok) throw new InvalidTriggerError(`unhealthyLessThanOrEqualTo: ${max.error}`);
  return { min: 0, max: max.value };
}

/**
 * The design's budget: maxAllowedUnhealthy − unhealthyMachineCount − inUpdateHealthyMachineCount, counting the
 * machines other than the candidate (so, as in CAPI, the candidate may be remediated while the unhealthy total
 * including it stays within the limit). No remediation when ≤ 0.
 */
export const remediationCount = (maxAllowedUnhealthy: number, unhealthyOthers: number, inUpdateHealthyOthers: number): number =>
  maxAllowedUnhealthy - unhealthyOthers - inUpdateHealthyOthers;

/** Annotation changes as a merge patch fragment (null removes). */
export type AnnotationPatch = Record<string, string | null>;

/**
 * Protect a machine: set skip-remediation, remembering (once) whether it was there before.
 * Undefined when nothing changes.
 */
export function protectPatch(annotations: Record<string, string> | undefined): AnnotationPatch | undefined {
  const a = annotations ?? {};
  const patch: AnnotationPatch = {};
  if (a[Annotations.skipRemediationPrior] === undefined)
    patch[Annotations.skipRemediationPrior] = a[Annotations.skipRemediation] !== undefined ? 'true' : 'false';
  if (a[Annotations.skipRemediation] === undefined) patch[Annotations.skipRemediation] = '';
  return Object.keys(patch).length ? patch : undefined;
}

/**
 * Lift the protection of an unhealthy machine: remove the skip-remediation this extension set (one the machine
 * carried before the update is the operator's and stays) and, when `remediate`, set remediate-machine.
 */
export function liftPatch(annotations: Record<string, string> | undefined, remediate: boolean): AnnotationPatch | undefined {
  const a = annotations ?? {};
  const patch: AnnotationPatch = {};
  const priorOwned = a[Annotations.skipRemediationPrior] === 'true';
  if (a[Annotations.skipRemediationPrior] === undefined)
    patch[Annotations.skipRemediationPrior] = a[Annotations.skipRemediation] !== undefined ? 'true' : 'false';
  const operatorSkips = priorOwned || (a[Annotations.skipRemediationPrior] === undefined && a[Annotations.skipRemediation] !== undefined);
  if (!operatorSkips && a[Annotations.skipRemediation] !== undefined) patch[Annotations.skipRemediation] = null;
  if (remediate && !operatorSkips && a[Annotations.remediateMachine] === undefined) patch[Annotations.remediateMachine] = '';
  return Object.keys(patch).length ? patch : undefined;
}

/** The update ended: put skip-remediation back as it was before and forget the prior state. */
export function restorePatch(annotations: Record<string, string> | undefined): AnnotationPatch | undefined {
  const a = annotations ?? {};
  const prior = a[Annotations.skipRemediationPrior];
  if (prior === undefined) return undefined;
  const patch: AnnotationPatch = { [Annotations.skipRemediationPrior]: null };
  if (prior === 'true' && a[Annotations.skipRemediation] === undefined) patch[Annotations.skipRemediation] = '';
  if (prior !== 'true' && a[Annotations.skipRemediation] !== undefined) patch[Annotations.skipRemediation] = null;
  return patch;
}

/** True when the operator's own skip-remediation (present before the update) opts the machine out of remediation. */
const operatorSkipsRemediation = (annotations: Record<string, string> | undefined): boolean => {
  const prior = annotations?.[Annotations.skipRemediationPrior];
  return prior === 'true' || (prior === undefined && annotations?.[Annotations.skipRemediation] !== undefined);
};

/** Code-unit order of names: deterministic and much cheaper than localeCompare on thousands of machines. */
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

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

/** When a machine's update started: the MachineUpdate's startTime, else the Machine's annotation, else the MachineUpdate's creation. */
function updateStartMs(m: Machine, u: MachineUpdate): number | undefined {
  for (const t of [u.status?.startTime, m.metadata.annotations?.[Annotations.updateStartedAt], u.metadata.creationTimestamp]) {
    const ms = t ? Date.parse(t) : NaN;
    if (!Number.isNaN(ms)) return ms;
  }
  return undefined;
}

/** The health verdict on one machine in update. */
export type Verdict =
  | { kind: 'within'; expiresAtMs: number; timeoutMs: number }
  | { kind: 'timedOut'; expiresAtMs: number; timeoutMs: number }
  | { kind: 'failed'; message: string };

/** Judges a machine in update: failed update, timed out (now ≥ start + timeout), or within its timeout. */
export function judge(
  m: Machine,
  u: MachineUpdate,
  inPlaceMs: number,
  nodeStartupTimeoutSeconds: number | undefined,
  nowMs: number,
): Verdict {
  if (u.status?.updateStatus === UpdateStatus.failed) return { kind: 'failed', message: u.status.message ?? 'the in-place update failed' };
  const timeoutMs = updateTimeoutMs(inPlaceMs, nodeStartupTimeoutSeconds, isNodeInitialized(m));
  const start = updateStartMs(m, u) ?? nowMs;
  const expiresAtMs = start + timeoutMs;
  return nowMs >= expiresAtMs ? { kind: 'timedOut', expiresAtMs, timeoutMs } : { kind: 'within', expiresAtMs, timeoutMs };
}

/** What to do about one machine. */
export interface MachineAction {
  machine: string;
  /** Annotation changes for the Machine (merge patch), if any. */
  annotations?: AnnotationPatch;
  /** MachineUpdate whose HealthCheckSucceeded condition to set, and the condition. */
  update?: { name: string; condition: ConditionWish };
  /** Events to record if the condition changes (so they are not repeated on every reconcile or after a restart). */
  eventsOnChange: EventWish[];
  /** Events to record if the annotation patch is applied. */
  eventsOnPatch: EventWish[];
}

/** The extension's plan for one MHC. */
export interface MhcPlan {
  /** The MHC is ignored (absent or invalid configuration). */
  ignored: boolean;
  /** Events on the MHC (invalid configuration). */
  mhcEvents: EventWish[];
  actions: MachineAction[];
  /** Reconcile again after this long: the earliest moment a protected machine's timeout expires (at most MAX_REQUEUE_MS). */
  requeueAfterMs?: number;
}

/**
 * The longest a pass waits for a deadline before looking again. Timers cannot wait longer than 2^31−1 ms (a longer
 * one fires at once: a 1000 h timeout made the extension spin), and an hourly look is free and survives clock jumps.
 */
export const MAX_REQUEUE_MS = 3_600_000;

/** How long to wait for a deadline `deadlineMs` seen at `nowMs`: until it, at least 1 ms, at most MAX_REQUEUE_MS. */
const requeueUntil = (deadlineMs: number, nowMs: number): number => Math.min(MAX_REQUEUE_MS, Math.max(1, Math.ceil(deadlineMs - nowMs)));

const hasFalseHealthCheck = (m: Machine): boolean =>
  (m.status?.conditions ?? []).some((c) => c.type === ConditionTypes.healthCheckSucceeded && c.status === 'False');

/**
 * Decides, for one MHC and the machines it selects, what to do about every machine in update: protect it while
 * within its timeout; once timed out or failed, lift the protection and trigger remediation if the budget allows
 * (candidates in deterministic order: earliest expiry first, then name); and when to look again.
 */
export function planMachineHealthCheck(
  mhc: MachineHealthCheck,
  selected: readonly Machine[],
  updates: readonly MachineUpdate[],
  nowMs: number,
): MhcPlan {
  const mhcName = mhc.metadata.name ?? '';
  const timeout = readTimeoutAnnotation(mhc);
  if (timeout.kind === 'absent') return { ignored: true, mhcEvents: [], actions: [] };
  if (timeout.kind === 'invalid') {
    return {
      ignored: true,
      mhcEvents: [
        {
          on: 'MachineHealthCheck',
          name: mhcName,
          type: 'Warning',
          reason: MhcEventReasons.invalidInPlaceUpdateTimeout,
          message: `${timeout.message}; the MHC extension ignores this MachineHealthCheck`,
        },
      ],
      actions: [],
    };
  }
  const machines = selected
    .filter((m) => !m.metadata.deletionTimestamp)
    .sort((a, b) => byName(a.metadata.name ?? '', b.metadata.name ?? ''));
  let window: RemediationWindow;
  try {
    window = remediationWindow(mhc, machines.length);
  } catch (err) {
    if (!(err instanceof InvalidTriggerError)) throw err;
    return {
      ignored: true,
      mhcEvents: [
        {
          on: 'MachineHealthCheck',
          name: mhcName,
          type: 'Warning',
          reason: MhcEventReasons.invalidRemediationTrigger,
          message: `${err.message}; the MHC extension ignores this MachineHealthCheck`,
        },
      ],
      actions: [],
    };
  }

  const nodeStartup = mhc.spec.checks?.nodeStartupTimeoutSeconds;
  const byMachine = updatesByMachine(updates);
  const judged = machines.flatMap((m) => {
    const mine = byMachine.get(m.metadata.name ?? '');
    const u = mine ? currentUpdateOf(m, mine) : undefined;
    return u && putsInUpdate(u) ? [{ m, u, verdict: judge(m, u, timeout.ms, nodeStartup, nowMs) }] : [];
  });
  // Unhealthy: judged so by CAPI's MHC, marked for remediation, or judged so here; in-update machines count too.
  const unhealthy = new Set<string>();
  for (const m of machines)
    if (hasFalseHealthCheck(m) || m.metadata.annotations?.[Annotations.remediateMachine] !== undefined)
      unhealthy.add(m.metadata.name ?? '');
  for (const j of judged) if (j.verdict.kind !== 'within') unhealthy.add(j.m.metadata.name ?? '');
  const inUpdateHealthy = new Set(judged.map((j) => j.m.metadata.name ?? '').filter((n) => !unhealthy.has(n)));

  const actions: MachineAction[] = [];
  let nextDeadlineMs: number | undefined;
  const order = (v: Verdict): number => (v.kind === 'failed' ? -Infinity : v.expiresAtMs);
  for (const { m, u, verdict } of [...judged].sort(
    (a, b) => order(a.verdict) - order(b.verdict) || byName(a.m.metadata.name ?? '', b.m.metadata.name ?? ''),
  )) {
    const name = m.metadata.name ?? '';
    const uName = u.metadata.name ?? '';
    if (verdict.kind === 'within') {
      nextDeadlineMs = nextDeadlineMs === undefined ? verdict.expiresAtMs : Math.min(nextDeadlineMs, verdict.expiresAtMs);
      const patch = protectPatch(m.metadata.annotations);
      actions.push({
        machine: name,
        ...(patch ? { annotations: patch } : {}),
        update: {
          name: uName,
          condition: {
            type: ConditionTypes.healthCheckSucceeded,
            status: 'True',
            reason: Reasons.withinInPlaceUpdateTimeout,
            message: `In-place update within its ${fmtDuration(verdict.timeoutMs)} timeout (until ${new Date(verdict.expiresAtMs).toISOString()}); remediation skipped by MachineHealthCheck ${mhcName}`,
          },
        },
        eventsOnChange: [],
        eventsOnPatch:
          patch?.[Annotations.skipRemediation] !== undefined
            ? [
                {
                  on: 'Machine',
                  name,
                  type: 'Normal',
                  reason: MhcEventReasons.skipRemediationSet,
                  message: `In-place update in progress (MachineUpdate ${uName}); remediation skipped until ${new Date(verdict.expiresAtMs).toISOString()}`,
                },
              ]
            : [],
      });
      continue;
    }
    const reason = verdict.kind === 'failed' ? Reasons.inPlaceUpdateFailed : Reasons.inPlaceUpdateTimedOut;
    // The failure text comes from an updater: bounded so the condition and the Events stay within their limits.
    const what =
      verdict.kind === 'failed'
        ? `In-place update failed: ${boundMessage(verdict.message, MessageBudget.status)}`
        : `In-place update exceeded its ${fmtDuration(verdict.timeoutMs)} timeout`;
    if (operatorSkipsRemediation(m.metadata.annotations)) {
      const patch = liftPatch(m.metadata.annotations, false);
      actions.push({
        machine: name,
        ...(patch ? { annotations: patch } : {}),
        update: {
          name: uName,
          condition: {
            type: ConditionTypes.healthCheckSucceeded,
            status: 'False',
            reason,
            message: `${what}; not remediated: the machine carried ${Annotations.skipRemediation} before the update`,
          },
        },
        eventsOnChange: [
          {
            on: 'Machine',
            name,
            type: 'Warning',
            reason,
            message: `${what}; not remediated because the machine carried ${Annotations.skipRemediation} before the update`,
          },
        ],
        eventsOnPatch: [],
      });
      continue;
    }
    // Remediation triggered: the annotation goes on (or stays), protection is lifted; the Event only when it is new.
    const triggered = (eventsOnPatch: MachineAction['eventsOnPatch']): MachineAction => {
      const patch = liftPatch(m.metadata.annotations, true);
      return {
        machine: name,
        ...(patch ? { annotations: patch } : {}),
        update: {
          name: uName,
          condition: {
            type: ConditionTypes.healthCheckSucceeded,
            status: 'False',
            reason,
            message: `${what}; remediation triggered (${Annotations.remediateMachine})`,
          },
        },
        eventsOnChange: [],
        eventsOnPatch,
      };
    };
    if (m.metadata.annotations?.[Annotations.remediateMachine] !== undefined) {
      actions.push(triggered([]));
      continue;
    }
    const others = (s: Set<string>): number => s.size - (s.has(name) ? 1 : 0);
    const count = remediationCount(window.max, others(unhealthy), others(inUpdateHealthy));
    const belowMin = unhealthy.size + inUpdateHealthy.size < window.min;
    if (count > 0 && !belowMin) {
      actions.push(
        triggered([
          {
            on: 'Machine',
            name,
            type: 'Warning',
            reason: Reasons.remediationTriggered,
            message: `${what} (MachineUpdate ${uName}); set ${Annotations.remediateMachine} for MachineHealthCheck ${mhcName}`,
          },
        ]),
      );
    } else {
      const patch = liftPatch(m.metadata.annotations, false);
      const why = belowMin
        ? `${unhealthy.size + inUpdateHealthy.size} unhealthy or in-update machines is below unhealthyInRange minimum ${window.min}`
        : `remediation budget exhausted: maxAllowedUnhealthy ${window.max} − other unhealthy ${others(unhealthy)} − other in-update ${others(inUpdateHealthy)} = ${count}`;
      actions.push({
        machine: name,
        ...(patch ? { annotations: patch } : {}),
        update: {
          name: uName,
          condition: {
            type: ConditionTypes.healthCheckSucceeded,
            status: 'False',
            reason,
            message: `${what}; remediation blocked (${why})`,
          },
        },
        eventsOnChange: [
          { on: 'Machine', name, type: 'Warning', reason: Reasons.remediationBlocked, message: `${what} (MachineUpdate ${uName}); ${why}` },
        ],
        eventsOnPatch: [],
      });
    }
  }
  return {
    ignored: false,
    mhcEvents: [],
    actions,
    ...(nextDeadlineMs !== undefined ? { requeueAfterMs: requeueUntil(nextDeadlineMs, nowMs) } : {}),
  };
}

/**
 * Whether an event on this machine can change what a pass over its MHC decides (level-based: from the machine's
 * current state alone). Settled machines (not in update and healthy, or in update, protected and with the
 * condition already recorded) cannot, so their events need not trigger an O(machines) pass. Unhealthy, deleting,
 * timed-out and failed machines always can (they move the remediation budget).
 */
export function machineNeedsPass(mhc: MachineHealthCheck, m: Machine, mine: readonly MachineUpdate[], nowMs: number): boolean {
  if (m.metadata.deletionTimestamp || hasFalseHealthCheck(m) || m.metadata.annotations?.[Annotations.remediateMachine] !== undefined)
    return true;
  const u = currentUpdateOf(
    m,
    mine.filter((x) => !x.metadata.deletionTimestamp),
  );
  if (!u || !putsInUpdate(u)) return false;
  const p = planMachineHealthCheck(mhc, [m], [u], nowMs);
  const a = p.actions[0];
  if (p.ignored || !a?.update) return false;
  if (a.annotations || a.update.condition.status !== 'True') return true;
  const want = a.update.condition;
  const cur = u.status?.conditions?.find((c) => c.type === want.type);
  return !(cur && cur.status === want.status && cur.reason === want.reason && (cur.message ?? '') === want.message);
}

/** True when a pass left a machine timed out or failed (its remediation may be blocked by the budget, which any event can free). */
export const planNeedsAttention = (p: MhcPlan): boolean =>
  p.actions.some((a) => a.update !== undefined && a.update.condition.status !== 'True');

/**
 * Confirms, on the MachineUpdate as the API server has it now (`fresh`, undefined when gone), a verdict taken on a
 * cached view before acting on it: the update still puts the machine in update and is failed or past its timeout.
 * A machine whose update completed (or was deleted or superseded) meanwhile is never remediated for it.
 */
export function confirmUnhealthy(mhc: MachineHealthCheck, m: Machine, fresh: MachineUpdate | undefined, nowMs: number): boolean {
  if (!fresh || fresh.metadata.deletionTimestamp || !putsInUpdate(fresh)) return false;
  const plan = m.metadata.labels?.[Labels.planName];
  if (plan !== undefined && fresh.metadata.labels?.[Labels.planName] !== plan) return false;
  const timeout = readTimeoutAnnotation(mhc);
  if (timeout.kind !== 'valid') return false;
  return judge(m, fresh, timeout.ms, mhc.spec.checks?.nodeStartupTimeoutSeconds, nowMs).kind !== 'within';
}
