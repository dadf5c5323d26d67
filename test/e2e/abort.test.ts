// End to end: aborting a plan mid-flight, superseding it with a newer plan, and deleting a plan in progress.
import { expect } from 'chai';
import { Events, Finalizers, InPlaceUpdatePlans, PlanAnnotations, isTerminal } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from './env.js';
import type { Platform } from './harness.js';
import { CP, FROM_VERSION, TO_VERSION, conditionOf, planObject, refUpdater, versionOf } from './harness.js';

// A slow updater on the MachineDeployment keeps machines in flight until the abort arrives (an abort ends them at once).
const SLOW = 600;

async function inFlight(p: Platform, planName: string, n: number): Promise<void> {
  await waitFor(
    async () => (await p.machineUpdates()).filter((m) => m.spec.planName === planName && m.status?.updateStatus === 'updating').length >= n,
    { timeoutMs: 30_000, message: `${n} machine(s) of ${planName} in flight` },
  );
}

/** Every machine ends updated (value committed) or not (value untouched); no label is left behind. */
async function expectCommittedOnlyForUpdated(p: Platform): Promise<void> {
  const mus = await p.machineUpdates();
  const byMachine = new Map(mus.map((m) => [m.spec.machineRef.name, m.status?.updateStatus]));
  for (const m of await p.machines()) {
    const s = byMachine.get(m.metadata.name!);
    expect(s === undefined || isTerminal(s), `${m.metadata.name} terminal`).to.equal(true);
    expect(versionOf(m), `${m.metadata.name} (${s ?? 'not started'})`).to.equal(s === 'updated' ? TO_VERSION : FROM_VERSION);
  }
  expect(await p.labelledMachines()).to.deep.equal([]);
}

describe('e2e: abort, supersede and delete', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('abort mid-flight: in-flight machines end aborted, finished ones stay updated, nothing else starts, values committed only for updated', async () => {
    const p = await env().platform();
    await p.provision({ mds: [{ name: 'cluster1-md-0', replicas: 3, maxUnavailable: 2 }] });
    await p.startPlatform();
    await p.apply(
      planObject(p.ns, 'p', {
        cp: { name: CP, sequence: 1, updaters: [refUpdater()] },
        mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ durationSeconds: SLOW })] }],
      }),
    );
    await inFlight(p, 'p', 2);
    await p.patchPlan('p', { updatePhase: 'aborting' });
    const plan = await p.waitStatus('p', 'aborted');

    const mus = await p.machineUpdates();
    expect(mus.filter((m) => m.spec.target.kind === 'ControlPlane').map((m) => m.status?.updateStatus)).to.deep.equal([
      'updated',
      'updated',
      'updated',
    ]);
    expect(mus.filter((m) => m.spec.target.kind === 'MachineDeployment').map((m) => m.status?.updateStatus)).to.deep.equal([
      'aborted',
      'aborted',
    ]);
    expect(plan.status?.targets?.map((t) => [t.name, t.updateStatus])).to.deep.equal([
      [CP, 'updated'],
      ['cluster1-md-0', 'aborted'],
    ]);
    expect(conditionOf(plan, 'Ready')).to.include({ status: 'False', reason: 'Aborted' });
    await expectCommittedOnlyForUpdated(p);
  });

  it('a plan aborted before anything started is aborted at once', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [] });
    await p.startPlatform();
    await p.apply({ ...planObject(p.ns, 'p', { cp: { name: CP, sequence: 1, updaters: [refUpdater()] }, paused: true }) });
    await p.waitPlan('p', (x) => conditionOf(x, 'Paused')?.status === 'True', 'paused plan observed');
    await p.patchPlan('p', { updatePhase: 'aborting' });
    await p.waitStatus('p', 'aborted');
    expect(await p.machineUpdates()).to.deep.equal([]);
  });

  it('a newer plan supersedes an updating one: the older aborts (reason Superseded), the newer waits, then updates every machine', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform();
    const rec = await p.recordMachineUpdates();
    // Plans created within the same second are ordered by name (creationTimestamp has second precision).
    await p.apply(
      planObject(p.ns, 'plan-1', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ durationSeconds: SLOW })] }] }),
    );
    await inFlight(p, 'plan-1', 1);
    await p.apply(
      planObject(p.ns, 'plan-2', {
        cp: { name: CP, sequence: 1, updaters: [refUpdater()] },
        mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater()] }],
      }),
    );

    const old = await p.waitStatus('plan-1', 'aborted');
    expect(old.spec.updatePhase).to.equal('aborting');
    expect(old.metadata?.annotations?.[PlanAnnotations.supersededBy]).to.equal('plan-2');
    expect(conditionOf(old, 'Ready')).to.include({ status: 'False', reason: 'Superseded' });
    const newer = await p.waitStatus('plan-2', 'updated');
    expect(newer.status?.progress).to.equal('3/3');
    for (const m of await p.machines()) expect(versionOf(m)).to.equal(TO_VERSION);

    // The newer plan started its first machine only after every machine of the older plan was terminal.
    const firstNew = rec.events.findIndex((e) => e.object.spec.planName === 'plan-2');
    const oldNames = new Set(rec.events.filter((e) => e.object.spec.planName === 'plan-1').map((e) => e.object.metadata.name));
    for (const n of oldNames) {
      const terminalAt = rec.events.findIndex((e) => e.object.metadata.name === n && isTerminal(e.object.status?.updateStatus));
      expect(terminalAt, `${n} terminal before the newer plan starts`).to.be.within(0, firstNew - 1);
    }
    const reasons = (await env().client.list(Events, p.ns)).items
      .filter((e) => (e['involvedObject'] as { name?: string }).name === 'plan-2')
      .map((e) => e['reason']);
    expect(reasons).to.include.members(['WaitingForPreviousPlan', 'SupersedingPlan', 'PlanCompleted']);
  });

  it('deleting a plan in progress aborts it first and completes once every machine is terminal and unlabelled', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 2 }] });
    await p.startPlatform();
    await p.apply(
      planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ durationSeconds: SLOW })] }] }),
    );
    await inFlight(p, 'p', 2);
    const before = await p.plan('p');
    expect(before?.metadata?.finalizers).to.include(Finalizers.plan);
    expect(await p.labelledMachines()).to.have.length(2);
    await env().client.delete(InPlaceUpdatePlans, p.ns, 'p');
    await waitFor(async () => (await p.plan('p')) === undefined, { timeoutMs: 30_000, message: 'plan deleted' });
    for (const m of await p.machines()) expect(versionOf(m)).to.equal(FROM_VERSION);
    expect(await p.labelledMachines()).to.deep.equal([]);
    // The MachineUpdates (and their tasks) are owned by the plan and garbage-collected with it.
    await waitFor(async () => (await p.machineUpdates()).length === 0 && (await p.tasks()).length === 0, {
      timeoutMs: 30_000,
      message: 'MachineUpdates and tasks garbage-collected',
    });
  });
});
