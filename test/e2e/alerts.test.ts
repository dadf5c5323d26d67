// End to end with a REAL Prometheus (Debian's `prometheus`; .ci/run installs it): a firing alert matching the plan's
// alert gate holds the plan and is named; resolved, the plan runs; held past holdTimeout, the plan halts.
import { expect } from 'chai';
import { prometheusBinary, startPrometheus, type TestPrometheus } from '../support/prometheus.js';
import { useE2eEnv } from './env.js';
import { conditionOf, planObject, refUpdater } from './harness.js';

describe('e2e: alert gate against a real Prometheus', function () {
  this.timeout(180_000);
  const env = useE2eEnv();
  let prom: TestPrometheus | undefined;

  before(async function () {
    const bin = prometheusBinary();
    if (!bin) {
      console.warn(
        '    SKIPPED: the prometheus binary is absent (apt-get install -y prometheus, or PROMETHEUS_BIN=…); .ci/run installs it',
      );
      this.skip();
    }
    prom = await startPrometheus(bin, 'NodeDown', { severity: 'critical', cluster: 'cluster1' });
  });
  after(async () => {
    await prom?.stop();
  });

  const gatedPlan = (ns: string, holdTimeout: string) => {
    const plan = planObject(ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.alertGate = { url: prom!.url, matchers: ['severity="critical"', 'cluster="cluster1"'], holdTimeout };
    return plan;
  };

  it('a firing alert holds the plan and is named; once resolved the plan runs to the end', async () => {
    prom!.set(1);
    await prom!.waitAlert(true);
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'], alertGatePolicy: { endpoints: [{ url: prom!.url }] } });
    await p.apply(gatedPlan(p.ns, '1h'));
    const held = await p.waitPlan('p', (x) => conditionOf(x, 'Ready')?.reason === 'WaitingForAlerts', 'held by the alert');
    expect(conditionOf(held, 'Ready')?.message).to.equal('alert NodeDown firing (severity="critical", cluster="cluster1")');
    expect(held.status?.alertGate).to.include({ state: 'Firing' });
    expect(held.status?.updateStatus).to.equal('pending');
    expect(await p.machineUpdates()).to.deep.equal([]);

    prom!.set(0);
    await prom!.waitAlert(false);
    const done = await p.drive('p', 'manual');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.alertGate?.state).to.equal('Clear');
  });

  it('held longer than holdTimeout, the plan halts and ends failed naming the alert', async () => {
    prom!.set(1);
    await prom!.waitAlert(true);
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'], alertGatePolicy: { endpoints: [{ url: prom!.url }] } });
    await p.apply(gatedPlan(p.ns, '2s'));
    const failed = await p.waitPlan('p', (x) => x.status?.updateStatus === 'failed', 'plan halted by the alert gate', 60_000);
    expect(failed.status?.alertGate?.state).to.equal('Halted');
    expect(conditionOf(failed, 'Ready')?.message).to.match(/halted: held longer than holdTimeout 2s: alert NodeDown firing/);
    expect(await p.machineUpdates()).to.deep.equal([]);
    prom!.set(0);
  });
});
