// Phase 4 of decideCampaign: propagation to the campaign's running plans: abort, pause / resume, abort a deleted
// cluster's plan.
import { isTerminal } from '../../api/index.js';
import type { CampaignSnapshot, ClusterRow, PlanView } from './types.js';

/** The running plans and the patches they get. */
export interface Propagation {
  /** The campaign's plans neither terminal nor invalid. */
  active: PlanView[];
  abort: string[];
  pause: string[];
  resume: string[];
}

/** Which running plans to abort, pause or resume; one patch per plan, so a plan being aborted is neither paused nor resumed. */
export function propagation(snap: CampaignSnapshot, rows: readonly ClusterRow[], aborting: boolean): Propagation {
  const spec = snap.campaign.spec;
  const active = snap.plans.filter((p) => !isTerminal(p.updateStatus) && !p.invalid);
  const abort = active
    .filter((p) => !p.aborting && (aborting || rows.find((r) => r.plan === p.name)?.removed === 'deleted'))
    .map((p) => p.name);
  const toAbort = new Set(abort);
  const pause = !aborting && spec.paused ? active.filter((p) => !p.paused && !toAbort.has(p.name)).map((p) => p.name) : [];
  const resume = !spec.paused ? active.filter((p) => p.paused && p.pausedByCampaign && !toAbort.has(p.name)).map((p) => p.name) : [];
  return { active, abort, pause, resume };
}
