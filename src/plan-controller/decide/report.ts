// Phase 7 of decidePlan: what the reconcile reports besides status. Events for the transitions, the time the
// decision changes by the clock alone, and metric deltas. Pure.
import type { InPlaceUpdatePlanStatus } from '../../api/index.js';
import { ALERTS_POLL_MS, alertGateEvents, windowEvents } from '../../rules/gates.js';
import { alreadyAtTargetEvents, eventsFor, metricDeltas } from '../status.js';
import type { PlanStance } from './mode.js';
import type { EvaluatedTarget } from './targets.js';
import type { PlanDecision } from './types.js';

/** The Events of this reconcile: transitions, machines already at target, the gates' changes. */
export function planEvents(
  s: PlanStance,
  status: InPlaceUpdatePlanStatus,
  ordered: readonly EvaluatedTarget[],
  d: PlanDecision,
  readyReason: string,
): PlanDecision['events'] {
  const { prev, terminal } = s;
  const rows = ordered.map(({ e }) => e.row);
  const events = eventsFor({ planName: s.planName, prev, next: status, problems: s.problems, readyReason }, terminal ? [] : rows, d);
  if (terminal) return events;
  events.push(
    ...alreadyAtTargetEvents(
      prev,
      ordered.flatMap(({ e }) => e.skipped),
    ),
  );
  events.push(...windowEvents(prev.maintenanceWindow, status.maintenanceWindow, s.win.abortAtEnd));
  events.push(...alertGateEvents(prev.alertGate, status.alertGate));
  return events;
}

/** When the decision changes by the clock alone (a window opens or closes, a soak ends, the alerts are polled again). */
export function requeueAt(s: PlanStance): string | undefined {
  if (s.terminal) return undefined;
  const wakes = [
    s.win.state?.nextChange,
    s.stopping ? undefined : s.soak.wakeAt,
    s.alerts.status && !s.stopping ? nextPoll(s) : undefined,
  ].filter((x): x is Date => !!x);
  return wakes.length > 0 ? new Date(Math.min(...wakes.map((w) => w.getTime()))).toISOString() : undefined;
}

/** When the alert gate's endpoint is due again: one interval after the read the snapshot carries (or after now). */
function nextPoll(s: PlanStance): Date {
  const at = Date.parse(s.alerts.readAt ?? '');
  return new Date((Number.isFinite(at) ? at : s.now.getTime()) + ALERTS_POLL_MS);
}

/** The metric increments of this reconcile (none once the plan ended). */
export function planMetrics(s: PlanStance, ordered: readonly EvaluatedTarget[], d: PlanDecision): PlanDecision['metrics'] {
  return s.terminal
    ? { started: 0, updated: 0, failed: 0 }
    : metricDeltas(
        s.prev,
        ordered.map(({ e }) => e.row),
        d,
      );
}
