// GitOps health on objects the platform itself produced: plans and campaigns driven on the embedded API server by the
// real controllers (the e2e harness, as the demo runs them), captured in each phase, then read as Argo CD reads them
// (the shipped Lua health checks, run by a REAL Lua 5.1 interpreter: Debian's `lua5.1`, .ci/run installs it) and as
// Flux reads them (kstatus' generic rules, test/support/kstatus.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { FleetCluster } from '../../tools/capi-sim/index.js';
import { InPlaceUpdateCampaigns } from '../../src/api/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { ARGOCD_CM_FILE, ARGOCD_HEALTH_CHECKS, argocdCm } from '../../scripts/argocd-cm.js';
import { computeKstatus, type KstatusStatus } from '../support/kstatus.js';
import { luaAvailable, luaBinary, runArgoHealth } from '../support/lua.js';
import { waitFor } from '../support/wait.js';
import {
  campaignObject,
  conditionOf as conditionOfCampaign,
  manualUpdater,
  startFleet,
  type Campaign,
  type Fleet,
} from '../campaign-controller/fleet.js';
import { useE2eEnv } from './env.js';
import { CP, conditionOf, dailyUtcWindow, planObject, refUpdater } from './harness.js';

const root = projectRoot();
const PLAN_LUA = join(root, ARGOCD_HEALTH_CHECKS[0].file);
const CAMPAIGN_LUA = join(root, ARGOCD_HEALTH_CHECKS[1].file);

interface Seen {
  metadata: { generation?: number; name?: string };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string; message?: string; observedGeneration?: number }[];
  };
}

/**
 * What Argo CD and kstatus make of a captured object, checked against the phase's expectation, and the invariants every
 * write keeps: status.observedGeneration and every condition's observedGeneration are the object's generation, at most
 * one of Reconciling / Stalled is True, and kstatus says Current exactly when Ready is True.
 */
function expectHealth(lua: string, obj: Seen, want: { argo: string; kstatus: KstatusStatus; reason?: string; message?: RegExp }): void {
  const what = `${obj.metadata.name ?? ''} (${JSON.stringify(obj.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`))})`;
  const gen = obj.metadata.generation;
  expect(obj.status?.observedGeneration, `${what}: status.observedGeneration`).to.equal(gen);
  for (const c of obj.status?.conditions ?? []) expect(c.observedGeneration, `${what}: ${c.type}.observedGeneration`).to.equal(gen);
  const on = (t: string): boolean => obj.status?.conditions?.find((c) => c.type === t)?.status === 'True';
  expect(on('Reconciling') && on('Stalled'), `${what}: Reconciling and Stalled both True`).to.equal(false);
  const k = computeKstatus(obj);
  expect(k.status, `${what}: kstatus`).to.equal(want.kstatus);
  expect(k.status === 'Current', `${what}: kstatus Current exactly when Ready=True`).to.equal(on('Ready'));
  if (want.reason) expect(k.reason, `${what}: the kstatus condition's reason`).to.equal(want.reason);
  const h = runArgoHealth(lua, obj);
  expect(h.status, `${what}: Argo CD health (${h.message})`).to.equal(want.argo);
  if (want.message) expect(h.message, `${what}: Argo CD message`).to.match(want.message);
}

describe('GitOps health: the argocd-cm snippet', () => {
  it('deploy/argocd/argocd-cm.yaml is the Lua files as they are (npm run generate:argocd)', () => {
    expect(readFileSync(join(root, ARGOCD_CM_FILE), 'utf8')).to.equal(argocdCm(root));
  });
});

describe('GitOps health: Argo CD Lua checks and kstatus on objects the controllers produced', function () {
  this.timeout(180_000);
  before(function () {
    if (!luaAvailable()) {
      console.log(`    SKIPPED: ${luaBinary()} is absent (apt-get install -y lua5.1, or LUA_BIN=…); .ci/run installs it`);
      this.skip();
    }
  });

  it('aborting moves on (Progressing, even paused); a status written before Stalled existed still reads Degraded', () => {
    const plan = (updateStatus: string, conditions: { type: string; status: string; reason: string; message?: string }[]) => ({
      metadata: { name: 'x', generation: 2 },
      status: { observedGeneration: 2, updateStatus, conditions },
    });
    const paused = { type: 'Paused', status: 'True', reason: 'Paused' };
    expect(runArgoHealth(PLAN_LUA, plan('aborting', [paused, { type: 'Ready', status: 'False', reason: 'Aborting' }])).status).to.equal(
      'Progressing',
    );
    expect(runArgoHealth(PLAN_LUA, plan('pending', [{ type: 'Failed', status: 'True', reason: 'Invalid' }]))).to.deep.equal({
      status: 'Degraded',
      message: 'Invalid',
    });
    expect(runArgoHealth(PLAN_LUA, plan('aborted', [])).status).to.equal('Degraded');
    // A halted campaign whose running plans still finish: already Degraded (Failed=True), not Progressing.
    const halted = plan('updating', [{ type: 'Failed', status: 'True', reason: 'BudgetSpent' }]);
    expect(runArgoHealth(CAMPAIGN_LUA, halted).status).to.equal('Degraded');
    // Non-ASCII and quotes in messages reach Lua intact.
    const msg = 'disk "full" on nœud-1\n';
    expect(runArgoHealth(PLAN_LUA, plan('failed', [{ type: 'Stalled', status: 'True', reason: 'Failed', message: msg }])).message).to.equal(
      `Failed: ${msg}`,
    );
  });

  describe('plans', () => {
    const env = useE2eEnv();

    it('updated: Healthy, kstatus Current', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
      await p.startPlatform();
      await p.apply(
        planObject(p.ns, 'ok', {
          cp: { name: CP, sequence: 1, updaters: [refUpdater()] },
          mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater()] }],
        }),
      );
      const plan = await p.waitStatus('ok', 'updated');
      expect(conditionOf(plan, 'Reconciling')).to.include({ status: 'False' });
      expect(conditionOf(plan, 'Stalled')).to.include({ status: 'False' });
      expectHealth(PLAN_LUA, plan, { argo: 'Healthy', kstatus: 'Current', message: /^Updated: 2\/2 machines updated/ });
    });

    it('failed: Degraded with the updater message, kstatus Failed (Stalled reason Failed)', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
      await p.startPlatform({ mhc: false });
      await p.apply(
        planObject(p.ns, 'bad', {
          mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ failWith: 'kubelet did not come back' })] }],
        }),
      );
      const plan = await p.waitStatus('bad', 'failed');
      expectHealth(PLAN_LUA, plan, { argo: 'Degraded', kstatus: 'Failed', reason: 'Failed', message: /kubelet did not come back/ });
    });

    it('updating: Progressing; paused: Suspended; aborted: Degraded (kstatus InProgress, InProgress, Failed)', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
      await p.startPlatform();
      await p.apply(
        planObject(p.ns, 'slow', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ durationSeconds: 600 })] }] }),
      );
      const updating = await p.waitPlan(
        'slow',
        (x) => x.status?.updateStatus === 'updating' && conditionOf(x, 'Ready')?.reason === 'Updating',
        'plan updating',
      );
      expectHealth(PLAN_LUA, updating, { argo: 'Progressing', kstatus: 'InProgress', reason: 'Updating', message: /^Updating: 0\/2/ });

      await p.patchPlan('slow', { paused: true });
      const paused = await p.waitPlan('slow', (x) => conditionOf(x, 'Ready')?.reason === 'Paused', 'plan paused');
      expectHealth(PLAN_LUA, paused, { argo: 'Suspended', kstatus: 'InProgress', reason: 'Paused', message: /^Paused: paused at 0\/2/ });

      await p.patchPlan('slow', { updatePhase: 'aborting' });
      const aborted = await p.waitStatus('slow', 'aborted');
      expectHealth(PLAN_LUA, aborted, {
        argo: 'Degraded',
        kstatus: 'Failed',
        reason: 'Aborted',
        message: /^Aborted: the plan was aborted/,
      });
    });

    it('waiting on a closed maintenance window: Progressing, kstatus InProgress', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
      await p.startPlatform();
      const plan = planObject(p.ns, 'later', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater()] }] });
      plan.spec.maintenanceWindows = [dailyUtcWindow(6, 1)];
      await p.apply(plan);
      const waiting = await p.waitPlan('later', (x) => conditionOf(x, 'Ready')?.reason === 'WaitingForMaintenanceWindow', 'window wait');
      expectHealth(PLAN_LUA, waiting, {
        argo: 'Progressing',
        kstatus: 'InProgress',
        reason: 'WaitingForMaintenanceWindow',
        message: /^WaitingForMaintenanceWindow: window closed until/,
      });
    });

    it('invalid: Progressing while it settles, Degraded once it ended (kstatus InProgress, then Failed reason Invalid)', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
      await p.startPlatform();
      await p.apply(planObject(p.ns, 'typo', { mds: [{ name: 'no-such-md', sequence: 2, updaters: [refUpdater()] }] }));
      const settling = await p.waitPlan('typo', (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False');
      // Ended already only if this machine was slow to look: then the next expectation covers it.
      if (conditionOf(settling, 'Failed')?.status !== 'True')
        expectHealth(PLAN_LUA, settling, { argo: 'Progressing', kstatus: 'InProgress', reason: 'Invalid', message: /no-such-md/ });
      const ended = await p.waitPlan('typo', (x) => conditionOf(x, 'Failed')?.status === 'True', 'ended invalid', 60_000);
      expectHealth(PLAN_LUA, ended, { argo: 'Degraded', kstatus: 'Failed', reason: 'Invalid', message: /^Invalid: .*no-such-md/ });
    });

    it('a status of an older generation: Progressing and kstatus InProgress whatever it says (the spec just changed)', async () => {
      const p = await env().platform();
      await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
      await p.startPlatform();
      await p.apply(planObject(p.ns, 'ok', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater()] }] }));
      const plan = await p.waitStatus('ok', 'updated');
      const newer = { ...plan, metadata: { ...plan.metadata, generation: (plan.metadata.generation ?? 1) + 1 } };
      expect(computeKstatus(newer).status).to.equal('InProgress');
      expect(runArgoHealth(PLAN_LUA, newer)).to.deep.equal({
        status: 'Progressing',
        message: `the plan controller has not observed generation ${newer.metadata.generation} yet`,
      });
      expect(runArgoHealth(PLAN_LUA, { ...plan, status: undefined }).status).to.equal('Progressing');
    });
  });

  describe('campaigns', () => {
    const env = useE2eEnv();
    let fleet: Fleet | undefined;
    afterEach(async () => {
      await fleet?.stop();
      fleet = undefined;
    });
    const group = (g: string, n: number): FleetCluster[] =>
      Array.from({ length: n }, (_, i) => ({ name: `${g}-${i}`, shape: 'single-node' as const, labels: { fleet: g } }));
    const waitCampaign = (f: Fleet, name: string, pred: (c: Campaign) => boolean, msg: string): Promise<Campaign> =>
      f.waitCampaign(name, pred, msg, 120_000);
    const ready = (c: Campaign) => conditionOfCampaign(c, 'Ready');

    it('canary in progress: Progressing; paused: Suspended; updated: Healthy (kstatus InProgress, InProgress, Current)', async () => {
      const p = await env().platform();
      fleet = await startFleet(p, group('a', 2));
      const spec = { clusterSelector: { matchLabels: { fleet: 'a' } }, rollout: { canary: { count: 1 } }, updater: manualUpdater() };
      await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'roll', spec));
      const f = fleet;
      const canary = await waitCampaign(f, 'roll', (c) => c.status?.phase === 'Canary' && (c.status.clusters?.updating ?? 0) > 0, 'canary');
      expectHealth(CAMPAIGN_LUA, canary, { argo: 'Progressing', kstatus: 'InProgress', reason: 'Canary', message: /^Canary: / });

      await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'roll', { spec: { paused: true } }, { type: 'merge' });
      const paused = await waitCampaign(
        f,
        'roll',
        (c) => ready(c)?.reason === 'Paused' && c.status?.observedGeneration === c.metadata.generation,
        'paused',
      );
      expectHealth(CAMPAIGN_LUA, paused, { argo: 'Suspended', kstatus: 'InProgress', reason: 'Paused', message: /^Paused: paused/ });

      await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'roll', { spec: { paused: false } }, { type: 'merge' });
      const done = await waitFor(
        async () => {
          await p.finishTasks('manual', 'updated');
          const c = await f.campaign('roll');
          return c?.status?.updateStatus === 'updated' && c.status.observedGeneration === c.metadata.generation ? c : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 100, message: 'campaign updated' },
      );
      expectHealth(CAMPAIGN_LUA, done, { argo: 'Healthy', kstatus: 'Current', message: /^Completed: / });
    });

    it('a failed canary halts it: Degraded, kstatus Failed (Stalled reason CanaryFailed)', async () => {
      const p = await env().platform();
      fleet = await startFleet(p, group('b', 2));
      const spec = { clusterSelector: { matchLabels: { fleet: 'b' } }, rollout: { canary: { count: 1 } }, updater: manualUpdater() };
      await p.client.create(InPlaceUpdateCampaigns, campaignObject(p.ns, 'halt', spec));
      const f = fleet;
      const halted = await waitFor(
        async () => {
          await p.finishTasks('manual', 'failed', { failMessage: 'disk full' });
          const c = await f.campaign('halt');
          return c?.status?.phase === 'Halted' && c.status.updateStatus === 'failed' ? c : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 100, message: 'campaign halted' },
      );
      expectHealth(CAMPAIGN_LUA, halted, {
        argo: 'Degraded',
        kstatus: 'Failed',
        reason: 'CanaryFailed',
        message: /^CanaryFailed: a canary failed/,
      });
    });

    it('waiting on a closed window: Progressing; invalid: Degraded; aborted: Degraded (kstatus InProgress, Failed, Failed)', async () => {
      const p = await env().platform();
      fleet = await startFleet(p, group('c', 1));
      const f = fleet;
      const closed = campaignObject(p.ns, 'later', { clusterSelector: { matchLabels: { fleet: 'c' } } });
      closed.spec.maintenanceWindows = [dailyUtcWindow(6, 1)];
      await p.client.create(InPlaceUpdateCampaigns, closed);
      const waiting = await waitCampaign(f, 'later', (c) => ready(c)?.reason === 'WaitingForMaintenanceWindow', 'window wait');
      expectHealth(CAMPAIGN_LUA, waiting, {
        argo: 'Progressing',
        kstatus: 'InProgress',
        reason: 'WaitingForMaintenanceWindow',
        message: /^WaitingForMaintenanceWindow: /,
      });

      await p.client.create(
        InPlaceUpdateCampaigns,
        campaignObject(p.ns, 'nobody', { clusterSelector: { matchLabels: { fleet: 'none' } } }),
      );
      const invalid = await waitCampaign(f, 'nobody', (c) => ready(c)?.reason === 'Invalid', 'invalid');
      expectHealth(CAMPAIGN_LUA, invalid, { argo: 'Degraded', kstatus: 'Failed', reason: 'Invalid' });

      await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'later', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
      const aborted = await waitCampaign(f, 'later', (c) => c.status?.updateStatus === 'aborted', 'aborted');
      expectHealth(CAMPAIGN_LUA, aborted, { argo: 'Degraded', kstatus: 'Failed', reason: 'Aborted', message: /^Aborted: / });
    });
  });
});
