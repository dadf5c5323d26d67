// End to end as an operator works: kubectl apply a plan, watch machines in update by label, and
// `kubectl wait --for=condition=Ready` until the plan is updated.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Labels } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import type { E2eEnv } from './env.js';
import { startE2eEnv } from './env.js';
import { CP, TO_VERSION, planObject, refUpdater, versionOf } from './harness.js';

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const hasKubectl = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('e2e: an operator with kubectl', function () {
  this.timeout(120_000);
  let env: E2eEnv;
  let dir: string;

  const kubectl = (args: string[]): Promise<{ code: number; out: string; err: string }> =>
    new Promise((resolve) => {
      const p = spawn(KUBECTL, ['--kubeconfig', env.kubeconfigPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (c) => (out += c));
      p.stderr.on('data', (c) => (err += c));
      p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    });

  before(async function () {
    if (!hasKubectl) {
      console.log('    (skipped: no kubectl on PATH; set KUBECTL to run these scenarios)');
      this.skip();
    }
    env = await startE2eEnv();
    dir = await mkdtemp(join(tmpdir(), 'e2e-kubectl-'));
  });
  after(async () => {
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('applies a plan, lists the machines in update by label and waits for condition Ready', async () => {
    const p = await env.platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const file = join(dir, 'plan.yaml');
    const manual = refUpdater({ name: 'manual' });
    await writeFile(
      file,
      stringify(
        planObject(p.ns, 'cluster1-v1-30-1', {
          cp: { name: CP, sequence: 1, updaters: [manual] },
          mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [manual] }],
        }),
      ),
    );
    const applied = await kubectl(['apply', '-f', file]);
    expect(applied.code, applied.err).to.equal(0);
    expect(applied.out).to.match(/inplaceupdateplan.inplace.cluster.x-k8s.io\/cluster1-v1-30-1 created/);

    // While the first machine is in update it carries the plan label.
    const [task] = await p.waitTasks('manual', 1);
    const inUpdate = (task!['spec'] as { machineRef: { name: string } }).machineRef.name;
    const listed = await waitFor(
      async () => {
        const r = await kubectl(['get', 'machines', '-n', p.ns, '-l', `${Labels.planName}=cluster1-v1-30-1`, '-o', 'name']);
        return r.code === 0 && r.out.trim() ? r.out.trim() : undefined;
      },
      { message: 'kubectl lists the machine in update' },
    );
    expect(listed).to.equal(`machine.cluster.x-k8s.io/${inUpdate}`);
    const annotations = await kubectl([
      'get',
      'machine',
      '-n',
      p.ns,
      inUpdate,
      '-o',
      `jsonpath={.metadata.annotations.inplace\\.cluster\\.x-k8s\\.io/update-started-at}`,
    ]);
    expect(annotations.out).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);

    // Not Ready yet: kubectl wait times out while the plan is updating.
    const early = await kubectl(['wait', '-n', p.ns, '--for=condition=Ready', 'inplaceupdateplan/cluster1-v1-30-1', '--timeout=1s']);
    expect(early.code).to.not.equal(0);

    const waiting = kubectl(['wait', '-n', p.ns, '--for=condition=Ready', 'inplaceupdateplan/cluster1-v1-30-1', '--timeout=60s']);
    await p.drive('cluster1-v1-30-1', 'manual');
    const waited = await waiting;
    expect(waited.code, waited.err).to.equal(0);
    expect(waited.out).to.match(/condition met/);

    const table = await kubectl(['get', 'iup', '-n', p.ns]);
    expect(table.out).to.match(/cluster1-v1-30-1\s+cluster1\s+updated\s+3\/3\s+Updated\s/);
    expect(table.out, 'the requested phase shows only with -o wide').to.not.match(/PHASE|REQUESTED/);
    for (const m of await p.machines()) if (!m.metadata.deletionTimestamp) expect(versionOf(m)).to.equal(TO_VERSION);
  });
});
