import { expect } from 'chai';
import { ResourceStore, WATCH_BLOCK_EVENTS } from './store.js';

describe('resource store', function () {
  const obj = (name: string, rv: number): Record<string, unknown> => ({ metadata: { name, namespace: 'ns', resourceVersion: String(rv) } });

  it('keeps keys in etcd order and indexes by namespace', function () {
    const s = new ResourceStore(10, 0);
    s.put('b', 'x', obj('x', 1), 1, 'ADDED');
    s.put('a', 'y', obj('y', 2), 2, 'ADDED');
    s.put('a', 'b', obj('b', 3), 3, 'ADDED');
    expect(s.sortedKeys(undefined)).to.deep.equal(['a/b', 'a/y', 'b/x']);
    expect(s.sortedKeys('a')).to.deep.equal(['a/b', 'a/y']);
    s.remove('a', 'b', obj('b', 4), 4);
    expect(s.sortedKeys('a')).to.deep.equal(['a/y']);
    expect(s.get('a', 'b')).to.equal(undefined);
    s.put('a', 'c', obj('c', 5), 5, 'ADDED');
    s.put('0', 'z', obj('z', 6), 6, 'ADDED');
    expect(s.sortedKeys(undefined)).to.deep.equal(['0/z', 'a/c', 'a/y', 'b/x']);
    expect(s.sortedKeys('a')).to.deep.equal(['a/c', 'a/y']);
  });

  it('keeps no per-namespace index entry for a namespace once its objects are gone, nor for one never written', function () {
    const s = new ResourceStore(10, 0);
    s.put('gone', 'a', obj('a', 1), 1, 'ADDED');
    s.put('gone', 'b', obj('b', 2), 2, 'ADDED');
    s.put('kept', 'c', obj('c', 3), 3, 'ADDED');
    expect(s.sortedKeys('gone')).to.deep.equal(['gone/a', 'gone/b']);
    expect(s.sortedKeys('never-written')).to.deep.equal([]);
    s.remove('gone', 'a', obj('a', 4), 4);
    s.remove('gone', 'b', obj('b', 5), 5);
    expect(s.indexedNamespaces).to.deep.equal(['kept']);
    expect(s.sortedKeys('gone')).to.deep.equal([]);
    expect(s.indexedNamespaces).to.deep.equal(['kept']);
    // Written again, the namespace is indexed again.
    s.put('gone', 'd', obj('d', 6), 6, 'ADDED');
    expect(s.sortedKeys('gone')).to.deep.equal(['gone/d']);
    expect(s.sortedKeys(undefined)).to.deep.equal(['gone/d', 'kept/c']);
  });

  it('retains a bounded window of events and reports what fell out of it', function () {
    const s = new ResourceStore(3, 0);
    for (let i = 1; i <= 5; i++) s.put('ns', `o${i}`, obj(`o${i}`, i), i, 'ADDED');
    expect(s.eventsSince(1)).to.equal(undefined);
    expect(s.eventsSince(2)!.map((e) => e.rv)).to.deep.equal([3, 4, 5]);
    expect(s.eventsSince(4)!.map((e) => e.rv)).to.deep.equal([5]);
    expect(s.oldestAvailable()).to.equal(2);
  });

  it('delivers events to watchers of the namespace only', function () {
    const s = new ResourceStore(10, 0);
    const got: string[] = [];
    s.addWatcher({ ns: 'a', deliver: (e) => got.push(`${e.type}:${String((e.obj.metadata as { name: string }).name)}`) });
    s.put('a', 'x', obj('x', 1), 1, 'ADDED');
    s.put('b', 'y', obj('y', 2), 2, 'ADDED');
    s.remove('a', 'x', obj('x', 3), 3);
    expect(got).to.deep.equal(['ADDED:x', 'DELETED:x']);
  });

  it('expires events older than the fresh window beyond the minimum kept, like kube-apiserver (410 for older resourceVersions)', function () {
    let now = 0;
    const s = new ResourceStore({ maxEvents: 1000, freshMs: 75_000, minEvents: 2, now: () => now }, 0);
    for (let i = 1; i <= 5; i++) {
      s.put('ns', `o${i}`, obj(`o${i}`, i), i, 'ADDED');
      now += 10_000;
    }
    expect(s.retainedEvents).to.equal(5);
    now = 100_000; // events 1-3 (at 0, 10 s, 20 s) are older than 75 s; 4 is at 30 s
    s.expire();
    expect(s.eventsSince(2), 'expired: 410').to.equal(undefined);
    expect(s.eventsSince(3)!.map((e) => e.rv)).to.deep.equal([4, 5]);
    now = 1_000_000; // everything is old: the minimum stays replayable
    s.expire();
    expect(s.retainedEvents).to.equal(2);
    s.put('ns', 'o6', obj('o6', 6), 6, 'ADDED');
    expect(
      s.eventsSince(4)!.map((e) => e.rv),
      'a write expires the stale ones too',
    ).to.deep.equal([5, 6]);
    expect(s.eventsSince(6)).to.deep.equal([]);
  });

  it('stays bounded over many writes and deletes (retained events, not objects written)', function () {
    let now = 0;
    const s = new ResourceStore({ maxEvents: 500, freshMs: 1_000, minEvents: 10, now: () => now }, 0);
    let rv = 0;
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 200; i++) s.put('ns', `r${round}-${i}`, obj(`r${round}-${i}`, ++rv), rv, 'ADDED');
      for (let i = 0; i < 200; i++) s.remove('ns', `r${round}-${i}`, obj(`r${round}-${i}`, ++rv), rv);
      expect(s.retainedEvents).to.be.at.most(500);
      now += 2_000;
    }
    s.expire();
    expect(s.retainedEvents).to.equal(10);
    expect(s.objects.size).to.equal(0);
    expect(s.eventsSince(rv - 10)!.length).to.equal(10);
  });

  it("shares the serialization with live watchers and keeps the storage version's JSON only until the event is sealed", function () {
    const s = new ResourceStore(1000, 0);
    const seen: (string | undefined)[] = [];
    s.addWatcher({ ns: undefined, deliver: (e) => seen.push(e.json?.get('')) });
    s.put('ns', 'x', obj('x', 1), 1, 'ADDED', undefined, '{"x":1}');
    expect(seen).to.deep.equal(['{"x":1}']);
    // Unsealed: the event is the one the watchers got (a replay reuses its JSON).
    expect(s.eventsSince(0)![0]!.json?.get('')).to.equal('{"x":1}');
    for (let i = 2; i <= WATCH_BLOCK_EVENTS; i++) s.put('ns', 'x', obj('x', i), i, 'MODIFIED', obj('x', i - 1));
    // Sealed: the same JSON comes back from the block; without a watcher's JSON the object's was serialized.
    const evs = s.eventsSince(0)!;
    expect(evs.map((e) => e.json?.get(''))).to.deep.equal([
      '{"x":1}',
      ...Array.from({ length: WATCH_BLOCK_EVENTS - 1 }, (_, i) => JSON.stringify(obj('x', i + 2))),
    ]);
  });

  it('seals older events in deflated blocks: replays give each version, type, namespace and resourceVersion as written', function () {
    const s = new ResourceStore(10_000, 0);
    const live: string[] = [];
    s.addWatcher({ ns: undefined, deliver: (e) => live.push(`${e.type} ${e.ns} ${e.rv} ${e.json?.get('') ?? JSON.stringify(e.obj)}`) });
    const big = 'é'.repeat(300) + '\u2028 "quoted" \\'; // multi-byte text: offsets are in the inflated string
    let rv = 0;
    for (let i = 0; i < 3 * WATCH_BLOCK_EVENTS + 5; i++) {
      const ns = `ns${i % 3}`;
      const o = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `o${i % 7}`, namespace: ns, resourceVersion: String(++rv) },
        data: { i: String(i), big },
      };
      const json = JSON.stringify(o);
      if (i % 11 === 10) s.remove(ns, `o${i % 7}`, o, rv);
      else s.put(ns, `o${i % 7}`, o, rv, i < 7 ? 'ADDED' : 'MODIFIED', undefined, i % 2 ? json : undefined);
    }
    const replay = (from: number): string[] =>
      s.eventsSince(from)!.map((e) => `${e.type} ${e.ns} ${e.rv} ${e.json?.get('') ?? JSON.stringify(e.obj)}`);
    expect(replay(0)).to.deep.equal(live);
    expect(replay(100)).to.deep.equal(live.filter((l) => Number(l.split(' ')[2]) > 100));
    expect(replay(100).length).to.be.greaterThan(WATCH_BLOCK_EVENTS);
    // Objects parsed from the sealed JSON equal what was written.
    const first = s.eventsSince(0)![0]!;
    expect(first.obj).to.deep.equal({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'o0', namespace: 'ns0', resourceVersion: '1' },
      data: { i: '0', big },
    });
    expect(first.apiVersion).to.equal('v1');
  });

  it('a sealed MODIFIED event keeps its previous state only when a selector could tell the two apart', function () {
    const differs = (a: Record<string, unknown>, b: Record<string, unknown>): boolean =>
      JSON.stringify((a.metadata as { labels?: unknown }).labels) !== JSON.stringify((b.metadata as { labels?: unknown }).labels);
    const s = new ResourceStore({ maxEvents: 10_000, selectionDiffers: differs }, 0);
    const v = (i: number, label: string): Record<string, unknown> => ({
      metadata: { name: 'x', namespace: 'ns', labels: { l: label }, resourceVersion: String(i) },
    });
    s.put('ns', 'x', v(1, 'a'), 1, 'ADDED');
    for (let i = 2; i <= WATCH_BLOCK_EVENTS; i++)
      s.put('ns', 'x', v(i, i === 10 ? 'b' : 'a'), i, 'MODIFIED', v(i - 1, i === 11 ? 'b' : 'a'));
    const evs = s.eventsSince(0)!;
    const kept = evs.map((e, i) => (e.prev ? i + 1 : 0)).filter((i) => i > 0);
    expect(kept).to.deep.equal([10, 11]);
    expect(evs[9]!.prev).to.deep.equal(v(9, 'a'));
  });
});
