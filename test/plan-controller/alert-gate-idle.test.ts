// An idle plan with an alert gate costs nothing but its polls (issue 42, item 3): once settled, the plan controller
// writes no status while nothing changes (status.alertGate.since used to move to "now" on every Clear reconcile, and
// each write woke the next reconcile: a write per second per plan) and reads the endpoint once per interval
// (ALERTS_POLL_MS), not on every reconcile (twice a second). Counted through the harness: the plan controller's
// successful plan writes (inplace_api_requests_total) and the requests the endpoint received.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ALERTS_POLL_MS } from '../../src/rules/gates.js';
import { useE2eEnv } from '../e2e/env.js';
import { planObject, refUpdater } from '../e2e/harness.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('plan controller: an idle gated plan writes nothing and polls at the interval', function () {
  this.timeout(120_000);
  const env = useE2eEnv();
  let server: Server;
  let url = '';
  let queries = 0;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/api/v1/alerts') queries++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: 'success', data: { alerts: [] } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('Clear and waiting on an updater: 0 status writes and about one query per interval over the window', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'], alertGatePolicy: { endpoints: [{ url }] } });
    // 'manual' is served by nobody: the first machine stays in update, the plan has nothing to do but poll its gate.
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.alertGate = { url, holdTimeout: '1h' };
    await p.apply(plan);
    await p.waitPlan('p', (x) => x.status?.alertGate?.state === 'Clear' && x.status?.updateStatus === 'updating', 'gate Clear, updating');
    await p.waitTasks('manual', 1);
    // Settled: the machine in flight is recorded (its task created, the plan's status reflecting it).
    await p.waitPlan('p', (x) => (x.status?.machines ?? 0) >= 1 || (x.status?.progress ?? '').startsWith('0/2'), 'plan settled');
    await sleep(2 * ALERTS_POLL_MS);

    const writes = async (): Promise<number> =>
      (await p.apiRequests('plan-controller', 'patch', 'inplaceupdateplans')) +
      (await p.apiRequests('plan-controller', 'update', 'inplaceupdateplans'));
    const before = await p.plan('p');
    const writes0 = await writes();
    const queries0 = queries;
    const windowMs = 3 * ALERTS_POLL_MS;
    await sleep(windowMs);
    const after = await p.plan('p');
    const statusWrites = (await writes()) - writes0;
    const endpointQueries = queries - queries0;

    if (process.env['SHOW_COUNTS']) console.log(JSON.stringify({ statusWrites, endpointQueries, windowMs }));
    expect(statusWrites, 'plan writes while nothing changed').to.equal(0);
    expect(after?.metadata.resourceVersion, 'the plan object changed').to.equal(before?.metadata.resourceVersion);
    expect(after?.status?.alertGate?.since).to.equal(before?.status?.alertGate?.since);
    // At most one query per interval (plus one at the window's edge); at least one, the gate still polls.
    expect(endpointQueries).to.be.at.most(windowMs / ALERTS_POLL_MS + 1);
    expect(endpointQueries).to.be.at.least(1);
  });
});
