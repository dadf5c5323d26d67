// End to end on the embedded API server: spec.soak holds an updated machine's slot; a machine that turns unhealthy
// during its soak fails the plan (failurePolicy Halt) with a message saying so.
import { expect } from 'chai';
import { Machines, Nodes } from '../../src/api/index.js';
import { useE2eEnv } from './env.js';
import { conditionOf, planObject, refUpdater } from './harness.js';

describe('e2e: soak', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('the next machine waits while the updated one soaks; unhealthy during the soak fails the plan', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.soak = '1h';
    await p.apply(plan);
    const [task] = await p.waitTasks('manual', 1);
    const first = (task!['spec'] as { machineRef: { name: string } }).machineRef.name;
    expect(await p.finishTasks('manual')).to.equal(1);
    const soaking = await p.waitPlan(
      'p',
      (x) => (x.status?.targets?.[0]?.message ?? '').includes(`machine ${first} soaking`),
      'the updated machine soaks',
    );
    expect(soaking.status?.targets?.[0]).to.include({ updated: 0, updating: 1 });
    // Its slot is held: the second machine has not started.
    expect(await p.machineUpdates()).to.have.length(1);

    // The node goes bad during the soak: its kubelet reports NotReady, and the CAPI simulator mirrors that into the
    // Machine's NodeHealthy / Ready conditions as Cluster API does.
    const m = (await env().client.get(Machines, p.ns, first))!;
    const nodeName = (m['status'] as { nodeRef: { name: string } }).nodeRef.name;
    const node = (await env().client.get(Nodes, undefined, nodeName))!;
    const nodeConditions = ((node['status'] as { conditions?: { type: string }[] }).conditions ?? []).map((c) =>
      c.type === 'Ready'
        ? {
            ...c,
            status: 'False',
            reason: 'KubeletNotReady',
            message: 'kubelet stopped posting',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          }
        : c,
    );
    await env().client.patch(
      Nodes,
      undefined,
      nodeName,
      { status: { conditions: nodeConditions } },
      { type: 'merge', subresource: 'status' },
    );
    const failed = await p.waitPlan('p', (x) => x.status?.updateStatus === 'failed', 'plan failed by the soak');
    expect(failed.status?.gateFailures?.map((f) => f.machine)).to.deep.equal([first]);
    expect(failed.status?.targets?.[0]?.message).to.match(new RegExp(`machine ${first} turned unhealthy during its soak .*=False`));
    expect(conditionOf(failed, 'Ready')).to.include({ reason: 'Failed' });
    expect(await p.machineUpdates()).to.have.length(1);
  });

  it('held together: a plan with an open window and a short soak completes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.soak = '1s';
    plan.spec.maintenanceWindows = [{ start: '00:00', duration: '168h', timeZone: 'UTC', days: ['Mon'] }];
    await p.apply(plan);
    const done = await p.drive('p', 'manual');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.gateFailures).to.equal(undefined);
    // The updates ran one after the other: the second started after the first one's soak.
    const mus = await p.machineUpdates();
    const [a, b] = mus.sort((x, y) => (x.status?.startTime ?? '').localeCompare(y.status?.startTime ?? ''));
    expect(Date.parse(b!.status!.startTime!)).to.be.at.least(Date.parse(a!.status!.completionTime!) + 1000);
  });
});
