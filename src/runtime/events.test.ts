import { expect } from 'chai';
import { EventsV1, type KubeObject } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { createEventRecorder } from './events.js';

const machine: KubeObject = {
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm1', namespace: 'ns', uid: 'u1', resourceVersion: '7' },
};

describe('event recorder', () => {
  it('writes an events.k8s.io/v1 Event regarding the object, with an action and a microsecond eventTime', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, {
      component: 'plan-controller',
      host: 'h',
      eventAction: (r) => (r === 'MachineUpdateStarted' ? 'Start' : 'Other'),
    });
    const plan: KubeObject = {
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'InPlaceUpdatePlan',
      metadata: { name: 'p', namespace: 'ns' },
    };
    rec.event(machine, 'Normal', 'MachineUpdateStarted', 'started updating', plan);
    await rec.flush();
    const list = await client.list(EventsV1, 'ns');
    expect(list.items).to.have.length(1);
    const ev = list.items[0]!;
    expect(ev).to.deep.include({
      apiVersion: 'events.k8s.io/v1',
      regarding: {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Machine',
        name: 'm1',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '7',
      },
      related: { apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: 'InPlaceUpdatePlan', name: 'p', namespace: 'ns' },
      reason: 'MachineUpdateStarted',
      action: 'Start',
      note: 'started updating',
      type: 'Normal',
      reportingController: 'plan-controller',
      reportingInstance: 'h',
    });
    expect(ev['eventTime']).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(ev).not.to.have.property('series');
    expect(ev.metadata.name).to.match(/^m1\.[0-9a-f]+$/);
  });

  it('records the action Reconcile when the component gives no action table', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    rec.event(machine, 'Normal', 'Anything', 'm');
    await rec.flush();
    expect((await client.list(EventsV1, 'ns')).items[0]).to.include({ action: 'Reconcile', reason: 'Anything' });
  });

  it('records repeats of the same event as a series, and a different message as its own Event', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    for (let i = 0; i < 3; i++) rec.event(machine, 'Warning', 'Failed', 'boom');
    rec.event(machine, 'Warning', 'Failed', 'different');
    await rec.flush();
    const items = (await client.list(EventsV1, 'ns')).items;
    expect(items.map((e) => [e['note'], (e['series'] as { count?: number } | undefined)?.count ?? 1]).sort()).to.deep.equal([
      ['boom', 3],
      ['different', 1],
    ]);
    const series = items.find((e) => e['note'] === 'boom')!['series'] as { lastObservedTime?: string };
    expect(series.lastObservedTime).to.match(/\.\d{6}Z$/);
  });

  it('keeps a long message under 1 KiB and still aggregates its repeats', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    const long = `updater failed: ${'é'.repeat(5000)}`;
    rec.event(machine, 'Warning', 'Failed', long);
    rec.event(machine, 'Warning', 'Failed', long);
    await rec.flush();
    const items = (await client.list(EventsV1, 'ns')).items;
    expect(items).to.have.length(1);
    const msg = items[0]!['note'] as string;
    expect(Buffer.byteLength(msg)).to.be.at.most(1024);
    expect(msg).to.match(/^updater failed: é+\.\.\. \(\d+ more bytes\)$/);
    expect(items[0]!['series']).to.include({ count: 2 });
  });

  it('starts a new Event when the aggregated one is gone', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    rec.event(machine, 'Normal', 'R', 'm');
    await rec.flush();
    const first = (await client.list(EventsV1, 'ns')).items[0]!;
    await client.delete(EventsV1, 'ns', first.metadata.name!);
    rec.event(machine, 'Normal', 'R', 'm');
    await rec.flush();
    const items = (await client.list(EventsV1, 'ns')).items;
    expect(items).to.have.length(1);
    expect(items[0]).not.to.have.property('series');
  });

  it('never throws when the API fails', async () => {
    const client = new FakeClient();
    client.failNext('create', 500);
    const rec = createEventRecorder(client, { component: 'c' });
    expect(() => rec.event(machine, 'Normal', 'R', 'm')).to.not.throw();
    await rec.flush();
    expect((await client.list(EventsV1, 'ns')).items).to.have.length(0);
  });

  it('drops events beyond the per-object burst', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c', perObjectBurst: 2, perObjectRefillPerSec: 0.001 });
    for (let i = 0; i < 5; i++) rec.event(machine, 'Normal', 'R', `m${i}`);
    await rec.flush();
    expect((await client.list(EventsV1, 'ns')).items).to.have.length(2);
    expect(rec.dropped).to.equal(3);
  });
});
