// The CLI on campaigns, against the embedded API server with a small fleet: `inplace preview -f campaign.yaml` (waves,
// per-cluster plan preview, invalid campaigns refused), `inplace status campaign/NAME` (waves -> clusters), and
// `inplace pause|resume|abort campaign/NAME`.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { InPlaceUpdateCampaigns } from '../../src/api/index.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { cli } from '../support/cli.js';
import { campaignObject, FLEET_LABEL, manualUpdater, waitManualTasks, useFleetEnv } from './fleet.js';

describe('CLI on campaigns', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'campaign-cli-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('preview shows the waves and per cluster what changes; an invalid campaign exits 1 naming the problem; nothing is created', async () => {
    const p = await env().platform();
    const fleet = await start(p, fleetOf(5, 'pv', FLEET_LABEL));
    const kc = ['--kubeconfig', env().kubeconfigPath];
    const file = join(dir, 'c.yaml');
    writeFileSync(
      file,
      stringify(campaignObject(p.ns, 'pv', { rollout: { canary: { clusterNames: ['pv-002'] }, maxConcurrentClusters: 2 } })),
    );
    const ok = await cli('preview', '-f', file, ...kc);
    expect(ok.err).to.equal('');
    expect(ok.code).to.equal(0);
    expect(ok.out).to.match(/5 clusters selected, VALID/);
    expect(ok.out).to.match(/wave 0 \(canary\): 1 clusters: pv-002/);
    expect(ok.out).to.match(/wave 1: 2 clusters: pv-000, pv-001/);
    expect(ok.out).to.match(/wave 2: 2 clusters: pv-003, pv-004/);
    // pv-002 is a with-workers cluster: a control plane and one MachineDeployment of 2.
    expect(ok.out).to.match(
      /OK +pv-002 \(wave 0\): 3 machines; ControlPlane pv-002-cp x1 \(seq 1\), MachineDeployment pv-002-md-0 x2 \(seq 2\)/,
    );
    expect(ok.out).to.match(/changes Machine \/spec\/version -> v1.30.1 \(ref\)/);

    writeFileSync(file, stringify(campaignObject(p.ns, 'pv', { rollout: { canary: { clusterNames: ['ghost'] } } })));
    const bad = await cli('preview', '-f', file, ...kc);
    expect(bad.code).to.equal(1);
    expect(bad.out)
      .to.match(/NOT VALID/)
      .and.to.match(/canary cluster not selected by the campaign: ghost/);
    expect((await p.client.list(InPlaceUpdateCampaigns, p.ns)).items).to.deep.equal([]);
    expect(await fleet.plans()).to.deep.equal([]);
  });

  it('status shows waves -> clusters; pause, resume and abort act on the campaign', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(3, 'st', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    const kc = ['--kubeconfig', env().kubeconfigPath, '-n', p.ns];
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'st', { updater: manualUpdater(), rollout: { canary: { count: 1 } } }),
    );
    await waitManualTasks(p, 'st-000');
    await fleet.waitCampaign('st', (c) => c.status?.clusters?.updating === 1, 'canary updating');
    const s = await cli('status', 'campaign/st', ...kc);
    expect(s.code).to.equal(0);
    expect(s.out).to.match(/InPlaceUpdateCampaign st +updating/);
    expect(s.out).to.match(/Wave 0 \(canary\) +running/);
    expect(s.out).to.match(/Cluster st-000 +updating/);
    expect(s.out).to.match(/Not started +pending .*2 pending/);

    expect((await cli('pause', 'campaign/st', ...kc)).out).to.match(/InPlaceUpdateCampaign .*\/st: paused/);
    await fleet.waitCampaign('st', (c) => c.spec.paused === true && c.status?.phase === 'Paused', 'paused');
    expect((await cli('pause', 'campaign/st', ...kc)).out).to.match(/already paused/);
    expect((await cli('resume', 'campaign/st', ...kc)).out).to.match(/resumed/);
    expect((await cli('abort', 'campaign/st', ...kc)).out).to.match(/abort requested/);
    await fleet.waitCampaign('st', (c) => c.status?.updateStatus === 'aborting' || c.status?.updateStatus === 'aborted', 'aborting');
  });
});
