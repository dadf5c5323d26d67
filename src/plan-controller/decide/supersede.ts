// Phase 2 of decidePlan: one active plan per cluster. Pure.
import { UpdatePhase } from '../../api/index.js';
import type { PlanStance } from './mode.js';

/** The older active plans this plan supersedes (moves to aborting): only a plan that wants to start does. */
export function supersededPlans(s: PlanStance): string[] {
  if (s.stopping || !s.valid || s.paused || s.windowClosed || s.alertHeld) return [];
  return s.olderActive
    .filter((p) => p.spec.updatePhase !== UpdatePhase.aborting && !p.metadata?.deletionTimestamp)
    .map((p) => p.metadata?.name ?? '');
}
