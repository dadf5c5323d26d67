// Integration: the history of finished plans. By default the platform deletes only what it created (the MachineUpdates
// and tasks of old finished plans); the plans users applied stay with their status. A plan goes only by its own
// spec.ttlSecondsAfterFinished, or with --prune-finished-plans. Updaters are played by the test (deterministic: no
// timing). Against the local API server, or a real cluster (INPLACE_TEST_KUBECONFIG).
import { expect } from 'chai';
import type { KubeObject, PlanTarget } from '../../src/api/index.js';
import { Annotations, Events, InPlaceUpdatePlans, KubeadmControlPlanes, PlanEventReasons } from '../../src/api/index.js';
import { PAUSED_BY_PLAN } from '../../src/rules/owners.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { createPlanController, type PlanControllerOptions } from '../../src/plan-controller/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { CP, planObject, refUpdater, type Platform } from '../e2e/harness.js';

const MD = 'cluster1-md-0';
/** The updater the test plays (no updater process runs). */
const UPDATER = 'manual';

async function start(p: Platform, opts: PlanControllerOptions): Promise<void> {
  await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
  await p.startComponent(createPlanController(opts));
  await p.startComponent(machineTaskController);
}

/** A MachineDeployment target carrying a value of its own (every plan updates both machines). */
const mdTarget = (name: string, md = MD): PlanTarget => ({
  name: md,
  sequence: 2,
  updaters: [
    refUpdater({
      name: UPDATER,
      responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: `image-${name}` }],
    }),
  ],
});

/** Applies a plan (extra spec fields allowed) and plays its updater until it is updated. */
async function runPlan(p: Platform, name: string, extra: Record<string, unknown> = {}): Promise<void> {
  const plan = planObject(p.ns, name, { mds: [mdTarget(name)] });
  Object.assign(plan.spec, extra);
  await p.apply(plan);
  await p.drive(name, UPDATER, 'updated');
}

const plansLeft = async (p: Platform): Promise<string[]> =>
  (await p.client.list(InPlaceUpdatePlans, p.ns)).items.map((x) => x.metadata.name!).sort();

const recordsByPlan = async (p: Platform): Promise<Record<string, number>> => {
  const out: Record<string, number> = {};
  for (const m of await p.machineUpdates()) out[m.spec.planName] = (out[m.spec.planName] ?? 0) + 1;
  return out;
};

const eventsOf = async (p: Platform, reason: string): Promise<(KubeObject & { message?: string; involvedObject?: { name?: string } })[]> =>
  (await p.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(Events, p.ns)).items.filter(
    (e) => e.reason === reason,
  );

describe('plan controller: history of finished plans', function () {
  this.timeout(180_000);
  const env = useE2eEnv();

  it('by default never deletes a user-applied plan: three invalid plans and a retry keep the successful and the aborted plan', async () => {
    const p = await env().platform();
    // A limit of 1 makes the pruning of records observable: it happens, and it takes no plan with it.
    await start(p, { finishedPlansPerCluster: 1 });
    await runPlan(p, 'success');

    await p.apply(planObject(p.ns, 'aborted', { mds: [mdTarget('aborted')] }));
    await p.waitTasks(UPDATER, 1);
    await p.patchPlan('aborted', { updatePhase: 'aborting' });
    await p.drive('aborted', UPDATER, 'aborted');

    for (const name of ['invalid-1', 'invalid-2', 'invalid-3']) {
      await p.apply(planObject(p.ns, name, { mds: [mdTarget(name, 'no-such-md')] }));
      await p.waitPlan(
        name,
        (x) => x.status?.conditions?.some((c) => c.type === 'Valid' && c.status === 'False') ?? false,
        `${name} invalid`,
      );
    }
    // Plan times have one-second resolution: let the retry finish in a later second than the success, so which of the
    // two is newer does not fall to the tie-break (the name, the supersede order).
    const successDone = Date.parse((await p.plan('success'))?.status?.completionTime ?? '');
    while (Date.now() < successDone + 1000) await new Promise((r) => setTimeout(r, 100));
    await runPlan(p, 'retry');

    // The older plans' records go (their tasks follow through ownerReferences); the retry keeps its own.
    await waitFor(async () => JSON.stringify(await recordsByPlan(p)) === JSON.stringify({ retry: 2 }) || undefined, {
      timeoutMs: 60_000,
      message: 'only the retry keeps MachineUpdates',
    });
    const events = await waitFor(
      async () =>
        (await eventsOf(p, PlanEventReasons.machineUpdatesPruned)).length >= 2
          ? await eventsOf(p, PlanEventReasons.machineUpdatesPruned)
          : undefined,
      {
        timeoutMs: 30_000,
        message: `${PlanEventReasons.machineUpdatesPruned} Events`,
      },
    );
    expect(events.map((e) => e.involvedObject?.name).sort()).to.deep.equal(['aborted', 'success']);

    // Every plan is still there, and the pruned ones still tell what happened.
    expect(await plansLeft(p)).to.deep.equal(['aborted', 'invalid-1', 'invalid-2', 'invalid-3', 'retry', 'success']);
    const success = await p.plan('success');
    expect(success?.status).to.include({ updateStatus: 'updated', progress: '2/2' });
    expect((await p.plan('aborted'))?.status?.updateStatus).to.equal('aborted');
    expect(await eventsOf(p, PlanEventReasons.pruned)).to.deep.equal([]);
  });

  it('deletes a plan that opted in with spec.ttlSecondsAfterFinished once it finished, with its MachineUpdates', async () => {
    const p = await env().platform();
    await start(p, {});
    await runPlan(p, 'kept');
    // With a TTL of 0 the plan may be deleted before a poll sees it updated: play the updater until it ended or is gone
    // (the Event checked below says it ended updated).
    const shortLived = planObject(p.ns, 'short-lived', { mds: [mdTarget('short-lived')] });
    Object.assign(shortLived.spec, { ttlSecondsAfterFinished: 0 });
    await p.apply(shortLived);
    await waitFor(
      async () => {
        await p.finishTasks(UPDATER);
        const x = await p.plan('short-lived');
        return !x || x.status?.updateStatus === 'updated' || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 25, message: 'short-lived updated (or already deleted by its TTL)' },
    );
    await waitFor(async () => (await plansLeft(p)).join() === 'kept' || undefined, { timeoutMs: 60_000, message: 'short-lived deleted' });
    await waitFor(async () => JSON.stringify(await recordsByPlan(p)) === JSON.stringify({ kept: 2 }) || undefined, {
      timeoutMs: 60_000,
      message: "short-lived's MachineUpdates garbage-collected",
    });
    const ev = await waitFor(
      async () => ((await eventsOf(p, PlanEventReasons.pruned)).length > 0 ? await eventsOf(p, PlanEventReasons.pruned) : undefined),
      {
        timeoutMs: 30_000,
        message: `a ${PlanEventReasons.pruned} Event`,
      },
    );
    expect(ev[0]?.involvedObject?.name).to.equal('kept');
    expect(ev[0]?.message).to.contain('short-lived (updated; spec.ttlSecondsAfterFinished)');
  });

  it('with --prune-finished-plans deletes plans beyond the limit, but never one an owner still names as its pause holder', async () => {
    const p = await env().platform();
    await start(p, { finishedPlansPerCluster: 2, pruneFinishedPlans: true });
    await runPlan(p, 'k1');
    // As after an abort over mixed machines: the control plane stays paused by k1 (no later plan targets it).
    await p.client.patch(
      KubeadmControlPlanes,
      p.ns,
      CP,
      { metadata: { annotations: { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'k1' } } },
      { type: 'merge' },
    );
    for (const name of ['k2', 'k3', 'k4']) await runPlan(p, name);
    await waitFor(async () => (await plansLeft(p)).join() === 'k1,k3,k4' || undefined, {
      timeoutMs: 60_000,
      message: 'k2 deleted, k1 kept (pinned)',
    });
    expect((await p.client.get(KubeadmControlPlanes, p.ns, CP))?.metadata.annotations?.[PAUSED_BY_PLAN]).to.equal('k1');
    await waitFor(async () => JSON.stringify(await recordsByPlan(p)) === JSON.stringify({ k1: 2, k3: 2, k4: 2 }) || undefined, {
      timeoutMs: 60_000,
      message: "k2's MachineUpdates garbage-collected",
    });
  });
});
