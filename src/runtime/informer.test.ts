import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { waitFor } from '../../test/support/wait.js';
import { SharedInformer, type ChangeType, type RestartReason } from './informer.js';
import type { Logger } from './pure/types.js';

const Things: ResourceType = { group: 'test.io', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };
const thing = (name: string, ns = 'a', labels?: Record<string, string>): KubeObject => ({
  metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
  spec: { v: 1 },
});
const fast = { backoff: { baseMs: 1, maxMs: 5 } };

describe('SharedInformer', () => {
  let client: FakeClient;
  let inf: SharedInformer | undefined;
  beforeEach(() => {
    client = new FakeClient();
  });
  afterEach(async () => {
    await inf?.stop();
    inf = undefined;
  });

  const track = (i: SharedInformer): [ChangeType, string][] => {
    const seen: [ChangeType, string][] = [];
    i.onChange((o, _old, type) => seen.push([type, o.metadata.name!]));
    return seen;
  };

  it('lists into the store, reports synced, then follows the watch', async () => {
    client.seed(Things, thing('t1'));
    inf = new SharedInformer(client, Things, fast);
    const seen = track(inf);
    inf.start();
    await inf.synced();
    expect(inf.store.get('a', 't1')).to.not.equal(undefined);
    await waitFor(() => client.openWatches === 1, { message: 'watch open' });
    await client.create(Things, thing('t2'));
    await client.patch(Things, 'a', 't1', { spec: { v: 2 } }, { type: 'merge' });
    await client.delete(Things, 'a', 't2');
    await waitFor(() => seen.length === 4, { message: '4 changes' });
    expect(seen).to.deep.equal([
      ['add', 't1'],
      ['add', 't2'],
      ['update', 't1'],
      ['delete', 't2'],
    ]);
    expect((inf.store.get('a', 't1')!['spec'] as { v: number }).v).to.equal(2);
  });

  it('caches objects without their managedFields unless asked to keep them', async () => {
    const managed = (name: string): KubeObject => {
      const o = thing(name);
      o.metadata.managedFields = [{ manager: 'someone', operation: 'Update', fieldsV1: { 'f:spec': { 'f:v': {} } } }];
      return o;
    };
    client.seed(Things, managed('listed'));
    inf = new SharedInformer(client, Things, fast);
    const handed: KubeObject[] = [];
    inf.onChange((o) => handed.push(o));
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1, { message: 'watch open' });
    await client.create(Things, managed('watched'));
    await waitFor(() => handed.length === 2, { message: '2 changes' });
    for (const name of ['listed', 'watched']) expect(inf.store.peek('a', name)!.metadata.managedFields, name).to.equal(undefined);
    expect(handed.every((o) => o.metadata.managedFields === undefined)).to.equal(true);
    await inf.stop();
    inf = new SharedInformer(client, Things, { ...fast, keepManagedFields: true });
    inf.start();
    await inf.synced();
    expect(inf.store.peek('a', 'listed')!.metadata.managedFields).to.have.length(1);
  });

  it('replays cached objects to a handler registered after sync', async () => {
    client.seed(Things, thing('t1'));
    inf = new SharedInformer(client, Things, fast);
    inf.start();
    await inf.synced();
    const seen = track(inf);
    expect(seen).to.deep.equal([['add', 't1']]);
  });

  it('keeps only its namespace and label selector', async () => {
    client.seed(Things, thing('in', 'a', { app: 'x' }));
    client.seed(Things, thing('other-ns', 'b', { app: 'x' }));
    client.seed(Things, thing('other-label', 'a', { app: 'y' }));
    inf = new SharedInformer(client, Things, { ...fast, namespace: 'a', labelSelector: 'app=x' });
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    client.seed(Things, thing('late-other', 'b', { app: 'x' }));
    client.seed(Things, thing('late-in', 'a', { app: 'x' }));
    await waitFor(() => inf!.store.list().length === 2);
    expect(
      inf.store
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).to.deep.equal(['in', 'late-in']);
  });

  it('restarts the watch after the stream ends and misses nothing written meanwhile', async () => {
    const restarts: RestartReason[] = [];
    inf = new SharedInformer(client, Things, { ...fast, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    client.dropWatches();
    client.seed(Things, thing('while-down'));
    await waitFor(() => inf!.store.get('a', 'while-down'), { message: 'object written while the watch was down' });
    expect(restarts).to.deep.equal(['end']);
  });

  it('restarts with backoff after watch errors, not only after 410', async () => {
    const restarts: RestartReason[] = [];
    inf = new SharedInformer(client, Things, { ...fast, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    client.failNext('watch', 500);
    client.failNext('watch', 503);
    client.dropWatches(new Error('connection reset'));
    await waitFor(() => client.openWatches === 1 && restarts.length === 3, { message: 'watch re-established after 3 failures' });
    expect(restarts).to.deep.equal(['error', 'error', 'error']);
    client.seed(Things, thing('after'));
    await waitFor(() => inf!.store.get('a', 'after'));
  });

  // The e2e faults scenario drops every watch every 2 s: each drop used to count as one more failure, the delay grew to
  // 30 s, and the informers spent most of a slow run disconnected (a plan stalled on its first machine).
  it('resumes at the base delay after a working watch breaks, however often; backs off only while watches fail at once', async () => {
    const attempts: number[] = [];
    const log: Logger = {
      debug: (o) => {
        const a = (o as { attempt?: number }).attempt;
        if (a !== undefined) attempts.push(a);
      },
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      child: () => log,
    };
    // A cap of an hour: were the drops counted as failures, the 20th re-watch would wait minutes and the test time out.
    // Health is judged by events only here (healthyWatchMs of an hour), so a slow machine does not change the result.
    inf = new SharedInformer(client, Things, { backoff: { baseMs: 1, maxMs: 3_600_000 }, healthyWatchMs: 3_600_000, log });
    inf.start();
    await inf.synced();
    for (let i = 0; i < 24; i++) {
      await waitFor(() => client.openWatches === 1, { message: `watch ${i + 1} open` });
      client.seed(Things, thing(`t${i}`));
      await waitFor(() => inf!.store.get('a', `t${i}`), { message: `t${i} delivered` });
      client.dropWatches(new Error('socket hang up'));
    }
    await waitFor(() => client.openWatches === 1, { message: 'watch open after 24 drops' });
    expect(attempts).to.deep.equal(Array.from({ length: 24 }, () => 1));

    // Watches that break before delivering anything still back off, growing.
    attempts.length = 0;
    for (let i = 0; i < 3; i++) {
      await waitFor(() => client.openWatches === 1, { message: `silent watch ${i + 1} open` });
      client.dropWatches(new Error('socket hang up'));
    }
    await waitFor(() => client.openWatches === 1 && attempts.length === 3, { message: 'watch open after 3 silent drops' });
    expect(attempts).to.deep.equal([2, 3, 4]);
  });

  it('treats a watch ERROR event other than 410 as an error and resumes from the last resourceVersion', async () => {
    const restarts: RestartReason[] = [];
    inf = new SharedInformer(client, Things, { ...fast, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    client.sendWatchError(500, 'InternalError');
    await waitFor(() => restarts.length === 1 && client.openWatches === 1);
    expect(restarts).to.deep.equal(['error']);
    expect(client.calls.filter((c) => c.verb === 'list').length).to.equal(1);
  });

  it('re-lists on 410 Gone and emits deletes for vanished objects and updates for changed ones', async () => {
    client.seed(Things, thing('stays'));
    client.seed(Things, thing('changes'));
    client.seed(Things, thing('vanishes'));
    inf = new SharedInformer(client, Things, fast);
    const seen = track(inf);
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    // Changes the watch never delivers, then the history is compacted: only a re-list can catch up.
    client.dropWatches();
    client.unseed(Things, 'a', 'vanishes', false);
    client.seed(Things, { ...thing('changes'), spec: { v: 9 } }, false);
    client.seed(Things, thing('appears'), false);
    client.compact();
    await waitFor(() => seen.length === 6, { message: 're-list differences' });
    expect(seen.slice(3)).to.have.deep.members([
      ['update', 'changes'],
      ['add', 'appears'],
      ['delete', 'vanishes'],
    ]);
    expect(
      inf.store
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).to.deep.equal(['appears', 'changes', 'stays']);
    expect(client.calls.filter((c) => c.verb === 'list').length).to.equal(2);
  });

  it('re-lists when a watch ERROR event says 410 Gone', async () => {
    inf = new SharedInformer(client, Things, fast);
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    client.sendWatchError(410);
    await waitFor(() => client.calls.filter((c) => c.verb === 'list').length === 2, { message: 'second list' });
  });

  it('retries a failing initial list until it succeeds', async () => {
    client.failNext('list', 500);
    client.failNext('list', 429, 'TooManyRequests');
    client.seed(Things, thing('t1'));
    inf = new SharedInformer(client, Things, fast);
    inf.start();
    await inf.synced();
    expect(inf.store.get('a', 't1')).to.not.equal(undefined);
    expect(client.calls.filter((c) => c.verb === 'list').length).to.equal(3);
  });

  it('restarts a watch that stays silent longer than the watchdog allows', async () => {
    const restarts: RestartReason[] = [];
    inf = new SharedInformer(client, Things, { ...fast, watchdogMs: 40, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await waitFor(() => restarts.includes('watchdog'), { message: 'watchdog restart' });
    await waitFor(() => client.openWatches === 1);
    client.seed(Things, thing('after'));
    await waitFor(() => inf!.store.get('a', 'after'));
  });

  it('counts bookmarks as activity for the watchdog', async () => {
    const restarts: RestartReason[] = [];
    inf = new SharedInformer(client, Things, { ...fast, watchdogMs: 150, onRestart: (r) => restarts.push(r) });
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    for (let i = 0; i < 8; i++) {
      client.sendBookmark();
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(restarts).to.deep.equal([]);
  });

  it('stops watching on stop', async () => {
    inf = new SharedInformer(client, Things, fast);
    inf.start();
    await inf.synced();
    await waitFor(() => client.openWatches === 1);
    await inf.stop();
    expect(client.openWatches).to.equal(0);
    expect(inf.isRunning).to.equal(false);
  });
});
