// End to end under API faults (local API server: random 500/429/409 answers and dropped watches): every component
// retries with backoff and re-lists, and the plan still ends updated with exactly one MachineUpdate and one task per
// machine and updater. Against a real cluster the same scenario runs without injected faults.
import { expect } from 'chai';
import { KubeadmConfigs } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import type { E2eEnv } from './env.js';
import { startE2eEnv } from './env.js';
import { CP, TO_VERSION, planObject, refUpdater, versionOf } from './harness.js';

describe('e2e: API faults', function () {
  this.timeout(180_000);
  let env: E2eEnv;
  before(async () => {
    env = await startE2eEnv();
  });
  after(async () => {
    env?.setFaults(undefined);
    await env?.stop();
  });

  it('completes a plan while the API server fails requests and drops watches', async () => {
    const p = await env.platform();
    await p.provision({ cpReplicas: 3, mds: [{ name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 }] });
    await p.startPlatform();
    const faulty = env.setFaults({ errorRate: 0.1, errorCodes: [500, 429, 409], dropWatchesEveryMs: 2000 });
    const updaters = [
      refUpdater({ name: 'a' }),
      refUpdater({
        name: 'b',
        sequence: 2,
        responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true } }],
      }),
    ];
    // The scenario's own writes retry like any client would.
    await waitFor(
      async () =>
        p
          .apply(
            planObject(p.ns, 'p', { cp: { name: CP, sequence: 1, updaters }, mds: [{ name: 'cluster1-md-0', sequence: 2, updaters }] }),
          )
          .catch(async (err: unknown) => {
            if (await p.plan('p')) return true;
            throw err;
          }),
      { message: 'plan created' },
    );
    await p.waitStatus('p', 'updated', 150_000);
    env.setFaults(undefined);

    const plan = (await p.plan('p'))!;
    expect(plan.status?.progress).to.equal('6/6');
    const mus = await p.machineUpdates();
    expect(mus).to.have.length(6);
    expect(mus.every((m) => m.status?.updateStatus === 'updated')).to.equal(true);
    expect(await p.tasks()).to.have.length(12);
    for (const m of await p.machines()) {
      expect(versionOf(m)).to.equal(TO_VERSION);
      expect(
        (
          await p.client.get(KubeadmConfigs, p.ns, (m['spec'] as { bootstrap: { configRef: { name: string } } }).bootstrap.configRef.name)
        )?.['spec'],
      ).to.deep.include({ ntp: { enabled: true } });
    }
    expect(await p.labelledMachines()).to.deep.equal([]);
    // The faults did reach the controllers (their API request metrics count the injected errors). Summed over the
    // controllers: a fast run may leave one of them without an injected error (each request fails with p = 0.1).
    if (faulty) {
      let failedCalls = 0;
      for (const c of ['plan-controller', 'machine-task-controller', 'mhc-extension']) {
        const text = await p.metrics(c).catch(() => '');
        for (const m of text.matchAll(/^inplace_api_requests_total\{[^}]*code="(?:500|429|409)"[^}]*\} (\d+)$/gm))
          failedCalls += Number(m[1]);
      }
      expect(failedCalls).to.be.greaterThan(0);
    }
  });
});
