import { expect } from 'chai';
import { COLD_AFTER_MS, Core, EVENT_TTL_MS } from './core.js';
import { grKey } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { initialEvent } from './store.js';

// Housekeeping a real control plane does in the background: Events expire one TTL after their last write
// (kube-apiserver --event-ttl, default 1 h) and watch-event windows stay bounded in time.
describe('local API server housekeeping', function () {
  const event = (name: string): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: 'default' },
    involvedObject: { kind: 'ConfigMap', namespace: 'default', name: 'x' },
    reason: 'Test',
    message: 'm',
    type: 'Normal',
  });

  it('deletes Events one TTL after their last write (an update extends it), nothing else', function () {
    let now = 0;
    const core = new Core(10_000, { now: () => now });
    core.bootstrap();
    const events = core.lookup('', 'v1', 'events')!;
    const cms = core.lookup('', 'v1', 'configmaps')!;
    core.create(events, 'v1', 'default', event('old'), {});
    core.create(events, 'v1', 'default', event('touched'), {});
    core.create(cms, 'v1', 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } }, {});
    now = EVENT_TTL_MS - 1;
    core.patch(events, 'v1', 'default', 'touched', 'application/merge-patch+json', { message: 'again' }, {});
    core.housekeep();
    expect(core.store(grKey('', 'events')).objects.size, 'nothing expired yet').to.equal(2);
    now = EVENT_TTL_MS;
    core.housekeep();
    expect([...core.store(grKey('', 'events')).objects.keys()]).to.deep.equal(['default/touched']);
    now = 2 * EVENT_TTL_MS;
    core.housekeep();
    expect(core.store(grKey('', 'events')).objects.size).to.equal(0);
    expect(core.trackedEvents).to.equal(0);
    expect(core.get(cms, 'default', 'cm')).to.not.equal(undefined);
    core.close();
  });

  it('deleting Events (TTL or client) leaves no TTL entry behind', function () {
    let now = 0;
    const core = new Core(10_000, { now: () => now, eventTtlMs: 1_000 });
    core.bootstrap();
    const events = core.lookup('', 'v1', 'events')!;
    for (let i = 0; i < 10; i++) core.create(events, 'v1', 'default', event(`e-${i}`), {});
    expect(core.stats().eventTtlTracked).to.equal(10);
    core.delete(events, 'default', 'e-0', {});
    expect(core.stats().eventTtlTracked).to.equal(9);
    now = 1_000;
    core.housekeep();
    expect(core.stats().eventTtlTracked).to.equal(0);
    expect(core.stats().resources.find((r) => r.resource === grKey('', 'events'))?.objects).to.equal(0);
    core.close();
  });

  it('expires watch events beyond the fresh window on every store, also without writes', function () {
    let now = 0;
    const core = new Core(10_000, { now: () => now, watchFreshMs: 1_000 });
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    for (let i = 0; i < 300; i++)
      core.create(cms, 'v1', 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` } }, {});
    for (let i = 0; i < 300; i++) core.delete(cms, 'default', `cm-${i}`, {});
    expect(core.store(grKey('', 'configmaps')).retainedEvents).to.equal(600);
    now = 5_000;
    core.housekeep();
    expect(core.store(grKey('', 'configmaps')).retainedEvents).to.equal(100);
    core.close();
  });
});

describe('local API server cold objects', function () {
  const cm = (name: string, label: string): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, labels: { app: label } },
    data: { text: `é ${name} "q" \u2028`, n: '1' },
  });

  it('answers GET, list, selectors and watches of frozen objects byte-for-byte as before, and writes thaw them', function () {
    let now = 0;
    const core = new Core(10_000, { now: () => now });
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    for (let i = 0; i < 5; i++) core.create(cms, 'v1', 'default', cm(`c${i}`, i % 2 ? 'odd' : 'even'), {});
    const store = core.store(grKey('', 'configmaps'));
    const answers = (): unknown => {
      const all = core.list(cms, 'default', parseLabelSelector(''), parseFieldSelector(''), 0, undefined);
      const odd = core.list(cms, 'default', parseLabelSelector('app=odd'), parseFieldSelector(''), 0, undefined);
      const page = core.list(cms, 'default', parseLabelSelector(''), parseFieldSelector(''), 2, undefined);
      const next = core.list(cms, 'default', parseLabelSelector(''), parseFieldSelector(''), 0, page.continue);
      return {
        get: core.entryJson(cms, 'v1', core.get(cms, 'default', 'c3')),
        all: all.entries.map((e) => core.entryJson(cms, 'v1', e)),
        odd: odd.entries.map((e) => core.entryJson(cms, 'v1', e)),
        pages: [page.continue, ...page.entries.map((e) => e.rv), ...next.entries.map((e) => e.rv)],
        initial: [...store.objects.values()].map((e) => initialEvent(e).json?.get('') ?? JSON.stringify(e.obj)),
      };
    };
    const hot = answers();
    now = COLD_AFTER_MS - 1;
    core.housekeep();
    expect(
      [...store.objects.values()].filter((e) => e.cold),
      'not cold yet',
    ).to.have.length(0);
    now = COLD_AFTER_MS;
    core.housekeep();
    expect([...store.objects.values()].filter((e) => e.cold)).to.have.length(5);
    expect(answers()).to.deep.equal(hot);
    expect(
      [...store.objects.values()].filter((e) => e.cold),
      'reads keep them cold',
    ).to.have.length(5);
    // A stale write is refused and changes nothing; a good one works on the thawed object.
    const before = core.rv;
    expect(() =>
      core.update(cms, 'v1', 'default', 'c1', { ...cm('c1', 'odd'), metadata: { name: 'c1', resourceVersion: '1' } }, {}),
    ).to.throw(/modified/);
    expect(answers()).to.deep.equal(hot);
    const r = core.patch(cms, 'v1', 'default', 'c1', 'application/merge-patch+json', { data: { n: '2' } }, {});
    expect((r.obj.data as Record<string, string>).n).to.equal('2');
    expect(store.get('default', 'c1')!.cold).to.equal(false);
    const events = store.eventsSince(before)!;
    expect(events.map((e) => e.type)).to.deep.equal(['MODIFIED']);
    expect(events[0]!.json?.get('') ?? JSON.stringify(events[0]!.obj)).to.equal(JSON.stringify(r.obj));
    core.close();
  });
});
