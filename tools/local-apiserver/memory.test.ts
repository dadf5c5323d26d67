import { expect } from 'chai';
import { Core } from './core.js';
import { startLocalApiServer } from './index.js';
import { grKey } from './resources.js';

type Obj = Record<string, unknown>;

/** Polls until `ok()` (background work: the garbage collector runs on a timer); fails with `what` after a generous bound. */
async function until(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok(), what).to.equal(true);
}

// What the API server keeps must follow the live objects: indexes keyed by a deleted object, or state of a closed
// watch, are leaks in a server that runs plan after plan (bench/history.ts).
describe('local API server memory: nothing kept for what is gone', function () {
  const cm = (name: string, owner?: Obj): Obj => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      ...(owner
        ? {
            ownerReferences: [
              { apiVersion: 'v1', kind: 'ConfigMap', name: (owner.metadata as Obj).name, uid: (owner.metadata as Obj).uid },
            ],
          }
        : {}),
    },
  });

  it('garbage-collector indexes hold none of the owners and dependents once they are deleted', async function () {
    const core = new Core(10_000);
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    const baseline = core.stats().gc;
    for (let i = 0; i < 20; i++) {
      const owner = core.create(cms, 'v1', 'default', cm(`owner-${i}`), {}).obj;
      for (let j = 0; j < 5; j++) core.create(cms, 'v1', 'default', cm(`dep-${i}-${j}`, owner), {});
    }
    expect(core.stats().gc.owners).to.equal(baseline.owners + 20);
    expect(core.stats().gc.uids).to.equal(baseline.uids + 120);
    for (let i = 0; i < 20; i++) core.delete(cms, 'default', `owner-${i}`, { propagationPolicy: 'Background' });
    await until(() => core.store(grKey('', 'configmaps')).objects.size === 0, 'the dependents are collected');
    await until(() => core.stats().gc.queued === 0, 'the collector is idle');
    expect(core.stats().gc).to.deep.equal(baseline);
    core.close();
  });

  it('a watch closed by its client leaves no watcher and no open stream', async function () {
    const server = await startLocalApiServer({ https: false });
    try {
      const watchers = (): number => server.stats().resources.find((r) => r.resource === grKey('', 'configmaps'))!.watchers;
      const ac = new AbortController();
      const res = await fetch(`${server.url}/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true`, {
        headers: { Authorization: `Bearer ${server.token}` },
        signal: ac.signal,
      });
      expect(res.status).to.equal(200);
      await until(() => watchers() === 1, 'the watch is registered');
      ac.abort();
      await until(() => watchers() === 0 && server.stats().watchStreams === 0, 'the closed watch is forgotten');
    } finally {
      await server.close();
    }
  });
});
