// The conditionRules and feedbackRules of `npm run synth -- --ocm` (cdk8s/ocm.ts) against campaign objects the
// platform itself produced: the campaign controller, plan controller, machine task controller and reference updater
// run a fleet of simulated clusters (test/campaign-controller/fleet.ts, on the embedded API server or a real cluster
// with INPLACE_TEST_KUBECONFIG), and each campaign is read back in the state under test — just applied, in progress,
// updated, canary failed, budget spent (halted while a cluster still runs, then failed), aborted. Each object is
// judged as OCM's work agent and ManifestWorkReplicaSet would (test/ocm/ocm-model.ts, CEL on @bufbuild/cel).
import { expect } from 'chai';
import { InPlaceUpdateCampaigns } from '../../src/api/index.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { CAMPAIGN_FEEDBACK, campaignConditionRules } from '../../cdk8s/ocm.js';
import {
  campaignObject,
  conditionOf,
  FLEET_LABEL,
  manualUpdater,
  useFleetEnv,
  waitManualTasks,
  type Campaign,
} from '../campaign-controller/fleet.js';
import { waitFor } from '../support/wait.js';
import { evaluateRule, feedbackValues, rolloutStatus, type OcmCondition, type OcmRolloutStatus } from './ocm-model.js';

/** The conditions OCM would set on the work for `c`, by type, and the rollout status it would give the cluster. */
function judge(c: Campaign): { conditions: Record<string, OcmCondition>; rollout: OcmRolloutStatus } {
  const conditions = campaignConditionRules().map((r) => evaluateRule(r, c));
  return { conditions: Object.fromEntries(conditions.map((x) => [x.type, x])), rollout: rolloutStatus(conditions) };
}

/** The statuses of the four conditions, in the rules' order. */
const statuses = (j: ReturnType<typeof judge>): Record<string, string> =>
  Object.fromEntries(Object.values(j.conditions).map((x) => [x.type, x.status]));

describe('OCM conditionRules and feedbackRules on campaigns the platform produced', function () {
  this.timeout(300_000);
  const { env, start } = useFleetEnv();

  it('just applied, in progress, updated, canary failed, budget spent, aborted: the conditions and rollout status OCM computes', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(9, 'm', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    const names = (...i: number[]): string[] => i.map((n) => `m-00${n}`);
    const captured: Record<string, Campaign> = {};

    // Just applied: what the management cluster stores before the campaign controller writes any status.
    captured['applied'] = (await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'progress', { updater: manualUpdater(), clusterNames: names(0) }),
    )) as Campaign;
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'updated', { clusterNames: names(1) }));
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'canary', {
        updater: manualUpdater(),
        clusterNames: names(2, 3),
        rollout: { canary: { count: 1 }, maxConcurrentClusters: 2, failureBudget: 2 },
      }),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'budget', { updater: manualUpdater(), clusterNames: names(4, 5, 6), rollout: { maxConcurrentClusters: 2 } }),
    );
    await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'abort', { updater: manualUpdater(), clusterNames: names(7) }));

    // In progress: its cluster's machine task is open.
    await waitManualTasks(p, 'm-000');
    captured['in progress'] = await fleet.waitCampaign('progress', (c) => c.status?.updateStatus === 'updating', 'updating');
    captured['updated'] = await fleet.waitCampaign('updated', (c) => c.status?.updateStatus === 'updated', 'updated', 180_000);

    // Canary failed: the first cluster (the canary) fails.
    await waitManualTasks(p, 'm-002');
    await fleet.finishManual('m-002', 'failed');
    captured['canary failed'] = await fleet.waitCampaign('canary', (c) => c.status?.updateStatus === 'failed', 'failed');

    // Budget spent: one of two running clusters fails with a budget of 0: halted while the other still runs, then failed.
    await waitManualTasks(p, 'm-004');
    await waitManualTasks(p, 'm-005');
    await fleet.finishManual('m-004', 'failed');
    captured['budget spent (halted)'] = await fleet.waitCampaign(
      'budget',
      (c) => conditionOf(c, 'Failed')?.status === 'True',
      'Failed=True',
    );
    await fleet.finishManual('m-005', 'updated');
    captured['budget spent (failed)'] = await fleet.waitCampaign('budget', (c) => c.status?.updateStatus === 'failed', 'failed');

    // Aborted: spec.updatePhase aborting; the platform asks the open task to abort, the scenario plays it.
    await waitManualTasks(p, 'm-007');
    await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'abort', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    captured['aborted'] = await waitFor(
      async () => {
        await fleet.finishManual('m-007');
        const c = await fleet.campaign('abort');
        return c?.status?.updateStatus === 'aborted' ? c : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, message: 'campaign aborted' },
    );

    // The states are what their names say (the platform's own words), before they are judged.
    expect(captured['applied']!.status).to.equal(undefined);
    expect(captured['in progress']!.status?.updateStatus).to.equal('updating');
    expect(conditionOf(captured['canary failed'], 'Failed')?.reason).to.equal('CanaryFailed');
    expect(captured['budget spent (halted)']!.status?.updateStatus).to.equal('updating');
    expect(conditionOf(captured['budget spent (halted)'], 'Failed')?.reason).to.equal('BudgetSpent');

    const judged = Object.fromEntries(Object.entries(captured).map(([k, c]) => [k, judge(c)]));
    // No rule ever errs on a campaign the platform wrote: an error would read as False, and Progressing=False as success.
    for (const [k, j] of Object.entries(judged))
      for (const c of Object.values(j.conditions)) expect(c.reason, `${k}: ${c.type}: ${c.message}`).to.equal('ConditionRuleEvaluated');

    const expected: Record<string, [Record<string, string>, OcmRolloutStatus]> = {
      applied: [{ Complete: 'False', Progressing: 'True', Degraded: 'False', Failed: 'False' }, 'Progressing'],
      'in progress': [{ Complete: 'False', Progressing: 'True', Degraded: 'False', Failed: 'False' }, 'Progressing'],
      updated: [{ Complete: 'True', Progressing: 'False', Degraded: 'False', Failed: 'False' }, 'Succeeded'],
      'canary failed': [{ Complete: 'False', Progressing: 'True', Degraded: 'True', Failed: 'True' }, 'Failed'],
      'budget spent (halted)': [{ Complete: 'False', Progressing: 'True', Degraded: 'True', Failed: 'True' }, 'Failed'],
      'budget spent (failed)': [{ Complete: 'False', Progressing: 'True', Degraded: 'True', Failed: 'True' }, 'Failed'],
      aborted: [{ Complete: 'False', Progressing: 'True', Degraded: 'True', Failed: 'True' }, 'Failed'],
    };
    expect(Object.fromEntries(Object.entries(judged).map(([k, j]) => [k, [statuses(j), j.rollout]]))).to.deep.equal(expected);

    // The messages tell the hub where each campaign is.
    expect(judged['applied']!.conditions['Progressing']!.message).to.equal('campaign not started');
    expect(judged['updated']!.conditions['Complete']!.message).to.match(
      /^campaign updated \(Completed\), clusters 1\/1, machines \d+\/\d+$/,
    );
    expect(judged['budget spent (halted)']!.conditions['Degraded']!.message).to.match(/^campaign updating \(Halted\)/);

    // Feedback: the campaign's progress, clusters and machines done, returned to the hub.
    const fb = feedbackValues(CAMPAIGN_FEEDBACK, captured['updated']);
    expect(fb).to.include({ updateStatus: 'updated', clustersSelected: 1, clustersUpdated: 1, clustersFailed: 0 });
    expect(fb['machinesUpdated']).to.be.a('number').and.equal(fb['machinesTotal']);
    expect(fb['machinesTotal']).to.be.greaterThan(0);
    expect(feedbackValues(CAMPAIGN_FEEDBACK, captured['budget spent (failed)'])).to.include({
      updateStatus: 'failed',
      clustersSelected: 3,
      clustersUpdated: 1,
      clustersFailed: 1,
    });
    expect(feedbackValues(CAMPAIGN_FEEDBACK, captured['applied'])).to.deep.equal({});
  });

  it('a status about an older spec is not Complete: the campaign is judged on its current generation', () => {
    // The shape the campaign controller writes (status.observedGeneration), one generation behind the spec.
    const stale = {
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'InPlaceUpdateCampaign',
      metadata: { name: 'x', namespace: 'y', generation: 3 },
      spec: {},
      status: { updateStatus: 'updated', observedGeneration: 2 },
    } as unknown as Campaign;
    const j = judge(stale);
    expect([statuses(j), j.rollout]).to.deep.equal([
      { Complete: 'False', Progressing: 'True', Degraded: 'False', Failed: 'False' },
      'Progressing',
    ]);
  });
});
