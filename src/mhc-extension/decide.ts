// Pure decisions of the MHC extension, one phase per module under decide/, called here in the order of a pass:
// eligibility (is the MHC configured), timeouts (judge each machine in update), remediation (the budget and who
// gets it), action (the patch, condition and Events per machine). No client, no clock: the controller acts on the
// result. The modules' own exports are re-exported so callers keep one entry point.
import { Labels, MhcEventReasons } from '../api/index.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './decide/objects.js';
import { passMachine, passMachines, type PassMachine } from './decide/pass.js';
import type { EventWish } from './status.js';
import { protectAction, unhealthyAction, type MachineAction } from './decide/action.js';
import { eligibleMachines, readMhcConfig, readTimeoutAnnotation, type MhcConfig } from './decide/eligibility.js';
import { censusOf, decideRemediation, inRemediationOrder, markedUnhealthy } from './decide/remediation.js';
import { judge, requeueAfterMs, type Judged, type Verdict } from './decide/timeouts.js';
import { restorePatch } from './decide/annotations.js';
import { activeUpdateOf, planGraceEndsAt, putsInUpdate, restoreDeferredToPlan } from './decide/updates.js';

export { liftPatch, protectPatch, restorePatch, type AnnotationPatch } from './decide/annotations.js';
export type { MachineAction } from './decide/action.js';
export {
  InvalidTriggerError,
  readTimeoutAnnotation,
  remediationWindow,
  type RemediationWindow,
  type TimeoutConfig,
} from './decide/eligibility.js';
export { markedUnhealthy, remediationCount } from './decide/remediation.js';
export { passMachine, passMachines, type PassMachine } from './decide/pass.js';
export { protectAction } from './decide/action.js';
export { readMhcConfig, type MhcConfig } from './decide/eligibility.js';
export {
  MAX_REQUEUE_MS,
  isNodeInitialized,
  judge,
  updateTimeoutMs,
  verdictAt,
  verdictBasis,
  type Judged,
  type Verdict,
  type VerdictBasis,
} from './decide/timeouts.js';
export {
  activeUpdateOf,
  currentUpdateOf,
  machineOfUpdate,
  PLAN_CACHE_GRACE_MS,
  putsInUpdate,
  restoreDeferredToPlan,
  updatesByMachine,
} from './decide/updates.js';

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

/** The plan for an MHC the extension ignores: a Warning on it when its configuration is invalid, nothing else. */
function ignoredPlan(mhcName: string, config: Extract<MhcConfig, { kind: 'ignore' }>): MhcPlan {
  const p = config.problem;
  const mhcEvents: EventWish[] = p
    ? [
        {
          on: 'MachineHealthCheck',
          name: mhcName,
          type: 'Warning',
          reason: p.reason === 'timeout' ? MhcEventReasons.invalidInPlaceUpdateTimeout : MhcEventReasons.invalidRemediationTrigger,
          message: `${p.message}; the MHC extension ignores this MachineHealthCheck`,
        },
      ]
    : [];
  return { ignored: true, mhcEvents, actions: [] };
}

/**
 * The per-machine steps of a pass. Each is a pure function of its arguments, so a caller may remember results by the
 * identity of the (frozen, replaced-on-change) objects it passes (the controller does: memo.ts); `directHooks` computes.
 */
export interface PassHooks {
  config(mhc: MachineHealthCheck, expected: number): MhcConfig;
  verdict(m: Machine, u: MachineUpdate, inPlaceMs: number, nodeStartupTimeoutSeconds: number | undefined, nowMs: number): Verdict;
  protect(j: Judged, verdict: Extract<Verdict, { kind: 'within' }>, mhcName: string): MachineAction;
}

/** The per-machine steps, computed every time. */
export const directHooks: PassHooks = { config: readMhcConfig, verdict: judge, protect: protectAction };

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
  const machines = eligibleMachines(selected);
  return planPass(mhc, machines.length, passMachines(machines, updates), nowMs);
}

/**
 * planMachineHealthCheck on what decides it: `expected` eligible machines selected, of which `machines` are the ones
 * a pass looks at (passMachines; any order). The same plan as over every selected machine: the others are not in
 * update and not unhealthy, so they only count towards `expected`.
 */
export function planPass(
  mhc: MachineHealthCheck,
  expected: number,
  machines: readonly PassMachine[],
  nowMs: number,
  hooks: PassHooks = directHooks,
): MhcPlan {
  const mhcName = mhc.metadata.name ?? '';
  const config = hooks.config(mhc, expected);
  if (config.kind === 'ignore') return ignoredPlan(mhcName, config);
  const nodeStartup = mhc.spec.checks?.nodeStartupTimeoutSeconds;
  const judged: Judged[] = [];
  const marked: string[] = [];
  for (const p of machines) {
    if (p.marked) marked.push(p.m.metadata.name ?? '');
    if (p.u) judged.push({ m: p.m, u: p.u, verdict: hooks.verdict(p.m, p.u, config.timeoutMs, nodeStartup, nowMs) });
  }
  const census = censusOf(marked, judged);
  const actions = inRemediationOrder(judged).map((j) =>
    j.verdict.kind === 'within'
      ? hooks.protect(j, j.verdict, mhcName)
      : unhealthyAction(j, j.verdict, decideRemediation(j.m, census, config.window), mhcName),
  );
  const requeue = requeueAfterMs(judged, nowMs);
  return { ignored: false, mhcEvents: [], actions, ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}) };
}

/** True when an action writes nothing (a protected machine within its timeout, with no stale verdict to replace). */
export const settledAction = (a: MachineAction): boolean => a.annotations === undefined && a.update === undefined;

/**
 * Whether an event on this machine can change what a pass over its MHC decides (level-based: from the machine's
 * current state alone). Settled machines (not in update and healthy, or in update and protected, with no stale
 * non-True condition to replace) cannot, so their events need not trigger an O(machines) pass. Unhealthy, deleting,
 * timed-out and failed machines always can (they move the remediation budget).
 */
export function machineNeedsPass(
  mhc: MachineHealthCheck,
  m: Machine,
  mine: readonly MachineUpdate[],
  nowMs: number,
  hooks: PassHooks = directHooks,
): boolean {
  if (m.metadata.deletionTimestamp || markedUnhealthy(m)) return true;
  const p = passMachine(
    m,
    mine.filter((x) => !x.metadata.deletionTimestamp),
  );
  if (!p?.u) return false;
  const config = hooks.config(mhc, 1);
  if (config.kind === 'ignore') return false;
  const verdict = hooks.verdict(m, p.u, config.timeoutMs, mhc.spec.checks?.nodeStartupTimeoutSeconds, nowMs);
  // Within its timeout: a pass writes only what protectAction asks (its condition, when present, replaces a non-True one).
  if (verdict.kind === 'within') return !settledAction(hooks.protect({ m, u: p.u, verdict }, verdict, mhc.metadata.name ?? ''));
  const plan = planPass(mhc, 1, [p], nowMs, hooks);
  const a = plan.actions[0];
  if (plan.ignored || !a) return false;
  if (a.annotations) return true;
  // Protected and within its timeout with no stale verdict to replace: nothing to write.
  if (!a.update) return false;
  if (a.update.condition.status !== 'True') return true;
  const want = a.update.condition;
  const cur = p.u?.status?.conditions?.find((c) => c.type === want.type);
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

/**
 * True when the end-of-update restore has something to do now: the machine (not being deleted) carries the prior state
 * (restorePatch), its update ended, and no plan labelling it restores it instead (`planExists`: the plan its label
 * names exists; restoreDeferredToPlan). reconcileRestore acts on these; the event mappers ask first, so that an event
 * that leaves the restore with nothing to do costs no reconcile.
 */
export const restoreDue = (m: Machine, updates: readonly MachineUpdate[], planExists: boolean, nowMs: number): boolean =>
  !m.metadata.deletionTimestamp &&
  restorePatch(m.metadata.annotations) !== undefined &&
  !activeUpdateOf(m, updates) &&
  !restoreDeferredToPlan(m, updates, planExists, nowMs);

/**
 * When a restore deferred only by the grace of a recent plan label (PLAN_CACHE_GRACE_MS) comes due: the ms from `nowMs`
 * to the grace's end; undefined when nothing waits for the clock (restoreDue decides on events alone).
 */
export function restoreGraceMs(m: Machine, updates: readonly MachineUpdate[], planExists: boolean, nowMs: number): number | undefined {
  if (restoreDue(m, updates, planExists, nowMs)) return undefined;
  const end = planGraceEndsAt(m);
  if (end === undefined || end <= nowMs) return undefined;
  // Due once the grace is over, all else the same: then the clock alone brings it.
  return restoreDue(m, updates, planExists, end) ? end - nowMs : undefined;
}
