// decidePlan (../decide.ts) through the plan's cache: the same phases in the same order, each handed the inputs the
// cache kept or patched from the last reconcile (stance.ts, targets.ts, actions.ts), then the same assembly
// (decide/decision.ts). The decision equals decidePlan(snap) (plan-cache.test.ts compares them step by step).
import { startIntents } from '../decide/actions.js';
import { decisionOf } from '../decide/decision.js';
import { decideStance } from '../decide/mode.js';
import { targetScope } from '../decide/targets.js';
import type { PlanDecision } from '../decide/types.js';
import type { PlanSnapshot } from '../scope.js';
import { abortsThrough, labelsThrough, unreportedThrough } from './actions.js';
import type { PlanCache } from './plan-cache.js';
import { stanceInputsThrough } from './stance.js';
import { evaluateThrough, scopeInputsThrough } from './targets.js';

export { PlanCache } from './plan-cache.js';

/** decidePlan(snap) through the plan's cache (see the file comment); the cache is updated for the next reconcile. */
export function decideThroughCache(snap: PlanSnapshot, cache: PlanCache): PlanDecision {
  const stance = decideStance(snap, stanceInputsThrough(snap, cache));
  const scope = targetScope(snap, stance, scopeInputsThrough(snap, stance, cache));
  const ordered = evaluateThrough(scope, stance, cache);
  const { create, scale } = startIntents(stance.planName, ordered, stance.terminal);
  const { label, unlabel } = labelsThrough(snap, stance.mus, scope.planLabel, create, cache);
  const abort = abortsThrough(snap, stance.mus, stance.stopping, stance.machineByName, cache);
  const unreported = unreportedThrough(cache, stance.mus);
  return decisionOf(snap, { stance, scope, ordered, create, scale, label, unlabel, abort, unreported });
}
