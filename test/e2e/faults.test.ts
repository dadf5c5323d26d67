// End to end under API faults (local API server: random 500/429/409 answers and dropped watches): every component
// retries with backoff and re-lists, and the plan still ends updated with exactly one MachineUpdate and one task per
// machine and updater. Against a real cluster the same scenario runs without injected faults.
import { expect } from 'chai';
import { KubeadmConfigs } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import type { E2eEnv } from './env.js';
import { startE2eEnv } from './env.js';
import { CP, TO_VERSION, planObject, refUpdater, versionOf, type Platform } from './harness.js';

const COMPONENTS = ['plan-controller', 'machine-task-controller', 'mhc-extension'];

/**
 * What a stalled run needs to be explained: every MachineUpdate and task with its status, and per component the work
 * queues and watch restarts (by reason). A component whose watches keep restarting while nothing moves points at the
 * informers; a MachineUpdate waiting on a task the updater has finished points at the task controller's cache.
 */
async function stallReport(p: Platform): Promise<string> {
  const out: string[] = ['MachineUpdates:'];
  for (const mu of await p.machineUpdates().catch(() => []))
    out.push(
      `  ${mu.metadata.name} rv=${mu.metadata.resourceVersion} gen=${mu.metadata.generation}: ${mu.status?.updateStatus ?? '-'} ` +
        `(observed ${mu.status?.observedGeneration ?? '-'}) ${mu.status?.message ?? ''}`,
    );
  out.push('tasks:');
  for (const t of await p.tasks().catch(() => [])) {
    const st = t['status'] as { updateStatus?: string; observedGeneration?: number } | undefined;
    out.push(
      `  ${t.metadata.name} rv=${t.metadata.resourceVersion} gen=${t.metadata.generation}: ${st?.updateStatus ?? '-'} (observed ${st?.observedGeneration ?? '-'})`,
    );
  }
  for (const c of COMPONENTS) {
    const text = await p.metrics(c).catch((e: unknown) => `(no metrics: ${(e as Error).message})`);
    const lines = text.split('\n').filter((l) => /^inplace_(workqueue_depth|workqueue_retries_total|watch_restarts_total)\b/.test(l));
    out.push(`${c}:`, ...lines.map((l) => `  ${l}`));
  }
  return out.join('\n');
}

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
    await p.waitStatus('p', 'updated', 150_000).catch(async (err: unknown) => {
      env.setFaults(undefined);
      throw new Error(`${(err as Error).message}\n${await stallReport(p)}`);
    });
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
      for (const c of COMPONENTS) {
        const text = await p.metrics(c).catch(() => '');
        for (const m of text.matchAll(/^inplace_api_requests_total\{[^}]*code="(?:500|429|409)"[^}]*\} (\d+)$/gm))
          failedCalls += Number(m[1]);
      }
      expect(failedCalls).to.be.greaterThan(0);
    }
  });
});
