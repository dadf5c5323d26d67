// Phase 6 of decidePlan: the plan's finalizer, held while the plan may touch machines and released once deletion has
// nothing left to undo. Pure.
import { Finalizers, Labels } from '../../api/index.js';
import { isDeleting } from '../../api/capi/index.js';
import type { PlanSnapshot } from '../scope.js';
import type { PlanStance } from './mode.js';
import { inFlightTotal, type PlanProgress } from './plan-status.js';
import type { PlanDecision } from './types.js';

/** The finalizer change, if any, given the actions already decided (`d.unlabel`, `d.scale`). */
export function finalizerChange(
  snap: PlanSnapshot,
  s: PlanStance,
  planLabel: string,
  progress: Pick<PlanProgress, 'ordered' | 'started'>,
  d: Pick<PlanDecision, 'unlabel' | 'scale'>,
): PlanDecision['finalizer'] {
  const { ordered, started } = progress;
  const hasFinalizer = snap.plan.metadata?.finalizers?.includes(Finalizers.plan) ?? false;
  if (!s.deleting) return !hasFinalizer && !s.terminal && (s.mayStart || started) ? 'add' : undefined;
  const labelled = snap.machines.some((m) => !isDeleting(m) && m.metadata.labels?.[Labels.planName] === planLabel);
  const undone =
    inFlightTotal(ordered) === 0 && !labelled && d.unlabel.length === 0 && d.scale.length === 0 && !ordered.some(({ e }) => e.scale);
  return hasFinalizer && undone ? 'remove' : undefined;
}
