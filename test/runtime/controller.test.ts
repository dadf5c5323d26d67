// A controller end to end over the real protocol: informers, queue, reconcile, patch helper, conditions,
// optimistic concurrency, faults; plus leader handover and events.
import { expect } from 'chai';
import { Events, Leases } from '../../src/api/index.js';
import { isTrue, setStatusCondition } from '../../src/runtime/pure/conditions.js';
import { isConflict } from '../../src/runtime/pure/errors.js';
import { createManager, type RuntimeManager } from '../../src/runtime/manager.js';
import { snapshot } from '../../src/runtime/patch.js';
import { Action, type KubeClient, type ObjectKey } from '../../src/runtime/pure/types.js';
import type { Lease } from '../../src/runtime/leader.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';
import { WIDGET_CRD, widget, Widgets, type Widget } from './fixtures.js';
import type { Condition } from '../../src/api/index.js';

/** The reconcile under test: status.observedSize follows spec.size, with a Ready condition; one patch. */
function sizeReconciler(mgr: RuntimeManager, client: KubeClient, hook?: (w: Widget) => Promise<void>) {
  return async (key: ObjectKey): Promise<Action> => {
    const w = mgr.informer<Widget>(Widgets).store.get(key.namespace, key.name);
    if (!w) return Action.awaitChange();
    const h = snapshot(w);
    w.status = { ...w.status, observedSize: w.spec.size ?? 0 };
    setStatusCondition(w, { type: 'Ready', status: 'True', reason: 'Observed', message: `size ${w.spec.size}` });
    await hook?.(w);
    await h.apply(client, Widgets, w);
    return Action.awaitChange();
  };
}

const observed = async (client: KubeClient, ns: string, name: string, size: number): Promise<boolean> => {
  const w = await client.get<Widget>(Widgets, ns, name);
  return w?.status?.observedSize === size && isTrue(w.status.conditions as Condition[] | undefined, 'Ready');
};

describe('controller against an API server', function () {
  let env: TestEnv;
  let ns: string;
  const managers: RuntimeManager[] = [];
  before(async () => {
    env = await startTestEnv({ crds: [WIDGET_CRD] });
  });
  after(async () => {
    await env?.stop();
  });
  beforeEach(async () => {
    ns = await env.newNamespace('rt-ctrl');
  });
  afterEach(async () => {
    env.server?.setFaults(undefined);
    await Promise.all(managers.splice(0).map((m) => m.stop()));
  });
  const manager = (extra: Partial<Parameters<typeof createManager>[0]> = {}): RuntimeManager => {
    const m = createManager({
      client: env.client,
      name: 'rt-test',
      namespace: ns,
      queue: { baseDelayMs: 2, maxDelayMs: 50 },
      informer: { backoff: { baseMs: 2, maxMs: 20 } },
      ...extra,
    });
    managers.push(m);
    return m;
  };

  it('converges every object to its spec and follows later changes', async () => {
    for (let i = 0; i < 5; i++) await env.client.create(Widgets, widget(ns, `w${i}`, i));
    const mgr = manager();
    mgr.controller('widgets').for(Widgets).withConcurrency(3).reconcile(sizeReconciler(mgr, mgr.client));
    await mgr.start();
    for (let i = 0; i < 5; i++) await waitFor(() => observed(env.client, ns, `w${i}`, i), { message: `w${i} observed` });
    await env.client.patch(Widgets, ns, 'w2', { spec: { size: 42 } }, { type: 'merge' });
    await waitFor(() => observed(env.client, ns, 'w2', 42), { message: 'w2 follows its spec' });
  });

  it('retries after a conflict caused by a concurrent writer and ends with both changes', async () => {
    await env.client.create(Widgets, widget(ns, 'w', 1));
    const mgr = manager();
    let conflicts = 0;
    let interfered = false;
    const reconcile = sizeReconciler(mgr, mgr.client, async (w) => {
      if (interfered) return;
      interfered = true;
      // Another writer changes the object between our read and our patch.
      await env.client.patch(Widgets, ns, w.metadata.name!, { metadata: { labels: { other: 'writer' } } }, { type: 'merge' });
    });
    mgr
      .controller('widgets')
      .for(Widgets)
      .reconcile(async (k, ctx) => {
        try {
          return await reconcile(k);
        } catch (err) {
          if (isConflict(err)) conflicts++;
          ctx.log.debug('conflict');
          throw err;
        }
      });
    await mgr.start();
    await waitFor(() => observed(env.client, ns, 'w', 1), { message: 'w observed after the conflict' });
    expect(conflicts).to.be.greaterThan(0);
    expect((await env.client.get<Widget>(Widgets, ns, 'w'))?.metadata.labels).to.deep.equal({ other: 'writer' });
  });

  it('converges despite injected API errors and dropped watches', async function () {
    if (env.isRealCluster) {
      console.log('    (skipped on INPLACE_TEST_KUBECONFIG: needs the embedded API server for fault injection)');
      this.skip();
    }
    for (let i = 0; i < 8; i++) await env.client.create(Widgets, widget(ns, `w${i}`, i));
    const mgr = manager();
    mgr.controller('widgets').for(Widgets).withConcurrency(2).reconcile(sizeReconciler(mgr, mgr.client));
    env.server!.setFaults({ errorRate: 0.3, errorCodes: [500, 429, 409], dropWatchesEveryMs: 50 });
    await mgr.start();
    for (let i = 0; i < 8; i++)
      await env.client.patch(Widgets, ns, `w${i}`, { spec: { size: i * 10 } }, { type: 'merge' }).catch(() => undefined);
    env.server!.setFaults({ errorRate: 0.5, errorCodes: [500, 429, 409], verbs: ['patch', 'list'], dropWatchesEveryMs: 50 });
    await waitFor(
      async () => {
        for (let i = 0; i < 8; i++) {
          const w = await env.client.get<Widget>(Widgets, ns, `w${i}`).catch(() => undefined);
          if (!w || w.status?.observedSize !== w.spec.size) return false;
        }
        return true;
      },
      { timeoutMs: 30_000, message: 'every widget converged under faults' },
    );
    const errors = (await mgr.metrics.reconcileTotal.get()).values
      .filter((v) => v.labels['result'] === 'error')
      .reduce((s, v) => s + v.value, 0);
    expect(errors).to.be.greaterThan(0);
  });

  it('with a cooldown, collapses a burst of changes into few runs of the key and still converges', async () => {
    await env.client.create(Widgets, widget(ns, 'w', 0));
    const mgr = manager();
    const r = sizeReconciler(mgr, mgr.client);
    const seen: Array<[number, number]> = [];
    let runs = 0;
    mgr
      .controller('widgets')
      .for(Widgets)
      .withCooldown((wallMs, cpuMs) => (seen.push([wallMs, cpuMs]), 300))
      .reconcile(async (k) => (runs++, r(k)));
    await mgr.start();
    await waitFor(() => observed(env.client, ns, 'w', 0), { message: 'first run' });
    const before = runs;
    for (let i = 1; i <= 20; i++) await env.client.patch(Widgets, ns, 'w', { spec: { size: i } }, { type: 'merge' });
    await waitFor(() => observed(env.client, ns, 'w', 20), { timeoutMs: 10_000, message: 'converged to the last change' });
    // 20 changes in well under the cooldown: they wait out the rest and collapse (our own status writes add a few).
    expect(runs - before).to.be.lessThan(8);
    expect(seen.length).to.be.greaterThan(0);
    for (const [wallMs, cpuMs] of seen) {
      expect(wallMs).to.be.at.least(0);
      expect(cpuMs).to.be.at.least(0);
    }
  });

  it('hands leadership over between two managers through a Lease', async () => {
    await env.client.create(Widgets, widget(ns, 'w', 1));
    const le = (identity: string) => ({
      enabled: true,
      leaseName: 'rt-test',
      leaseNamespace: ns,
      identity,
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 50,
    });
    const a = manager({ leaderElection: le('a') });
    const b = manager({ leaderElection: le('b') });
    const runs = { a: 0, b: 0 };
    const ra = sizeReconciler(a, a.client);
    const rb = sizeReconciler(b, b.client);
    a.controller('widgets')
      .for(Widgets)
      .reconcile(async (k) => (runs.a++, ra(k)));
    b.controller('widgets')
      .for(Widgets)
      .reconcile(async (k) => (runs.b++, rb(k)));
    await a.start();
    await waitFor(() => a.isLeader, { message: 'a leads' });
    await b.start();
    await waitFor(() => observed(env.client, ns, 'w', 1));
    expect(b.isLeader).to.equal(false);
    expect(runs.b).to.equal(0);
    await a.stop();
    await waitFor(() => b.isLeader, { message: 'b takes over' });
    await env.client.patch(Widgets, ns, 'w', { spec: { size: 2 } }, { type: 'merge' });
    await waitFor(() => observed(env.client, ns, 'w', 2), { message: 'b reconciles' });
    expect(runs.b).to.be.greaterThan(0);
    const lease = await env.client.get<Lease>(Leases, ns, 'rt-test');
    expect(lease?.spec?.holderIdentity).to.equal('b');
    expect(lease?.spec?.leaseTransitions).to.be.greaterThan(0);
  });

  it('records events about objects and aggregates repeats into a series, readable as core/v1 Events', async () => {
    const w = await env.client.create(Widgets, widget(ns, 'w', 1));
    const mgr = manager();
    for (let i = 0; i < 3; i++) mgr.events.event(w, 'Warning', 'TooBig', 'size is too big');
    mgr.events.event(w, 'Normal', 'Resized', 'size changed');
    await mgr.events.flush();
    const events = (await env.client.list(Events, ns)).items.filter(
      (e) => (e['involvedObject'] as { uid?: string }).uid === w.metadata.uid,
    );
    // Written through events.k8s.io/v1, read here as core/v1 (what kubectl describe reads): repeats are a series.
    expect(
      events.map((e) => [e['reason'], (e['series'] as { count?: number } | undefined)?.count ?? 1, e['type'], e['message']]).sort(),
    ).to.deep.equal([
      ['Resized', 1, 'Normal', 'size changed'],
      ['TooBig', 3, 'Warning', 'size is too big'],
    ]);
  });
});
