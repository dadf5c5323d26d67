import { expect } from 'chai';
import { ResourceStore, WATCH_BLOCK_EVENTS } from './store.js';

type Obj = Record<string, unknown>;

const labelsOf = (o: Obj): unknown => (o.metadata as Obj | undefined)?.labels;
const labelsDiffer = (a: Obj, b: Obj): boolean => JSON.stringify(labelsOf(a)) !== JSON.stringify(labelsOf(b));
// What core.ts keeps of a previous state when selectors read only name, namespace and labels.
const labelProjection = (o: Obj): Obj => {
  const m = (o.metadata ?? {}) as Obj;
  return { metadata: { name: m.name, namespace: m.namespace, labels: m.labels } };
};

/** A version of a Machine-like object. */
const version = (name: string, ns: string, rv: number, labels: Record<string, string> | undefined, apiVersion = 'v1'): Obj => ({
  apiVersion,
  kind: 'Thing',
  metadata: { name, namespace: ns, resourceVersion: String(rv), ...(labels ? { labels } : {}) },
  spec: { rv },
});

/** Writes versions through a store and records what its live watcher saw (type, ns, rv, apiVersion, JSON, prev). */
function recorder(s: ResourceStore): string[] {
  const seen: string[] = [];
  s.addWatcher({ ns: undefined, deliver: (e) => seen.push(line(e)) });
  return seen;
}
function line(e: { type: string; ns: string; rv: number; obj: Obj; apiVersion?: string; json?: Map<string, string> }): string {
  return `${e.type} ${e.ns} ${e.rv} ${String(e.apiVersion ?? e.obj.apiVersion)} ${e.json?.get('') ?? JSON.stringify(e.obj)}`;
}

// The sealed window keeps no object per event (store.ts): columns per block, previous-state labels interned.
describe('local API server watch window: columnar sealed blocks', function () {
  it('previous states whose selectors read only labels come back as the projection, label sets shared across events', function () {
    const s = new ResourceStore({ maxEvents: 10_000, selectionDiffers: labelsDiffer, selectable: labelProjection }, 0);
    const names = Array.from({ length: 8 }, (_, i) => `m${i}`);
    const step = (k: number): Record<string, string> | undefined => (k % 3 === 2 ? undefined : { md: 'a', step: String(k % 3) });
    let rv = 0;
    const prevs = new Map<number, Obj | undefined>();
    for (const n of names) s.put('ns', n, version(n, 'ns', ++rv, step(0)), rv, 'ADDED');
    // Every object moves through the same label sets (like Machines of one MachineDeployment), one without labels.
    for (let k = 1; k <= 2 * WATCH_BLOCK_EVENTS; k++) {
      const n = names[k % names.length]!;
      const before = version(n, 'ns', rv, step(Math.floor((k - 1) / names.length)));
      const after = version(n, 'ns', ++rv, step(Math.floor(k / names.length)));
      s.put('ns', n, after, rv, 'MODIFIED', before);
      prevs.set(rv, labelsDiffer(before, after) ? labelProjection(before) : undefined);
    }
    const evs = s.eventsSince(0)!;
    const sealed = evs.slice(0, 2 * WATCH_BLOCK_EVENTS);
    expect(
      sealed.every((e) => e.constructor.name === 'ReplayedEvent'),
      'sealed',
    ).to.equal(true);
    for (const e of sealed.filter((x) => x.type === 'MODIFIED')) expect(e.prev, `rv ${e.rv}`).to.deep.equal(prevs.get(e.rv));
    const withLabels = sealed.filter((e) => e.prev && labelsOf(e.prev) !== undefined);
    expect(withLabels.length).to.be.greaterThan(4);
    const distinct = new Set(withLabels.map((e) => labelsOf(e.prev!)));
    expect(distinct.size, 'one label set object per distinct set').to.equal(
      new Set(withLabels.map((e) => JSON.stringify(labelsOf(e.prev!)))).size,
    );
    expect(Object.isFrozen(labelsOf(withLabels[0]!.prev!))).to.equal(true);
    expect(
      sealed.some((e) => e.prev && labelsOf(e.prev) === undefined && 'labels' in (e.prev.metadata as Obj)),
      'a previous state without labels',
    ).to.equal(true);
  });

  it('keeps the whole projection when selectors read more than name, namespace and labels', function () {
    const specDiffers = (a: Obj, b: Obj): boolean => JSON.stringify(a.spec) !== JSON.stringify(b.spec);
    const s = new ResourceStore({ maxEvents: 10_000, selectionDiffers: specDiffers, selectable: (o) => o }, 0);
    s.put('', 'n', version('n', '', 1, { a: 'b' }), 1, 'ADDED');
    for (let rv = 2; rv <= WATCH_BLOCK_EVENTS + 1; rv++)
      s.put('', 'n', version('n', '', rv, { a: 'b' }), rv, 'MODIFIED', version('n', '', rv - 1, { a: 'b' }));
    const evs = s.eventsSince(0)!;
    expect(evs[5]!.prev).to.deep.equal(version('n', '', 5, { a: 'b' }));
  });

  it('replays blocks with mixed namespaces, apiVersions and types as written, from any resourceVersion', function () {
    const s = new ResourceStore(10_000, 0);
    const live = recorder(s);
    let rv = 0;
    for (let i = 0; i < 3 * WATCH_BLOCK_EVENTS + 7; i++) {
      // Mostly one namespace and apiVersion per block, some blocks mixed.
      const ns = i < WATCH_BLOCK_EVENTS ? 'one' : `ns${i % 2}`;
      const av = i >= 2 * WATCH_BLOCK_EVENTS && i % 5 === 0 ? 'example.com/v1beta1' : 'example.com/v1';
      const o = version(`o${i % 5}`, ns, ++rv, undefined, av);
      if (i % 13 === 12) s.remove(ns, `o${i % 5}`, o, rv);
      else s.put(ns, `o${i % 5}`, o, rv, i < 5 ? 'ADDED' : 'MODIFIED');
    }
    for (const from of [0, 1, WATCH_BLOCK_EVENTS - 1, WATCH_BLOCK_EVENTS, WATCH_BLOCK_EVENTS + 1, 150, rv - 1, rv])
      expect(s.eventsSince(from)!.map(line), `from ${from}`).to.deep.equal(live.filter((l) => Number(l.split(' ')[2]) > from));
  });

  it('compacts its arrays across sealed blocks and answers 410 below the floor, also inside a block', function () {
    const maxEvents = 500;
    const s = new ResourceStore({ maxEvents, minEvents: 100 }, 0);
    const live = recorder(s);
    let rv = 0;
    // Enough events that both the unsealed and the sealed arrays drop their prefix many times over.
    for (let i = 0; i < 80 * WATCH_BLOCK_EVENTS + 37; i++) {
      s.put('ns', `o${i % 9}`, version(`o${i % 9}`, 'ns', (rv += 2), undefined), rv, i < 9 ? 'ADDED' : 'MODIFIED');
      if (i % 997 === 0 || i % WATCH_BLOCK_EVENTS === 3) {
        expect(s.retainedEvents).to.equal(Math.min(i + 1, maxEvents));
        const floor = s.oldestAvailable();
        expect(s.eventsSince(floor)!.map(line)).to.deep.equal(live.slice(-s.retainedEvents));
        if (floor > 0) expect(s.eventsSince(floor - 1), '410 below the floor').to.equal(undefined);
      }
    }
    const floor = s.oldestAvailable();
    // The floor sits inside a sealed block here (500 is not a multiple of the block size).
    expect(s.retainedEvents % WATCH_BLOCK_EVENTS).to.not.equal(0);
    expect(s.eventsSince(floor - 1)).to.equal(undefined);
    expect(s.eventsSince(floor + 1)!.map(line)).to.deep.equal(live.slice(-maxEvents).filter((l) => Number(l.split(' ')[2]) > floor + 1));
    expect(s.eventsSince(floor + 300)!.map((e) => e.rv)).to.deep.equal(
      live
        .slice(-maxEvents)
        .map((l) => Number(l.split(' ')[2]))
        .filter((r) => r > floor + 300),
    );
  });

  it('expires sealed events by age, a block partly, and keeps the minimum', function () {
    let now = 0;
    const s = new ResourceStore({ maxEvents: 10_000, freshMs: 1000, minEvents: 10, now: () => now }, 0);
    const live = recorder(s);
    for (let rv = 1; rv <= 3 * WATCH_BLOCK_EVENTS; rv++) {
      now = rv * 10;
      s.put('ns', 'x', version('x', 'ns', rv, undefined), rv, rv === 1 ? 'ADDED' : 'MODIFIED');
    }
    // Events recorded before now - 1000 go: rv < 3 * 64 - 100 + 1.
    now = 3 * WATCH_BLOCK_EVENTS * 10;
    s.expire();
    const firstKept = 3 * WATCH_BLOCK_EVENTS - 100;
    expect(s.oldestAvailable()).to.equal(firstKept - 1);
    expect(s.eventsSince(firstKept - 1)!.map(line)).to.deep.equal(live.slice(firstKept - 1));
    expect(s.eventsSince(firstKept - 2)).to.equal(undefined);
    now += 1_000_000;
    s.expire();
    expect(s.retainedEvents).to.equal(10);
    expect(s.eventsSince(s.oldestAvailable())!.map(line)).to.deep.equal(live.slice(-10));
  });

  it('keeps resourceVersions and times that do not fit 32 bits past the first of their block', function () {
    // A clock with fractions and a jump of years, resourceVersions far apart: the block falls back to 64-bit columns.
    let now = 0.25;
    const s = new ResourceStore({ maxEvents: 10_000, freshMs: 2 ** 37, minEvents: 1, now: () => now }, 0);
    const live = recorder(s);
    const rvs = Array.from({ length: WATCH_BLOCK_EVENTS + 3 }, (_, i) => (i < 10 ? i + 1 : 2 ** 40 + i));
    for (const [i, rv] of rvs.entries()) {
      now = i < 10 ? i + 0.5 : 2 ** 36 + i;
      s.put('ns', 'x', version('x', 'ns', rv, undefined), rv, i === 0 ? 'ADDED' : 'MODIFIED');
    }
    expect(s.eventsSince(0)!.map(line)).to.deep.equal(live);
    expect(s.eventsSince(0)!.map((e) => e.at)).to.deep.equal(rvs.map((_, i) => (i < 10 ? i + 0.5 : 2 ** 36 + i)));
    expect(s.eventsSince(5)!.map((e) => e.rv)).to.deep.equal(rvs.slice(5));
    // Expiry reads the times back from the block: the first ten are years old.
    now = 2 ** 36 + 2 ** 37 + 5;
    s.expire();
    // As kube-apiserver's watch cache: once events were dropped, the oldest held one (less one) is the limit, not
    // the last dropped one; resourceVersions between them are too old too.
    expect(s.oldestAvailable()).to.equal(rvs[10]! - 1);
    expect(s.eventsSince(rvs[10]! - 1)!.map(line)).to.deep.equal(live.slice(10));
    expect(s.eventsSince(10)).to.equal(undefined);
  });
});
