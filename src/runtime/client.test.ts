import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { ResourceType } from '../api/kube.js';
import { createClient, resourcePath, type RequestInfo, type RestClient } from './client.js';
import { KubeApiError } from './pure/errors.js';
import type { WatchEvent } from './pure/types.js';
import { waitFor } from '../../test/support/wait.js';

const Things: ResourceType = { group: 'test.io', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };
const Nodes: ResourceType = { group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false };

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A scripted HTTP server: records requests and answers with the handler's response. */
async function scripted(
  handler: (req: Seen, res: http.ServerResponse) => void,
): Promise<{ url: string; seen: Seen[]; server: http.Server }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(s);
      handler(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const kubeconfig = (server: string): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: false }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
};

const json = (res: http.ServerResponse, code: number, body: unknown): void => {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('REST client', () => {
  let srv: Awaited<ReturnType<typeof scripted>> | undefined;
  let client: RestClient | undefined;
  afterEach(async () => {
    client?.close();
    client = undefined;
    if (srv) {
      const s = srv.server;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    srv = undefined;
  });

  it('builds resource paths for core, grouped, namespaced, cluster-scoped and status', () => {
    expect(resourcePath(Things, 'ns', 'n', 'status')).to.equal('/apis/test.io/v1/namespaces/ns/things/n/status');
    expect(resourcePath(Things, undefined)).to.equal('/apis/test.io/v1/things');
    expect(resourcePath(Nodes, 'ignored', 'n1')).to.equal('/api/v1/nodes/n1');
  });

  it('sends the bearer token and returns undefined for a 404 get', async () => {
    srv = await scripted((_r, res) => json(res, 404, { kind: 'Status', reason: 'NotFound', code: 404 }));
    client = createClient(kubeconfig(srv.url));
    expect(await client.get(Things, 'ns', 'missing')).to.equal(undefined);
    expect(srv.seen[0]!.headers['authorization']).to.equal('Bearer secret-token');
    expect(srv.seen[0]!.url).to.equal('/apis/test.io/v1/namespaces/ns/things/missing');
  });

  it('sends Host, credentials, Accept, User-Agent and the body length on reads, writes and a bodiless delete alike', async () => {
    srv = await scripted((_r, res) => json(res, 200, { kind: 'Thing', metadata: { name: 'a' } }));
    client = createClient(kubeconfig(srv.url), { userAgent: 'ua-test' });
    await client.get(Things, 'ns', 'a');
    await client.patch(Things, 'ns', 'a', { spec: { x: 'é' } }, { type: 'merge' });
    await client.delete(Things, 'ns', 'a');
    const host = new URL(srv.url).host;
    for (const s of srv.seen) {
      expect(s.headers['host'], s.method).to.equal(host);
      expect(s.headers['authorization'], s.method).to.equal('Bearer secret-token');
      expect(s.headers['accept'], s.method).to.equal('application/json');
      expect(s.headers['user-agent'], s.method).to.equal('ua-test');
      expect(s.headers['connection'], s.method).to.equal('keep-alive');
    }
    expect(srv.seen.map((x) => x.method)).to.deep.equal(['GET', 'PATCH', 'DELETE']);
    // The length is in bytes, not characters.
    expect(srv.seen[1]!.headers['content-length']).to.equal(String(Buffer.byteLength(srv.seen[1]!.body)));
    expect(srv.seen[1]!.body).to.equal('{"spec":{"x":"é"}}');
    expect(srv.seen[0]!.headers['content-length']).to.equal(undefined);
  });

  it('uses the right content type and query for each patch type, status and dry run', async () => {
    srv = await scripted((_r, res) => json(res, 200, { metadata: { name: 'n' } }));
    client = createClient(kubeconfig(srv.url), { userAgent: 'tester' });
    await client.patch(Things, 'ns', 'n', { spec: { a: 1 } }, { type: 'merge' });
    await client.patch(Things, 'ns', 'n', [{ op: 'add', path: '/spec/a', value: 1 }], { type: 'json', subresource: 'status' });
    await client.patch(Things, 'ns', 'n', { apiVersion: 'test.io/v1', kind: 'Thing' }, { type: 'apply', force: true });
    await client.patch(Things, 'ns', 'n', {}, { type: 'merge', dryRun: true, fieldManager: 'me' });
    const s = srv.seen;
    expect(s.map((x) => x.headers['content-type'])).to.deep.equal([
      'application/merge-patch+json',
      'application/json-patch+json',
      'application/apply-patch+yaml',
      'application/merge-patch+json',
    ]);
    expect(s.map((x) => x.url)).to.deep.equal([
      '/apis/test.io/v1/namespaces/ns/things/n',
      '/apis/test.io/v1/namespaces/ns/things/n/status',
      '/apis/test.io/v1/namespaces/ns/things/n?fieldManager=tester&force=true',
      '/apis/test.io/v1/namespaces/ns/things/n?dryRun=All&fieldManager=me',
    ]);
    expect(JSON.parse(s[0]!.body)).to.deep.equal({ spec: { a: 1 } });
    expect(s.every((x) => x.method === 'PATCH')).to.equal(true);
  });

  it('fills kind and apiVersion on create and sends delete options', async () => {
    srv = await scripted((r, res) =>
      json(res, r.method === 'POST' ? 201 : 200, r.method === 'POST' ? JSON.parse(r.body) : { kind: 'Status' }),
    );
    client = createClient(kubeconfig(srv.url));
    const created = await client.create(Things, { metadata: { name: 'n', namespace: 'ns' } });
    expect(created).to.deep.include({ kind: 'Thing', apiVersion: 'test.io/v1' });
    await client.delete(Things, 'ns', 'n', { propagationPolicy: 'Foreground', preconditions: { resourceVersion: '5' } });
    expect(srv.seen[1]!.method).to.equal('DELETE');
    expect(JSON.parse(srv.seen[1]!.body)).to.deep.equal({
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Foreground',
      preconditions: { resourceVersion: '5' },
    });
  });

  it('refuses to create a namespaced object without a namespace', async () => {
    srv = await scripted((_r, res) => json(res, 201, {}));
    client = createClient(kubeconfig(srv.url));
    const err = await client.create(Things, { metadata: { name: 'n' } }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(KubeApiError);
    expect(srv.seen.length).to.equal(0);
  });

  it('passes list options and fills kind on list items', async () => {
    srv = await scripted((_r, res) =>
      json(res, 200, { metadata: { resourceVersion: '42', continue: 'tok' }, items: [{ metadata: { name: 'a' } }] }),
    );
    client = createClient(kubeconfig(srv.url));
    const l = await client.list(Things, 'ns', { labelSelector: 'a=b', limit: 10, continue: 'prev' });
    expect(srv.seen[0]!.url).to.equal('/apis/test.io/v1/namespaces/ns/things?labelSelector=a%3Db&limit=10&continue=prev');
    expect(l).to.deep.equal({
      items: [{ metadata: { name: 'a' }, kind: 'Thing', apiVersion: 'test.io/v1' }],
      resourceVersion: '42',
      continue: 'tok',
    });
  });

  it('turns error responses into KubeApiErrors naming the operation, with the Status and retryability', async () => {
    const status = { kind: 'Status', status: 'Failure', reason: 'Conflict', code: 409, message: 'the object has been modified' };
    srv = await scripted((_r, res) => json(res, 409, status));
    client = createClient(kubeconfig(srv.url));
    const err = (await client
      .update(Things, { metadata: { name: 'n', namespace: 'ns' } }, { subresource: 'status' })
      .catch((e: unknown) => e)) as KubeApiError;
    expect(err).to.be.instanceOf(KubeApiError);
    expect(err.code).to.equal(409);
    expect(err.reason).to.equal('Conflict');
    expect(err.operation).to.equal('update things.test.io/status ns/n');
    expect(err.retryable).to.equal(true);
    expect(err.status).to.deep.equal(status);
  });

  it('reports a refused connection as a retryable network error', async () => {
    const kc = kubeconfig('http://127.0.0.1:1');
    client = createClient(kc);
    const err = (await client.get(Things, 'ns', 'n').catch((e: unknown) => e)) as KubeApiError;
    expect(err.code).to.equal(0);
    expect(err.retryable).to.equal(true);
  });

  it('resolves a kind through discovery using the preferred version, and caches it', async () => {
    srv = await scripted((r, res) => {
      if (r.url === '/apis/cluster.x-k8s.io')
        return json(res, 200, {
          kind: 'APIGroup',
          name: 'cluster.x-k8s.io',
          versions: [{ groupVersion: 'cluster.x-k8s.io/v1beta2', version: 'v1beta2' }, { version: 'v1beta1' }],
          preferredVersion: { groupVersion: 'cluster.x-k8s.io/v1beta2', version: 'v1beta2' },
        });
      if (r.url === '/apis/cluster.x-k8s.io/v1beta2')
        return json(res, 200, {
          resources: [
            { name: 'machines', kind: 'Machine', namespaced: true },
            { name: 'machines/status', kind: 'Machine', namespaced: true },
          ],
        });
      json(res, 404, { kind: 'Status', code: 404, reason: 'NotFound' });
    });
    client = createClient(kubeconfig(srv.url));
    const r = await client.resolve('cluster.x-k8s.io', 'Machine');
    expect(r).to.deep.equal({ group: 'cluster.x-k8s.io', version: 'v1beta2', plural: 'machines', kind: 'Machine', namespaced: true });
    await client.resolve('cluster.x-k8s.io', 'Machine');
    expect(srv.seen.length).to.equal(2);
    const missing = (await client.resolve('cluster.x-k8s.io', 'Nope').catch((e: unknown) => e)) as KubeApiError;
    expect(missing.code).to.equal(404);
  });

  it('streams watch events line by line, resolves done on abort, and reports requests', async () => {
    srv = await scripted((_r, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '1' } } }) + '\n{"type":"MODI');
      setTimeout(() => res.write('FIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n'), 20);
    });
    const infos: RequestInfo[] = [];
    client = createClient(kubeconfig(srv.url), { onRequest: (i) => infos.push(i) });
    const events: WatchEvent[] = [];
    const h = await client.watch(Things, 'ns', { resourceVersion: '0', allowWatchBookmarks: true, timeoutSeconds: 30 }, (e) =>
      events.push(e),
    );
    await waitFor(() => events.length === 2);
    expect(events.map((e) => `${e.type}:${e.object.metadata.resourceVersion}`)).to.deep.equal(['ADDED:1', 'MODIFIED:2']);
    expect(srv.seen[0]!.url).to.equal(
      '/apis/test.io/v1/namespaces/ns/things?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=30',
    );
    h.abort();
    await h.done;
    expect(infos).to.have.length(1);
    expect(infos[0]).to.deep.include({ verb: 'watch', resource: 'things.test.io', code: 200 });
  });

  it('resolves done when the server ends the watch and rejects done with the Status of an error response', async () => {
    let n = 0;
    srv = await scripted((_r, res) => {
      if (n++ === 0) {
        res.writeHead(200);
        res.end(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
      } else json(res, 410, { kind: 'Status', code: 410, reason: 'Expired' });
    });
    client = createClient(kubeconfig(srv.url));
    const h = await client.watch(Things, undefined, {}, () => undefined);
    await h.done;
    const h2 = await client.watch(Things, undefined, { resourceVersion: '1' }, () => undefined);
    const err = (await h2.done.catch((e: unknown) => e)) as KubeApiError;
    expect(err).to.be.instanceOf(KubeApiError);
    expect(err.code).to.equal(410);
    expect(err.reason).to.equal('Expired');
  });

  it('can abort a watch whose server has not sent headers yet', async () => {
    srv = await scripted(() => undefined);
    client = createClient(kubeconfig(srv.url));
    const h = await client.watch(Things, undefined, {}, () => undefined);
    await waitFor(() => srv!.seen.length === 1);
    h.abort();
    await h.done;
  });

  it('sends a request again once when the pooled connection turns out to be closed', async () => {
    const served = new WeakMap<object, number>();
    srv = await scripted((r, res) => json(res, 200, { metadata: { name: r.url } }));
    // Every connection serves one request; a second request on it is cut off like a server closing an idle socket.
    srv.server.prependListener('request', (req: http.IncomingMessage) => {
      const n = served.get(req.socket) ?? 0;
      served.set(req.socket, n + 1);
      if (n >= 1) req.socket.destroy();
    });
    client = createClient(kubeconfig(srv.url));
    await client.get(Things, 'ns', 'a');
    const b = await client.get(Things, 'ns', 'b');
    expect(b?.metadata.name).to.equal('/apis/test.io/v1/namespaces/ns/things/b');
  });

  it('reuses connections across requests (keep-alive)', async () => {
    const sockets = new Set<unknown>();
    srv = await scripted((_r, res) => json(res, 200, { metadata: {} }));
    srv.server.on('connection', (s) => sockets.add(s));
    client = createClient(kubeconfig(srv.url));
    for (let i = 0; i < 5; i++) await client.get(Things, 'ns', `n${i}`);
    expect(sockets.size).to.equal(1);
  });
});
