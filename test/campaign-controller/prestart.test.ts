// The plan's pre-start check per cluster, run by the campaign before the cluster's plan exists: the updater template
// objects, uncovered drift and the commit dry-run. Against an API server: (1) the check's cost is O(targets) — one
// label-selected Machine list with limit 1 per target, objects read by name, no kind listed whole — its dry-runs are
// shared across clusters and its result memoised; (2) through the campaign controller, each kind of finding makes the
// campaign Valid=False naming the cluster, with no plan created, and fixing it starts the campaign.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  Clusters,
  InPlaceUpdateCampaigns,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineUpdates,
  OSImageUpdateTaskTemplates,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../../src/api/index.js';
import { CampaignPrestart, type ClusterToCheck } from '../../src/campaign-controller/prestart.js';
import type { KubeClient, ListOptions, PatchOptions } from '../../src/runtime/pure/types.js';
import { applyInventory, buildFleetInventory, capiCrdDirs, DevMachineTemplates } from '../../tools/capi-sim/index.js';
import { refUpdater } from '../e2e/harness.js';
import { cli } from '../support/cli.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { campaignObject, conditionOf, FLEET_LABEL, useFleetEnv, type Campaign } from './fleet.js';

describe('campaign pre-start check: cost per target, not per machine', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let ns = '';
  const calls: string[] = [];

  // Records every call by verb and kind (list options and dry-run flag included); everything goes through unchanged.
  const counting = (c: KubeClient): KubeClient => ({
    ...c,
    get: (res, n, name) => (calls.push(`get ${res.kind}`), c.get(res, n, name)),
    list: (res, n, o?: ListOptions) => (calls.push(`list ${res.kind}${o?.limit ? ` limit=${o.limit}` : ''}`), c.list(res, n, o)),
    create: (res, obj, o) => c.create(res, obj, o),
    update: (res, obj, o) => c.update(res, obj, o),
    delete: (res, n, name, o) => c.delete(res, n, name, o),
    watch: (res, n, o, on) => c.watch(res, n, o, on),
    resolve: (g, k) => c.resolve(g, k),
    patch: (res, n, name, body, o: PatchOptions) => (
      calls.push(`patch ${res.kind}${o.dryRun ? ' dry-run' : ''}`),
      c.patch(res, n, name, body, o)
    ),
  });

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('campaign-prestart');
    // Two clusters of 3 control-plane machines and 6 workers each: 18 machines, 4 targets.
    const clusters = ['a', 'b'].map((name) => ({ name, shape: 'with-workers' as const, controlPlaneReplicas: 3, workers: 6 }));
    await applyInventory(env.client, buildFleetInventory({ namespace: ns, version: 'v1.30.0', clusters }));
  });
  after(async () => {
    await env?.stop();
  });

  const toCheck = async (cluster: string): Promise<ClusterToCheck> => {
    const c = (await env.client.get(Clusters, ns, cluster))!;
    const cp = (await env.client.get(KubeadmControlPlanes, ns, `${cluster}-cp`))!;
    const mds = (await env.client.list(MachineDeployments, ns)).items.filter((m) => m.metadata.name?.startsWith(`${cluster}-`));
    const plan = {
      metadata: { name: `camp-${cluster}`, namespace: ns },
      spec: {
        clusterName: cluster,
        controlPlane: { name: `${cluster}-cp`, sequence: 1, updaters: [refUpdater()] },
        machineDeployments: [
          {
            name: `${cluster}-md-0`,
            sequence: 2,
            updaters: [
              refUpdater({
                responsibilities: [
                  { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' },
                  { selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04' },
                ],
              }),
            ],
          },
        ],
      },
    } as InPlaceUpdatePlan;
    return {
      name: cluster,
      plan,
      objects: {
        cluster: c,
        controlPlane: { kind: { apiGroup: KubeadmControlPlanes.group, kind: 'KubeadmControlPlane' }, object: cp },
        machineDeployments: mds,
      },
    };
  };

  it('lists one machine per target (limit 1), reads objects by name, shares dry-runs across clusters, memoises', async () => {
    const check = new CampaignPrestart(counting(env.client), { template: () => Promise.resolve({}) });
    const clusters = [await toCheck('a'), await toCheck('b')];
    calls.length = 0;
    const got = await check.check(ns, 'uid/1', { lookups: [], version: '' }, clusters);
    for (const name of ['a', 'b']) {
      const r = got.get(name)!;
      expect(r, name).to.have.property('result');
      expect('result' in r && r.result.schemaProblems, name).to.deep.equal([]);
      expect('result' in r && r.result.uncovered, name).to.deep.equal([]);
    }
    // 4 targets: 4 Machine lists, each limit 1; never a Machine GET, never a whole provider kind listed.
    expect(calls.filter((c) => c.startsWith('list Machine'))).to.deep.equal(Array(4).fill('list Machine limit=1'));
    expect(calls.filter((c) => c.startsWith('list ') && !c.startsWith('list Machine '))).to.deep.equal([]);
    expect(calls).not.to.include('get Machine');
    // Per target: its machine's InfraMachine and BootstrapConfig and the owner's two templates, by name.
    expect(calls.filter((c) => c.startsWith('get ')).length).to.be.at.most(4 * 4);
    // The same patches on the same kinds: the second cluster's are answered by the first's dry-runs.
    const dryRuns = calls.filter((c) => c.endsWith('dry-run'));
    expect(dryRuns.length).to.be.greaterThan(0);
    expect(dryRuns.length).to.be.at.most(2, dryRuns.join(', '));
    // Nothing read changed: the memo answers without a request.
    calls.length = 0;
    await check.check(ns, 'uid/1', { lookups: [], version: '' }, clusters);
    expect(calls).to.deep.equal([]);
    // A new campaign generation checks again.
    await check.check(ns, 'uid/2', { lookups: [], version: '' }, clusters.slice(0, 1));
    expect(calls.filter((c) => c.startsWith('list Machine'))).to.have.length(2);
  });
});

describe('campaign controller: the plan pre-start check per cluster before the first plan', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();
  // v-000 single-node, v-001 three-node, v-002 with-workers (a MachineDeployment: only it gets the md group's updaters).
  const fleetClusters = (prefix: string) =>
    ['single-node', 'three-node', 'with-workers'].map((shape, i) => ({
      name: `${prefix}-00${i}`,
      shape: shape as 'single-node',
      labels: FLEET_LABEL,
    }));
  const withMdUpdater = (ns: string, name: string, md: ReturnType<typeof refUpdater>): Campaign =>
    campaignObject(ns, name, {
      rollout: { maxConcurrentClusters: 3 },
      template: { controlPlane: { sequence: 1, updaters: [refUpdater()] }, machineDeployments: [{ sequence: 2, updaters: [md] }] },
    });
  const invalidMessage = async (fleet: Awaited<ReturnType<typeof start>>, name: string): Promise<string> => {
    const c = await fleet.waitCampaign(name, (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False');
    expect(c.status?.phase).to.equal('Invalid');
    return conditionOf(c, 'Valid')?.message ?? '';
  };

  it('an updater template object missing (used by one cluster only): Valid=False naming that cluster and the object; creating it starts the campaign', async () => {
    const p = await env().platform();
    const fleet = await start(p, fleetClusters('t'));
    const ref = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-missing' };
    await p.client.create(InPlaceUpdateCampaigns, withMdUpdater(p.ns, 'tmpl', refUpdater({ name: 'os', updaterUpdateTemplateRef: ref })));
    const msg = await invalidMessage(fleet, 'tmpl');
    expect(msg).to.match(
      /Cluster t-002: machineDeployment t-002-md-0 updater os: template OSImageUpdateTaskTemplate \S+\/os-image-missing not found/,
    );
    expect(msg).not.to.match(/t-000|t-001/);
    expect(await fleet.plans()).to.deep.equal([]);
    expect((await p.client.list(MachineUpdates, p.ns)).items).to.deep.equal([]);

    // The template appears: the campaign is valid and starts all three clusters (one wave).
    await p.client.create(OSImageUpdateTaskTemplates, {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, namespace: p.ns },
      spec: { template: { spec: {} } },
    } as KubeObject);
    await fleet.waitCampaign('tmpl', (x) => conditionOf(x, 'Valid')?.status === 'True', 'Valid=True', 90_000);
    await fleet.waitCampaign('tmpl', (x) => (x.status?.clusters?.selected ?? 0) === 3, '3 selected');
    const plans = await fleet.plans('tmpl');
    expect(plans.map((x) => x.spec.clusterName).sort()).to.deep.equal(['t-000', 't-001', 't-002']);
  });

  it("uncovered drift on one cluster (its owner's template wants another image, no updater covers it): Valid=False naming it", async () => {
    const p = await env().platform();
    const fleet = await start(p, fleetClusters('d'));
    // d-001's control plane wants a new OS image; the campaign only updates the Kubernetes version.
    await p.client.patch(
      DevMachineTemplates,
      p.ns,
      'd-001-cp',
      { spec: { template: { spec: { backend: { docker: { customImage: 'ubuntu-24.04' } } } } } },
      { type: 'merge' },
    );
    await p.client.create(InPlaceUpdateCampaigns, withMdUpdater(p.ns, 'drift', refUpdater()));
    const msg = await invalidMessage(fleet, 'drift');
    expect(msg).to.match(
      /Cluster d-001: d-001-cp: InfraMachine \/spec\/backend\/docker\/customImage is uncovered on 1 machine\(s\) \(\S+ has ubuntu-22\.04-k8s-1\.30\.0, its owner wants ubuntu-24\.04\)/,
    );
    expect(msg).not.to.match(/d-000|d-002/);
    expect(await fleet.plans()).to.deep.equal([]);
  });

  it('a commit value the schema prunes on one cluster: Valid=False (dry-run), the preview says the same; fixing the campaign starts it', async () => {
    const p = await env().platform();
    const fleet = await start(p, fleetClusters('s'));
    const bad = refUpdater({
      responsibilities: [
        { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' },
        { selectResource: 'InfraMachine', path: '/spec/notAField', value: 'x' },
      ],
    });
    const campaign = withMdUpdater(p.ns, 'schema', bad);
    const pruned =
      /Cluster s-002: machineDeployment s-002-md-0: InfraMachine \/spec\/notAField would not be kept by DevMachine \S+ \(dry-run: wanted "x", the server keeps nothing\)/;

    const dir = mkdtempSync(join(tmpdir(), 'campaign-prestart-'));
    try {
      const file = join(dir, 'c.yaml');
      writeFileSync(file, stringify(campaign));
      const preview = await cli('preview', '-f', file, '--kubeconfig', env().kubeconfigPath);
      expect(preview.code).to.equal(1);
      expect(preview.out).to.match(/3 clusters selected, NOT VALID/);
      expect(preview.out).to.match(new RegExp(`✗ ${pruned.source}`));
      expect(preview.out).to.match(/NOT OK s-002 \(wave 1\)/);
      expect(preview.out).to.match(/OK +s-000 \(wave 1\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    await p.client.create(InPlaceUpdateCampaigns, campaign);
    const msg = await invalidMessage(fleet, 'schema');
    expect(msg).to.match(pruned);
    expect(msg).not.to.match(/s-000|s-001/);
    expect(await fleet.plans()).to.deep.equal([]);

    // Fixed (the responsibility removed): a new generation, checked again, valid: the three clusters start.
    await p.client.patch(
      InPlaceUpdateCampaigns,
      p.ns,
      'schema',
      {
        spec: {
          template: {
            controlPlane: { sequence: 1, updaters: [refUpdater()] },
            machineDeployments: [{ sequence: 2, updaters: [refUpdater()] }],
          },
        },
      },
      { type: 'merge' },
    );
    await fleet.waitCampaign('schema', (x) => conditionOf(x, 'Valid')?.status === 'True', 'Valid=True', 90_000);
    await fleet.waitCampaign('schema', (x) => (x.status?.clusters?.selected ?? 0) === 3, '3 selected');
    const plans = await fleet.plans('schema');
    expect(plans.map((x) => x.spec.clusterName).sort()).to.deep.equal(['s-000', 's-001', 's-002']);
  });
});
