// The plan controller's decisions: from a snapshot, what to create, patch and report. Pure (no client, no clock):
// the reconcile reads a snapshot, calls decidePlan once, and carries out the result. decidePlan is a list of phases,
// one file each in decide/, in the order they run: mode (validation and gates), supersede, targets (with start and
// surge inside each target), actions, plan-status, finalizer, report. The status language (conditions, Ready
// reasons, Events, metric deltas) is status.ts.
import { abortsOf, labelChanges, startIntents } from './decide/actions.js';
import { finalizerChange } from './decide/finalizer.js';
import { decideStance } from './decide/mode.js';
import { planConditions, planStatusFields, planUpdateStatus } from './decide/plan-status.js';
import { planEvents, planMetrics, requeueAt } from './decide/report.js';
import { supersededPlans } from './decide/supersede.js';
import { evaluateTargets, targetScope } from './decide/targets.js';
import type { PlanDecision } from './decide/types.js';
import type { DecideMemo } from './decide/memo.js';
import type { PlanSnapshot } from './scope.js';

export { DecideMemo } from './decide/memo.js';
export type { MachineLabelIntent, MachineUpdateIntent, PlanDecision, ScaleIntent } from './decide/types.js';
export type { MetricDeltas } from './status.js';
export type { PlanEvent } from '../rules/inputs.js';
export { machineState, machinesByTarget, machinesOfTarget, planAge, targetKey, targetOfMachine } from '../rules/machines.js';

/**
 * Decides one reconcile of a plan: validation, supersede/wait, sequence groups, the next machines of each target,
 * abort propagation, surge/restore, machine labels, status aggregation, events and the finalizer.
 * Terminal plans keep their status and only clean up (labels, surge, finalizer). `memo` (the plan's, kept across its
 * reconciles) makes the cost follow what changed; the decision is the same with or without it (decide/memo.ts).
 * Readonly: the effects' outcomes go beside it into the status report (act/report.ts), never into it.
 */
export function decidePlan(snap: PlanSnapshot, memo?: DecideMemo): Readonly<PlanDecision> {
  // 1. What the plan may do: validation and the gates give its mode (rollout, hold or stop).
  const stance = decideStance(snap, memo);
  // 2. One active plan per cluster.
  const supersede = supersededPlans(stance);
  // 3. Every target in sequence order: counted, given a verdict, its next machines started, its surge restored.
  const scope = targetScope(snap, stance, memo);
  const ordered = evaluateTargets(scope, stance, memo);
  const started = stance.startedBefore || ordered.some(({ e }) => e.skipped.length > 0);
  // 4. Actions on machines and deployments.
  const { create, scale } = startIntents(stance.planName, ordered, stance.terminal);
  const { label, unlabel } = labelChanges(snap, stance.mus, scope.planLabel, create, memo);
  const d: PlanDecision = {
    problems: stance.problems,
    status: {},
    create,
    abort: abortsOf(snap, stance.mus, stance.stopping, stance.machineByName, memo),
    label,
    unlabel,
    supersede,
    scale,
    events: [],
    metrics: { started: 0, updated: 0, failed: 0 },
  };
  // 5. Status: the plan's updateStatus, its fields, then every condition.
  const updateStatus = planUpdateStatus(stance, ordered, started);
  const skipped = ordered.reduce((n, { e }) => n + e.skipped.length, 0);
  const progress = { ordered, started, skipped, updateStatus };
  const status = planStatusFields(snap, stance, progress);
  const { conditions, ready } = planConditions(stance, progress, status, memo);
  status.conditions = conditions;
  d.status = status;
  // 6. The finalizer.
  const finalizer = finalizerChange(snap, stance, scope.planLabel, progress, d);
  if (finalizer) d.finalizer = finalizer;
  // 7. Events, the clock's next wake and metrics.
  d.events = planEvents(stance, status, ordered, d, ready.reason);
  const wake = requeueAt(stance);
  if (wake) d.requeueAt = wake;
  d.metrics = planMetrics(stance, ordered, d);
  d.gatesHolding = stance.stopping ? [] : [...stance.soak.holding];
  d.machinesByTarget = scope.machines;
  return d;
}
