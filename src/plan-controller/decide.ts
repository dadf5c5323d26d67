// The plan controller's decisions: from a snapshot, what to create, patch and report. Pure (no client, no clock):
// the reconcile reads a snapshot, calls decidePlan once, and carries out the result. decidePlan is a list of phases,
// one file each in decide/, in the order they run: mode (validation and gates), targets (with start and surge inside
// each target), actions, then decide/decision.ts assembles supersede, plan-status, finalizer and report. The status
// language (conditions, Ready reasons, Events, metric deltas) is status.ts. The plan controller decides through its
// per-plan cache (cache/decide.ts), which runs these phases on inputs kept from the last reconcile: same decision.
import { abortsOf, labelChanges, startIntents } from './decide/actions.js';
import { decisionOf } from './decide/decision.js';
import { decideStance } from './decide/mode.js';
import { evaluateTargets, targetScope } from './decide/targets.js';
import type { PlanDecision } from './decide/types.js';
import type { PlanSnapshot } from './scope.js';
import { unreportedTaskNotes } from './status.js';

export type { MachineLabelIntent, MachineUpdateIntent, PlanDecision, ScaleIntent } from './decide/types.js';
export type { MetricDeltas } from './status.js';
export type { PlanEvent } from '../rules/inputs.js';
export { machineState, machinesByTarget, machinesOfTarget, planAge, targetKey, targetOfMachine } from '../rules/machines.js';

/**
 * Decides one reconcile of a plan: validation, supersede/wait, sequence groups, the next machines of each target,
 * abort propagation, surge/restore, machine labels, status aggregation, events and the finalizer.
 * Terminal plans keep their status and only clean up (labels, surge, finalizer). The plan controller decides
 * through its per-plan cache (cache/decide.ts), which gives the same decision.
 * Readonly: the effects' outcomes go beside it into the status report (act/report.ts), never into it.
 */
export function decidePlan(snap: PlanSnapshot): Readonly<PlanDecision> {
  // 1. What the plan may do: validation and the gates give its mode (rollout, hold or stop).
  const stance = decideStance(snap);
  // 2. Every target in sequence order: counted, given a verdict, its next machines started, its surge restored.
  const scope = targetScope(snap, stance);
  const ordered = evaluateTargets(scope, stance);
  // 3. Actions on machines and deployments.
  const { create, scale } = startIntents(stance.planName, ordered, stance.terminal);
  const { label, unlabel } = labelChanges(snap, stance.mus, scope.planLabel, create);
  const abort = abortsOf(snap, stance.mus, stance.stopping, stance.machineByName);
  // 4. Supersede, status, finalizer, Events, wake and metrics (decide/decision.ts).
  return decisionOf(snap, {
    stance,
    scope,
    ordered,
    create,
    scale,
    label,
    unlabel,
    abort,
    unreported: unreportedTaskNotes(stance.mus.values()),
  });
}
