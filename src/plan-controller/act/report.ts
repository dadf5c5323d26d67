// The deferred status patch (as Cluster API reconcilers hand their phases' outcomes to one status patch): what is
// written is computed from the decision plus what acting did (owner outcomes and the events they add, an effect that
// failed), never by editing the decision. Then the write itself (or its wait, for live progress alone), the events and
// the metrics.
import type { InPlaceUpdatePlan, InPlaceUpdatePlanStatus, KubeObject } from '../../api/index.js';
import { isTerminal } from '../../api/index.js';
import type { OwnerOutcome } from '../../rules/owners.js';
import type { PlanEvent } from '../../rules/inputs.js';
import { gateFailureDeltas } from '../../rules/gates.js';
import type { ReconcileClock } from '../timing.js';
import type { PlanDeps } from '../deps.js';
import type { PlanDecision } from '../decide/types.js';
import { countedBaseline, countedRows, isActionEvent, statusWriteDelay } from '../decide/status-write.js';
import type { PlanSnapshot } from '../scope.js';
import { metricDeltas, settledOwnersStatus, type MetricDeltas } from '../status.js';
import type { PlanState } from '../snapshot/plan-state.js';
import { reconcileStatus } from './plan.js';

/** What acting did: the outcomes the status is written from. */
export interface Acted {
  /** The plan as last written (the finalizer added), or as read. */
  readonly latest: InPlaceUpdatePlan & KubeObject;
  /** The owner effects' outcomes (empty when they did not run or failed). */
  readonly owners: readonly OwnerOutcome[];
  /** The decision's events followed by those the owner effects recorded, in order. */
  readonly events: readonly PlanEvent[];
  /** The effect that failed (the ones after it did not run); absent when every effect ran. */
  readonly failure?: unknown;
}

/** What the one status patch writes and what is recorded with it. */
export interface StatusReport {
  readonly status: InPlaceUpdatePlanStatus;
  readonly events: readonly PlanEvent[];
  /** The finalizer change the write carries: a release only once every effect ran (nothing left to undo). */
  readonly finalizer?: 'add' | 'remove';
  /** Metric deltas: the decision's, with updated/failed counted from the written status and what was counted since. */
  readonly metrics: MetricDeltas;
  /** The machine gates holding a slot now, for the gate metrics. */
  readonly gatesHolding: readonly string[];
  /** True when an effect failed (the status is written from what is known; a retry follows). */
  readonly failed: boolean;
  /** The gate failures this status reports that the plan as read did not, per gate (counted once it is written). */
  readonly gateFailures: ReadonlyMap<string, number>;
}

/**
 * The status report of a reconcile, from the plan as read, the decision and what acting did. Records in the plan's
 * state the target rows it counted into the metrics (a waiting write must not lose a count that rose and fell before
 * it); an ended plan's decision counts nothing.
 */
export function statusReport(state: PlanState, snap: PlanSnapshot, d: Readonly<PlanDecision>, acted: Acted): StatusReport {
  const { plan } = snap;
  const settled = settledOwnersStatus(
    plan.status ?? {},
    { status: d.status, events: acted.events },
    acted.owners,
    plan.metadata?.generation,
    new Date(snap.now),
  );
  const failed = 'failure' in acted;
  const finalizer = failed && d.finalizer === 'remove' ? undefined : d.finalizer;
  let metrics = d.metrics;
  if (!isTerminal(plan.status?.updateStatus)) {
    metrics = { ...d.metrics, ...metricDeltas(countedBaseline(plan.status ?? {}, state.counted), settled.status.targets ?? [], d) };
    state.counted = countedRows(settled.status.targets ?? []);
  } else state.counted = undefined;
  const gateFailures = gateFailureDeltas(plan.status, settled.status);
  return { ...settled, ...(finalizer ? { finalizer } : {}), metrics, gatesHolding: d.gatesHolding ?? [], failed, gateFailures };
}

/**
 * Writes the report's status, or, for live progress alone, waits for the next write (at most PROGRESS_WRITE_MS after
 * the last one: the next reconcile, and the slot it refills, is not held for it); its events and metric deltas wait
 * with it (they diff the written status). Returns how long the write waits (0: written).
 */
export async function publishStatus(
  deps: PlanDeps,
  state: PlanState,
  acted: Acted,
  report: StatusReport,
  clock: ReconcileClock | undefined,
): Promise<number> {
  const { latest } = acted;
  const wait = statusWriteDelay({
    prev: latest.status,
    next: report.status,
    events: report.events.filter((e) => !isActionEvent(e.reason)).length,
    finalizer: report.finalizer !== undefined,
    failed: report.failed,
    lastWriteAt: state.statusWrittenAt,
    nowMs: Date.now(),
  });
  if (wait > 0) {
    clock?.mark('status');
    // This reconcile's own actions and its metric deltas are reported now; transitions (none here) wait for the write.
    recordEvents(deps, latest, report);
    return wait;
  }
  const written = await reconcileStatus(deps, latest, report);
  if (written !== latest) state.statusWrittenAt = Date.now();
  clock?.mark('status');
  recordEvents(deps, written, report);
  for (const [gate, n] of report.gateFailures) deps.metrics.gateFailures.inc({ gate }, n);
  return 0;
}

/** Events and metrics, once the status that reports the transitions is written (or this reconcile's own, meanwhile). */
function recordEvents(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject, r: StatusReport): void {
  for (const e of r.events) {
    const target = e.plan ? deps.plans.get(plan.metadata.namespace, e.plan) : plan;
    // An Event on another plan (superseded, pruned) names the plan that acted on it as related.
    if (target) deps.mgr.events.event(target, e.type, e.reason, e.message, target === plan ? undefined : plan);
  }
  deps.metrics.machinesUpdated.inc(r.metrics.updated);
  deps.metrics.machinesFailed.inc(r.metrics.failed);
  deps.metrics.recordHolds(plan, r.gatesHolding);
}
