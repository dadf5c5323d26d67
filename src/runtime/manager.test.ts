import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { waitFor } from '../../test/support/wait.js';
import { createManager, type RuntimeManager } from './manager.js';
import { Action } from './pure/types.js';

const Things: ResourceType = { group: 'test.io', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };
const thing = (name: string, ns: string): KubeObject => ({ metadata: { name, namespace: ns } });

describe('manager', () => {
  const managers: RuntimeManager[] = [];
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.stop()));
  });
  const make = (client: FakeClient, extra: Partial<Parameters<typeof createManager>[0]> = {}): RuntimeManager => {
    const m = createManager({
      client,
      name: 'test',
      queue: { baseDelayMs: 1, maxDelayMs: 10 },
      informer: { backoff: { baseMs: 1, maxMs: 5 } },
      ...extra,
    });
    managers.push(m);
    return m;
  };

  it('scopes informers to its namespace', async () => {
    const client = new FakeClient();
    client.seed(Things, thing('in', 'mine'));
    client.seed(Things, thing('out', 'other'));
    const seen: string[] = [];
    const m = make(client, { namespace: 'mine' });
    m.controller('c')
      .for(Things)
      .reconcile(async (k) => (seen.push(`${k.namespace}/${k.name}`), Action.awaitChange()));
    await m.start();
    await waitFor(() => seen.length === 1);
    expect(seen).to.deep.equal(['mine/in']);
    expect(
      m
        .informer(Things)
        .store.list()
        .map((o) => o.metadata.name),
    ).to.deep.equal(['in']);
  });

  it('serves /healthz, /readyz once informers synced, and /metrics with reconcile and API counters', async () => {
    const client = new FakeClient();
    client.seed(Things, thing('t', 'ns'));
    const m = make(client, { metricsPort: 0, healthPort: 0 });
    let runs = 0;
    m.controller('things')
      .for(Things)
      .reconcile(async () => (runs++, Action.awaitChange()));
    await m.start();
    await waitFor(() => runs === 1);
    const health = `http://127.0.0.1:${m.ports.health}`;
    expect((await fetch(`${health}/healthz`)).status).to.equal(200);
    await waitFor(async () => (await fetch(`${health}/readyz`)).status === 200);
    const text = await (await fetch(`http://127.0.0.1:${m.ports.metrics}/metrics`)).text();
    expect(text).to.match(/inplace_reconcile_total\{controller="things",result="success"\} 1/);
    expect(text).to.match(/inplace_api_requests_total\{verb="list",resource="things.test.io",code="200"\} 1/);
    expect(text).to.include('inplace_workqueue_depth');
    expect(text).to.include('inplace_reconcile_duration_seconds_bucket');
  });

  it('is not ready while an informer has not synced', async () => {
    const client = new FakeClient();
    const m = make(client, { healthPort: 0 });
    for (let i = 0; i < 3; i++) client.failNext('list', 500);
    m.informer(Things);
    await m.start();
    expect(m.ready).to.equal(false);
    expect((await fetch(`http://127.0.0.1:${m.ports.health}/readyz`)).status).to.equal(503);
    await m.waitForSync();
    expect(m.ready).to.equal(true);
  });

  it('runs controllers only in the leader and hands over to the other manager when the leader stops', async () => {
    const client = new FakeClient();
    client.seed(Things, thing('t', 'ns'));
    const runsBy: Record<string, number> = { a: 0, b: 0 };
    const le = (identity: string) => ({
      enabled: true,
      leaseName: 'test',
      leaseNamespace: 'sys',
      identity,
      leaseDurationMs: 2000,
      renewDeadlineMs: 1000,
      retryPeriodMs: 20,
    });
    const a = make(client, { leaderElection: le('a') });
    const b = make(client, { leaderElection: le('b') });
    a.controller('c')
      .for(Things)
      .reconcile(async () => (runsBy['a']!++, Action.awaitChange()));
    b.controller('c')
      .for(Things)
      .reconcile(async () => (runsBy['b']!++, Action.awaitChange()));
    await a.start();
    await waitFor(() => a.isLeader);
    await b.start();
    await waitFor(() => runsBy['a'] === 1);
    await b.waitForSync();
    await client.patch(Things, 'ns', 't', { metadata: { labels: { x: '1' } } }, { type: 'merge' });
    await waitFor(() => runsBy['a'] === 2);
    expect(b.isLeader).to.equal(false);
    expect(runsBy['b']).to.equal(0);
    await a.stop();
    await waitFor(() => b.isLeader && runsBy['b']! >= 1, { message: 'b leads and reconciles' });
  });
});
