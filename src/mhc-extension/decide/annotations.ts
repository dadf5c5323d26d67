// The skip-remediation bookkeeping on a Machine: protect it while in update, lift the protection (and request
// remediation) once unhealthy, and restore what the operator had when the update ends. Merge patch fragments only.
import { Annotations, restoreSkipRemediation, type AnnotationPatch } from '../../api/index.js';

// Protecting is shared with the plan controller (its label patch carries the same protection): src/api.
export { protectPatch, type AnnotationPatch } from '../../api/index.js';

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

/**
 * The update ended: put skip-remediation back as it was before and forget the prior state. The rule lives in src/api
 * (skip-remediation.ts): the plan controller applies the same one, as guarded JSON-patch ops, in its unlabel.
 */
export const restorePatch: (annotations: Record<string, string> | undefined) => AnnotationPatch | undefined = restoreSkipRemediation;

/** True when the operator's own skip-remediation (present before the update) opts the machine out of remediation. */
export const operatorSkipsRemediation = (annotations: Record<string, string> | undefined): boolean => {
  const prior = annotations?.[Annotations.skipRemediationPrior];
  return prior === 'true' || (prior === undefined && annotations?.[Annotations.skipRemediation] !== undefined);
};
