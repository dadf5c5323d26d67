// The README's "Run your own updater in the demo" path, as a test: the example updater written from docs/contract.md
// (examples/updaters/ntp-updater.ts) runs as its own process; a plan naming `ntp-config` waits, says no updater
// reports while it is stopped, and completes with the value committed once it runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';
import { KubeadmConfigs, Machines, type KubeObject } from '../../src/api/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { createMachineTaskController } from '../../src/machine-task-controller/index.js';
import { planController } from '../../src/plan-controller/index.js';
import { useE2eEnv } from '../e2e/env.js';
import { conditionOf, planObject } from '../e2e/harness.js';

describe('examples/updaters/ntp-updater.ts (integration)', function () {
  this.timeout(120_000);
  const env = useE2eEnv();
  let proc: ChildProcess | undefined;
  afterEach(() => {
    proc?.kill('SIGTERM');
  });

  it('does the work of a plan naming ntp-config; before it runs, the plan says nobody serves ntp-config', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startComponent(planController);
    await p.startComponent(createMachineTaskController({ unreportedTaskMs: 1000 }));
    const ntp = { enabled: true, servers: ['time.example.com'] };
    await p.apply(
      planObject(p.ns, 'ntp', {
        mds: [
          {
            name: 'cluster1-md-0',
            sequence: 1,
            updaters: [
              { name: 'ntp-config', sequence: 1, responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: ntp }] },
            ],
          },
        ],
      }),
    );
    await p.waitPlan(
      'ntp',
      (x) => /is an updater serving `ntp-config` running\?/.test(conditionOf(x, 'Ready')?.message ?? ''),
      'the plan to say nobody serves ntp-config',
    );

    let err = '';
    proc = spawn(process.execPath, ['--import', 'tsx', join(projectRoot(), 'examples', 'updaters', 'ntp-updater.ts')], {
      env: { ...process.env, KUBECONFIG: env().kubeconfigPath, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const done = await p.waitPlan(
      'ntp',
      (x) => x.status?.updateStatus === 'updated',
      `plan updated by the example updater (its stderr: ${err})`,
      60_000,
    );
    expect(conditionOf(done, 'Ready')?.status).to.equal('True');
    expect(err).to.contain('example-ntp-updater running: serving updater name ntp-config');

    // The platform committed the value to every worker's KubeadmConfig (C8), and the tasks carry the updater's words.
    const workers = (await p.client.list(Machines, p.ns)).items.filter((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name']);
    expect(workers).to.have.length(2);
    for (const m of workers) {
      const ref = (m['spec'] as { bootstrap?: { configRef?: { name?: string } } }).bootstrap?.configRef?.name;
      const kc = await p.client.get<KubeObject>(KubeadmConfigs, p.ns, ref!);
      expect((kc?.['spec'] as { ntp?: unknown } | undefined)?.ntp).to.deep.equal(ntp);
    }
    const said = (await p.tasks()).map(
      (t) => (t as KubeObject & { status?: { conditions?: { message?: string }[] } }).status?.conditions?.[0]?.message,
    );
    expect(
      said.every((s) => /^NTP servers time\.example\.com configured on /.test(s ?? '')),
      JSON.stringify(said),
    ).to.equal(true);
  });
});
