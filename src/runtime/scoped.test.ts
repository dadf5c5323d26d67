import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { startTestEnv, type TestEnv } from '../../test/support/env.js';
import { waitFor } from '../../test/support/wait.js';
import { ScopedInformer } from './scoped.js';
import type { ChangeType } from './informer.js';

const ConfigMaps: ResourceType = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
const KEY = 'example.com/cluster';
const cm = (name: string, ns: string, cluster?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns, ...(cluster ? { labels: { [KEY]: cluster } } : {}) },
  data: { v: '1' },
});
const names = (objs: readonly KubeObject[]): string[] => objs.map((o) => o.metadata.name!).sort();

describe('ScopedInformer (on the test API server)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let ns: string;
  let inf: ScopedInformer | undefined;
  before(async () => {
    env = await startTestEnv();
  });
  after(async () => {
    await env.stop();
  });
  beforeEach(async () => {
    ns = await env.newNamespace('scoped');
    for (const [n, c] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
      ['c1', 'c'],
      ['none', undefined],
    ] as const)
      await env.client.create(ConfigMaps, cm(n, ns, c));
  });
  afterEach(async () => {
    await inf?.stop();
    inf = undefined;
  });

  const track = (i: ScopedInformer): [ChangeType, string][] => {
    const seen: [ChangeType, string][] = [];
    i.onChange((o, _old, type) => seen.push([type, o.metadata.name!]));
    return seen;
  };

  it('caches only the label values acquired, each followed by its own watch', async () => {
    inf = new ScopedInformer(env.client, ConfigMaps, KEY);
    const seen = track(inf);
    const a = inf.acquire(ns, 'a');
    await a.synced;
    expect(names(inf.store.list(ns))).to.deep.equal(['a1', 'a2']);
    const b = inf.acquire(ns, 'b');
    await b.synced;
    expect(names(inf.store.list(ns))).to.deep.equal(['a1', 'a2', 'b1']);
    await env.client.create(ConfigMaps, cm('a3', ns, 'a'));
    await env.client.create(ConfigMaps, cm('c2', ns, 'c'));
    await env.client.patch(ConfigMaps, ns, 'b1', { data: { v: '2' } }, { type: 'merge' });
    await waitFor(
      () => inf!.store.peek(ns, 'b1')?.['data'] !== undefined && (inf!.store.peek(ns, 'b1')!['data'] as { v: string }).v === '2',
      {
        message: 'b1 updated',
      },
    );
    await waitFor(() => inf!.store.peek(ns, 'a3') !== undefined, { message: 'a3 added' });
    // c is not held: its objects never reach the store nor the handlers.
    expect(inf.store.peek(ns, 'c2')).to.equal(undefined);
    expect(seen.filter(([, n]) => n.startsWith('c') || n === 'none')).to.deep.equal([]);
    expect(
      inf.store
        .byLabel(KEY, 'a', ns)
        .map((o) => o.metadata.name)
        .sort(),
    ).to.deep.equal(['a1', 'a2', 'a3']);
    await env.client.delete(ConfigMaps, ns, 'a1');
    await waitFor(() => seen.some(([t, n]) => t === 'delete' && n === 'a1'), { message: 'a1 deleted' });
    expect(inf.store.peek(ns, 'a1')).to.equal(undefined);
    a.end();
    b.end();
  });

  it('keeps an object relabelled from one held value to another, and drops one relabelled out of every held value', async () => {
    inf = new ScopedInformer(env.client, ConfigMaps, KEY);
    const seen = track(inf);
    await inf.acquire(ns, 'a').synced;
    await inf.acquire(ns, 'b').synced;
    await env.client.patch(ConfigMaps, ns, 'a1', { metadata: { labels: { [KEY]: 'b' } } }, { type: 'merge' });
    await waitFor(() => inf!.store.peek(ns, 'a1')?.metadata.labels?.[KEY] === 'b', { message: 'a1 moved to b' });
    // Both streams delivered their side (a: deleted, b: added) in either order: the object stays, labelled b.
    await waitFor(() => seen.filter(([, n]) => n === 'a1').length >= 3, { message: 'both sides of the move seen' });
    expect(inf.store.peek(ns, 'a1')?.metadata.labels?.[KEY]).to.equal('b');
    await env.client.patch(ConfigMaps, ns, 'a2', { metadata: { labels: { [KEY]: 'c' } } }, { type: 'merge' });
    await waitFor(() => inf!.store.peek(ns, 'a2') === undefined, { message: 'a2 left for an unheld value' });
  });

  it('drops a scope once no lease holds it, it was idle and nothing keeps it; a later acquire lists it again', async () => {
    inf = new ScopedInformer(env.client, ConfigMaps, KEY, { idleMs: 0 });
    const seen = track(inf);
    let kept = true;
    inf.keepWhile((n, v) => n === ns && v === 'a' && kept);
    const a = inf.acquire(ns, 'a');
    await a.synced;
    const b = inf.acquire(ns, 'b');
    await b.synced;
    // Held: nothing is dropped.
    expect(inf.sweep(Date.now() + 60_000)).to.equal(0);
    a.end();
    b.end();
    b.end();
    // b is neither held nor kept; a is kept.
    expect(inf.sweep(Date.now() + 60_000)).to.equal(1);
    expect(inf.has(ns, 'b')).to.equal(false);
    expect(inf.has(ns, 'a')).to.equal(true);
    expect(names(inf.store.list(ns))).to.deep.equal(['a1', 'a2']);
    // Dropping is forgetting, not deleting: no handler hears of it.
    expect(seen.filter(([t]) => t === 'delete')).to.deep.equal([]);
    kept = false;
    expect(inf.sweep(Date.now() + 60_000)).to.equal(1);
    expect(inf.store.list(ns)).to.deep.equal([]);
    // A change while nothing is cached is seen by the next list.
    await env.client.patch(ConfigMaps, ns, 'a1', { data: { v: '3' } }, { type: 'merge' });
    await inf.acquire(ns, 'a').synced;
    expect((inf.store.peek(ns, 'a1')!['data'] as { v: string }).v).to.equal('3');
  });

  it('does not drop a scope used within idleMs', async () => {
    inf = new ScopedInformer(env.client, ConfigMaps, KEY, { idleMs: 60_000 });
    const a = inf.acquire(ns, 'a');
    await a.synced;
    a.end();
    expect(inf.sweep()).to.equal(0);
    expect(inf.sweep(Date.now() + 61_000)).to.equal(1);
  });

  it('after stop, an acquire never syncs and starts nothing', async () => {
    inf = new ScopedInformer(env.client, ConfigMaps, KEY);
    await inf.acquire(ns, 'a').synced;
    await inf.stop();
    const late = inf.acquire(ns, 'b');
    const won = await Promise.race([late.synced.then(() => 'synced'), new Promise((r) => setTimeout(() => r('waiting'), 200))]);
    expect(won).to.equal('waiting');
    expect(inf.scopeCount).to.equal(0);
  });
});
