// Phase 7 of decideCampaign: the next wave: the canaries together (or waiting for them to be free), else the next
// pending clusters in rollout order; held by a closed maintenance window; else waiting for other plans, or completed.
import type { CampaignDecision } from './types.js';
import type { OutcomeInput } from './stance.js';
import { campaignPlanName, completedMessage, namesList, waveLabel } from './rules.js';

/** The wave to start now and its members, or the Waiting outcome when the canaries are not all free. */
export function nextWave(x: OutcomeInput): { wave: number; members: string[] } | CampaignDecision | undefined {
  const { currentWave, canarySet, eligible } = x.waves;
  if (currentWave === undefined && canarySet.length > 0) {
    // The canaries go together or not at all: a canary another plan is updating holds the campaign (Waiting).
    if (canarySet.every((n) => eligible.has(n))) return { wave: 0, members: canarySet };
    return {
      ...x.base,
      create: [],
      phase: 'Waiting',
      updateStatus: 'pending',
      message: `waiting for the canaries to be free: ${namesList(canarySet.filter((n) => !eligible.has(n)))}`,
    };
  }
  if (eligible.size === 0) return undefined;
  const members = x.ordered
    .filter((c) => eligible.has(c.name))
    .slice(0, x.waveSize)
    .map((c) => c.name);
  return { wave: (currentWave ?? 0) + 1, members };
}

/** The decision once nothing holds the campaign: start the next wave, wait for a window or other plans, or complete. */
export function startOutcome(x: OutcomeInput): CampaignDecision {
  const { base, window } = x;
  const statusWhileRunning = x.started ? 'updating' : 'pending';
  const next = nextWave(x);
  if (next && 'phase' in next) return next;
  if (next && window.state && !window.state.open)
    return {
      ...base,
      create: [],
      phase: 'WaitingForMaintenanceWindow',
      updateStatus: statusWhileRunning,
      requeueAfterMs: x.untilWindowChange!,
      message: `maintenance ${window.state.message}: ${waveLabel(next.wave)} (${next.members.length} clusters) starts when it opens`,
    };
  if (next) {
    const create = next.members.map((n) => ({
      name: campaignPlanName(x.snap.campaign.metadata.name, n),
      clusterName: n,
      wave: next.wave,
      spec: x.specs.get(n)!,
    }));
    return {
      ...base,
      create,
      currentWave: next.wave,
      plannedWaves: Math.max(base.plannedWaves, next.wave + 1),
      phase: next.wave === 0 ? 'Canary' : 'Wave',
      updateStatus: 'updating',
      message: `${waveLabel(next.wave)}: starting ${create.length} clusters`,
    };
  }
  const { waitingRows } = x.waves;
  if (waitingRows.length > 0)
    return {
      ...base,
      create: [],
      phase: 'Waiting',
      updateStatus: statusWhileRunning,
      message: `waiting for other plans on ${namesList(waitingRows.map((r) => r.name))}`,
    };
  return { ...base, create: [], phase: 'Completed', updateStatus: 'updated', message: completedMessage(base.rows) };
}
