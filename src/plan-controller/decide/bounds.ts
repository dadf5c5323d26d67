// Validation problems about size and shape that the API server cannot express in a schema. Pure.
import { MAX_PARAMETERS_DEPTH, nestedDeeperThan, type InPlaceUpdatePlan } from '../../api/index.js';

/** One problem per updater whose parameters nest deeper than {@link MAX_PARAMETERS_DEPTH} levels. */
export function parameterDepthProblems(plan: InPlaceUpdatePlan): string[] {
  const problems: string[] = [];
  const targets = [...(plan.spec.controlPlane ? [plan.spec.controlPlane] : []), ...(plan.spec.machineDeployments ?? [])];
  for (const t of targets) {
    for (const u of t.updaters ?? []) {
      if (u.parameters !== undefined && nestedDeeperThan(u.parameters, MAX_PARAMETERS_DEPTH)) {
        problems.push(`updater ${u.name} of ${t.name}: parameters are nested deeper than ${MAX_PARAMETERS_DEPTH} levels`);
      }
    }
  }
  return problems;
}
