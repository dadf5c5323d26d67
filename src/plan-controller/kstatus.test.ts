import { expect } from 'chai';
import { Reasons } from '../api/index.js';
import type { PlanDecision } from './decide.js';
import { decidePlan } from './decide.js';
import { ALIGNING_OWNERS, planKstatus, settledOwnersStatus } from './status.js';
import { mdMachines, mdOnly, mu, snapshot } from './testkit.js';

const cond = (d: Pick<PlanDecision, 'status'>, type: string) => d.status.conditions?.find((c) => c.type === type);

describe('plan-controller status: kstatus (Reconciling / Stalled) per phase', () => {
  const base = { valid: true, started: true, invalidFinal: false, problems: [] as string[] };
  const ready = (reason: string, status: 'True' | 'False' = 'False') => ({ status, reason, message: `${reason} message` });
  const cases: { name: string; i: Parameters<typeof planKstatus>[0]; state: string; reason: string }[] = [
    { name: 'updated', i: { ...base, updateStatus: 'updated', ready: ready(Reasons.updated, 'True') }, state: 'ready', reason: 'Updated' },
    {
      name: 'pending',
      i: { ...base, started: false, updateStatus: 'pending', ready: ready(Reasons.pending) },
      state: 'reconciling',
      reason: 'Pending',
    },
    {
      name: 'updating',
      i: { ...base, updateStatus: 'updating', ready: ready(Reasons.updating) },
      state: 'reconciling',
      reason: 'Updating',
    },
    { name: 'paused', i: { ...base, updateStatus: 'updating', ready: ready(Reasons.paused) }, state: 'reconciling', reason: 'Paused' },
    {
      name: 'window closed',
      i: { ...base, started: false, updateStatus: 'pending', ready: ready(Reasons.waitingForMaintenanceWindow) },
      state: 'reconciling',
      reason: 'WaitingForMaintenanceWindow',
    },
    {
      name: 'waiting for an older plan',
      i: { ...base, started: false, updateStatus: 'pending', ready: ready(Reasons.waitingForPreviousPlan) },
      state: 'reconciling',
      reason: 'WaitingForPreviousPlan',
    },
    {
      name: 'aborting',
      i: { ...base, updateStatus: 'aborting', ready: ready(Reasons.aborting) },
      state: 'reconciling',
      reason: 'Aborting',
    },
    {
      name: 'invalid, settling',
      i: { ...base, started: false, valid: false, problems: ['x'], updateStatus: 'pending', ready: ready(Reasons.invalid) },
      state: 'reconciling',
      reason: 'Invalid',
    },
    {
      name: 'invalid, ended',
      i: {
        ...base,
        started: false,
        valid: false,
        invalidFinal: true,
        problems: ['x'],
        updateStatus: 'pending',
        ready: ready(Reasons.invalid),
      },
      state: 'stalled',
      reason: 'Invalid',
    },
    {
      name: 'invalid mid-rollout (holds until fixed or aborted)',
      i: { ...base, valid: false, problems: ['x'], updateStatus: 'updating', ready: ready(Reasons.invalid) },
      state: 'stalled',
      reason: 'Invalid',
    },
    { name: 'failed', i: { ...base, updateStatus: 'failed', ready: ready(Reasons.failed) }, state: 'stalled', reason: 'Failed' },
    { name: 'aborted', i: { ...base, updateStatus: 'aborted', ready: ready(Reasons.aborted) }, state: 'stalled', reason: 'Aborted' },
    {
      name: 'superseded',
      i: { ...base, updateStatus: 'aborted', ready: ready(Reasons.superseded) },
      state: 'stalled',
      reason: 'Superseded',
    },
  ];
  for (const c of cases)
    it(`${c.name}: ${c.state} (${c.reason})`, () => {
      expect(planKstatus(c.i)).to.deep.include({ state: c.state, reason: c.reason });
    });

  it('a decision writes both conditions with the plan generation; a plan held for owner alignment is Reconciling, not Stalled', () => {
    const d = decidePlan(snapshot(mdOnly({ machines: mdMachines(3), mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) })));
    expect(cond(d, 'Reconciling')).to.include({ status: 'False', reason: 'Updated' });
    expect(cond(d, 'Stalled')).to.include({ status: 'False', reason: 'Updated' });
    for (const c of d.status.conditions ?? []) expect(c.observedGeneration, c.type).to.equal(d.status.observedGeneration);
    const settled = settledOwnersStatus(
      { updateStatus: 'updating' },
      d,
      [{ owner: 'MachineDeployment cluster1-md-0', op: 'align', pending: '503 injected (retrying)' }],
      1,
      new Date('2026-01-01T00:01:00Z'),
    );
    expect(cond(settled, 'Reconciling')).to.include({ status: 'True', reason: ALIGNING_OWNERS });
    expect(cond(settled, 'Stalled')).to.include({ status: 'False' });
  });
});
