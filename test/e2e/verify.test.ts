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
    const failed = await p.drive('p', 'liar', 'failed', false);
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

  it('an updater that declares an image and a reboot but did neither is caught, naming both', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const liar = refUpdater({
      name: 'liar',
      verify: { osImage: 'ubuntu-24.04-k8s-1.30.1', reboot: true },
      responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04-k8s-1.30.1' }],
    });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [liar] }] });
    plan.spec.verification = { timeout: '2s' };
    await p.apply(plan);
    await p.waitTasks('liar', 1);
    const failed = await p.drive('p', 'liar', 'failed', false);
    const [mu] = await p.machineUpdates();
    const machine = mu!.spec.machineRef.name;
    // The boot the node had when the update started was recorded; the node still has it.
    const boot = mu!.metadata.annotations?.['inplace.cluster.x-k8s.io/boot-id-before'];
    expect(boot).to.be.a('string');
    expect(failed.status?.gateFailures?.[0]).to.include({ machine, gate: 'verification' });
    expect(failed.status?.gateFailures?.[0]?.message).to.match(
      new RegExp(
        `^machine ${machine} failed verification: Machine\\.status\\.nodeInfo\\.osImage is \\S+, not ubuntu-24\\.04-k8s-1\\.30\\.1; ` +
          `Machine\\.status\\.nodeInfo\\.bootID is still ${boot} \\(the node did not reboot\\), 2s after its update`,
      ),
    );
  });

  it('an updater that changed the node passes verification and the plan completes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'honest' })] }] });
    // Verification is on by default (timeout 10m): no spec.verification needed.
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
      expect(await p.finishTasks('honest', 'updated', { honest: false })).to.equal(1);
      await p.waitPlan('p', (x) => (x.status?.targets?.[0]?.updated ?? 0) > i, `machine ${i + 1} verified`);
    }
    const done = await p.waitPlan('p', (x) => x.status?.updateStatus === 'updated', 'plan updated');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.gateFailures).to.equal(undefined);
  });
});
