import { expect } from 'chai';
import { API_VERSION, CampaignLabels } from '../api/index.js';
import {
  appendPoint,
  campaignView,
  planGate,
  planView,
  resolveBudget,
  type CampaignObject,
  type PlanObject,
  type ProgressPoint,
} from './view.js';

const plan = (name: string, status: PlanObject['status'], o: { wave?: number; campaign?: string; paused?: boolean } = {}): PlanObject => ({
  apiVersion: API_VERSION,
  kind: 'InPlaceUpdatePlan',
  metadata: {
    name,
    namespace: 'ns',
    labels: o.campaign ? { [CampaignLabels.campaign]: o.campaign, [CampaignLabels.wave]: String(o.wave ?? 0) } : {},
  },
  spec: { clusterName: name, ...(o.paused ? { paused: true } : {}) },
  ...(status ? { status } : {}),
});

describe('dashboard views', () => {
  it('resolves the failure budget as the campaign controller does: a count, or a percentage rounded down', () => {
    expect(resolveBudget(undefined, 24)).to.equal(0);
    expect(resolveBudget(3, 24)).to.equal(3);
    expect(resolveBudget('10%', 24)).to.equal(2);
    expect(resolveBudget('10%', 9)).to.equal(0);
  });

  it('names what holds a plan: invalid before a closed window before a firing alert before a pause; nothing once it ended', () => {
    const closed = { state: 'Closed' as const, message: 'window closed until Sat 22:00 Europe/Berlin (2026-11-28T21:00:00.000Z)' };
    const firing = { state: 'Firing' as const, message: 'NodeDown firing' };
    expect(planGate(plan('a', { updateStatus: 'updating', maintenanceWindow: closed, alertGate: firing }))).to.equal(closed.message);
    expect(planGate(plan('a', { updateStatus: 'updating', alertGate: firing }))).to.equal('alert gate Firing: NodeDown firing');
    expect(planGate(plan('a', { updateStatus: 'updating', alertGate: { state: 'Clear' } }, { paused: true }))).to.equal('paused');
    expect(planGate(plan('a', { updateStatus: 'updated', maintenanceWindow: closed }))).to.equal(undefined);
    const invalid = plan('a', {
      conditions: [
        { type: 'Valid', status: 'False', reason: 'Invalid', message: 'no such cluster', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ],
      maintenanceWindow: closed,
    });
    expect(planGate(invalid)).to.equal('invalid: no such cluster');
  });

  it("a failed plan's view carries its Ready message and gate failures; one at target reads at-target", () => {
    const failed = planView(
      plan('b', {
        updateStatus: 'failed',
        conditions: [
          { type: 'Ready', status: 'False', reason: 'Failed', message: 'disk full', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
        gateFailures: [{ machine: 'm1', gate: 'soak', message: 'Ready=False' }],
      }),
    );
    expect(failed).to.include({ state: 'failed', failure: 'disk full; m1 (soak): Ready=False' });
    expect(planView(plan('c', { updateStatus: 'updated', machines: 3, skippedMachines: 3 })).state).to.equal('at-target');
  });

  it("a campaign's view keeps only its own plans, failed and running first within a wave", () => {
    const c: CampaignObject = {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdateCampaign',
      metadata: { name: 'edge', namespace: 'ns' },
      spec: { clusterSelector: {}, rollout: { failureBudget: '50%' }, template: {} } as CampaignObject['spec'],
      status: { updateStatus: 'updating', clusters: { selected: 4 } },
    };
    const v = campaignView(
      c,
      [
        plan('x-updated', { updateStatus: 'updated' }, { campaign: 'edge', wave: 1 }),
        plan('x-failed', { updateStatus: 'failed' }, { campaign: 'edge', wave: 1 }),
        plan('canary', { updateStatus: 'updated' }, { campaign: 'edge', wave: 0 }),
        plan('other', { updateStatus: 'updating' }, { campaign: 'other', wave: 0 }),
      ],
      new Date(),
    );
    expect(v.plans.map((p) => p.name)).to.deep.equal(['canary', 'x-failed', 'x-updated']);
    expect(v.failureBudget).to.equal(2);
  });

  it('keeps a bounded history: repeats dropped, old points thinned, the newest kept', () => {
    const pt = (t: number, m: number): ProgressPoint => ({ t, machinesUpdated: m, clustersDone: 0, clustersFailed: 0 });
    let h: ProgressPoint[] = [];
    h = appendPoint(h, pt(0, 0), 4);
    expect(appendPoint(h, pt(1, 0), 4)).to.equal(h);
    for (let i = 1; i <= 4; i++) h = appendPoint(h, pt(i, i), 4);
    expect(h.map((p) => p.machinesUpdated)).to.deep.equal([0, 2, 4]);
  });
});
