import { expect } from 'chai';
import type { KubeObject } from '../api/kube.js';
import { MemoryStore, deepFreeze } from './store.js';

const nested = (depth: number, leaf: unknown = 1): Record<string, unknown> => {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v as Record<string, unknown>;
};

const obj = (ns: string | undefined, name: string, labels?: Record<string, string>, rv = '1'): KubeObject => ({
  metadata: { name, ...(ns ? { namespace: ns } : {}), resourceVersion: rv, ...(labels ? { labels } : {}) },
});

describe('MemoryStore', () => {
  it('without a label index answers label reads as the indexed store does', () => {
    const indexed = new MemoryStore();
    const plain = new MemoryStore({ labelIndex: false });
    const both = (f: (s: MemoryStore) => void): void => [indexed, plain].forEach(f);
    both((s) => {
      s.upsert(obj('a', 'x', { c: '1' }));
      s.upsert(obj('a', 'y', { c: '1', d: '2' }));
      s.upsert(obj('b', 'x', { c: '1' }));
      s.upsert(obj('a', 'x', { c: '2' }, '2'));
      s.remove('a', 'y');
      s.upsert(obj('a', 'z', { c: '1', d: '3' }));
    });
    const names = (os: readonly KubeObject[]): string[] => os.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();
    for (const [k, v, ns] of [
      ['c', '1', 'a'],
      ['c', '1', undefined],
      ['c', '2', 'a'],
      ['d', '2', undefined],
      ['d', '3', 'a'],
    ] as const) {
      expect(names(plain.byLabel(k, v, ns)), `${k}=${v} in ${ns}`).to.deep.equal(names(indexed.byLabel(k, v, ns)));
      expect(names(plain.byLabelView(k, v, ns))).to.deep.equal(names(indexed.byLabelView(k, v, ns)));
    }
    expect(names(plain.select('c=1,d', 'a'))).to.deep.equal(['a/z']);
    expect(plain.changes).to.equal(indexed.changes);
  });

  it('keys objects by namespace and name', () => {
    const s = new MemoryStore();
    s.upsert(obj('a', 'x'));
    s.upsert(obj('b', 'x'));
    s.upsert(obj(undefined, 'x'));
    expect(s.size).to.equal(3);
    expect(s.get('a', 'x')?.metadata.namespace).to.equal('a');
    expect(s.get(undefined, 'x')?.metadata.namespace).to.equal(undefined);
    expect(s.list('b').map((o) => o.metadata.namespace)).to.deep.equal(['b']);
  });

  it('returns a mutable copy from get and frozen shared objects from list', () => {
    const s = new MemoryStore();
    s.upsert(obj('a', 'x', { k: 'v' }));
    const copy = s.get('a', 'x')!;
    copy.metadata.labels!['k'] = 'changed';
    expect(s.get('a', 'x')!.metadata.labels!['k']).to.equal('v');
    const shared = s.list()[0]!;
    expect(() => {
      shared.metadata.labels!['k'] = 'changed';
    }).to.throw(TypeError);
  });

  it('keeps a secondary index in step with adds, changes of value and removals, also for objects cached before it', () => {
    const s = new MemoryStore<KubeObject & { spec?: { cluster?: string } }>();
    const o = (ns: string, name: string, cluster?: string, rv = '1') => ({
      ...obj(ns, name, undefined, rv),
      ...(cluster ? { spec: { cluster } } : {}),
    });
    s.upsert(o('a', 'before', 'c1'));
    s.addIndex('cluster', (x) => (x.spec?.cluster ? [`${x.metadata.namespace}/${x.spec.cluster}`] : []));
    s.addIndex('cluster', () => ['ignored: the first function of a name stays']);
    s.upsert(o('a', 'p1', 'c1'));
    s.upsert(o('a', 'p2', 'c2'));
    s.upsert(o('b', 'p3', 'c1'));
    s.upsert(o('a', 'none'));
    const names = (v: string): string[] => s.byIndex('cluster', v).map((x) => x.metadata.name!);
    expect(names('a/c1')).to.deep.equal(['before', 'p1']);
    expect(names('b/c1')).to.deep.equal(['p3']);
    // A new version with the same value keeps its place; one with another value moves.
    s.upsert(o('a', 'before', 'c1', '2'));
    expect(s.byIndex('cluster', 'a/c1')[0]!.metadata.resourceVersion).to.equal('2');
    s.upsert(o('a', 'p1', 'c2', '2'));
    expect(names('a/c1')).to.deep.equal(['before']);
    expect(names('a/c2')).to.deep.equal(['p2', 'p1']);
    s.remove('a', 'before');
    s.remove('a', 'p2');
    expect(names('a/c1')).to.deep.equal([]);
    expect(names('a/c2')).to.deep.equal(['p1']);
    expect(() => s.byIndex('missing', 'x')).to.throw(/no index named missing/);
  });

  it('finds objects by label through the index and keeps the index in step with updates and removals', () => {
    const s = new MemoryStore();
    s.upsert(obj('a', 'm1', { plan: 'p1' }));
    s.upsert(obj('a', 'm2', { plan: 'p1' }));
    s.upsert(obj('b', 'm3', { plan: 'p1' }));
    expect(s.byLabel('plan', 'p1').length).to.equal(3);
    expect(s.byLabel('plan', 'p1', 'a').map((o) => o.metadata.name)).to.have.members(['m1', 'm2']);
    s.upsert(obj('a', 'm1', { plan: 'p2' }, '2'));
    expect(s.byLabel('plan', 'p1', 'a').map((o) => o.metadata.name)).to.deep.equal(['m2']);
    expect(s.byLabel('plan', 'p2').map((o) => o.metadata.name)).to.deep.equal(['m1']);
    s.remove('a', 'm2');
    expect(s.byLabel('plan', 'p1', 'a')).to.deep.equal([]);
    expect(s.byLabel('nope', 'x')).to.deep.equal([]);
  });

  it('serves the newest version by label after an update that keeps the labels, and drops a removed label', () => {
    const s = new MemoryStore();
    s.upsert(obj('a', 'm1', { plan: 'p1', md: 'x' }));
    s.upsert(obj('a', 'm1', { md: 'x', plan: 'p1' }, '2'));
    expect(s.byLabel('plan', 'p1').map((o) => o.metadata.resourceVersion)).to.deep.equal(['2']);
    expect(s.byLabel('md', 'x', 'a').map((o) => o.metadata.resourceVersion)).to.deep.equal(['2']);
    expect(s.select('plan=p1,md=x').map((o) => o.metadata.resourceVersion)).to.deep.equal(['2']);
    s.upsert(obj('a', 'm1', { md: 'x' }, '3'));
    expect(s.byLabel('plan', 'p1')).to.deep.equal([]);
    expect(s.byLabel('md', 'x').map((o) => o.metadata.resourceVersion)).to.deep.equal(['3']);
    s.upsert(obj('a', 'm1', undefined, '4'));
    expect(s.byLabel('md', 'x')).to.deep.equal([]);
    expect(s.get('a', 'm1')?.metadata.resourceVersion).to.equal('4');
  });

  it('keeps an object in place in the buckets of its unchanged labels when another label changes', () => {
    const s = new MemoryStore();
    for (const n of ['m1', 'm2', 'm3']) s.upsert(obj('a', n, { cluster: 'c1' }));
    // Labelling m1 in update (a new pair) and unlabelling it again must not move it to the end of the cluster's bucket.
    s.upsert(obj('a', 'm1', { cluster: 'c1', plan: 'p1' }, '2'));
    expect(s.byLabel('cluster', 'c1').map((o) => o.metadata.name)).to.deep.equal(['m1', 'm2', 'm3']);
    expect(s.byLabel('plan', 'p1').map((o) => o.metadata.resourceVersion)).to.deep.equal(['2']);
    s.upsert(obj('a', 'm1', { cluster: 'c1' }, '3'));
    expect(s.byLabel('cluster', 'c1').map((o) => o.metadata.resourceVersion)).to.deep.equal(['3', '1', '1']);
    expect(s.byLabel('plan', 'p1')).to.deep.equal([]);
    // A changed value leaves the old bucket and joins the new one.
    s.upsert(obj('a', 'm2', { cluster: 'c2' }, '4'));
    expect(s.byLabel('cluster', 'c1').map((o) => o.metadata.name)).to.deep.equal(['m1', 'm3']);
    expect(s.byLabel('cluster', 'c2').map((o) => o.metadata.name)).to.deep.equal(['m2']);
  });

  it('serves byLabelView as byLabel, one frozen array while the bucket is unchanged, through changes, relabels and removals', () => {
    const s = new MemoryStore();
    // A seeded sequence of upserts (same labels, new label pairs, moved values), removals and reads, over namespaces
    // whose objects share buckets and move between them; '' and no namespace share store keys.
    let seed = 7;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const names = Array.from({ length: 12 }, (_, i) => `m${i}`);
    const spaces = ['a', 'b', '', undefined];
    const mk = (ns: string | undefined, name: string, labels: Record<string, string>, rv: string): KubeObject => ({
      metadata: { name, ...(ns !== undefined ? { namespace: ns } : {}), resourceVersion: rv, labels },
    });
    const buckets: [string, string][] = [
      ['cluster', 'c1'],
      ['cluster', 'c2'],
      ['plan', 'p1'],
    ];
    let rv = 0;
    const seen = { whole: 0, none: 0, part: 0 };
    for (let step = 0; step < 800; step++) {
      // Phases: one namespace only (its buckets end up whole), then all of them (mixed buckets, objects moving over).
      const ns = step % 200 < 100 ? 'a' : spaces[rand(spaces.length)];
      const name = names[rand(names.length)]!;
      const op = rand(6);
      if (op === 0) s.remove(step % 200 < 100 ? spaces[rand(spaces.length)] : ns, name);
      else {
        const labels: Record<string, string> = { cluster: rand(3) ? 'c1' : 'c2' };
        if (rand(2)) labels['plan'] = 'p1';
        s.upsert(mk(ns, name, labels, String(++rv)));
      }
      for (const [k, v] of buckets) {
        const all = s.byLabelView(k, v);
        for (const n of [undefined, 'a', 'b', '', 'none']) {
          const view = s.byLabelView(k, v, n);
          const want = s.byLabel(k, v, n);
          expect(view, `step ${step} ${k}=${v} ${n ?? '*'}`).to.deep.equal(want);
          expect(Object.isFrozen(view)).to.equal(true);
          // Unchanged bucket: the same array, in a namespace too (consumers compare by reference).
          expect(s.byLabelView(k, v, n)).to.equal(view);
          if (n === undefined) continue;
          // A namespace holding the whole bucket gets the bucket's own array (no second array to copy per change).
          if (want.length > 0 && want.length === all.length) {
            expect(view, `step ${step} ${k}=${v} ${n} whole`).to.equal(all);
            seen.whole++;
          } else if (want.length === 0) seen.none++;
          else seen.part++;
        }
      }
    }
    // The sequence reaches every case of the per-namespace counts.
    expect(seen.whole).to.be.greaterThan(100);
    expect(seen.none).to.be.greaterThan(100);
    expect(seen.part).to.be.greaterThan(100);
    // A handed-out array never changes afterwards.
    s.upsert(obj('a', 'x1', { cluster: 'c1' }, '1'));
    const before = s.byLabelView('cluster', 'c1');
    const copy = [...before];
    s.upsert(obj('a', 'x1', { cluster: 'c1' }, '2'));
    s.upsert(obj('a', 'x2', { cluster: 'c1' }, '1'));
    expect(before).to.deep.equal(copy);
    expect(s.byLabelView('cluster', 'c1')).to.not.equal(before);
    expect(s.byLabelView('cluster', 'c1')).to.deep.equal(s.byLabel('cluster', 'c1'));
  });

  it('keeps byLabelView per namespace right when a key moves between no namespace and the empty one', () => {
    const s = new MemoryStore();
    const mk = (ns: string | undefined, name: string, rv: string): KubeObject => ({
      metadata: { name, ...(ns !== undefined ? { namespace: ns } : {}), resourceVersion: rv, labels: { k: 'v' } },
    });
    // '' and no namespace give the same store key: the new version replaces the old one in place, in another namespace.
    s.upsert(mk('', 'x', '1'));
    expect(s.byLabelView('k', 'v', '')).to.have.length(1);
    s.upsert(mk(undefined, 'x', '2'));
    expect(s.byLabelView('k', 'v', '')).to.deep.equal([]);
    s.upsert(mk('', 'x', '3'));
    expect(s.byLabelView('k', 'v', '').map((o) => o.metadata.resourceVersion)).to.deep.equal(['3']);
    expect(s.byLabelView('k', 'v', '')).to.equal(s.byLabelView('k', 'v'));
  });

  it('selects objects with a label selector', () => {
    const s = new MemoryStore();
    s.upsert(obj('a', 'cp1', { cluster: 'c1', 'control-plane': '' }));
    s.upsert(obj('a', 'md1', { cluster: 'c1', deployment: 'md-0' }));
    s.upsert(obj('a', 'other', { cluster: 'c2', deployment: 'md-0' }));
    const names = (sel: string, ns?: string): string[] =>
      s
        .select(sel, ns)
        .map((o) => o.metadata.name!)
        .sort();
    expect(names('cluster=c1')).to.deep.equal(['cp1', 'md1']);
    expect(names('cluster=c1,control-plane')).to.deep.equal(['cp1']);
    expect(names('cluster=c1,!control-plane')).to.deep.equal(['md1']);
    expect(names('deployment in (md-0),cluster!=c1')).to.deep.equal(['other']);
    expect(names('', 'a')).to.deep.equal(['cp1', 'md1', 'other']);
    expect(names('cluster=c1', 'b')).to.deep.equal([]);
  });

  it('returns the previous version on upsert and remove', () => {
    const s = new MemoryStore();
    expect(s.upsert(obj('a', 'x', undefined, '1'))).to.equal(undefined);
    expect(s.upsert(obj('a', 'x', undefined, '2'))?.metadata.resourceVersion).to.equal('1');
    expect(s.remove('a', 'x')?.metadata.resourceVersion).to.equal('2');
    expect(s.remove('a', 'x')).to.equal(undefined);
  });

  it('freezes an object nested 100,000 levels deep without overflowing the stack', () => {
    const o = nested(100_000);
    deepFreeze(o);
    let x: Record<string, unknown> = o;
    for (let i = 0; i < 99_999; i++) x = x.a as Record<string, unknown>;
    expect(Object.isFrozen(x)).to.equal(true);
  });
});
