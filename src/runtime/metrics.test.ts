import { expect } from 'chai';
import type { ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { startHealthServer } from './health.js';
import { createMetrics, instrumentClient } from './metrics.js';

const Things: ResourceType = { group: 'test.io', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };

describe('metrics', () => {
  it('counts API requests by verb, resource and code, including misses and failures', async () => {
    const m = createMetrics({ processMetrics: false });
    const fake = new FakeClient();
    const client = instrumentClient(fake, m);
    await client.create(Things, { metadata: { name: 'a', namespace: 'ns' } });
    await client.get(Things, 'ns', 'a');
    await client.get(Things, 'ns', 'missing');
    fake.failNext('patch', 503);
    await client.patch(Things, 'ns', 'a', {}, { type: 'merge' }).catch(() => undefined);
    const rows = (await m.apiRequests.get()).values.map(
      (v) => `${v.labels['verb']} ${v.labels['resource']} ${v.labels['code']} ${v.value}`,
    );
    expect(rows).to.have.members([
      'create things.test.io 201 1',
      'get things.test.io 200 1',
      'get things.test.io 404 1',
      'patch things.test.io 503 1',
    ]);
  });

  it('keeps registries of two managers apart', async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics({ processMetrics: false });
    a.reconcileTotal.inc({ controller: 'x', result: 'success' });
    expect((await b.reconcileTotal.get()).values).to.deep.equal([]);
  });
});

describe('health server', () => {
  it('answers probes from the given checks and serves the registry', async () => {
    let ready = false;
    let healthy = true;
    const m = createMetrics({ processMetrics: false });
    const s = await startHealthServer({ port: 0, host: '127.0.0.1', registry: m.registry, isReady: () => ready, isHealthy: () => healthy });
    try {
      const url = (p: string): string => `http://127.0.0.1:${s.port}${p}`;
      expect((await fetch(url('/readyz'))).status).to.equal(503);
      ready = true;
      expect((await fetch(url('/readyz'))).status).to.equal(200);
      expect((await fetch(url('/healthz'))).status).to.equal(200);
      healthy = false;
      expect((await fetch(url('/healthz'))).status).to.equal(503);
      expect(await (await fetch(url('/metrics'))).text()).to.include('inplace_reconcile_total');
      expect((await fetch(url('/nope'))).status).to.equal(404);
    } finally {
      await s.close();
    }
  });
});
