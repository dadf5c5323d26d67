// The decision assembled from its phases' answers: supersede, the actions, the plan's status and conditions, the
// finalizer, Events, the next wake and metrics. decidePlan (../decide.ts) and the plan controller's cache
// (../cache/decide.ts) both end here, so a decision through the cache is assembled as the plain one. Pure.
import { finalizerChange } from './finalizer.js';
import type { PlanStance } from './mode.js';
import { planConditions, planStatusFields, planUpdateStatus } from './plan-status.js';
import { planEvents, planMetrics, requeueAt } from './report.js';
import { supersededPlans } from './supersede.js';
import type { EvaluatedTarget } from './targets.js';
import type { MachineLabelIntent, MachineUpdateIntent, PlanDecision, ScaleIntent, TargetScope } from './types.js';
import type { PlanSnapshot } from '../scope.js';

/** What the phases before the assembly answered: the stance, the targets in order, and the machine actions. */
export interface PhaseAnswers {
  stance: PlanStance;
  scope: TargetScope;
  ordered: EvaluatedTarget[];
  create: MachineUpdateIntent[];
  scale: ScaleIntent[];
  label: MachineLabelIntent[];
  unlabel: string[];
  abort: string[];
  /** The "updater not reporting" notes of the plan's updates (unreportedTaskNotes). */
  unreported: string[];
}

/** The plan's decision from its phases' answers (see the file comment). */
export function decisionOf(snap: PlanSnapshot, a: PhaseAnswers): PlanDecision {
  const { stance, scope, ordered } = a;
  const started = stance.startedBefore || ordered.some(({ e }) => e.skipped.length > 0);
  const d: PlanDecision = {
    problems: stance.problems,
    status: {},
    create: a.create,
    abort: a.abort,
    label: a.label,
    unlabel: a.unlabel,
    // One active plan per cluster.
    supersede: supersededPlans(stance),
    scale: a.scale,
    events: [],
    metrics: { started: 0, updated: 0, failed: 0 },
  };
  // The plan's updateStatus, its fields, then every condition.
  const updateStatus = planUpdateStatus(stance, ordered, started);
  const skipped = ordered.reduce((n, { e }) => n + e.skipped.length, 0);
  const progress = { ordered, started, skipped, updateStatus };
  const status = planStatusFields(snap, stance, progress);
  const { conditions, ready } = planConditions(stance, progress, status, a.unreported);
  status.conditions = conditions;
  d.status = status;
  // The finalizer.
  const finalizer = finalizerChange(snap, stance, scope.planLabel, progress, d);
  if (finalizer) d.finalizer = finalizer;
  // Events, the clock's next wake and metrics.
  d.events = planEvents(stance, status, ordered, d, ready.reason);
  const wake = requeueAt(stance);
  if (wake) d.requeueAt = wake;
  d.metrics = planMetrics(stance, ordered, d);
  d.gatesHolding = stance.stopping ? [] : [...stance.soak.holding];
  d.machinesByTarget = scope.machines;
  return d;
}
