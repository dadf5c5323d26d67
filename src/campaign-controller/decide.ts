// Campaign decisions, pure: from a snapshot of the campaign, its selected Clusters (with their MachineDeployments'
// names and labels), its own plans' status and the other plans / campaigns of the namespace, decide which plans to
// create (the next wave), which of its plans to pause, resume or abort, and every count the status reports. No I/O:
// controller.ts reads (scope.ts) and acts; status.ts turns the decision into the one status.
//
// Rollout rules (docs/operations.md "Fleet campaigns"):
// * Order: the integer priority under spec.rollout.orderBy (a label, else an annotation; lower first, absent last),
//   then the cluster name.
// * Wave 0 is the canaries (spec.rollout.canary: names, or a count / percentage rounded up of the first clusters in
//   order); waves 1.. take at most maxConcurrentClusters (count, or percentage of the selected clusters rounded down,
//   at least 1) of the pending clusters in order. A wave starts only when every plan of the previous wave is terminal
//   and soakSeconds have passed since its last plan completed. A wave is recorded on its plans (label), so waves
//   survive restarts and a cluster that joins the selection later is simply pending: it goes in a later wave.
// * Failure budget: failed clusters tolerated (count, or percentage of the clusters rounded down); one more halts the
//   campaign: no new plan, running plans finish. Any failed canary halts before wave 1. Raising the budget resumes.
// * Overlap: a cluster with a non-terminal plan the campaign does not own (written by hand, or another campaign's)
//   waits (reported as waiting) and never has a campaign plan created over it, since the plan controller would
//   supersede the older plan. Two unfinished campaigns selecting one cluster: the newer one is Valid=False naming the
//   clusters and the older campaign, and starts nothing until the older one is finished.
// * A plan whose Cluster is deleted is aborted (nothing left to update) and reported as removed; a cluster that only
//   left the selection keeps its running plan, reported as removed.//
// decideCampaign is a list of phases, one module each under decide/, called in this order: rows.ts, validity.ts,
// waves.ts, propagation.ts, then the outcome: stance.ts, soak.ts, starts.ts (docs/architecture.md).
import { UpdatePhase } from '../api/index.js';
import { windowGate } from '../rules/gates.js';
import { applyClusterValidity, campaignProblems, clusterValidity, uncheckedLines } from './decide/validity.js';
import { clusterRows } from './decide/rows.js';
import { propagation } from './decide/propagation.js';
import { waveState } from './decide/waves.js';
import type { DecisionBase, OutcomeInput } from './decide/stance.js';
import { heldOutcome, stoppedOutcome } from './decide/stance.js';
import { soakOutcome } from './decide/soak.js';
import { startOutcome } from './decide/starts.js';
import { asPlanGates, resolveIntOrPercent, rolloutOrder } from './decide/rules.js';
import type { CampaignDecision, CampaignSnapshot } from './decide/types.js';

export type {
  CampaignDecision,
  CampaignPhase,
  CampaignSnapshot,
  ClusterObjects,
  ClusterRow,
  ClusterState,
  ClusterView,
  PlanToCreate,
  PlanView,
} from './decide/types.js';
export {
  MAX_NAMED_CLUSTERS,
  buildPlanSpec,
  campaignPlanName,
  clusterPlanProblems,
  finishedRecords,
  finishedRecordsOf,
  namesList,
  ownerVersionMachines,
  resolveIntOrPercent,
  rolloutOrder,
  updaterProblems,
  waveLabel,
} from './decide/rules.js';

/** Decides the campaign's next step (level-based: everything from the snapshot). */
export function decideCampaign(snap: CampaignSnapshot): CampaignDecision {
  const spec = snap.campaign.spec;
  const now = new Date(snap.now);
  const rollout = spec.rollout ?? {};
  const aborting = spec.updatePhase === UpdatePhase.aborting;
  const r = clusterRows(snap);
  const { rows } = r;

  const total = snap.selected.length + rows.filter((row) => row.removed).length;
  const failureBudget = resolveIntOrPercent(rollout.failureBudget, total, 0, 'down');
  const waveSize = Math.max(1, resolveIntOrPercent(rollout.maxConcurrentClusters, snap.selected.length, 1, 'down'));
  const ordered = rolloutOrder(snap.selected, rollout.orderBy);

  const problems = campaignProblems(snap, r, now);
  const window = windowGate(asPlanGates(spec.maintenanceWindows), now);
  const started = snap.plans.length > 0 || r.recorded.size > 0;
  const validity = clusterValidity(snap, r, ordered);
  applyClusterValidity(started, validity, problems, rows);

  const waves = waveState(snap, rows, r.planByCluster.values(), ordered, { failureBudget, waveSize });
  const running = propagation(snap, rows, aborting);
  const { currentWave } = waves;
  const base: DecisionBase = {
    problems,
    checking: uncheckedLines(validity),
    pause: running.pause,
    resume: running.resume,
    abort: running.abort,
    plannedWaves: waves.plannedWaves,
    failureBudget,
    rows,
    window,
    ...(currentWave !== undefined ? { currentWave } : {}),
  };
  // Until the window state changes: the Event and status say so on time, and a closed window's opening starts the next wave.
  const untilWindowChange = window.state ? Math.max(1, window.state.nextChange.getTime() - now.getTime()) : undefined;
  const input: OutcomeInput = {
    snap,
    base,
    waves,
    running,
    started,
    window,
    ...(untilWindowChange !== undefined ? { untilWindowChange } : {}),
    ordered,
    waveSize,
    soakMs: (rollout.soakSeconds ?? 0) * 1000,
    specs: validity.specs,
  };
  return stoppedOutcome(input) ?? heldOutcome(input) ?? soakOutcome(input) ?? startOutcome(input);
}

/** A wave as the preview shows it: started (from the plans) or projected (if every cluster before it succeeds). */
export interface ProjectedWave {
  index: number;
  clusters: string[];
  started: boolean;
}

/**
 * The campaign's waves: those started (recorded on the plans), then the pending clusters in rollout order as the
 * controller would start them if every cluster succeeds and nothing else changes (canaries first when nothing started;
 * clusters waiting for another plan are left out: when they join is unknown).
 */
export function projectWaves(snap: CampaignSnapshot): ProjectedWave[] {
  const rollout = snap.campaign.spec.rollout ?? {};
  const d = decideCampaign(snap);
  const waves = new Map<number, string[]>();
  for (const r of d.rows) if (r.wave !== undefined) waves.set(r.wave, [...(waves.get(r.wave) ?? []), r.name]);
  const out: ProjectedWave[] = [...waves.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([index, clusters]) => ({ index, clusters, started: true }));
  const pending = new Set(d.rows.filter((r) => r.state === 'pending').map((r) => r.name));
  let ordered = rolloutOrder(snap.selected, rollout.orderBy)
    .map((c) => c.name)
    .filter((n) => pending.has(n));
  let next = out.length > 0 ? out[out.length - 1]!.index + 1 : 0;
  if (out.length === 0) {
    const names = rollout.canary?.clusterNames ?? [];
    const canaries =
      names.length > 0
        ? names.filter((n) => pending.has(n))
        : ordered.slice(0, resolveIntOrPercent(rollout.canary?.count, snap.selected.length, 0, 'up'));
    if (canaries.length > 0) {
      out.push({ index: 0, clusters: canaries, started: false });
      ordered = ordered.filter((n) => !canaries.includes(n));
    }
    next = 1;
  }
  const size = Math.max(1, resolveIntOrPercent(rollout.maxConcurrentClusters, snap.selected.length, 1, 'down'));
  for (let i = 0; i < ordered.length; i += size) out.push({ index: next++, clusters: ordered.slice(i, i + size), started: false });
  return out;
}
