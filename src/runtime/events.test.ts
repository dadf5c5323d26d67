import { expect } from 'chai';
import { Events, type KubeObject } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { createEventRecorder } from './events.js';

const machine: KubeObject = {
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm1', namespace: 'ns', uid: 'u1', resourceVersion: '7' },
};

describe('event recorder', () => {
  it('writes a core/v1 Event about the object', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'plan-controller', host: 'h' });
    rec.event(machine, 'Normal', 'UpdateStarted', 'started updating');
    await rec.flush();
    const list = await client.list(Events, 'ns');
    expect(list.items).to.have.length(1);
    expect(list.items[0]).to.deep.include({
      involvedObject: {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Machine',
        name: 'm1',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '7',
      },
      reason: 'UpdateStarted',
      message: 'started updating',
      type: 'Normal',
      source: { component: 'plan-controller', host: 'h' },
      count: 1,
    });
    expect(list.items[0]!.metadata.name).to.match(/^m1\.[0-9a-f]+$/);
  });

  it('aggregates repeats of the same event into a count', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    for (let i = 0; i < 3; i++) rec.event(machine, 'Warning', 'Failed', 'boom');
    rec.event(machine, 'Warning', 'Failed', 'different');
    await rec.flush();
    const items = (await client.list(Events, 'ns')).items;
    expect(items.map((e) => [e['message'], e['count']]).sort()).to.deep.equal([
      ['boom', 3],
      ['different', 1],
    ]);
  });

  it('keeps a long message under 1 KiB and still aggregates its repeats', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    const long = `updater failed: ${'é'.repeat(5000)}`;
    rec.event(machine, 'Warning', 'Failed', long);
    rec.event(machine, 'Warning', 'Failed', long);
    await rec.flush();
    const items = (await client.list(Events, 'ns')).items;
    expect(items).to.have.length(1);
    const msg = items[0]!['message'] as string;
    expect(Buffer.byteLength(msg)).to.be.at.most(1024);
    expect(msg).to.match(/^updater failed: é+\.\.\. \(\d+ more bytes\)$/);
    expect(items[0]!['count']).to.equal(2);
  });

  it('starts a new Event when the aggregated one is gone', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c' });
    rec.event(machine, 'Normal', 'R', 'm');
    await rec.flush();
    const first = (await client.list(Events, 'ns')).items[0]!;
    await client.delete(Events, 'ns', first.metadata.name!);
    rec.event(machine, 'Normal', 'R', 'm');
    await rec.flush();
    const items = (await client.list(Events, 'ns')).items;
    expect(items).to.have.length(1);
    expect(items[0]!['count']).to.equal(1);
  });

  it('never throws when the API fails', async () => {
    const client = new FakeClient();
    client.failNext('create', 500);
    const rec = createEventRecorder(client, { component: 'c' });
    expect(() => rec.event(machine, 'Normal', 'R', 'm')).to.not.throw();
    await rec.flush();
    expect((await client.list(Events, 'ns')).items).to.have.length(0);
  });

  it('drops events beyond the per-object burst', async () => {
    const client = new FakeClient();
    const rec = createEventRecorder(client, { component: 'c', perObjectBurst: 2, perObjectRefillPerSec: 0.001 });
    for (let i = 0; i < 5; i++) rec.event(machine, 'Normal', 'R', `m${i}`);
    await rec.flush();
    expect((await client.list(Events, 'ns')).items).to.have.length(2);
    expect(rec.dropped).to.equal(3);
  });
});
