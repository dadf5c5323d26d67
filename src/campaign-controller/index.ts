// The campaign controller component (docs/operations.md "Fleet campaigns"): rolls one plan template over many Clusters
// of a namespace through ordinary InPlaceUpdatePlans it creates and owns — canaries first, then waves of at most
// maxConcurrentClusters with a soak between them, halting when the failure budget is spent. Every per-cluster behaviour
// (validation, supersede, pause, abort, failure policy, owner alignment, history) is the plan's.
//
// Campaign conditions: Valid (False lists the problems per cluster, bounded), Ready (True when every selected cluster is
// done within the budget; `kubectl wait --for=condition=Ready inplaceupdatecampaign/<name>`), Failed (True when halted:
// reason CanaryFailed or BudgetSpent), Paused.
//
// Behaviour where the issue leaves a choice (decide.ts has the rules):
// * A campaign selects Clusters of its own namespace only (label selector and/or names): its Role stays namespaced
//   and a campaign can never reach a tenant's clusters in another namespace.
// * Overlap: a cluster a plan the campaign does not own is updating waits (never superseded); two unfinished campaigns
//   over one cluster make the newer one Valid=False until the older one is finished (updated or aborted).
// * The failure budget counts failed clusters tolerated; one more halts. A canary failure always halts.
// * A plan whose Cluster is deleted is aborted; a cluster that leaves the selection keeps its running plan.
import type { AlertGatePolicy } from '../api/index.js';
import type { Component } from '../runtime/pure/types.js';
import { CONTROLLER_NAME, setupCampaignController } from './controller.js';
import { rbac } from './rbac.js';

export { rbac, baseRbac, PROVIDER_VERBS } from './rbac.js';
export { CONTROLLER_NAME } from './controller.js';
export { decideCampaign, buildPlanSpec, rolloutOrder, campaignPlanName, resolveIntOrPercent, waveLabel, projectWaves } from './decide.js';
export type { CampaignDecision, CampaignSnapshot, ClusterRow, ClusterView, PlanView, ProjectedWave } from './decide.js';
export { buildCampaignScope, selects, planView, campaignOf } from './scope.js';

/** Options of the component. */
export interface CampaignControllerOptions {
  /** Which alert endpoints campaigns may pass down to their plans (`--alert-gate-policy`); default none. */
  alertGatePolicy?: AlertGatePolicy;
}

/** The campaign controller with the operator's options. */
export function createCampaignController(opts: CampaignControllerOptions = {}): Component {
  return {
    name: CONTROLLER_NAME,
    rbac,
    setup(mgr) {
      setupCampaignController(mgr, opts);
    },
  };
}

/** The campaign controller as deployed without options (every alert gate refused). */
export const campaignController: Component = createCampaignController();
