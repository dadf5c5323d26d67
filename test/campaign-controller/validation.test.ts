// Integration: the campaign validates its template against every selected cluster with the plan's own checks
// (upgrade rules against the cluster's control plane and MachineDeployments) before it creates a single plan.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Clusters, InPlaceUpdateCampaigns } from '../../src/api/index.js';
import { applyInventory, buildFleetInventory, fleetOf } from '../../tools/capi-sim/index.js';
import { refUpdater } from '../e2e/harness.js';
import { cli } from '../support/cli.js';
import { campaignObject, conditionOf, FLEET_LABEL, useFleetEnv } from './fleet.js';

describe('campaign controller: per-cluster validation before anything starts', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();

  it('a version skip on one cluster of three: Valid=False naming that cluster, no plan created', async () => {
    const p = await env().platform();
    // v-001 runs v1.29.0 (the others v1.30.0): the template's v1.31.0 skips a minor there only.
    const [a, b, c] = fleetOf(3, 'v', FLEET_LABEL).map((x) => ({ ...x, shape: 'single-node' as const }));
    await applyInventory(p.client, buildFleetInventory({ namespace: p.ns, version: 'v1.29.0', clusters: [b!] }));
    const fleet = await start(p, [a!, c!]);
    const updater = refUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] });

    // The preview says the same before anything is applied: that cluster's problem, the others' changes.
    const dir = mkdtempSync(join(tmpdir(), 'campaign-validation-'));
    try {
      const file = join(dir, 'c.yaml');
      writeFileSync(file, stringify(campaignObject(p.ns, 'skip', { updater, rollout: { maxConcurrentClusters: 3 } })));
      const preview = await cli('preview', '-f', file, '--kubeconfig', env().kubeconfigPath);
      expect(preview.code).to.equal(1);
      expect(preview.out).to.match(/3 clusters selected, NOT VALID/);
      expect(preview.out).to.match(
        /✗ Cluster v-001: controlPlane v-001-cp updater ref: Machine \/spec\/version v1\.31\.0 breaks upgrade rule no-skipped-minor/,
      );
      expect(preview.out).to.match(/NOT OK v-001 \(wave 1\)/);
      expect(preview.out).to.match(/OK +v-000 \(wave 1\): 1 machines; ControlPlane v-000-cp x1/);
      expect(preview.out).to.match(/changes Machine \/spec\/version -> v1\.31\.0 \(ref\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'skip', { updater, rollout: { maxConcurrentClusters: 3 } }));

    const invalid = await fleet.waitCampaign('skip', (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False');
    const msg = conditionOf(invalid, 'Valid')?.message ?? '';
    expect(msg).to.match(
      /Cluster v-001: controlPlane v-001-cp updater ref: Machine \/spec\/version v1\.31\.0 breaks upgrade rule no-skipped-minor/,
    );
    expect(msg).not.to.match(/v-000|v-002/);
    expect(invalid.status?.phase).to.equal('Invalid');
    expect(await fleet.plans()).to.deep.equal([]);

    // Taking v-001 out of the selection makes the campaign valid: the other two start.
    await p.client.patch(Clusters, p.ns, 'v-001', { metadata: { labels: { fleet: null } } }, { type: 'merge' });
    await fleet.waitCampaign(
      'skip',
      (x) => conditionOf(x, 'Valid')?.status === 'True' && (x.status?.clusters?.selected ?? 0) === 2,
      'valid over 2',
    );
    const plans = await fleet.plans('skip');
    expect(plans.map((x) => x.spec.clusterName).sort()).to.deep.equal(['v-000', 'v-002']);
  });
});
