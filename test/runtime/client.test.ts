// The REST client against a real API server protocol (local API server, or a real cluster).
import { expect } from 'chai';
import { ConfigMaps } from '../../src/api/index.js';
import type { KubeApiError } from '../../src/runtime/pure/errors.js';
import { isAlreadyExists, isConflict, isNotFound } from '../../src/runtime/pure/errors.js';
import type { WatchEvent } from '../../src/runtime/pure/types.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';
import { WIDGET_CRD, widget, Widgets, type Widget } from './fixtures.js';

describe('REST client against an API server', function () {
  let env: TestEnv;
  let ns: string;
  before(async () => {
    env = await startTestEnv({ crds: [WIDGET_CRD] });
  });
  after(async () => {
    await env?.stop();
  });
  beforeEach(async () => {
    ns = await env.newNamespace('rt-client');
  });

  it('creates, reads, lists by label, updates and deletes a custom resource', async () => {
    const { client } = env;
    const created = await client.create(Widgets, widget(ns, 'w1', 1, { color: 'red' }));
    expect(created.metadata.uid).to.be.a('string');
    await client.create(Widgets, widget(ns, 'w2', 2, { color: 'blue' }));
    expect((await client.get<Widget>(Widgets, ns, 'w1'))?.spec.size).to.equal(1);
    const red = await client.list<Widget>(Widgets, ns, { labelSelector: 'color=red' });
    expect(red.items.map((w) => w.metadata.name)).to.deep.equal(['w1']);
    expect(red.items[0]!.kind).to.equal('Widget');
    expect(red.resourceVersion).to.match(/^\d+$/);
    const upd = await client.update<Widget>(Widgets, { ...created, spec: { size: 5 } });
    expect(upd.spec.size).to.equal(5);
    await client.delete(Widgets, ns, 'w1');
    await waitFor(async () => (await client.get(Widgets, ns, 'w1')) === undefined, { message: 'w1 deleted' });
  });

  it('answers a stale update with a retryable conflict and a duplicate create with AlreadyExists', async () => {
    const { client } = env;
    const w = await client.create(Widgets, widget(ns, 'w'));
    await client.update(Widgets, { ...w, spec: { size: 2 } });
    const err = await client.update(Widgets, { ...w, spec: { size: 3 } }).catch((e: unknown) => e);
    expect(isConflict(err)).to.equal(true);
    expect((err as KubeApiError).retryable).to.equal(true);
    const dup = await client.create(Widgets, widget(ns, 'w')).catch((e: unknown) => e);
    expect(isAlreadyExists(dup)).to.equal(true);
    const missing = await client.delete(Widgets, ns, 'nope').catch((e: unknown) => e);
    expect(isNotFound(missing)).to.equal(true);
  });

  it('writes status only through the status subresource', async () => {
    const { client } = env;
    await client.create(Widgets, widget(ns, 'w'));
    await client.patch(Widgets, ns, 'w', { status: { observedSize: 9 } }, { type: 'merge' });
    expect((await client.get<Widget>(Widgets, ns, 'w'))?.status?.observedSize).to.equal(undefined);
    await client.patch(Widgets, ns, 'w', { status: { observedSize: 9 } }, { type: 'merge', subresource: 'status' });
    expect((await client.get<Widget>(Widgets, ns, 'w'))?.status?.observedSize).to.equal(9);
  });

  it('applies JSON patches, server-side apply and dry runs', async () => {
    const { client } = env;
    await client.create(Widgets, widget(ns, 'w'));
    await client.patch(Widgets, ns, 'w', [{ op: 'replace', path: '/spec/size', value: 4 }], { type: 'json' });
    expect((await client.get<Widget>(Widgets, ns, 'w'))?.spec.size).to.equal(4);
    await client.patch(
      Widgets,
      ns,
      'w',
      { apiVersion: Widgets.group + '/v1', kind: 'Widget', metadata: { name: 'w', namespace: ns }, spec: { color: 'green' } },
      { type: 'apply', fieldManager: 'rt-test', force: true },
    );
    expect((await client.get<Widget>(Widgets, ns, 'w'))?.spec.color).to.equal('green');
    await client.patch(Widgets, ns, 'w', { spec: { size: 99 } }, { type: 'merge', dryRun: true });
    expect((await client.get<Widget>(Widgets, ns, 'w'))?.spec.size).to.equal(4);
  });

  it('resolves a served kind through discovery', async () => {
    expect(await env.client.resolve(Widgets.group, 'Widget')).to.deep.equal(Widgets);
    expect(await env.client.resolve('', 'ConfigMap')).to.deep.equal(ConfigMaps);
    const err = await env.client.resolve(Widgets.group, 'Gadget').catch((e: unknown) => e);
    expect(isNotFound(err)).to.equal(true);
  });

  it('watches changes from a resourceVersion and stops on abort', async () => {
    const { client } = env;
    const start = await client.list(Widgets, ns);
    const events: WatchEvent<Widget>[] = [];
    const h = await client.watch<Widget>(Widgets, ns, { resourceVersion: start.resourceVersion, allowWatchBookmarks: true }, (e) =>
      events.push(e),
    );
    await client.create(Widgets, widget(ns, 'w'));
    await client.patch(Widgets, ns, 'w', { spec: { size: 2 } }, { type: 'merge' });
    await client.delete(Widgets, ns, 'w');
    await waitFor(() => events.filter((e) => e.type !== 'BOOKMARK').length >= 3, { message: 'three watch events' });
    expect(events.filter((e) => e.type !== 'BOOKMARK').map((e) => e.type)).to.deep.equal(['ADDED', 'MODIFIED', 'DELETED']);
    h.abort();
    await h.done;
  });
});
