// End to end: `npm start -- --fleet` as a user runs it (non-TTY, through bin/inplace.mjs): the local API server, every
// component as its own process, examples/campaign.yaml over 24 simulated clusters. The final state it writes with
// --state-out is checked: the campaign updated, canaries first, every wave within maxConcurrentClusters.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { InPlaceUpdateCampaign, InPlaceUpdatePlan, KubeObject } from '../../src/api/index.js';
import { projectRoot } from '../../src/cli/procs.js';

describe('npm start -- --fleet', function () {
  this.timeout(600_000);

  it('runs the example campaign over 24 clusters: canaries first, waves of at most 6, every cluster updated, a summary', async () => {
    const root = projectRoot();
    const dir = mkdtempSync(join(tmpdir(), 'demo-fleet-'));
    try {
      const stateOut = join(dir, 'state.json');
      const proc = spawn(
        process.execPath,
        [join(root, 'bin', 'inplace.mjs'), 'demo', '--fleet', '--state-out', stateOut, '--work-dir', dir],
        {
          cwd: root,
          env: { ...process.env, INPLACE_FROM_SOURCE: '0', LOG_FORMAT: 'json' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
      expect(code, `${out}\n${err}`).to.equal(0);
      expect(out).to.match(/Summary: InPlaceUpdateCampaign fleet-edge\/edge-v1-30-1 updated/);
      expect(out).to.match(/clusters: 24 selected, 24 updated/);
      const state = JSON.parse(readFileSync(stateOut, 'utf8')) as {
        campaign: InPlaceUpdateCampaign & KubeObject;
        plans: (InPlaceUpdatePlan & KubeObject)[];
      };
      expect(state.plans).to.have.length(24);
      expect(state.plans.every((p) => p.status?.updateStatus === 'updated')).to.equal(true);
      const waves = state.campaign.status?.waves ?? [];
      expect(waves[0]).to.include({ index: 0, clusters: 2 });
      expect(waves.slice(1).every((w) => (w.clusters ?? 0) <= 6)).to.equal(true);
      // Each wave's plans were created after the previous wave's plans completed (and its 2 s soak).
      const byWave = new Map<number, (InPlaceUpdatePlan & KubeObject)[]>();
      for (const p of state.plans) {
        const w = Number(p.metadata.labels?.['inplace.cluster.x-k8s.io/campaign-wave']);
        byWave.set(w, [...(byWave.get(w) ?? []), p]);
      }
      for (const [w, ps] of byWave) {
        const prev = byWave.get(w - 1);
        if (!prev) continue;
        const lastDone = Math.max(...prev.map((p) => Date.parse(p.status!.completionTime!)));
        const firstCreated = Math.min(...ps.map((p) => Date.parse(p.metadata.creationTimestamp!)));
        expect(firstCreated - lastDone, `wave ${w}`).to.be.at.least(2000);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
