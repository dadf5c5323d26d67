import { expect } from 'chai';
import type { InPlaceUpdateCampaign } from '../api/index.js';
import { parseAlertGatePolicy } from '../api/index.js';
import type { CampaignSnapshot, ClusterView, PlanView } from './decide.js';
import { buildPlanSpec, campaignPlanName, decideCampaign, resolveIntOrPercent, rolloutOrder } from './decide.js';
import { campaignStatus } from './status.js';

const NOW = '2026-01-01T00:10:00Z';
const updater = {
  name: 'ref',
  sequence: 1,
  responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }],
};

function campaign(
  spec: Partial<InPlaceUpdateCampaign['spec']> = {},
  status?: InPlaceUpdateCampaign['status'],
): CampaignSnapshot['campaign'] {
  return {
    metadata: { name: 'c', namespace: 'ns', generation: 1 },
    spec: {
      clusterSelector: { matchLabels: { fleet: 'edge' } },
      template: { controlPlane: { sequence: 1, updaters: [updater] }, machineDeployments: [{ sequence: 2, updaters: [updater] }] },
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

const cluster = (name: string, o: Partial<ClusterView> = {}): ClusterView => ({
  name,
  labels: { fleet: 'edge' },
  annotations: {},
  controlPlaneName: `${name}-cp`,
  machineDeployments: [],
  ...o,
});

const plan = (cluster: string, wave: number, updateStatus: string | undefined, o: Partial<PlanView> = {}): PlanView => ({
  name: campaignPlanName('c', cluster),
  clusterName: cluster,
  wave,
  ...(updateStatus ? { updateStatus } : {}),
  paused: false,
  pausedByCampaign: false,
  aborting: false,
  machines: 3,
  updated: updateStatus === 'updated' ? 3 : 0,
  skipped: 0,
  updating: 0,
  failed: 0,
  ...o,
});

function snap(o: Partial<CampaignSnapshot> & { clusters?: ClusterView[] } = {}): CampaignSnapshot {
  const selected = o.clusters ?? ['a', 'b', 'c', 'd', 'e'].map((n) => cluster(n));
  return {
    campaign: campaign(),
    now: NOW,
    selected,
    existing: new Set(selected.map((c) => c.name)),
    plans: [],
    foreignPlans: new Map(),
    overlappingCampaigns: [],
    templateProblems: [],
    ...o,
  };
}

const created = (s: CampaignSnapshot): string[] => decideCampaign(s).create.map((c) => c.clusterName);

describe('campaign-controller decideCampaign', () => {
  describe('waves', () => {
    const table: {
      name: string;
      spec?: Partial<InPlaceUpdateCampaign['spec']>;
      plans?: PlanView[];
      creates: string[];
      wave?: number;
      phase: string;
    }[] = [
      { name: 'no canary, wave size 1 (default): the first cluster in name order', creates: ['a'], wave: 1, phase: 'Wave' },
      {
        name: 'canary by name goes first, alone',
        spec: { rollout: { canary: { clusterNames: ['d'] }, maxConcurrentClusters: 2 } },
        creates: ['d'],
        wave: 0,
        phase: 'Canary',
      },
      {
        name: 'canary count 40% of 5 rounds up to 2',
        spec: { rollout: { canary: { count: '40%' }, maxConcurrentClusters: 3 } },
        creates: ['a', 'b'],
        wave: 0,
        phase: 'Canary',
      },
      {
        name: 'while the canary runs, nothing else starts',
        spec: { rollout: { canary: { clusterNames: ['d'] }, maxConcurrentClusters: 2 } },
        plans: [plan('d', 0, 'updating')],
        creates: [],
        phase: 'Canary',
      },
      {
        name: 'after the canary: a wave of maxConcurrentClusters in order',
        spec: { rollout: { canary: { clusterNames: ['d'] }, maxConcurrentClusters: 2 } },
        plans: [plan('d', 0, 'updated', { completionTime: '2026-01-01T00:00:00Z' })],
        creates: ['a', 'b'],
        wave: 1,
        phase: 'Wave',
      },
      {
        name: 'maxConcurrentClusters 50% of 5 rounds down to 2',
        spec: { rollout: { maxConcurrentClusters: '50%' } },
        creates: ['a', 'b'],
        wave: 1,
        phase: 'Wave',
      },
      {
        name: 'a wave waits for every plan of the previous one',
        spec: { rollout: { maxConcurrentClusters: 2 } },
        plans: [plan('a', 1, 'updated'), plan('b', 1, 'updating')],
        creates: [],
        phase: 'Wave',
      },
      {
        name: 'the last wave takes what is left',
        spec: { rollout: { maxConcurrentClusters: 2 } },
        plans: [plan('a', 1, 'updated'), plan('b', 1, 'updated'), plan('c', 2, 'updated'), plan('d', 2, 'updated')],
        creates: ['e'],
        wave: 3,
        phase: 'Wave',
      },
      {
        name: 'soak: the next wave waits soakSeconds after the last completion',
        spec: { rollout: { soakSeconds: 900 } },
        plans: [plan('a', 1, 'updated', { completionTime: '2026-01-01T00:00:00Z' })],
        creates: [],
        phase: 'Soaking',
      },
      {
        name: 'soak over: the next wave starts',
        spec: { rollout: { soakSeconds: 300 } },
        plans: [plan('a', 1, 'updated', { completionTime: '2026-01-01T00:00:00Z' })],
        creates: ['b'],
        wave: 2,
        phase: 'Wave',
      },
      {
        name: 'a failure within the budget goes on',
        spec: { rollout: { failureBudget: 1 } },
        plans: [plan('a', 1, 'failed')],
        creates: ['b'],
        wave: 2,
        phase: 'Wave',
      },
      {
        name: 'budget 0: one failure halts',
        plans: [plan('a', 1, 'failed')],
        creates: [],
        phase: 'Halted',
      },
      {
        name: 'budget 20% of 5 = 1: the second failure halts',
        spec: { rollout: { failureBudget: '20%', maxConcurrentClusters: 2 } },
        plans: [plan('a', 1, 'failed'), plan('b', 1, 'failed')],
        creates: [],
        phase: 'Halted',
      },
      {
        name: 'a failed canary halts before any wave even with budget left',
        spec: { rollout: { canary: { clusterNames: ['a'] }, failureBudget: 3 } },
        plans: [plan('a', 0, 'failed')],
        creates: [],
        phase: 'Halted',
      },
      {
        name: 'an invalid plan (Failed=True Invalid) counts as a failed cluster',
        plans: [plan('a', 1, 'pending', { invalid: true, failure: 'the plan is invalid: no upgrade path' })],
        creates: [],
        phase: 'Halted',
      },
      {
        name: 'paused: nothing new starts',
        spec: { paused: true },
        creates: [],
        phase: 'Paused',
      },
      {
        name: 'priority label orders before the name',
        spec: { rollout: { orderBy: 'prio', maxConcurrentClusters: 2 } },
        creates: ['e', 'c'],
        wave: 1,
        phase: 'Wave',
      },
    ];
    for (const t of table)
      it(t.name, () => {
        const clusters = ['a', 'b', 'c', 'd', 'e'].map((n) =>
          cluster(n, n === 'e' ? { labels: { fleet: 'edge', prio: '1' } } : n === 'c' ? { annotations: { prio: '2' } } : {}),
        );
        const d = decideCampaign(snap({ clusters, campaign: campaign(t.spec), plans: t.plans ?? [] }));
        expect(d.create.map((c) => c.clusterName)).to.deep.equal(t.creates);
        if (t.wave !== undefined) expect(d.create.every((c) => c.wave === t.wave)).to.equal(true);
        expect(d.phase).to.equal(t.phase);
      });
  });

  it('halted with a running plan: still updating, names the failed cluster and why, starts nothing', () => {
    const d = decideCampaign(
      snap({
        campaign: campaign({ rollout: { maxConcurrentClusters: 2 } }),
        plans: [plan('a', 1, 'failed', { failure: 'machine a-cp-0: updater ref failed: disk full' }), plan('b', 1, 'updating')],
      }),
    );
    expect(d.create).to.deep.equal([]);
    expect(d.halted).to.equal('BudgetSpent');
    expect(d.updateStatus).to.equal('updating');
    expect(d.message).to.match(/failure budget \(0\) is spent: 1 failed clusters \(a\)/);
    expect(d.rows.find((r) => r.name === 'a')?.reason).to.match(/disk full/);
  });

  it('halted and nothing running: failed', () => {
    const d = decideCampaign(snap({ plans: [plan('a', 1, 'failed')] }));
    expect(d.updateStatus).to.equal('failed');
  });

  it('all done: updated; a cluster whose machines were all skipped counts as at target', () => {
    const clusters = [cluster('a'), cluster('b')];
    const d = decideCampaign(snap({ clusters, plans: [plan('a', 1, 'updated'), plan('b', 2, 'updated', { skipped: 3 })] }));
    expect(d.updateStatus).to.equal('updated');
    expect(d.rows.map((r) => r.state)).to.deep.equal(['updated', 'skipped']);
  });

  it('overlap: a cluster a foreign plan updates waits and the wave takes the next one', () => {
    const d = decideCampaign(snap({ foreignPlans: new Map([['a', 'by-hand']]) }));
    expect(d.create.map((c) => c.clusterName)).to.deep.equal(['b']);
    expect(d.rows.find((r) => r.name === 'a')).to.include({ state: 'waiting' });
    expect(d.rows.find((r) => r.name === 'a')?.reason).to.match(/plan by-hand/);
  });

  it('overlap: only waiting clusters left -> Waiting, not completed', () => {
    const clusters = [cluster('a'), cluster('b')];
    const d = decideCampaign(snap({ clusters, plans: [plan('b', 1, 'updated')], foreignPlans: new Map([['a', 'by-hand']]) }));
    expect(d.phase).to.equal('Waiting');
    expect(d.updateStatus).to.equal('updating');
  });

  it('overlap with an older unfinished campaign: Valid=False naming the clusters and the campaign, nothing created', () => {
    const d = decideCampaign(snap({ overlappingCampaigns: [{ name: 'older', clusters: ['a', 'c'] }] }));
    expect(d.create).to.deep.equal([]);
    expect(d.problems.join('\n')).to.match(/Clusters a, c are also selected by campaign older/);
  });

  it('late joiner: a new pending cluster goes in the next wave', () => {
    const clusters = [cluster('a'), cluster('b'), cluster('z')];
    expect(created(snap({ clusters, plans: [plan('a', 1, 'updated'), plan('b', 2, 'updated')] }))).to.deep.equal(['z']);
  });

  it('a deleted cluster: its running plan is aborted and it is reported removed; an unselected one keeps running', () => {
    const d = decideCampaign(
      snap({
        clusters: [cluster('c')],
        existing: new Set(['b', 'c']),
        campaign: campaign({ rollout: { maxConcurrentClusters: 2 } }),
        plans: [plan('a', 1, 'updating'), plan('b', 1, 'updating')],
      }),
    );
    expect(d.abort).to.deep.equal([campaignPlanName('c', 'a')]);
    expect(d.rows.find((r) => r.name === 'a')).to.include({ removed: 'deleted' });
    expect(d.rows.find((r) => r.name === 'b')).to.include({ removed: 'unselected' });
    expect(d.create).to.deep.equal([]);
  });

  it('pause propagates to running plans; resume lifts only the campaign own pause', () => {
    const plans = [
      plan('a', 1, 'updating'),
      plan('b', 1, 'updating', { paused: true }),
      plan('c', 1, 'updating', { paused: true, pausedByCampaign: true }),
    ];
    const paused = decideCampaign(snap({ campaign: campaign({ paused: true }), plans }));
    expect(paused.pause).to.deep.equal([campaignPlanName('c', 'a')]);
    const resumed = decideCampaign(snap({ plans }));
    expect(resumed.resume).to.deep.equal([campaignPlanName('c', 'c')]);
  });

  it('abort: running plans move to aborting, nothing new; aborted once all are terminal', () => {
    const d = decideCampaign(
      snap({ campaign: campaign({ updatePhase: 'aborting' }), plans: [plan('a', 1, 'updating'), plan('b', 1, 'updated')] }),
    );
    expect(d.abort).to.deep.equal([campaignPlanName('c', 'a')]);
    expect(d.create).to.deep.equal([]);
    expect(d.updateStatus).to.equal('aborting');
    const done = decideCampaign(
      snap({ campaign: campaign({ updatePhase: 'aborting' }), plans: [plan('a', 1, 'aborted'), plan('b', 1, 'updated')] }),
    );
    expect(done.updateStatus).to.equal('aborted');
  });

  it('a finished campaign stays finished for its generation (a late joiner does not reopen it)', () => {
    const d = decideCampaign(
      snap({ campaign: campaign({}, { updateStatus: 'updated', observedGeneration: 1 }), plans: [plan('a', 1, 'updated')] }),
    );
    expect(d.create).to.deep.equal([]);
    expect(d.updateStatus).to.equal('updated');
  });

  describe('bad input: Valid=False, nothing created', () => {
    const table: { name: string; s: () => CampaignSnapshot; problem: RegExp }[] = [
      {
        name: 'selector matching nothing',
        s: () => snap({ clusters: [] }),
        problem: /no Cluster in namespace ns matches the campaign's selection \(clusterSelector fleet=edge\)/,
      },
      {
        name: 'canary not selected',
        s: () => snap({ campaign: campaign({ rollout: { canary: { clusterNames: ['nope'] } } }) }),
        problem: /canary cluster not selected by the campaign: nope/,
      },
      {
        name: 'failure budget over 100%',
        s: () => snap({ campaign: campaign({ rollout: { failureBudget: '150%' } }) }),
        problem: /failureBudget 150% is over 100%/,
      },
      {
        // The CRD's bounds sit beside its int-or-string anyOf; an object stored before them is still refused here.
        name: 'every count out of bounds, each listed',
        s: () => snap({ campaign: campaign({ rollout: { canary: { count: -1 }, maxConcurrentClusters: 0, failureBudget: '0.5%' } }) }),
        problem:
          /spec\.rollout\.failureBudget "0\.5%" is neither a count nor a percentage\nspec\.rollout\.maxConcurrentClusters 0 is below 1\nspec\.rollout\.canary\.count -1 is below 0/,
      },
      {
        name: 'maxConcurrentClusters 0%',
        s: () => snap({ campaign: campaign({ rollout: { maxConcurrentClusters: '0%' } }) }),
        problem: /spec\.rollout\.maxConcurrentClusters 0% is below 1%/,
      },
      {
        name: 'an updater writing status',
        s: () =>
          snap({
            campaign: campaign({
              template: {
                controlPlane: {
                  sequence: 1,
                  updaters: [{ ...updater, responsibilities: [{ selectResource: 'Machine', path: '/status/x', value: 1 }] }],
                },
              },
            }),
          }),
        problem: /template.controlPlane updater ref: Machine \/status\/x is not writable/,
      },
      {
        name: 'a template kind not served',
        s: () => snap({ templateProblems: ['updater template kind FooTemplate (x/v1) is not served by the API server'] }),
        problem: /FooTemplate/,
      },
      {
        name: 'a cluster without a control plane for a control-plane template',
        s: () =>
          snap({
            clusters: [cluster('a', { controlPlaneName: undefined as never })],
            campaign: campaign({ template: { controlPlane: { sequence: 1, updaters: [updater] } } }),
          }),
        problem: /Cluster a: the template updates a control plane but the Cluster has no spec.controlPlaneRef/,
      },
      {
        name: 'an OnDelete MachineDeployment',
        s: () => snap({ clusters: [cluster('a', { machineDeployments: [{ name: 'a-md', labels: {}, strategy: 'OnDelete' }] })] }),
        problem: /Cluster a: MachineDeployment a-md uses the OnDelete strategy/,
      },
    ];
    for (const t of table)
      it(t.name, () => {
        const d = decideCampaign(t.s());
        expect(d.create).to.deep.equal([]);
        expect(d.phase).to.equal('Invalid');
        expect(d.problems.join('\n')).to.match(t.problem);
      });

    it('problems of many clusters are bounded: 20 named, the rest counted', () => {
      const clusters = Array.from({ length: 500 }, (_, i) =>
        cluster(`c${String(i).padStart(3, '0')}-${'x'.repeat(50)}`, { controlPlaneName: undefined as never }),
      );
      const d = decideCampaign(
        snap({ clusters, campaign: campaign({ template: { controlPlane: { sequence: 1, updaters: [updater] } } }) }),
      );
      expect(d.problems).to.have.length(21);
      expect(d.problems[20]).to.equal('... and 480 more clusters with problems');
      expect(d.create).to.deep.equal([]);
    });
  });

  it('buildPlanSpec: control plane by the Cluster ref, MachineDeployments by the first matching group', () => {
    const c = cluster('a', {
      machineDeployments: [
        { name: 'a-gpu', labels: { pool: 'gpu' } },
        { name: 'a-md', labels: {} },
      ],
    });
    const { spec, problems } = buildPlanSpec(
      {
        controlPlane: { sequence: 1, updaters: [updater] },
        machineDeployments: [
          { selector: { matchLabels: { pool: 'gpu' } }, sequence: 3, updaters: [updater] },
          { sequence: 2, updaters: [updater] },
        ],
      },
      c,
    );
    expect(problems).to.deep.equal([]);
    expect(spec.controlPlane?.name).to.equal('a-cp');
    expect(spec.machineDeployments?.map((m) => [m.name, m.sequence])).to.deep.equal([
      ['a-gpu', 3],
      ['a-md', 2],
    ]);
  });

  it("buildPlanSpec: the plans get the template soak, verification and the updaters' verify declarations", () => {
    const declared = { ...updater, verify: { osImage: 'Ubuntu 24.04.1 LTS', reboot: true } };
    const { spec } = buildPlanSpec(
      {
        soak: '2m',
        verification: { mode: 'Enabled', timeout: '15m' },
        machineDeployments: [{ sequence: 1, updaters: [declared] }],
      },
      cluster('a', { machineDeployments: [{ name: 'a-md', labels: {} }] }),
    );
    expect(spec.soak).to.equal('2m');
    expect(spec.verification).to.deep.equal({ mode: 'Enabled', timeout: '15m' });
    expect(spec.machineDeployments?.[0]?.updaters[0]?.verify).to.deep.equal({ osImage: 'Ubuntu 24.04.1 LTS', reboot: true });
    const plain = buildPlanSpec(
      { machineDeployments: [{ sequence: 1, updaters: [updater] }] },
      cluster('a', { machineDeployments: [{ name: 'a-md', labels: {} }] }),
    );
    expect(plain.spec).to.not.have.any.keys('soak', 'verification');
  });

  it('helpers: percentages, order, plan names', () => {
    expect(resolveIntOrPercent('10%', 95, 0, 'down')).to.equal(9);
    expect(resolveIntOrPercent('10%', 95, 0, 'up')).to.equal(10);
    expect(rolloutOrder([cluster('b'), cluster('a')], undefined).map((c) => c.name)).to.deep.equal(['a', 'b']);
    const long = campaignPlanName('x'.repeat(200), 'y'.repeat(63));
    expect(long.length).to.be.at.most(253);
    expect(campaignPlanName('x'.repeat(200), 'y'.repeat(63))).to.equal(long);
  });
});

describe('campaign-controller projectWaves', () => {
  it('canaries, then chunks of maxConcurrentClusters in rollout order; started waves from the plans', async () => {
    const { projectWaves } = await import('./decide.js');
    const fresh = projectWaves(snap({ campaign: campaign({ rollout: { canary: { count: 1 }, maxConcurrentClusters: 2 } }) }));
    expect(fresh.map((w) => [w.index, w.clusters.join(','), w.started])).to.deep.equal([
      [0, 'a', false],
      [1, 'b,c', false],
      [2, 'd,e', false],
    ]);
    const midway = projectWaves(
      snap({
        campaign: campaign({ rollout: { canary: { count: 1 }, maxConcurrentClusters: 2 } }),
        plans: [plan('a', 0, 'updated'), plan('b', 1, 'updating')],
      }),
    );
    expect(midway.map((w) => [w.index, w.clusters.join(','), w.started])).to.deep.equal([
      [0, 'a', true],
      [1, 'b', true],
      [2, 'c,d', false],
      [3, 'e', false],
    ]);
  });
});

describe('campaign-controller finished records', () => {
  it('a cluster whose finished plan was deleted keeps its recorded outcome: never started twice, failures still count', async () => {
    const { finishedRecordsOf } = await import('./decide.js');
    const clusters = [cluster('a'), cluster('b'), cluster('c')];
    const before = decideCampaign(
      snap({ clusters, plans: [plan('a', 1, 'updated'), plan('b', 2, 'failed')], campaign: campaign({ rollout: { failureBudget: 1 } }) }),
    );
    const records = finishedRecordsOf(before.rows, undefined);
    expect(records).to.deep.equal(['1:updated:a', '2:failed:b']);
    // Both plans pruned: a and b are not pending again; c goes in wave 3; b's failure still counts.
    const after = decideCampaign(
      snap({
        clusters,
        plans: [],
        campaign: campaign({ rollout: { failureBudget: 1 } }, { finishedClusters: records, updateStatus: 'updating' }),
      }),
    );
    expect(after.create.map((c) => [c.clusterName, c.wave])).to.deep.equal([['c', 3]]);
    expect(after.rows.find((r) => r.name === 'b')).to.include({ state: 'failed', wave: 2 });
    const halted = decideCampaign(
      snap({
        clusters,
        plans: [plan('c', 3, 'failed')],
        campaign: campaign({ rollout: { failureBudget: 1 } }, { finishedClusters: records }),
      }),
    );
    expect(halted.halted).to.equal('BudgetSpent');
  });
});

describe('campaign-controller per-cluster validation (the plan validation, before any plan)', () => {
  const kcp = (name: string, version: string) => ({
    apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
    kind: 'KubeadmControlPlane',
    metadata: { name, namespace: 'ns', labels: { 'cluster.x-k8s.io/cluster-name': name.replace(/-cp$/, '') } },
    spec: { version, replicas: 1 },
  });
  const md = (clusterName: string, version: string) => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'MachineDeployment',
    metadata: { name: `${clusterName}-md`, namespace: 'ns', labels: { 'cluster.x-k8s.io/cluster-name': clusterName } },
    spec: { clusterName, template: { spec: { version } } },
  });
  // A cluster as scope.ts builds it: with the Cluster, its control plane and MachineDeployment objects.
  const shaped = (name: string, cpVersion: string, mdVersion = cpVersion): ClusterView =>
    cluster(name, {
      machineDeployments: [{ name: `${name}-md`, labels: {} }],
      objects: {
        cluster: {
          apiVersion: 'cluster.x-k8s.io/v1beta2',
          kind: 'Cluster',
          metadata: { name, namespace: 'ns', labels: { fleet: 'edge' } },
          spec: { controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: `${name}-cp` } },
        },
        controlPlane: {
          kind: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane' },
          object: kcp(`${name}-cp`, cpVersion),
        },
        machineDeployments: [md(name, mdVersion)],
      },
    });
  const three = (): ClusterView[] => [shaped('a', 'v1.29.4'), shaped('b', 'v1.28.9'), shaped('c', 'v1.29.0')];

  it('a version skip on one cluster of three: Valid=False naming that cluster and the rule, no plan', () => {
    const d = decideCampaign(snap({ clusters: three() }));
    expect(d.phase).to.equal('Invalid');
    expect(d.create).to.deep.equal([]);
    expect(d.problems).to.have.length(1);
    expect(d.problems[0]).to.match(
      /^Cluster b: controlPlane b-cp updater ref: Machine \/spec\/version v1\.30\.1 breaks upgrade rule no-skipped-minor/,
    );
  });

  it('the same template on clusters that allow it is valid and starts', () => {
    const d = decideCampaign(snap({ clusters: [shaped('a', 'v1.29.4'), shaped('c', 'v1.29.0')] }));
    expect(d.problems).to.deep.equal([]);
    expect(d.create.map((c) => c.clusterName)).to.deep.equal(['a']);
  });

  it('the plan checks run per cluster: a missing control plane object and an OnDelete MachineDeployment are named', () => {
    const a = shaped('a', 'v1.29.4');
    a.objects!.controlPlane = { kind: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane' } };
    const b = shaped('b', 'v1.29.4');
    (b.objects!.machineDeployments[0]!['spec'] as Record<string, unknown>)['rollout'] = { strategy: { type: 'OnDelete' } };
    (b.objects!.machineDeployments[0]!['spec'] as Record<string, unknown>)['strategy'] = { type: 'OnDelete' };
    const d = decideCampaign(snap({ clusters: [a, b] }));
    expect(d.problems.join('\n')).to.match(/Cluster a: KubeadmControlPlane ns\/a-cp not found/);
    expect(d.problems.join('\n')).to.match(/Cluster b: MachineDeployment b-md uses the OnDelete rollout strategy/);
  });

  it('found invalid after the campaign started: skipped with the reason, the others go on, pending again once fixed', () => {
    const started = [plan('a', 1, 'updated')];
    const d = decideCampaign(snap({ clusters: three(), plans: started }));
    expect(d.problems).to.deep.equal([]);
    expect(d.create.map((c) => c.clusterName)).to.deep.equal(['c']);
    const b = d.rows.find((r) => r.name === 'b')!;
    expect(b).to.include({ state: 'skipped', invalid: true });
    expect(b.reason).to.match(/^invalid for this cluster, not started: .*no-skipped-minor/);
    const fixed = decideCampaign(
      snap({
        clusters: [shaped('a', 'v1.29.4'), shaped('b', 'v1.29.9'), shaped('c', 'v1.29.0')],
        plans: [...started, plan('c', 2, 'updated')],
      }),
    );
    expect(fixed.create.map((c) => c.clusterName)).to.deep.equal(['b']);
    const done = decideCampaign(snap({ clusters: three(), plans: [...started, plan('c', 2, 'updated')] }));
    expect(done.phase).to.equal('Completed');
    expect(done.message).to.match(/1 skipped as invalid/);
  });

  it("the pre-start check's findings (dry-run, uncovered drift) are the cluster's problems; a check that could not run holds the campaign", () => {
    const a = shaped('a', 'v1.29.4');
    const c = shaped('c', 'v1.29.0');
    a.objects!.prestart = { generation: 0, schemaProblems: ['a-md: the API server rejects it'], uncovered: ['a-cp: drift'] };
    const invalid = decideCampaign(snap({ clusters: [a, c] }));
    expect(invalid.phase).to.equal('Invalid');
    expect(invalid.problems).to.deep.equal(['Cluster a: a-md: the API server rejects it; a-cp: drift']);

    // A failed read is no verdict: nothing starts before the first plan, Valid is neither True nor False.
    const unread = shaped('a', 'v1.29.4');
    unread.checkError = 'the pre-start check could not run: HTTP 503';
    const waiting = decideCampaign(snap({ clusters: [unread, shaped('c', 'v1.29.0')] }));
    expect(waiting.problems).to.deep.equal([]);
    expect(waiting.checking).to.deep.equal(['Cluster a: the pre-start check could not run: HTTP 503']);
    expect(waiting.create).to.deep.equal([]);
    expect(waiting.phase).to.equal('Waiting');
    const status = campaignStatus(snap().campaign as never, waiting, [], new Date(NOW));
    expect(status.conditions?.find((x) => x.type === 'Valid')).to.include({ status: 'Unknown', reason: 'Checking' });

    // After the start, such a cluster waits while the others go on.
    const later = decideCampaign(
      snap({ clusters: [unread, shaped('c', 'v1.29.0'), shaped('d', 'v1.29.0')], plans: [plan('c', 1, 'updated')] }),
    );
    expect(later.create.map((x) => x.clusterName)).to.deep.equal(['d']);
    expect(later.rows.find((r) => r.name === 'a')).to.include({ state: 'waiting' });
  });
});

describe('campaign-controller maintenance windows and alert gate (injected clock)', () => {
  // NOW is Thursday 2026-01-01 00:10 UTC.
  const saturdayNight = { days: ['Sat'], start: '22:00', duration: '4h', timeZone: 'UTC' };
  const acrossMidnight = { start: '23:00', duration: '2h', timeZone: 'UTC' }; // open 23:00-01:00 every day
  const at = (now: string, spec: Partial<InPlaceUpdateCampaign['spec']>, o: Partial<CampaignSnapshot> = {}) =>
    decideCampaign(snap({ now, campaign: campaign(spec), ...o }));

  it('outside every window no cluster starts: phase, message in the window zone, requeue at the opening', () => {
    const d = at(NOW, { maintenanceWindows: [saturdayNight] });
    expect(d.create).to.deep.equal([]);
    expect(d.problems).to.deep.equal([]);
    expect(d.phase).to.equal('WaitingForMaintenanceWindow');
    expect(d.updateStatus).to.equal('pending');
    expect(d.message).to.equal(
      'maintenance window closed until Sat 22:00 UTC (2026-01-03T22:00:00.000Z): wave 1 (1 clusters) starts when it opens',
    );
    expect(d.requeueAfterMs).to.equal(Date.parse('2026-01-03T22:00:00Z') - Date.parse(NOW));
  });

  it('inside a window (one crossing midnight) the wave starts, and the plans carry the campaign windows', () => {
    const d = at(NOW, { maintenanceWindows: [acrossMidnight] });
    expect(d.phase).to.equal('Wave');
    expect(d.create.map((c) => c.clusterName)).to.deep.equal(['a']);
    expect(d.create[0]!.spec.maintenanceWindows).to.deep.equal([acrossMidnight]);
    expect(d.window.state).to.include({ open: true });
    expect(d.window.state!.nextChange.toISOString()).to.equal('2026-01-01T01:00:00.000Z');
  });

  it("the template's own windows (even empty) replace the campaign's in the plans; the campaign's still gate new clusters", () => {
    const t = campaign().spec.template;
    const own = at('2026-01-03T23:00:00Z', {
      maintenanceWindows: [saturdayNight],
      template: { ...t, maintenanceWindows: [acrossMidnight] },
    });
    expect(own.create[0]!.spec.maintenanceWindows).to.deep.equal([acrossMidnight]);
    const none = at('2026-01-03T23:00:00Z', { maintenanceWindows: [saturdayNight], template: { ...t, maintenanceWindows: [] } });
    expect(none.create).to.have.length(1);
    expect(none.create[0]!.spec).not.to.have.property('maintenanceWindows');
    const closed = at(NOW, { maintenanceWindows: [saturdayNight], template: { ...t, maintenanceWindows: [acrossMidnight] } });
    expect(closed.create).to.deep.equal([]);
  });

  it('a window closing during a wave: the running plans are left alone, nothing new starts', () => {
    const d = at(
      '2026-01-04T02:30:00Z',
      { maintenanceWindows: [saturdayNight], rollout: { maxConcurrentClusters: 2 } },
      {
        plans: [plan('a', 1, 'updating'), plan('b', 1, 'updated')],
      },
    );
    expect(d.phase).to.equal('Wave');
    expect(d.create).to.deep.equal([]);
    expect([...d.pause, ...d.abort, ...d.resume]).to.deep.equal([]);
    const after = at(
      '2026-01-04T02:30:00Z',
      { maintenanceWindows: [saturdayNight], rollout: { maxConcurrentClusters: 2 } },
      {
        plans: [plan('a', 1, 'updated'), plan('b', 1, 'updated')],
      },
    );
    expect(after.phase).to.equal('WaitingForMaintenanceWindow');
    expect(after.create).to.deep.equal([]);
  });

  it('daylight saving: a 01:30 Europe/Berlin window opens at 00:30 UTC in winter and 23:30 UTC the day before in summer', () => {
    const berlin = { start: '01:30', duration: '1h', timeZone: 'Europe/Berlin' };
    expect(at('2026-01-01T00:45:00Z', { maintenanceWindows: [berlin] }).create).to.have.length(1);
    const summer = at('2026-07-01T00:45:00Z', { maintenanceWindows: [berlin] });
    expect(summer.phase).to.equal('WaitingForMaintenanceWindow');
    expect(summer.message).to.match(/closed until \w{3} 01:30 Europe\/Berlin \(2026-07-01T23:30:00.000Z\)/);
  });

  it('bad windows and alert gates (campaign and template): Valid=False naming each path, nothing starts', () => {
    const t = campaign().spec.template;
    const d = at(NOW, {
      maintenanceWindows: [{ start: '25:00', duration: '1h', timeZone: 'Europe/Atlantis' }],
      alertGate: { url: 'not a url', holdTimeout: '10m' },
      template: {
        ...t,
        maintenanceWindows: [{ start: '22:00', duration: '0s', timeZone: 'UTC' }],
        alertGate: { url: 'http://p:9090', matchers: ['severity=critical'], holdTimeout: '1h' },
      },
    });
    expect(d.phase).to.equal('Invalid');
    expect(d.create).to.deep.equal([]);
    const all = d.problems.join('\n');
    expect(all).to.match(/^spec\.maintenanceWindows\[0\]\.start/m);
    expect(all).to.match(/^spec\.maintenanceWindows\[0\]\.timeZone/m);
    expect(all).to.match(/^spec\.alertGate\.url/m);
    expect(all).to.match(/^spec\.template\.maintenanceWindows\[0\]\.duration/m);
    expect(all).to.match(/^spec\.template\.alertGate\.matchers\[0\]/m);
  });

  const allowed = { endpoints: [{ url: 'http://prometheus:9090' }] };

  it('the alert gate goes down into the plans unless the template sets its own', () => {
    const gate = { url: 'http://prometheus:9090', matchers: ['severity="critical"'], holdTimeout: '30m' };
    expect(at(NOW, { alertGate: gate }, { alertGatePolicy: allowed }).create[0]!.spec.alertGate).to.deep.equal(gate);
    const own = { ...gate, holdTimeout: '5m' };
    const t = campaign().spec.template;
    expect(
      at(NOW, { alertGate: gate, template: { ...t, alertGate: own } }, { alertGatePolicy: allowed }).create[0]!.spec.alertGate,
    ).to.deep.equal(own);
  });

  it("a gate the operator's alert-gate policy does not allow (campaign or template) is Valid=False naming it; no plan is created", () => {
    const t = campaign().spec.template;
    const evil = { url: 'http://prometheus:9090@evil.example:9090', holdTimeout: '30m' };
    const other = { url: 'http://prometheus.:9090', holdTimeout: '30m' };
    const d = at(NOW, { alertGate: evil, template: { ...t, alertGate: other } }, { alertGatePolicy: allowed });
    expect(d.phase).to.equal('Invalid');
    expect(d.create).to.deep.equal([]);
    const all = d.problems.join('\n');
    expect(all).to.contain('spec.alertGate.url: "http://prometheus:9090@evil.example:9090" carries user info');
    expect(all).to.contain('spec.template.alertGate.url: "http://prometheus.:9090" refused by the alert-gate policy');
    // No policy at all: every gate is refused, each problem once.
    const none = at(NOW, { alertGate: { url: 'http://prometheus:9090', holdTimeout: '30m' } });
    expect(none.phase).to.equal('Invalid');
    expect(none.problems.filter((p) => p.startsWith('spec.alertGate.url'))).to.deep.equal([
      'spec.alertGate.url: "http://prometheus:9090" refused: the operator allows no alert endpoint (the plan controller runs without --alert-gate-policy; docs/operations.md "Alert gate")',
    ]);
  });
});

describe('campaign-controller window status and Events', () => {
  it('status.maintenanceWindow follows the window; Events only on a change of the recorded state', async () => {
    const { campaignEvents, campaignStatus } = await import('./status.js');
    const c = campaign({ maintenanceWindows: [{ days: ['Sat'], start: '22:00', duration: '4h', timeZone: 'UTC' }] });
    const closed = decideCampaign(snap({ campaign: c }));
    const s1 = campaignStatus(c, closed, [], new Date(NOW));
    expect(s1.maintenanceWindow).to.include({ state: 'Closed', nextChange: '2026-01-03T22:00:00.000Z' });
    expect(s1.conditions?.find((x) => x.type === 'Ready')?.reason).to.equal('WaitingForMaintenanceWindow');
    // First observation of a closed window: one Event (why nothing starts); the same state again: none.
    expect(campaignEvents(undefined, s1, closed).map((e) => e.reason)).to.include('MaintenanceWindowClosed');
    expect(campaignEvents(s1, s1, closed).filter((e) => e.reason.startsWith('MaintenanceWindow'))).to.deep.equal([]);
    const opening = '2026-01-03T22:00:05Z';
    const c2 = { ...c, status: s1 };
    const open = decideCampaign(snap({ campaign: c2, now: opening }));
    const s2 = campaignStatus(c2, open, [], new Date(opening));
    expect(s2.maintenanceWindow).to.include({ state: 'Open', nextChange: '2026-01-04T02:00:00.000Z' });
    const ev = campaignEvents(s1, s2, open).filter((e) => e.reason.startsWith('MaintenanceWindow'));
    expect(ev.map((e) => e.reason)).to.deep.equal(['MaintenanceWindowOpened']);
    const s3 = campaignStatus(
      { ...c, status: s2 },
      decideCampaign(snap({ campaign: { ...c, status: s2 }, now: '2026-01-04T02:00:01Z' })),
      [],
      new Date('2026-01-04T02:00:01Z'),
    );
    expect(campaignEvents(s2, s3, open).find((e) => e.reason === 'MaintenanceWindowClosed')?.message).to.match(/no new cluster starts/);
  });
});

describe('campaign-controller examples/campaign-windows.yaml', () => {
  it('is valid; on a Wednesday noon in Berlin it waits for Thursday 01:00, then starts the canaries with the windows and the alert gate', async () => {
    const { readFileSync } = await import('node:fs');
    const { parse } = await import('yaml');
    const doc = parse(
      readFileSync(new URL('../../examples/campaign-windows.yaml', import.meta.url), 'utf8'),
    ) as CampaignSnapshot['campaign'];
    const c = { ...doc, metadata: { ...doc.metadata, generation: 1 } };
    // Its alert endpoint is one examples/alert-gate-policy.yaml allows; without that policy the campaign is refused.
    const alertGatePolicy = parseAlertGatePolicy(
      parse(readFileSync(new URL('../../examples/alert-gate-policy.yaml', import.meta.url), 'utf8')),
    );
    expect(decideCampaign(snap({ campaign: c, now: '2026-06-03T10:00:00Z' })).problems[0]).to.match(/^spec\.alertGate\.url: .* refused/);
    const noon = decideCampaign(snap({ campaign: c, now: '2026-06-03T10:00:00Z', alertGatePolicy }));
    expect(noon.problems).to.deep.equal([]);
    expect(noon.phase).to.equal('WaitingForMaintenanceWindow');
    expect(noon.message).to.match(/closed until Thu 01:00 Europe\/Berlin \(2026-06-03T23:00:00.000Z\)/);
    const night = decideCampaign(snap({ campaign: c, now: '2026-06-03T23:30:00Z', alertGatePolicy }));
    expect(night.create.map((x) => x.clusterName)).to.deep.equal(['a', 'b']);
    expect(night.create[0]!.spec.maintenanceWindows).to.have.length(2);
    expect(night.create[0]!.spec.alertGate?.matchers).to.deep.equal(['severity="critical"']);
    expect(night.create[0]!.spec.maintenanceWindowEnd).to.equal('Finish');
  });
});

describe('campaign-controller machine progress', () => {
  it('marks the machine total partial ("+") while clusters have not counted their machines yet, final once all have', () => {
    const all = ['a', 'b', 'c', 'd', 'e'];
    const early = [plan('a', 0, 'updated'), plan('b', 0, 'updating')];
    const d1 = decideCampaign(snap({ plans: early }));
    expect(campaignStatus(snap().campaign as never, d1, early, new Date(NOW)).machineProgress).to.equal('3/6+');
    // A plan just created, not reported yet (no updateStatus): its machines are unknown, the total still partial.
    const created = [...all.slice(0, 4).map((n) => plan(n, 1, 'updated')), plan('e', 1, undefined, { machines: 0 })];
    const d2 = decideCampaign(snap({ plans: created }));
    expect(campaignStatus(snap().campaign as never, d2, created, new Date(NOW)).machineProgress).to.equal('12/12+');
    const reported = all.map((n) => plan(n, 1, 'updated'));
    const d3 = decideCampaign(snap({ plans: reported }));
    expect(campaignStatus(snap().campaign as never, d3, reported, new Date(NOW)).machineProgress).to.equal('15/15');
  });
});
