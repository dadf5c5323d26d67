// Integration: the overlap rule, clusters already at target, and bad input, on the embedded API server (or a real
// cluster). A cluster a hand-written plan is updating waits (never superseded) and goes in a later wave; there its
// machines are already at target, so its campaign plan ends updated with every machine skipped and no MachineUpdate.
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { API_VERSION, InPlaceUpdateCampaigns, InPlaceUpdatePlans, Labels, PlanAnnotations } from '../../src/api/index.js';
import { campaignPlanName } from '../../src/campaign-controller/index.js';
import { apiErrorCode } from '../../src/runtime/pure/errors.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { TO_VERSION, versionOf } from '../e2e/harness.js';
import { waitFor } from '../support/wait.js';
import { campaignObject, conditionOf, FLEET_LABEL, manualUpdater, waitManualTasks, type Plan, useFleetEnv } from './fleet.js';

const singleNodes = (n: number, prefix: string) => fleetOf(n, prefix, FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const }));

describe('campaign controller: overlap, at-target clusters, bad input', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();

  it("waits for a hand-written plan's cluster (never supersedes it), then finds it at target: skipped, no MachineUpdate", async () => {
    const p = await env().platform();
    const fleet = await start(p, singleNodes(2, 'o'));
    // A hand-written plan on o-000, played by the scenario (manual updater), stays running.
    const hand: Plan = {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdatePlan',
      metadata: { name: 'by-hand', namespace: p.ns },
      spec: { clusterName: 'o-000', controlPlane: { name: 'o-000-cp', sequence: 1, updaters: [manualUpdater()] } },
    };
    await p.client.create(InPlaceUpdatePlans, hand);
    await waitManualTasks(p, 'o-000');
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'ov', { rollout: { maxConcurrentClusters: 2 } }));

    // o-001 goes; o-000 waits, reported with the plan's name; the hand-written plan is untouched.
    const waiting = await fleet.waitCampaign(
      'ov',
      (c) => c.status?.clusters?.waiting === 1 && c.status?.clusters?.updated === 1,
      'o-000 waiting, o-001 updated',
    );
    expect(waiting.status?.skippedClusters?.find((s) => s.name === 'o-000')?.reason).to.match(/plan by-hand is updating this cluster/);
    expect((await fleet.plans('ov')).map((x) => x.spec.clusterName)).to.deep.equal(['o-001']);
    const handNow = await p.client.get<Plan>(InPlaceUpdatePlans, p.ns, 'by-hand');
    expect(handNow?.spec.updatePhase).to.equal('updating');
    expect(handNow?.metadata.annotations?.[PlanAnnotations.supersededBy]).to.equal(undefined);

    // The hand-written plan finishes (same target value): o-000 goes in the next wave, already at target.
    await fleet.finishManual('o-000', 'updated');
    const done = await fleet.waitCampaign('ov', (c) => c.status?.updateStatus === 'updated', 'updated');
    expect(done.status?.clusters).to.include({ updated: 1, skipped: 1, waiting: 0 });
    const late = await p.client.get<Plan>(InPlaceUpdatePlans, p.ns, campaignPlanName('ov', 'o-000'));
    expect(late?.metadata.labels?.['inplace.cluster.x-k8s.io/campaign-wave']).to.equal('2');
    expect(late?.status?.skippedMachines).to.equal(1);
    const mus = (await p.machineUpdates()).filter((m) => m.metadata.labels?.[Labels.planName] === campaignPlanName('ov', 'o-000'));
    expect(mus).to.deep.equal([]);
    expect((await p.machines()).every((m) => versionOf(m) === TO_VERSION)).to.equal(true);
  });

  it('two campaigns over one cluster: the newer is Valid=False naming the older and creates nothing until it is finished', async () => {
    const p = await env().platform();
    const fleet = await start(p, singleNodes(1, 'w'));
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'first', { updater: manualUpdater() }));
    await waitManualTasks(p, 'w-000');
    // Creation timestamps have second precision: make the second campaign strictly newer.
    const f = fleet;
    const firstAt = (await f.campaign('first'))!.metadata.creationTimestamp!;
    await waitFor(() => new Date().toISOString().replace(/\.\d+Z$/, 'Z') > firstAt, { message: 'a second later' });
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'second'));
    const second = await fleet.waitCampaign('second', (c) => conditionOf(c, 'Valid')?.status === 'False', 'Valid=False');
    expect(conditionOf(second, 'Valid')?.message).to.match(
      /Cluster w-000 is also selected by campaign first, which is older and not finished/,
    );
    expect(await fleet.plans('second')).to.deep.equal([]);
    // The first campaign finishes: the second becomes valid and finds the cluster at target.
    await fleet.finishManual('w-000', 'updated');
    const done = await fleet.waitCampaign('second', (c) => c.status?.updateStatus === 'updated', 'second updated');
    expect(done.status?.clusters).to.include({ skipped: 1 });
  });

  it('bad input: the API refuses 5,000 long cluster names, a budget over 100 % and an invalid updater name; nothing is created', async () => {
    const p = await env().platform();
    const names = Array.from({ length: 5000 }, (_, i) => `cluster-${String(i).padStart(5, '0')}-${'x'.repeat(49)}`);
    const refusals: string[] = [];
    for (const spec of [
      { clusterNames: names },
      { rollout: { failureBudget: '150%' } },
      { template: { controlPlane: { sequence: 1, updaters: [{ ...manualUpdater(), name: 'Not_A_Name' }] } } },
    ]) {
      try {
        await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'bad', spec as never));
        refusals.push('accepted');
      } catch (err) {
        expect(apiErrorCode(err), String(err)).to.equal(422);
        refusals.push((err as Error).message);
      }
    }
    expect(refusals[0])
      .to.match(/clusterNames/)
      .and.to.match(/must have at most 1000 items/);
    expect(refusals[1])
      .to.match(/failureBudget/)
      .and.to.match(/150%/);
    expect(refusals[2]).to.match(/name/);
    for (const r of refusals) expect(r.length).to.be.below(4096);
    expect((await p.client.list(InPlaceUpdateCampaigns, p.ns)).items).to.deep.equal([]);
  });

  it('bad counts: one 422 names each out-of-bounds count and percentage (bounds beside the int-or-string anyOf)', async () => {
    const p = await env().platform();
    const err = await p.client
      .create(
        InPlaceUpdateCampaigns,
        campaignObject(p.ns, 'counts', { rollout: { canary: { count: -1 }, maxConcurrentClusters: 0, failureBudget: '101%' } } as never),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(apiErrorCode(err), String(err)).to.equal(422);
    const msg = (err as Error).message;
    expect(msg).to.include('spec.rollout.canary.count in body should be greater than or equal to 0');
    expect(msg).to.include('spec.rollout.maxConcurrentClusters in body should be greater than or equal to 1');
    expect(msg).to.include("spec.rollout.failureBudget in body should match '^(100|[1-9]?[0-9])%$'");
    // A percentage in bounds passes the integer bound and a count passes the pattern: each applies to its own kind.
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'counts-ok', { rollout: { canary: { count: '0%' }, maxConcurrentClusters: '100%', failureBudget: 3 } } as never),
    );
  });

  it('bad input: selector matching nothing, canary not selected, a template kind no API serves: Valid=False, no plan, no MachineUpdate', async () => {
    const p = await env().platform();
    const fleet = await start(p, singleNodes(2, 'v'));
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'nothing', { clusterSelector: { matchLabels: { fleet: 'none' } } }));
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'canary', { clusterNames: ['v-000'], rollout: { canary: { clusterNames: ['v-001', 'ghost'] } } }),
    );
    const tmplUpdater = {
      ...manualUpdater(),
      updaterUpdateTemplateRef: { apiVersion: 'nope.example.com/v1', kind: 'NopeTemplate', name: 'x' },
    };
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'kind', { clusterNames: ['v-001'], updater: tmplUpdater }));
    const f = fleet;
    const msg = async (name: string): Promise<string> =>
      conditionOf(await f.waitCampaign(name, (c) => conditionOf(c, 'Valid')?.status === 'False', 'Valid=False'), 'Valid')!.message!;
    expect(await msg('nothing')).to.match(/no Cluster in namespace .* matches the campaign's selection \(clusterSelector fleet=none\)/);
    expect(await msg('canary')).to.match(/canary clusters not selected by the campaign: v-001, ghost/);
    expect(await msg('kind')).to.match(/NopeTemplate \(nope.example.com\/v1\) is not served/);
    expect((await p.client.list<KubeObject>(InPlaceUpdatePlans, p.ns)).items).to.deep.equal([]);
    expect(await p.machineUpdates()).to.deep.equal([]);
  });
});
