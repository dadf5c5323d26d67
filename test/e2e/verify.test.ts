// End to end on the embedded API server and the CAPI simulator (it mirrors the Node's kubelet version into
// Machine.status.nodeInfo as Cluster API does): spec.verification catches an updater that reports updated without
// changing the node, and passes one that did.
import { expect } from 'chai';
import { Machines, Nodes } from '../../src/api/index.js';
import { useE2eEnv } from './env.js';
import { FROM_VERSION, TO_VERSION, conditionOf, planObject, refUpdater } from './harness.js';

describe('e2e: verification against what Cluster API mirrors from the node', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('an updater that lies ("updated", node unchanged) is caught: the machine fails naming the kubelet mismatch', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'liar' })] }] });
    plan.spec.verification = { timeout: '2s' };
    await p.apply(plan);
    await p.waitTasks('liar', 1);
    // The "updater" says updated and never touches the Node.
    const failed = await p.drive('p', 'liar', 'failed');
    const row = failed.status?.targets?.[0];
    expect(row).to.include({ failed: 1, updated: 0 });
    expect(row?.message).to.match(
      new RegExp(
        `failed verification: Machine.status.nodeInfo.kubeletVersion is ${FROM_VERSION.replace(/\./g, '\\.')}, not ${TO_VERSION.replace(/\./g, '\\.')}`,
      ),
    );
    expect(failed.status?.gateFailures).to.have.length(1);
    expect(conditionOf(failed, 'Ready')).to.include({ reason: 'Failed' });
    // Halt: the second machine never started.
    expect(await p.machineUpdates()).to.have.length(1);
  });

  it('an updater that changed the node passes verification and the plan completes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'honest' })] }] });
    plan.spec.verification = { timeout: '1h' };
    await p.apply(plan);
    for (let i = 0; i < 2; i++) {
      const [task] = await p.waitTasks('honest', 1);
      const machine = (task!['spec'] as { machineRef: { name: string } }).machineRef.name;
      const m = await env().client.get(Machines, p.ns, machine);
      const node = (m!['status'] as { nodeRef: { name: string } }).nodeRef.name;
      // What the kubernetes-version sample updater does: the kubelet restarted on the new version reports it.
      await env().client.patch(
        Nodes,
        undefined,
        node,
        { status: { nodeInfo: { kubeletVersion: TO_VERSION } } },
        { type: 'merge', subresource: 'status' },
      );
      expect(await p.finishTasks('honest')).to.equal(1);
      await p.waitPlan('p', (x) => (x.status?.targets?.[0]?.updated ?? 0) > i, `machine ${i + 1} verified`);
    }
    const done = await p.waitPlan('p', (x) => x.status?.updateStatus === 'updated', 'plan updated');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.gateFailures).to.equal(undefined);
  });
});
