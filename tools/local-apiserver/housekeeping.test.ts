import { expect } from 'chai';
import { Core, EVENT_TTL_MS } from './core.js';
import { grKey } from './resources.js';

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
