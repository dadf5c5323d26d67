import { expect } from 'chai';
import type { CampaignDecision } from './decide.js';
import { campaignKstatus } from './status.js';

describe('campaign-controller status: kstatus (Reconciling / Stalled) per phase', () => {
  type D = Pick<CampaignDecision, 'updateStatus' | 'phase' | 'halted' | 'message'>;
  const cases: { d: D; state: string; reason: string }[] = [
    { d: { phase: 'Completed', updateStatus: 'updated', message: '' }, state: 'ready', reason: 'Completed' },
    { d: { phase: 'Pending', updateStatus: 'pending', message: '' }, state: 'reconciling', reason: 'Pending' },
    { d: { phase: 'Canary', updateStatus: 'updating', message: '' }, state: 'reconciling', reason: 'Canary' },
    { d: { phase: 'Wave', updateStatus: 'updating', message: '' }, state: 'reconciling', reason: 'Wave' },
    { d: { phase: 'Soaking', updateStatus: 'updating', message: '' }, state: 'reconciling', reason: 'Soaking' },
    { d: { phase: 'Paused', updateStatus: 'updating', message: '' }, state: 'reconciling', reason: 'Paused' },
    { d: { phase: 'Waiting', updateStatus: 'pending', message: '' }, state: 'reconciling', reason: 'Waiting' },
    {
      d: { phase: 'WaitingForMaintenanceWindow', updateStatus: 'pending', message: '' },
      state: 'reconciling',
      reason: 'WaitingForMaintenanceWindow',
    },
    { d: { phase: 'Aborting', updateStatus: 'aborting', message: '' }, state: 'reconciling', reason: 'Aborting' },
    // Halted while its running plans finish: no new cluster starts until someone raises the budget or aborts.
    { d: { phase: 'Halted', updateStatus: 'updating', halted: 'BudgetSpent', message: '' }, state: 'stalled', reason: 'BudgetSpent' },
    { d: { phase: 'Halted', updateStatus: 'failed', halted: 'CanaryFailed', message: '' }, state: 'stalled', reason: 'CanaryFailed' },
    { d: { phase: 'Invalid', updateStatus: 'pending', message: '' }, state: 'stalled', reason: 'Invalid' },
    { d: { phase: 'Aborted', updateStatus: 'aborted', message: '' }, state: 'stalled', reason: 'Aborted' },
  ];
  for (const c of cases)
    it(`${c.d.phase} (${c.d.updateStatus}): ${c.state} (${c.reason})`, () => {
      expect(campaignKstatus(c.d)).to.deep.include({ state: c.state, reason: c.reason });
    });
});
