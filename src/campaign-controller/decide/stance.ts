// Phase 5 of decideCampaign: the stances that start nothing: aborting, halted, finished, invalid, paused, or a wave
// still running. The first that holds is the decision; otherwise the soak and the next wave decide (soak.ts, starts.ts).
import type { InPlaceUpdatePlan } from '../../api/index.js';
import { UpdatePhase, UpdateStatus } from '../../api/index.js';
import type { WindowGate } from '../../rules/gates.js';
import type { Propagation } from './propagation.js';
import type { CampaignDecision, CampaignSnapshot, ClusterView } from './types.js';
import type { WaveState } from './waves.js';
import { completedMessage, namesList, waveLabel } from './rules.js';

/** The fields every outcome shares. */
export type DecisionBase = Pick<
  CampaignDecision,
  'problems' | 'checking' | 'pause' | 'resume' | 'abort' | 'plannedWaves' | 'failureBudget' | 'rows' | 'window' | 'currentWave'
>;

/** What the outcome phases read: the earlier phases' results. */
export interface OutcomeInput {
  snap: CampaignSnapshot;
  base: DecisionBase;
  waves: WaveState;
  running: Propagation;
  /** The campaign made a plan or recorded a cluster already. */
  started: boolean;
  window: WindowGate;
  /** Until the window state changes (absent without windows). */
  untilWindowChange?: number;
  ordered: readonly ClusterView[];
  waveSize: number;
  soakMs: number;
  specs: ReadonlyMap<string, InPlaceUpdatePlan['spec']>;
}

/** An aborting or halted campaign: running plans finish (or abort), nothing new starts. */
export function stoppedOutcome(x: OutcomeInput): CampaignDecision | undefined {
  const { base, running, waves } = x;
  const { active } = running;
  if (x.snap.campaign.spec.updatePhase === UpdatePhase.aborting) {
    const stillRunning = active.length > 0;
    return {
      ...base,
      create: [],
      phase: stillRunning ? 'Aborting' : 'Aborted',
      updateStatus: stillRunning ? 'aborting' : 'aborted',
      message: stillRunning ? `aborting: ${active.length} running plans move to aborting` : 'aborted: no new cluster starts',
    };
  }
  const { halted, failed } = waves;
  if (!halted) return undefined;
  const inProgress = active.length > 0;
  const why =
    halted === 'CanaryFailed'
      ? `a canary failed (${namesList(failed.filter((r) => r.wave === 0).map((r) => r.name))}): no wave starts`
      : `the failure budget (${base.failureBudget}) is spent: ${failed.length} failed clusters (${namesList(failed.map((r) => r.name))})`;
  return {
    ...base,
    create: [],
    halted,
    phase: 'Halted',
    updateStatus: inProgress ? 'updating' : 'failed',
    message: inProgress ? `${why}; ${active.length} running plans finish, no new cluster starts` : `${why}; halted`,
  };
}

/** A finished, invalid or paused campaign, or one whose wave is still running: nothing new starts now. */
export function heldOutcome(x: OutcomeInput): CampaignDecision | undefined {
  const { base, snap, window } = x;
  const { campaign } = snap;
  const { active } = x.running;
  const statusWhileRunning = x.started ? 'updating' : 'pending';
  if (campaign.status?.updateStatus === UpdateStatus.updated && campaign.status.observedGeneration === campaign.metadata.generation)
    return { ...base, create: [], phase: 'Completed', updateStatus: 'updated', message: completedMessage(base.rows) };
  if (base.problems.length > 0)
    return {
      ...base,
      create: [],
      phase: 'Invalid',
      updateStatus: statusWhileRunning,
      message: 'the campaign is invalid: nothing new starts until the problems are fixed',
    };
  // Before the first plan every selected cluster must pass: a check that could not run holds the whole campaign.
  if (!x.started && base.checking.length > 0)
    return {
      ...base,
      create: [],
      phase: 'Waiting',
      updateStatus: 'pending',
      message: `validating: the pre-start check could not run on ${base.checking.length === 1 ? 'a cluster' : 'some clusters'} (retried); nothing starts until every selected cluster passed it`,
    };
  if (campaign.spec.paused)
    return {
      ...base,
      create: [],
      phase: 'Paused',
      updateStatus: statusWhileRunning,
      message: 'paused: no new cluster starts; running plans are paused',
    };
  if (active.length === 0) return undefined;
  const wave = x.waves.currentWave ?? 0;
  return {
    ...base,
    create: [],
    phase: wave === 0 ? 'Canary' : 'Wave',
    updateStatus: 'updating',
    message: `${waveLabel(wave)}: ${active.length} clusters updating${window.state && !window.state.open ? ` (maintenance ${window.state.message}: no new cluster starts)` : ''}`,
    ...(x.untilWindowChange !== undefined ? { requeueAfterMs: x.untilWindowChange } : {}),
  };
}
