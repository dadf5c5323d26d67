// Phase 3 of decideCampaign: the wave bookkeeping from the plans and rows: the current wave, the halt (canary failed,
// budget spent), the canaries, the clusters eligible to start and the planned number of waves.
import type { CampaignDecision, CampaignSnapshot, ClusterRow, ClusterView, PlanView } from './types.js';
import { resolveIntOrPercent } from './rules.js';

/** Where the rollout stands. */
export interface WaveState {
  /** The campaign's plans, by wave. */
  waves: Map<number, PlanView[]>;
  currentWave?: number;
  failed: ClusterRow[];
  halted: CampaignDecision['halted'];
  /** Pending clusters, the only ones a wave may start. */
  eligible: Set<string>;
  waitingRows: ClusterRow[];
  canarySet: string[];
  plannedWaves: number;
}

/** The rollout sizes the rows are judged with. */
export interface WaveSizes {
  failureBudget: number;
  waveSize: number;
}

/** The wave bookkeeping: started waves from the plans, then what is left to start in waves of `waveSize`. */
export function waveState(
  snap: CampaignSnapshot,
  rows: readonly ClusterRow[],
  plans: Iterable<PlanView>,
  ordered: readonly ClusterView[],
  sizes: WaveSizes,
): WaveState {
  const rollout = snap.campaign.spec.rollout ?? {};
  const waves = new Map<number, PlanView[]>();
  for (const p of plans) waves.set(p.wave, [...(waves.get(p.wave) ?? []), p]);
  const startedWaves = rows.map((r) => r.wave).filter((w): w is number => w !== undefined);
  const currentWave = startedWaves.length > 0 ? Math.max(...startedWaves) : undefined;
  const failed = rows.filter((r) => r.state === 'failed');
  const canaryFailed = rows.some((r) => r.wave === 0 && r.state === 'failed');
  const halted: CampaignDecision['halted'] = canaryFailed
    ? 'CanaryFailed'
    : failed.length > sizes.failureBudget
      ? 'BudgetSpent'
      : undefined;
  const pendingRows = rows.filter((r) => r.state === 'pending');
  const eligible = new Set(pendingRows.map((r) => r.name));
  const waitingRows = rows.filter((r) => r.state === 'waiting');
  const canaryNames = rollout.canary?.clusterNames ?? [];
  const canarySet =
    canaryNames.length > 0
      ? canaryNames
      : ordered.slice(0, resolveIntOrPercent(rollout.canary?.count, snap.selected.length, 0, 'up')).map((c) => c.name);
  const remainingAfter = (n: number): number => Math.ceil(Math.max(0, n) / sizes.waveSize);
  const plannedWaves =
    currentWave === undefined
      ? (canarySet.length > 0 ? 1 : 0) + remainingAfter(pendingRows.length + waitingRows.length - canarySet.length)
      : currentWave + 1 + remainingAfter(pendingRows.length + waitingRows.length);
  return { waves, ...(currentWave !== undefined ? { currentWave } : {}), failed, halted, eligible, waitingRows, canarySet, plannedWaves };
}
