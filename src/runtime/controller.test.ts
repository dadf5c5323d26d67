import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { delay, waitFor } from '../../test/support/wait.js';
import { ConflictError, TerminalError } from './pure/errors.js';
import { createManager, type RuntimeManager } from './manager.js';
import { Action, type ObjectKey } from './pure/types.js';
import { ownerMapper, parseKey, formatKey } from './controller.js';

const Parents: ResourceType = { group: 'test.io', version: 'v1', plural: 'parents', kind: 'Parent', namespaced: true };
const Children: ResourceType = { group: 'test.io', version: 'v1', plural: 'children', kind: 'Child', namespaced: true };
const Others: ResourceType = { group: 'other.io', version: 'v1', plural: 'others', kind: 'Other', namespaced: true };
const Clustered: ResourceType = { group: 'test.io', version: 'v1', plural: 'clustered', kind: 'Clustered', namespaced: false };

const parent = (name: string, ns = 'a'): KubeObject => ({ metadata: { name, namespace: ns }, spec: { n: 0 } });
const child = (name: string, owner: string, ns = 'a', controller = true): KubeObject => ({
  metadata: { name, namespace: ns, ownerReferences: [{ apiVersion: 'test.io/v1', kind: 'Parent', name: owner, uid: 'u', controller }] },
});

const fastQueue = { baseDelayMs: 1, maxDelayMs: 20 };

describe('controller', () => {
  let client: FakeClient;
  let mgr: RuntimeManager;
  beforeEach(() => {
    client = new FakeClient();
    mgr = createManager({ client, name: 'test', queue: fastQueue, informer: { backoff: { baseMs: 1, maxMs: 5 } } });
  });
  afterEach(async () => {
    await mgr.stop();
  });

  it('reconciles every existing primary object after its informers synced', async () => {
    client.seed(Parents, parent('p1'));
    client.seed(Parents, parent('p2', 'b'));
    const seen: string[] = [];
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async (k) => {
        expect(mgr.informer(Parents).store.get(k.namespace, k.name)).to.not.equal(undefined);
        seen.push(formatKey(k));
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => seen.length === 2);
    expect(seen.sort()).to.deep.equal(['a/p1', 'b/p2']);
  });

  it('maps owned objects to their controller owner and other watches through the mapper', async () => {
    client.seed(Parents, parent('p1'));
    const seen: string[] = [];
    mgr
      .controller('c')
      .for(Parents)
      .owns(Children)
      .watches(Others, (o) => [{ namespace: o.metadata.namespace!, name: String(o.metadata.labels?.['parent']) }])
      .reconcile(async (k) => {
        seen.push(formatKey(k));
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => seen.length === 1);
    await client.create(Children, child('c1', 'p1'));
    await waitFor(() => seen.length === 2);
    await client.create(Children, child('c2', 'p9', 'a', false)); // not a controller reference: ignored
    await client.create(Others, { metadata: { name: 'o1', namespace: 'a', labels: { parent: 'p7' } } });
    await waitFor(() => seen.length === 3);
    expect(seen).to.deep.equal(['a/p1', 'a/p1', 'a/p7']);
  });

  it('never runs one key twice at once and re-runs a key that changed while in flight', async () => {
    client.seed(Parents, parent('p1'));
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    mgr
      .controller('c')
      .for(Parents)
      .withConcurrency(4)
      .reconcile(async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        runs++;
        await delay(30);
        running--;
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => runs === 1);
    for (let i = 1; i <= 5; i++) await client.patch(Parents, 'a', 'p1', { spec: { n: i } }, { type: 'merge' });
    await waitFor(() => runs >= 2 && running === 0);
    await delay(50);
    expect(maxRunning).to.equal(1);
    expect(runs).to.equal(2);
  });

  it('reconciles different keys in parallel up to the concurrency', async () => {
    for (let i = 0; i < 4; i++) client.seed(Parents, parent(`p${i}`));
    let running = 0;
    let maxRunning = 0;
    mgr
      .controller('c')
      .for(Parents)
      .withConcurrency(2)
      .reconcile(async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await delay(30);
        running--;
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => mgr.metrics.reconcileTotal.get().then((m) => m.values.reduce((s, v) => s + v.value, 0) === 4));
    expect(maxRunning).to.equal(2);
  });

  it('retries a failing key with backoff until it succeeds and counts the errors', async () => {
    client.seed(Parents, parent('p1'));
    let attempts = 0;
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async () => {
        attempts++;
        if (attempts < 4) throw new Error('boom');
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => attempts === 4);
    const total = await mgr.metrics.reconcileTotal.get();
    const by = Object.fromEntries(total.values.map((v) => [v.labels['result'], v.value]));
    expect(by).to.deep.equal({ error: 3, success: 1 });
    expect((await mgr.metrics.reconcileErrors.get()).values[0]!.value).to.equal(3);
  });

  it('retries conflicts like any retryable error', async () => {
    client.seed(Parents, parent('p1'));
    let attempts = 0;
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async () => {
        if (++attempts === 1) throw new ConflictError('patch Parent a/p1');
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => attempts === 2);
  });

  it('does not retry a terminal error until the object changes', async () => {
    client.seed(Parents, parent('p1'));
    let attempts = 0;
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async () => {
        attempts++;
        throw new TerminalError('validate Parent a/p1', 'spec is invalid');
      });
    await mgr.start();
    await waitFor(() => attempts === 1);
    await delay(60);
    expect(attempts).to.equal(1);
    await client.patch(Parents, 'a', 'p1', { spec: { n: 1 } }, { type: 'merge' });
    await waitFor(() => attempts === 2);
  });

  it('requeues after the asked delay', async () => {
    client.seed(Parents, parent('p1'));
    let runs = 0;
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async () => (++runs < 3 ? Action.requeue(10) : Action.awaitChange()));
    await mgr.start();
    await waitFor(() => runs === 3);
    await delay(40);
    expect(runs).to.equal(3);
  });

  it('adds a watch at run time, enqueueing existing and new objects of that resource', async () => {
    client.seed(Others, { metadata: { name: 'o1', namespace: 'a', labels: { parent: 'p5' } } });
    const seen: string[] = [];
    const c = mgr
      .controller('c')
      .for(Parents)
      .reconcile(async (k) => {
        seen.push(formatKey(k));
        return Action.awaitChange();
      });
    await mgr.start();
    const mapper = (o: KubeObject): ObjectKey[] => [{ namespace: 'a', name: String(o.metadata.labels?.['parent']) }];
    await c.watch(Others, mapper);
    await c.watch(Others, mapper);
    await waitFor(() => seen.includes('a/p5'));
    await client.create(Others, { metadata: { name: 'o2', namespace: 'a', labels: { parent: 'p6' } } });
    await waitFor(() => seen.includes('a/p6'));
    expect(seen.filter((s) => s === 'a/p5').length).to.equal(1);
  });

  it('shares one informer per resource across controllers', async () => {
    client.seed(Parents, parent('p1'));
    const a: string[] = [];
    const b: string[] = [];
    mgr
      .controller('a')
      .for(Parents)
      .reconcile(async (k) => (a.push(k.name), Action.awaitChange()));
    mgr
      .controller('b')
      .for(Parents)
      .reconcile(async (k) => (b.push(k.name), Action.awaitChange()));
    await mgr.start();
    await waitFor(() => a.length === 1 && b.length === 1);
    expect(client.calls.filter((c) => c.verb === 'list' && c.res === 'parents').length).to.equal(1);
  });

  it('enqueues by hand, also with a delay', async () => {
    const seen: string[] = [];
    const c = mgr
      .controller('c')
      .for(Clustered)
      .reconcile(async (k) => (seen.push(formatKey(k)), Action.awaitChange()));
    await mgr.start();
    c.enqueue({ name: 'x' }, 10);
    c.enqueue({ namespace: 'n', name: 'y' });
    await waitFor(() => seen.length === 2);
    expect(seen).to.deep.equal(['n/y', 'x']);
  });

  it('waits for in-flight reconciles on stop', async () => {
    client.seed(Parents, parent('p1'));
    let finished = false;
    let startedRun = false;
    mgr
      .controller('c')
      .for(Parents)
      .reconcile(async () => {
        startedRun = true;
        await delay(50);
        finished = true;
        return Action.awaitChange();
      });
    await mgr.start();
    await waitFor(() => startedRun);
    await mgr.stop();
    expect(finished).to.equal(true);
  });
});

describe('controller helpers', () => {
  it('parses and formats namespaced and cluster-scoped keys', () => {
    expect(parseKey('ns/n')).to.deep.equal({ namespace: 'ns', name: 'n' });
    expect(parseKey('n')).to.deep.equal({ name: 'n' });
    expect(formatKey({ namespace: 'ns', name: 'n' })).to.equal('ns/n');
  });

  it('maps only controller references of the owner group and kind', () => {
    const m = ownerMapper(Parents);
    expect(m(child('c', 'p1'))).to.deep.equal([{ namespace: 'a', name: 'p1' }]);
    expect(m(child('c', 'p1', 'a', false))).to.deep.equal([]);
    const otherGroup = child('c', 'p1');
    otherGroup.metadata.ownerReferences![0]!.apiVersion = 'elsewhere.io/v1';
    expect(m(otherGroup)).to.deep.equal([]);
    const otherVersion = child('c', 'p1');
    otherVersion.metadata.ownerReferences![0]!.apiVersion = 'test.io/v2';
    expect(m(otherVersion)).to.deep.equal([{ namespace: 'a', name: 'p1' }]);
  });
});
