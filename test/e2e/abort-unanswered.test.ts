// Every way out works whatever the updaters do (issue 42, item 2): abort, delete and supersede of a plan whose updater
// never answered (nobody serves its name), or answered once and then ignores the abort, end within the machine task
// controller's abort grace period. The owners the plan paused are released and the plan's status names what was given
// up on. The grace period is short here (the bound is configurable); nothing asserts a duration: each test waits for
// the state the bound leads to.
import { expect } from 'chai';
import {
  Annotations,
  ConditionTypes,
  Finalizers,
  InPlaceUpdatePlans,
  Labels,
  Machines,
  Reasons,
  UpdaterUpdateTasks,
  type KubeObject,
} from '../../src/api/index.js';
import { createMachineTaskController } from '../../src/machine-task-controller/index.js';
import { planController } from '../../src/plan-controller/index.js';
import { noopLogger } from '../../src/runtime/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from './env.js';
import type { Platform } from './harness.js';
import { FROM_VERSION, TO_VERSION, conditionOf, planObject, refUpdater, versionOf } from './harness.js';

const MD = 'cluster1-md-0';
/** Short, so that the tests do not wait long; the default is DEFAULT_ABORT_GRACE_MS. */
const GRACE_MS = 1500;

/** A platform whose machine task controller gives up on an unanswered abort after GRACE_MS; no updater runs. */
async function platform(p: Platform): Promise<void> {
  await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 1, maxUnavailable: 1 }] });
  await p.startComponent(planController);
  await p.startComponent(createMachineTaskController({ abortGraceMs: GRACE_MS }));
}

/** Applies plan `name` whose MachineDeployment target names updater `updater`, and waits for its task to exist. */
async function startStuck(p: Platform, name: string, updater: string): Promise<KubeObject> {
  await p.apply(planObject(p.ns, name, { mds: [{ name: MD, sequence: 2, updaters: [refUpdater({ name: updater })] }] }));
  const [task] = await p.waitTasks(updater, 1);
  return task!;
}

const pausedByPlan = (md: KubeObject | undefined): boolean => md?.metadata.annotations?.[Annotations.paused] !== undefined;

/** Waits until the plan paused the MachineDeployment (the owner the abort must release). */
async function waitPaused(p: Platform): Promise<void> {
  await waitFor(async () => pausedByPlan(await p.md(MD)), { timeoutMs: 30_000, message: 'MachineDeployment paused by the plan' });
}

/** Nothing committed, no machine left labelled as in update, the MachineDeployment released. */
async function expectReleased(p: Platform): Promise<void> {
  await waitFor(async () => !pausedByPlan(await p.md(MD)), { timeoutMs: 30_000, message: 'MachineDeployment unpaused' });
  const machines = (await p.client.list(Machines, p.ns)).items;
  expect(machines.map(versionOf)).to.not.include(TO_VERSION);
  expect(machines.map(versionOf)).to.include(FROM_VERSION);
  expect(machines.filter((m) => m.metadata.labels?.[Labels.planName])).to.deep.equal([]);
  expect(machines.filter((m) => m.metadata.annotations?.[Annotations.updateStartedAt])).to.deep.equal([]);
}

describe('e2e: an abort ends whatever the updaters do (abort grace period)', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('abort of a plan whose updater nobody serves: the plan ends aborted, the owner is released, the status names what was given up', async () => {
    const p = await env().platform();
    await platform(p);
    const task = await startStuck(p, 'p', 'nobody-runs-me');
    await waitPaused(p);
    await p.patchPlan('p', { updatePhase: 'aborting' });

    const plan = await p.waitStatus('p', 'aborted');
    await expectReleased(p);
    const machine = (task.spec as { machineRef: { name: string } }).machineRef.name;
    expect(plan.status?.givenUp).to.deep.equal([
      {
        machine,
        updater: 'nobody-runs-me',
        task: `UpdaterUpdateTask/${task.metadata.name}`,
        state: 'NotStarted',
        message: plan.status?.givenUp?.[0]?.message,
      },
    ]);
    expect(plan.status?.givenUp?.[0]?.message).to.match(/no updater ever reported/);
    const ready = conditionOf(plan, 'Ready');
    expect(ready).to.include({ status: 'False', reason: Reasons.aborted });
    expect(ready?.message).to.contain('gave up on 1 machine');
    expect(ready?.message).to.contain(machine);

    const [mu] = await p.machineUpdates();
    expect(mu?.status?.updateStatus).to.equal('aborted');
    expect(mu?.status?.conditions?.find((c) => c.type === ConditionTypes.inPlaceUpdate)?.reason).to.equal(Reasons.abortTimedOut);
    // The task stays (its record), asked to abort: an updater that comes later finds nothing to do.
    const [t] = await p.tasks();
    expect((t?.spec as { updatePhase?: string }).updatePhase).to.equal('aborting');
  });

  it('an updater that reported once, then ignores the abort: given up on, the machine reported in an unknown state', async () => {
    const p = await env().platform();
    await platform(p);
    const task = await startStuck(p, 'p', 'deaf');
    // The updater starts (updating at generation 1), then never looks at its task again.
    await p.client.patch(
      UpdaterUpdateTasks,
      p.ns,
      task.metadata.name!,
      {
        status: {
          updateStatus: 'updating',
          observedGeneration: task.metadata.generation,
          startTime: new Date().toISOString(),
          conditions: [
            {
              type: 'Ready',
              status: 'False',
              reason: 'Updating',
              message: 'rewriting the disk',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      { type: 'merge', subresource: 'status' },
    );
    await waitPaused(p);
    await p.patchPlan('p', { updatePhase: 'aborting' });

    const plan = await p.waitStatus('p', 'aborted');
    await expectReleased(p);
    expect(plan.status?.givenUp?.map((g) => [g.updater, g.state])).to.deep.equal([['deaf', 'Unknown']]);
    expect(plan.status?.givenUp?.[0]?.message).to.match(/state is unknown/);
    expect(conditionOf(plan, 'Ready')?.message).to.match(/state is unknown/);
  });

  it('deleting a plan whose updater nobody serves: the finalizer is released within the grace period, the owner unpaused', async () => {
    const p = await env().platform();
    await platform(p);
    await startStuck(p, 'p', 'nobody-runs-me');
    await waitPaused(p);
    expect((await p.plan('p'))?.metadata?.finalizers).to.include(Finalizers.plan);
    await env().client.delete(InPlaceUpdatePlans, p.ns, 'p');
    await waitFor(async () => (await p.plan('p')) === undefined, { timeoutMs: 60_000, message: 'plan deleted' });
    await expectReleased(p);
  });

  it('a newer plan supersedes one whose updater nobody serves: the older ends aborted, the newer updates every machine', async () => {
    const p = await env().platform();
    await platform(p);
    await startStuck(p, 'plan-1', 'ntp-config');
    await waitPaused(p);
    const ref = await sampleUpdaters.reference.start({ client: p.client, namespace: p.ns, names: ['ref'], log: noopLogger });
    try {
      await p.apply(planObject(p.ns, 'plan-2', { mds: [{ name: MD, sequence: 2, updaters: [refUpdater({ name: 'ref' })] }] }));
      const old = await p.waitStatus('plan-1', 'aborted');
      expect(conditionOf(old, 'Ready')?.reason).to.equal(Reasons.superseded);
      expect(old.status?.givenUp?.map((g) => [g.updater, g.state])).to.deep.equal([['ntp-config', 'NotStarted']]);
      await p.waitStatus('plan-2', 'updated');
      const md = (await p.client.list(Machines, p.ns)).items.filter((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name']);
      expect(md.map(versionOf)).to.deep.equal([TO_VERSION]);
    } finally {
      await ref.stop();
    }
  });
});
