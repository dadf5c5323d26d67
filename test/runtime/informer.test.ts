// Informer behaviour over the real protocol: dropped watches, injected errors, 410 re-lists, bookmarks, watchdog.
import { expect } from 'chai';
import { SharedInformer, type ChangeType, type RestartReason } from '../../src/runtime/informer.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';
import { WIDGET_CRD, widget, Widgets, type Widget } from './fixtures.js';

describe('informer against an API server', function () {
  let env: TestEnv;
  let ns: string;
  let inf: SharedInformer<Widget> | undefined;
  before(async () => {
    env = await startTestEnv({ crds: [WIDGET_CRD], local: { watchCacheSize: 5, bookmarkIntervalMs: 20 } });
  });
  after(async () => {
    await env?.stop();
  });
  beforeEach(async () => {
    ns = await env.newNamespace('rt-informer');
  });
  afterEach(async () => {
    env.server?.setFaults(undefined);
    await inf?.stop();
    inf = undefined;
  });
  const localOnly = (ctx: Mocha.Context): void => {
    if (env.isRealCluster) {
      console.log('    (skipped on INPLACE_TEST_KUBECONFIG: needs the embedded API server for fault injection and server tuning)');
      ctx.skip();
    }
  };

  it('lists then follows creates, updates and deletes', async () => {
    await env.client.create(Widgets, widget(ns, 'pre'));
    inf = new SharedInformer<Widget>(env.client, Widgets, { namespace: ns });
    const seen: [ChangeType, string][] = [];
    inf.onChange((o, _old, t) => seen.push([t, o.metadata.name!]));
    inf.start();
    await inf.synced();
    await env.client.create(Widgets, widget(ns, 'new'));
    await env.client.patch(Widgets, ns, 'pre', { spec: { size: 3 } }, { type: 'merge' });
    await env.client.delete(Widgets, ns, 'new');
    await waitFor(() => seen.length >= 4, { message: 'four changes' });
    expect(seen).to.deep.equal([
      ['add', 'pre'],
      ['add', 'new'],
      ['update', 'pre'],
      ['delete', 'new'],
    ]);
    expect(inf.store.get(ns, 'pre')?.spec.size).to.equal(3);
  });

  it('keeps the store complete while the server keeps dropping watches', async function () {
    localOnly(this);
    const restarts: RestartReason[] = [];
    inf = new SharedInformer<Widget>(env.client, Widgets, {
      namespace: ns,
      backoff: { baseMs: 5, maxMs: 20 },
      onRestart: (r) => restarts.push(r),
    });
    inf.start();
    await inf.synced();
    env.server!.setFaults({ dropWatchesEveryMs: 15 });
    for (let i = 0; i < 30; i++) {
      await env.client.create(Widgets, widget(ns, `w${i}`, i));
      if (i % 5 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    await waitFor(() => inf!.store.list(ns).length === 30, { message: 'all 30 widgets in the store' });
    expect(restarts.length).to.be.greaterThan(0);
  });

  it('syncs despite injected list errors', async function () {
    localOnly(this);
    await env.client.create(Widgets, widget(ns, 'w'));
    env.server!.setFaults({ errorRate: 0.7, errorCodes: [500, 429], verbs: ['list'] });
    inf = new SharedInformer<Widget>(env.client, Widgets, { namespace: ns, backoff: { baseMs: 2, maxMs: 10 } });
    inf.start();
    await inf.synced();
    env.server!.setFaults(undefined);
    expect(inf.store.get(ns, 'w')).to.not.equal(undefined);
  });

  it('re-lists after 410 Gone and reports what changed while it was away', async function () {
    localOnly(this);
    for (const n of ['stays', 'changes', 'vanishes']) await env.client.create(Widgets, widget(ns, n));
    const restarts: RestartReason[] = [];
    // One dropped watch, then a long pause before re-watching: meanwhile more changes than the watch cache holds.
    inf = new SharedInformer<Widget>(env.client, Widgets, {
      namespace: ns,
      backoff: { baseMs: 1500, maxMs: 1500 },
      onRestart: (r) => {
        restarts.push(r);
        env.server!.setFaults(undefined);
      },
    });
    const seen: [ChangeType, string][] = [];
    inf.onChange((o, _old, t) => seen.push([t, o.metadata.name!]));
    inf.start();
    await inf.synced();
    await waitFor(() => env.client.list(Widgets, ns).then(() => true));
    env.server!.setFaults({ dropWatchesEveryMs: 10 });
    await waitFor(() => restarts.length === 1, { message: 'the watch to be dropped' });
    await env.client.delete(Widgets, ns, 'vanishes');
    await env.client.patch(Widgets, ns, 'changes', { spec: { size: 7 } }, { type: 'merge' });
    for (let i = 0; i < 8; i++) await env.client.create(Widgets, widget(ns, `filler${i}`));
    await waitFor(() => restarts.includes('gone') && inf!.store.list(ns).length === 10, {
      timeoutMs: 20_000,
      message: 're-list after 410',
    });
    expect(seen).to.deep.include.members([
      ['delete', 'vanishes'],
      ['update', 'changes'],
      ['add', 'filler7'],
    ]);
    expect(inf.store.get(ns, 'vanishes')).to.equal(undefined);
    expect(inf.store.get(ns, 'changes')?.spec.size).to.equal(7);
  });

  it('restarts a watch that stays silent longer than the watchdog allows', async function () {
    localOnly(this);
    const quiet = await startTestEnv({ crds: [WIDGET_CRD], local: { bookmarkIntervalMs: 60_000 } });
    try {
      const restarts: RestartReason[] = [];
      const i = new SharedInformer<Widget>(quiet.client, Widgets, {
        namespace: 'default',
        watchdogMs: 100,
        backoff: { baseMs: 1, maxMs: 5 },
        onRestart: (r) => restarts.push(r),
      });
      i.start();
      await i.synced();
      await waitFor(() => restarts.includes('watchdog'), { message: 'a watchdog restart' });
      await quiet.client.create(Widgets, widget('default', 'after'));
      await waitFor(() => i.store.get('default', 'after'), { message: 'events after the restart' });
      await i.stop();
    } finally {
      await quiet.stop();
    }
  });

  it('treats bookmarks as activity: a quiet watch with bookmarks is not restarted', async function () {
    localOnly(this);
    const restarts: RestartReason[] = [];
    // Bookmarks come every 20 ms; the watchdog is far longer than any stall of a busy machine's event loop, and the wait
    // more than twice the watchdog: without bookmarks counted as activity this quiet watch would be restarted.
    inf = new SharedInformer<Widget>(env.client, Widgets, { namespace: ns, watchdogMs: 1500, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await new Promise((r) => setTimeout(r, 4000));
    expect(restarts).to.deep.equal([]);
  });
});
