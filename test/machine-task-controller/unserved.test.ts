// A plan naming an updater nobody serves: nothing is committed, and the MachineUpdate and the plan say which task
// waits for which updater (issue 28/30). Once an updater serving the name runs, the same plan completes.
import { expect } from 'chai';
import { ConditionTypes, Machines, Reasons, UpdaterUpdateTasks, type KubeObject } from '../../src/api/index.js';
import { createMachineTaskController } from '../../src/machine-task-controller/index.js';
import { planController } from '../../src/plan-controller/index.js';
import { noopLogger } from '../../src/runtime/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { cli } from '../support/cli.js';
import { useE2eEnv } from '../e2e/env.js';
import { FROM_VERSION, TO_VERSION, conditionOf, planObject, refUpdater, versionOf } from '../e2e/harness.js';

describe('machine task controller: a task no updater reports on (integration)', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('a plan naming an unserved updater never commits and says so; an updater serving the name then completes it', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
    await p.startComponent(planController);
    await p.startComponent(createMachineTaskController({ unreportedTaskMs: 1500 }));
    // A reference updater runs, but serves another name: it must not answer for `motd`.
    const other = await sampleUpdaters.reference.start({ client: p.client, namespace: p.ns, names: ['ref'], log: noopLogger });
    const running: { stop(): Promise<void> }[] = [other];
    try {
      await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'motd' })] }] }));
      const want =
        /no updater has reported on task UpdaterUpdateTask \S+ for updater `motd` for 2s — is an updater serving `motd` running\?/;
      const stuck = await p.waitPlan(
        'p',
        (x) => /is an updater serving `motd` running\?/.test(conditionOf(x, 'Ready')?.message ?? ''),
        'plan names the unserved updater',
      );
      expect(conditionOf(stuck, 'Ready')?.message).to.match(want);
      expect(stuck.status?.updateStatus).to.equal('updating');
      // The REASON column of `kubectl get iup` says it, not only the message (issue 42).
      expect(conditionOf(stuck, 'Ready')?.reason).to.equal(Reasons.updaterNotReporting);

      const [mu] = await p.machineUpdates();
      expect(mu?.status?.updateStatus).to.equal('updating');
      const c = mu?.status?.conditions?.find((x) => x.type === ConditionTypes.inPlaceUpdate);
      expect(c).to.include({ status: 'True', reason: Reasons.updaterNotReporting });
      expect(c?.message).to.match(want);
      expect(mu?.status?.message).to.equal(c?.message);
      const [task] = (await p.client.list(UpdaterUpdateTasks, p.ns)).items as (KubeObject & { status?: unknown })[];
      expect(task?.status, 'nobody wrote the task status').to.equal(undefined);
      // Nothing committed: every machine still runs the old version.
      const versions = (await p.client.list(Machines, p.ns)).items.map(versionOf);
      expect(versions).to.not.include(TO_VERSION);
      expect(versions).to.include(FROM_VERSION);

      // Where people look: `inplace status` shows the machine's reason and the plan's message.
      const status = await cli('status', 'p', '-n', p.ns, '--kubeconfig', env().kubeconfigPath);
      expect(status.code, status.err).to.equal(0);
      expect(status.out).to.match(/Machine\/\S+\s+updating\s+UpdaterNotReporting/);
      expect(status.out).to.contain('no updater has reported on task');

      running.push(await sampleUpdaters.reference.start({ client: p.client, namespace: p.ns, names: ['motd'], log: noopLogger }));
      const done = await p.waitStatus('p', 'updated');
      expect(conditionOf(done, 'Ready')?.message ?? '').to.not.match(/no updater has reported/);
      expect(conditionOf(done, 'Ready')?.reason).to.equal(Reasons.updated);
      const md = (await p.client.list(Machines, p.ns)).items.filter((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name']);
      expect(md.map(versionOf)).to.deep.equal([TO_VERSION]);
    } finally {
      for (const r of running) await r.stop();
    }
  });
});
