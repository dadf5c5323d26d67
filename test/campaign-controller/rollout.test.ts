// Integration: campaigns on the embedded API server (or a real cluster, INPLACE_TEST_KUBECONFIG) with the CAPI
// simulator, the plan controller, the machine task controller and the reference updater. Assertions are on state
// (the order of watch events, status, timestamps the API wrote), never on how long something took.
import { expect } from 'chai';
import { Clusters, Events, InPlaceUpdateCampaigns, Labels, isTerminal, type KubeObject } from '../../src/api/index.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { TO_VERSION, versionOf } from '../e2e/harness.js';
import { campaignObject, conditionOf, FLEET_LABEL, manualUpdater, waitManualTasks, type Plan, useFleetEnv } from './fleet.js';
import { waitFor } from '../support/wait.js';

const terminal = (s: string | undefined): boolean => s === 'updated' || s === 'failed' || s === 'aborted';

describe('campaign controller: rollout', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();

  it('canary first, then waves of at most maxConcurrentClusters, ending updated with every machine at target', async () => {
    const p = await env().platform();
    const clusters = fleetOf(5, 'f', FLEET_LABEL);
    const fleet = await start(p, clusters);
    const rec = await fleet.recordPlans();
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'roll', { rollout: { canary: { clusterNames: ['f-004'] }, maxConcurrentClusters: 2 } }),
    );
    const done = await fleet.waitCampaign('roll', (c) => c.status?.updateStatus === 'updated', 'updated', 180_000);
    rec.stop();

    // The canary's plan is the first one created, and no other plan exists before the canary's plan is updated.
    const added = rec.events.filter((e) => e.type === 'ADDED').map((e) => e.object.spec.clusterName);
    expect(added[0]).to.equal('f-004');
    const canaryDone = rec.events.findIndex((e) => e.object.spec.clusterName === 'f-004' && e.object.status?.updateStatus === 'updated');
    const firstOther = rec.events.findIndex((e) => e.type === 'ADDED' && e.object.spec.clusterName !== 'f-004');
    expect(canaryDone).to.be.greaterThan(-1);
    expect(firstOther).to.be.greaterThan(canaryDone);
    // At most 2 plans non-terminal at any point of the event sequence.
    const state = new Map<string, string | undefined>();
    let maxRunning = 0;
    for (const e of rec.events) {
      state.set(e.object.metadata.name!, e.type === 'DELETED' ? 'updated' : e.object.status?.updateStatus);
      maxRunning = Math.max(maxRunning, [...state.values()].filter((s) => !terminal(s)).length);
    }
    expect(maxRunning).to.be.at.most(2);
    expect(maxRunning).to.equal(2);

    // Waves recorded on the plans: canary 0, then f-000,f-001 in wave 1 and f-002,f-003 in wave 2 (name order).
    const plans = await fleet.plans('roll');
    const waveOf = Object.fromEntries(
      plans.map((x: Plan) => [x.spec.clusterName, x.metadata.labels?.['inplace.cluster.x-k8s.io/campaign-wave']]),
    );
    expect(waveOf).to.deep.equal({ 'f-004': '0', 'f-000': '1', 'f-001': '1', 'f-002': '2', 'f-003': '2' });
    for (const x of plans) {
      const ref = x.metadata.ownerReferences?.find((r) => r.controller);
      expect(ref).to.include({ kind: 'InPlaceUpdateCampaign', name: 'roll', apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1' });
    }
    expect(done.status?.clusters).to.include({ selected: 5, updated: 5, failed: 0 });
    expect(done.status?.waves?.map((w) => [w.index, w.clusters])).to.deep.equal([
      [0, 1],
      [1, 2],
      [2, 2],
    ]);
    expect(conditionOf(done, 'Ready')).to.include({ status: 'True' });
    expect(conditionOf(done, 'Failed')).to.include({ status: 'False' });
    // Events: one WaveStarted per wave and CampaignCompleted; metrics: clusters by state from the status.
    const events = await waitFor(
      async () => {
        const ev = (await p.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(Events, p.ns)).items.filter(
          (e) => e.involvedObject?.name === 'roll',
        );
        return ev.some((e) => e.reason === 'CampaignCompleted') ? ev : undefined;
      },
      { message: 'campaign Events' },
    );
    expect(events.filter((e) => e.reason === 'WaveStarted')).to.have.length(3);
    const finished = new Set(
      events
        .filter((e) => e.reason === 'WaveFinished')
        .map((e) => /^(canary wave|wave \d+) finished/.exec((e as { message?: string }).message ?? '')?.[1]),
    );
    expect([...finished].sort()).to.deep.equal(['canary wave', 'wave 1', 'wave 2']);
    expect(await p.metrics('campaign-controller')).to.match(
      /inplace_campaign_controller_clusters\{namespace="[^"]+",campaign="roll",state="updated"\} 5/,
    );
    const machines = await p.machines();
    expect(machines.length).to.equal(1 + 3 + 3 + 1 + 3);
    expect(machines.every((m) => versionOf(m) === TO_VERSION)).to.equal(true);
  });

  it('soak: the next wave is created at least soakSeconds after the previous wave completed', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(2, 's', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'soak', { rollout: { soakSeconds: 3 } }));
    await fleet.waitCampaign('soak', (c) => c.status?.updateStatus === 'updated', 'updated', 120_000);
    const plans = await fleet.plans('soak');
    const first = plans.find((x) => x.spec.clusterName === 's-000')!;
    const second = plans.find((x) => x.spec.clusterName === 's-001')!;
    const gap = Date.parse(second.metadata.creationTimestamp!) - Date.parse(first.status!.completionTime!);
    expect(gap).to.be.at.least(3000);
  });

  it('failure budget: a failure halts; the running cluster finishes; no new cluster starts; failed cluster named with why', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(4, 'b', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'budget', { updater: manualUpdater(), rollout: { maxConcurrentClusters: 2, failureBudget: 0 } }),
    );
    await waitManualTasks(p, 'b-000');
    await waitManualTasks(p, 'b-001');
    await fleet.finishManual('b-000', 'failed');
    const halted = await fleet.waitCampaign('budget', (c) => conditionOf(c, 'Failed')?.status === 'True', 'Failed=True');
    expect(conditionOf(halted, 'Failed')?.reason).to.equal('BudgetSpent');
    expect(halted.status?.updateStatus).to.equal('updating'); // b-001 still running
    // b-001 finishes; nothing else ever starts.
    await fleet.finishManual('b-001', 'updated');
    const failed = await fleet.waitCampaign('budget', (c) => c.status?.updateStatus === 'failed', 'failed (halted)');
    expect((await fleet.plans('budget')).map((x) => x.spec.clusterName).sort()).to.deep.equal(['b-000', 'b-001']);
    expect(failed.status?.clusters).to.include({ failed: 1, updated: 1, pending: 2 });
    expect(failed.status?.failedClusters?.[0]?.name).to.equal('b-000');
    expect(failed.status?.failedClusters?.[0]?.reason).to.match(/disk full on b-000/);
    expect(conditionOf(failed, 'Ready')).to.include({ status: 'False', reason: 'Halted' });
  });

  it('a failing canary halts the campaign before any wave', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(3, 'k', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'can', {
        updater: manualUpdater(),
        rollout: { canary: { count: 1 }, maxConcurrentClusters: 2, failureBudget: 2 },
      }),
    );
    await waitManualTasks(p, 'k-000');
    await fleet.finishManual('k-000', 'failed');
    const c = await fleet.waitCampaign('can', (x) => x.status?.updateStatus === 'failed', 'failed');
    expect(conditionOf(c, 'Failed')?.reason).to.equal('CanaryFailed');
    expect((await fleet.plans('can')).map((x) => x.spec.clusterName)).to.deep.equal(['k-000']);
  });

  it('pause, resume and abort propagate to the campaign plans', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(3, 'q', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'pra', { updater: manualUpdater(), rollout: { maxConcurrentClusters: 2 } }),
    );
    await waitManualTasks(p, 'q-000');
    await waitManualTasks(p, 'q-001');
    const f = fleet;
    const allPlans = async (pred: (x: Plan) => boolean): Promise<boolean> => {
      const ps = await f.plans('pra');
      return ps.length === 2 && ps.every(pred);
    };
    await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'pra', { spec: { paused: true } }, { type: 'merge' });
    await waitFor(() => allPlans((x) => x.spec.paused === true), { message: 'plans paused' });
    await fleet.waitCampaign('pra', (c) => conditionOf(c, 'Paused')?.status === 'True', 'Paused=True');
    await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'pra', { spec: { paused: false } }, { type: 'merge' });
    await waitFor(
      () => allPlans((x) => x.spec.paused === false && !x.metadata.annotations?.['inplace.cluster.x-k8s.io/paused-by-campaign']),
      {
        message: 'plans resumed',
      },
    );
    await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'pra', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    await waitFor(() => allPlans((x) => x.spec.updatePhase === 'aborting'), { message: 'plans aborting' });
    // The abort reaches the tasks (plan -> MachineUpdate -> task) before the scenario plays them.
    await waitFor(
      async () => {
        const open = (await p.tasks()).filter((t) => (t['spec'] as { updatePhase?: string }).updatePhase === 'aborting');
        return open.length === 2;
      },
      { timeoutMs: 60_000, message: 'both tasks asked to abort' },
    );
    await waitFor(
      async () => {
        await f.finishManual('q-000');
        await f.finishManual('q-001');
        return (await f.campaign('pra'))?.status?.updateStatus === 'aborted';
      },
      { timeoutMs: 60_000, intervalMs: 100, message: 'campaign aborted' },
    );
    expect((await fleet.plans('pra')).length).to.equal(2);
    expect((await fleet.plans('pra')).every((x) => x.status?.updateStatus === 'aborted')).to.equal(true);
  });

  it('a late-joining cluster goes in a later wave; a deleted cluster has its plan aborted and is reported removed', async () => {
    const p = await env().platform();
    const clusters = [...fleetOf(2, 'l', FLEET_LABEL), { name: 'late', shape: 'single-node' as const }].map((c) => ({
      ...c,
      shape: 'single-node' as const,
    }));
    const fleet = await start(p, clusters);
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'late', { updater: manualUpdater(), rollout: { failureBudget: 1 } }),
    );
    await waitManualTasks(p, 'l-000');
    // Mid-campaign: l-000 (running) is deleted, `late` joins the selection.
    await p.client.delete((await import('../../src/api/index.js')).Clusters, p.ns, 'l-000');
    await p.client.patch(
      (await import('../../src/api/index.js')).Clusters,
      p.ns,
      'late',
      { metadata: { labels: FLEET_LABEL } },
      { type: 'merge' },
    );
    const f = fleet;
    // Aborted by the campaign, unless it ended first: deleting the Cluster garbage-collects its control plane and
    // machines, and a plan whose machines are gone can end before the campaign sees the deletion (nothing to abort).
    await waitFor(
      async () => {
        const x = (await f.plans('late')).find((y) => y.spec.clusterName === 'l-000');
        return x?.spec.updatePhase === 'aborting' || isTerminal(x?.status?.updateStatus);
      },
      { timeoutMs: 60_000, message: "the deleted cluster's plan aborting or ended" },
    );
    const done = await waitFor(
      async () => {
        for (const c of ['l-000', 'l-001', 'late']) await f.finishManual(c);
        const c = await f.campaign('late');
        return c?.status?.updateStatus === 'updated' ? c : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 100, message: 'campaign updated' },
    );
    const waves = Object.fromEntries(
      (await fleet.plans('late')).map((x) => [x.spec.clusterName, Number(x.metadata.labels?.['inplace.cluster.x-k8s.io/campaign-wave'])]),
    );
    expect(waves['late']).to.be.greaterThan(waves['l-000']!);
    // The deleted cluster's in-flight machine may finish before the abort reaches its MachineUpdate (an abort lets
    // in-flight updates end; the scenario plays the updater and finishes it): its plan then ends updated, not aborted,
    // and its row counts as updated as well as removed. Either way it is reported removed.
    const deletedPlan = (await fleet.plans('late')).find((x) => x.spec.clusterName === 'l-000');
    expect(deletedPlan?.status?.updateStatus).to.be.oneOf(['aborted', 'updated']);
    const deletedUpdated = deletedPlan?.status?.updateStatus === 'updated' ? 1 : 0;
    expect(done.status?.clusters).to.include({ removed: 1, updated: 2 + deletedUpdated });
    expect(done.status?.skippedClusters?.find((s) => s.name === 'l-000')?.reason).to.match(/deleted/);
    expect(
      (await p.machines()).filter((m) => m.metadata.labels?.[Labels.clusterName] === 'late').every((m) => versionOf(m) === TO_VERSION),
    ).to.equal(true);
  });
  it('a cluster that leaves the selection keeps its running plan, reported removed; the campaign completes', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(2, 'u', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'unsel', { updater: manualUpdater(), rollout: { maxConcurrentClusters: 2 } }),
    );
    await waitManualTasks(p, 'u-000');
    await p.client.patch(Clusters, p.ns, 'u-000', { metadata: { labels: { fleet: null } } }, { type: 'merge' });
    const c = await fleet.waitCampaign('unsel', (x) => x.status?.clusters?.removed === 1, 'u-000 removed');
    expect(c.status?.skippedClusters?.find((s) => s.name === 'u-000')?.reason).to.match(/left the selection/);
    const plan = (await fleet.plans('unsel')).find((x) => x.spec.clusterName === 'u-000');
    expect(plan?.spec.updatePhase).to.equal('updating');
    await fleet.finishManual('u-000');
    await waitManualTasks(p, 'u-001');
    await fleet.finishManual('u-001');
    const done = await fleet.waitCampaign('unsel', (x) => x.status?.updateStatus === 'updated', 'updated');
    expect(done.status?.clusters).to.include({ selected: 1, removed: 1, updated: 2 });
  });
});
