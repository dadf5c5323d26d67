// A typo in an updater name is the likeliest mistake (issue 42, item 6): `inplace preview` warns about a generic
// updater name no updater has ever reported on in the namespace (updaters do not register; a past report is the
// evidence), and stays exit 0 — an updater may be deployed after the plan, and a new updater has no history yet.
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { PlanPreview } from '../../src/plan-controller/index.js';
import { cli } from '../support/cli.js';
import { useE2eEnv } from '../e2e/env.js';
import { CP, planObject, refUpdater } from '../e2e/harness.js';

describe('inplace preview: an updater name nobody has ever served', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('warns for the unheard name only, exit 0, in text and JSON', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
    // A plan served by the reference updater (`ref`) leaves its reported task behind: evidence that `ref` is served.
    await p.startPlatform({ mhc: false, referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'done', { cp: { name: CP, sequence: 1, updaters: [refUpdater()] } }));
    await p.waitStatus('done', 'updated');

    const plan = planObject(p.ns, 'next', {
      cp: { name: CP, sequence: 1, updaters: [refUpdater()] },
      mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'nobody-runs-me' })] }],
    });
    const file = join(mkdtempSync(join(tmpdir(), 'unheard-')), 'plan.yaml');
    writeFileSync(file, stringify(plan));
    const text = await cli('preview', '-f', file, '--kubeconfig', env().kubeconfigPath);
    expect(text.code, text.out + text.err).to.equal(0);
    expect(text.out).to.match(/! no updater has ever reported on a task of updater `nobody-runs-me` in namespace \S+: unless one serving/);
    expect(text.out).to.not.match(/of updater `ref`/);

    const json = await cli('preview', '-f', file, '-o', 'json', '--kubeconfig', env().kubeconfigPath);
    expect(json.code, json.err).to.equal(0);
    const r = JSON.parse(json.out) as PlanPreview;
    expect(r.valid).to.equal(true);
    expect(r.warnings.filter((w) => w.includes('no updater has ever reported'))).to.have.length(1);
  });
});
