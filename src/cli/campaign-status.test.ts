import { expect } from 'chai';
import { renderTree } from './tree.js';
import { buildCampaignTree, type CampaignObject } from './campaign-status.js';

const NOW = new Date('2026-01-01T00:10:00Z');

const plan = (
  cluster: string,
  wave: number,
  updateStatus: string,
  o: { machines?: number; skipped?: number; valid?: string; ready?: string } = {},
) => ({
  metadata: {
    name: `c-${cluster}`,
    labels: { 'inplace.cluster.x-k8s.io/campaign-wave': String(wave) },
    creationTimestamp: '2026-01-01T00:00:00Z',
  },
  spec: { clusterName: cluster },
  status: {
    updateStatus,
    machines: o.machines ?? 3,
    skippedMachines: o.skipped ?? 0,
    progress: `${updateStatus === 'updated' ? (o.machines ?? 3) : 0}/${o.machines ?? 3}`,
    conditions: [
      ...(o.valid ? [{ type: 'Valid', status: 'False', reason: 'Invalid', message: o.valid, lastTransitionTime: '' }] : []),
      {
        type: 'Ready',
        status: updateStatus === 'updated' ? 'True' : 'False',
        reason: updateStatus === 'failed' ? 'Failed' : 'X',
        message: o.ready ?? '',
        lastTransitionTime: '',
      },
    ],
  },
});

const campaign: CampaignObject = {
  metadata: { name: 'c', namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { template: {} },
  status: {
    updateStatus: 'updating',
    phase: 'Wave 1',
    progress: '16/20',
    clusters: { selected: 20, pending: 3, waiting: 1, updated: 14, failed: 1, updating: 1 },
    machines: { total: 48, updated: 42 },
    machineProgress: '42/48+',
    plannedWaves: 3,
    currentWave: 1,
    skippedClusters: [{ name: 'w', reason: 'plan by-hand is updating this cluster; the campaign waits for it' }],
  },
} as CampaignObject;

describe('cli campaign status tree', () => {
  it('waves -> clusters, failed and running first, bounded per wave, held and waiting clusters with why', () => {
    const plans = [
      plan('a', 0, 'updated', { skipped: 3 }),
      ...Array.from({ length: 14 }, (_, i) => plan(`b${String(i).padStart(2, '0')}`, 1, 'updated')),
      plan('f', 1, 'failed', { ready: 'machine f-cp-0: disk full' }),
      plan('h', 1, 'pending', { valid: 'Machine /spec/version v1.30.1 skips a minor version' }),
    ];
    const text = renderTree(buildCampaignTree(campaign, plans as never, NOW));
    const lines = text.split('\n');
    expect(lines[1]).to.match(/InPlaceUpdateCampaign c +updating .*Wave 1; clusters 16\/20 done/);
    expect(text).to.match(/Wave 0 \(canary\) +done .*1 at-target/);
    expect(text).to.match(/Wave 1 +running .*1 failed, 1 pending, 14 updated/);
    const wave1 = lines.findIndex((l) => /Wave 1 /.test(l));
    expect(lines[wave1 + 1]).to.match(/Cluster f +failed .*disk full/);
    expect(lines[wave1 + 2]).to.match(/Cluster h +pending .*the plan is invalid: Machine \/spec\/version v1.30.1 skips a minor/);
    expect(text).to.match(/\.\.\. 4 more clusters/);
    expect(text).to.match(/Not started +pending .*3 pending, 1 waiting for another plan; 1 more waves planned/);
    expect(text).to.match(/Cluster w +skipped .*plan by-hand is updating this cluster/);
    // Clusters not started yet are not in the machine total: it says so instead of looking final.
    expect(lines[1]).to.contain('machines 42/48 so far (clusters not started yet are not counted)');
  });
});
