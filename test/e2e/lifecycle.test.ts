// End to end: pause/resume, scale-up during a plan, a machine deleted mid-update, and a controller restart.
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { KubeadmConfigs, Labels, MachineDeployments, Machines, UpdaterUpdateTasks } from '../../src/api/index.js';
import { createMachineTaskController } from '../../src/machine-task-controller/index.js';
import { createPlanController } from '../../src/plan-controller/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from './env.js';
import { CP, TO_VERSION, conditionOf, planObject, refUpdater, versionOf } from './harness.js';

const current = (ms: KubeObject[]): KubeObject[] => ms.filter((m) => !m.metadata.deletionTimestamp);

describe('e2e: pause, scale-up, deletion and restart', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  // These scenarios play the updater `manual` by hand, so each machine finishes exactly when the scenario says.
  const manual = (over: Parameters<typeof refUpdater>[0] = {}) => refUpdater({ name: 'manual', ...over });

  it('pause stops new starts while in-flight machines finish; resume completes the plan', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'p', { paused: true, mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [manual()] }] }));
    const pending = await p.waitPlan('p', (x) => conditionOf(x, 'Paused')?.status === 'True', 'paused condition');
    expect(pending.status?.updateStatus).to.equal('pending');
    expect(conditionOf(pending, 'Ready')).to.include({ reason: 'Paused' });
    expect(await p.machineUpdates()).to.deep.equal([]);

    await p.patchPlan('p', { paused: false });
    await p.waitTasks('manual', 1);
    await p.patchPlan('p', { paused: true });
    const generation = (await p.plan('p'))!.metadata!.generation;
    await p.waitPlan(
      'p',
      (x) => x.status?.observedGeneration === generation && conditionOf(x, 'Paused')?.status === 'True',
      'pause observed',
    );
    expect(await p.finishTasks('manual')).to.equal(1);
    // Settled: the controller has seen the in-flight machine finish while paused.
    const paused = await p.waitPlan(
      'p',
      (x) => x.status?.updatedMachines === 1 && x.status?.targets?.[0]?.updating === 0,
      'in-flight machine finished while paused',
    );
    expect(await p.machineUpdates()).to.have.length(1);
    expect(paused.status?.updateStatus).to.equal('updating');
    expect(conditionOf(paused, 'Ready')).to.include({ status: 'False', reason: 'Paused' });

    await p.patchPlan('p', { paused: false });
    const done = await p.drive('p', 'manual');
    expect(done.status?.progress).to.equal('3/3');
    expect(conditionOf(done, 'Paused')).to.include({ status: 'False' });
  });

  it('a scale-up asked for during the plan waits for the paused MachineDeployment; its machines are born updated', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [manual()] }] }));
    await p.waitTasks('manual', 1);
    // The plan paused the MachineDeployment for its target (owner alignment), so CAPI does not act on the new
    // replica count until the target is done, as a real MachineDeployment controller would not.
    const md = await env().client.get(MachineDeployments, p.ns, 'cluster1-md-0');
    expect(md?.metadata.annotations?.['cluster.x-k8s.io/paused'], 'paused during its target').to.not.equal(undefined);
    await env().client.patch(MachineDeployments, p.ns, 'cluster1-md-0', { spec: { replicas: 4 } }, { type: 'merge' });
    const done = await p.drive('p', 'manual');
    expect(done.status?.targets?.[0]).to.include({ updated: 2, failed: 0 });
    // Unpaused with its template aligned: the two new machines are created at the plan's values, without any plan.
    const mdMachines = await waitFor(
      async () => {
        const ms = current(await p.machines()).filter((m) => m.metadata.labels?.[Labels.deploymentName] === 'cluster1-md-0');
        return ms.length === 4 ? ms : undefined;
      },
      { timeoutMs: 60_000, message: '4 machines after the target' },
    );
    expect(mdMachines.map(versionOf)).to.deep.equal([TO_VERSION, TO_VERSION, TO_VERSION, TO_VERSION]);
  });

  it('a machine deleted mid-update has its update aborted; its replacement is updated and the plan completes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [manual()] }] }));
    const [task] = await p.waitTasks('manual', 1);
    const victim = (task!['spec'] as { machineRef: { name: string } }).machineRef.name;
    await env().client.delete(Machines, p.ns, victim);
    const done = await p.drive('p', 'manual');
    // The updater (played here) answers the abort of the deleted machine's task.
    const victimMu = await waitFor(
      async () => {
        await p.finishTasks('manual');
        const mu = (await p.machineUpdates()).find((m) => m.spec.machineRef.name === victim);
        return mu && ['aborted', 'failed', 'updated'].includes(mu.status?.updateStatus ?? '') ? mu : undefined;
      },
      { message: `update of the deleted machine ${victim} ended` },
    );
    expect(victimMu.status?.updateStatus).to.be.oneOf(['aborted', 'failed']);
    expect(done.status?.targets?.[0]).to.include({ machines: 2, updated: 2, failed: 0, aborted: 0 });
    const mdMachines = current(await p.machines()).filter((m) => m.metadata.labels?.[Labels.deploymentName] === 'cluster1-md-0');
    expect(mdMachines.map((m) => m.metadata.name)).to.not.include(victim);
    expect(mdMachines.map(versionOf)).to.deep.equal([TO_VERSION, TO_VERSION]);
  });

  it('a controller restart mid-update creates no duplicate MachineUpdate or task and the plan completes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 3, mds: [] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const tasks: string[] = [];
    const tw = await env().client.watch(UpdaterUpdateTasks, p.ns, {}, (e) => {
      if (e.type === 'ADDED') tasks.push(e.object.metadata.name!);
    });
    const rec = await p.recordMachineUpdates();
    await p.apply(
      planObject(p.ns, 'p', {
        cp: {
          name: CP,
          sequence: 1,
          updaters: [
            manual(),
            refUpdater({
              name: 'ref',
              sequence: 2,
              durationSeconds: 0,
              responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true } }],
            }),
          ],
        },
      }),
    );
    await p.waitTasks('manual', 1);
    await p.stopComponent('plan-controller');
    await p.stopComponent('machine-task-controller');
    await p.startComponent(createPlanController());
    await p.startComponent(createMachineTaskController());
    const done = await p.drive('p', 'manual');
    tw.abort();
    expect(done.status?.progress).to.equal('3/3');
    const added = rec.events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name);
    expect(new Set(added).size).to.equal(added.length);
    expect(added).to.have.length(3);
    expect(new Set(tasks).size).to.equal(tasks.length);
    expect(tasks).to.have.length(6);
    for (const m of await p.machines())
      expect(
        (
          await p.client.get(KubeadmConfigs, p.ns, (m['spec'] as { bootstrap: { configRef: { name: string } } }).bootstrap.configRef.name)
        )?.['spec'],
      ).to.deep.include({ ntp: { enabled: true } });
  });
});
