import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAlerts, queryAlerts } from './alerts.js';

describe('plan-controller alerts endpoint (effect)', () => {
  let server: Server;
  let url = '';
  let reply: { status: number; body: string } = { status: 200, body: '' };
  before(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === '/api/v1/alerts' ? reply.status : 404;
      res.end(reply.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('reads Prometheus alerts', async () => {
    reply = {
      status: 200,
      body: JSON.stringify({
        status: 'success',
        data: { alerts: [{ labels: { alertname: 'NodeDown' }, state: 'firing', activeAt: 'x' }] },
      }),
    };
    expect(await queryAlerts(`${url}/`)).to.deep.equal({
      ok: true,
      alerts: [{ labels: { alertname: 'NodeDown' }, state: 'firing', activeAt: 'x' }],
    });
  });

  it('a non-Prometheus endpoint, an HTTP error and a closed port are bounded errors, never alerts', async () => {
    reply = { status: 200, body: '<html>login</html>' };
    const html = await queryAlerts(url);
    expect(html.ok).to.equal(false);
    expect(!html.ok && html.error).to.match(/^not a Prometheus alerts API: the response is not JSON/);
    reply = { status: 503, body: 'down' };
    const err = await queryAlerts(url);
    expect(!err.ok && err.error).to.match(/answered HTTP 503$/);
    const spare = createServer();
    await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
    const port = (spare.address() as AddressInfo).port;
    await new Promise<void>((r) => spare.close(() => r()));
    const closed = await queryAlerts(`http://127.0.0.1:${port}`);
    expect(!closed.ok && closed.error).to.equal(`GET http://127.0.0.1:${port}/api/v1/alerts failed: ECONNREFUSED`);
    expect(parseAlerts(JSON.stringify({ status: 'success', data: { alerts: [{ labels: { a: 1 }, state: 'firing' }] } })).ok).to.equal(
      false,
    );
  });
});
