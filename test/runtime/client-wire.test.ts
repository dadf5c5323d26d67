// The REST client's wire behaviour against a scripted HTTP server: headers and paths of requests, the 401 re-auth
// retry, typed errors, request metrics, and the watch stream's line parsing however the bytes are chunked.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { createClient, type RequestInfo, type RestClient } from '../../src/runtime/client.js';
import { KubeApiError } from '../../src/runtime/pure/errors.js';
import { selfSignedCertificate } from '../../src/runtime/tls.js';
import type { WatchEvent } from '../../src/runtime/pure/types.js';
import { Widgets, type Widget } from './fixtures.js';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const kubeConfig = (server: string, token: string): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: false }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
};

/** Events with multi-byte characters (2-, 3- and 4-byte UTF-8) so that chunk boundaries fall inside characters. */
const events = (n: number): WatchEvent<Widget>[] =>
  Array.from({ length: n }, (_, i) => ({
    type: i % 7 === 6 ? 'BOOKMARK' : i % 3 === 0 ? 'ADDED' : 'MODIFIED',
    object: {
      apiVersion: 'runtime-test.inplace.cluster.x-k8s.io/v1',
      kind: 'Widget',
      metadata: { name: `w-${i}`, namespace: 'ns', resourceVersion: String(100 + i), annotations: { note: `grün 日本 🚀 ${i}` } },
      spec: { size: i, color: i % 2 ? 'blåbær' : 'red' },
    },
  }));

/** The stream's bytes: one event per line, with empty lines, whitespace-only lines and a CRLF line among them. */
const streamBytes = (evs: WatchEvent<Widget>[]): Buffer => {
  const lines: string[] = [];
  evs.forEach((e, i) => {
    if (i === 2) lines.push('');
    if (i === 4) lines.push('   ');
    lines.push(JSON.stringify(e) + (i === 5 ? '\r' : ''));
  });
  return Buffer.from(lines.join('\n') + '\n', 'utf8');
};

/** Deterministic pseudo-random chunk sizes (a small LCG) so a failure is reproducible. */
const randomCuts = (length: number, seed: number, max: number): number[] => {
  const cuts: number[] = [];
  let s = seed;
  for (let at = 0; at < length;) {
    s = (s * 1103515245 + 12345) % 2147483648;
    at += 1 + (s % max);
    if (at < length) cuts.push(at);
  }
  return cuts;
};

const split = (bytes: Buffer, cuts: number[]): Buffer[] => {
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  return out.filter((b) => b.length > 0);
};

describe('REST client on the wire (scripted server)', function () {
  let server: http.Server;
  let url: string;
  let handler: Handler;
  let seen: Seen[];
  let infos: RequestInfo[];
  let client: RestClient | undefined;

  before(async () => {
    server = http.createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const body = Buffer.concat(parts).toString('utf8');
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        handler(req, body, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    seen = [];
    infos = [];
  });
  afterEach(() => {
    client?.close();
    client = undefined;
  });

  const json = (res: http.ServerResponse, code: number, body: unknown): void => {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const make = (kc: KubeConfig): RestClient => {
    client = createClient(kc, { userAgent: 'wire-test', onRequest: (i) => infos.push(i) });
    return client;
  };

  it('sends auth, Accept, User-Agent, the server path prefix and the query; bodies with their content type and length', async () => {
    handler = (req, body, res) =>
      json(res, 200, body ? { ...(JSON.parse(body) as object), echoed: true } : { kind: 'Widget', got: req.url });
    const c = make(kubeConfig(`${url}/prefix/`, 'tok-1'));
    const got = await c.get<Widget>(Widgets, 'n s', 'w/1');
    expect(got).to.deep.include({ kind: 'Widget' });
    const patched = await c.patch<Widget>(Widgets, 'ns', 'w1', { spec: { color: 'grün' } }, { type: 'merge', subresource: 'status' });
    expect(patched).to.deep.include({ echoed: true });
    await c.patch(Widgets, 'ns', 'w1', { spec: {} }, { type: 'apply', force: true, dryRun: true });

    expect(seen.map((s) => [s.method, s.url])).to.deep.equal([
      ['GET', '/prefix/apis/runtime-test.inplace.cluster.x-k8s.io/v1/namespaces/n%20s/widgets/w%2F1'],
      ['PATCH', '/prefix/apis/runtime-test.inplace.cluster.x-k8s.io/v1/namespaces/ns/widgets/w1/status'],
      [
        'PATCH',
        '/prefix/apis/runtime-test.inplace.cluster.x-k8s.io/v1/namespaces/ns/widgets/w1?dryRun=All&fieldManager=wire-test&force=true',
      ],
    ]);
    for (const s of seen) {
      expect(s.headers['authorization']).to.equal('Bearer tok-1');
      expect(s.headers['accept']).to.equal('application/json');
      expect(s.headers['user-agent']).to.equal('wire-test');
      expect(s.headers['host']).to.equal(url.slice('http://'.length));
    }
    expect(seen[0]!.headers['content-type']).to.equal(undefined);
    expect(seen[1]!.headers['content-type']).to.equal('application/merge-patch+json');
    expect(seen[1]!.headers['content-length']).to.equal(String(Buffer.byteLength(seen[1]!.body)));
    expect(JSON.parse(seen[1]!.body)).to.deep.equal({ spec: { color: 'grün' } });
    expect(seen[2]!.headers['content-type']).to.equal('application/apply-patch+yaml');
    expect(infos.map((i) => [i.verb, i.resource, i.code])).to.deep.equal([
      ['get', 'widgets.runtime-test.inplace.cluster.x-k8s.io', 200],
      ['patch', 'widgets.runtime-test.inplace.cluster.x-k8s.io', 200],
      ['patch', 'widgets.runtime-test.inplace.cluster.x-k8s.io', 200],
    ]);
  });

  it('re-reads rotated credentials once on 401 and retries; a second 401 is a typed error', async () => {
    let accepted = 'old';
    handler = (req, _body, res) =>
      req.headers['authorization'] === `Bearer ${accepted}`
        ? json(res, 200, { ok: 1 })
        : json(res, 401, { kind: 'Status', reason: 'Unauthorized', code: 401, message: 'no' });
    const kc = kubeConfig(url, 'old');
    const c = make(kc);
    expect(await c.get(Widgets, 'ns', 'a')).to.deep.equal({ ok: 1 });
    // The credentials rotate: the cached header is now refused, the re-read one works.
    accepted = 'new';
    (kc.getCurrentUser() as { token?: string }).token = 'new';
    expect(await c.get(Widgets, 'ns', 'b')).to.deep.equal({ ok: 1 });
    expect(seen.map((s) => s.headers['authorization'])).to.deep.equal(['Bearer old', 'Bearer old', 'Bearer new']);
    expect(infos.map((i) => i.code)).to.deep.equal([200, 200]);

    accepted = 'none';
    const err = await c.get(Widgets, 'ns', 'c').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(KubeApiError);
    expect((err as KubeApiError).code).to.equal(401);
    expect((err as KubeApiError).operation).to.equal('get widgets.runtime-test.inplace.cluster.x-k8s.io ns/c');
    expect(seen.length).to.equal(5);
    expect(infos.at(-1)).to.deep.include({ verb: 'get', code: 401 });
  });

  it('types errors: 404 on get is undefined, a server error and a network error are KubeApiErrors naming the operation', async () => {
    handler = (req, _body, res) => {
      if (req.url?.endsWith('/gone')) return json(res, 404, { kind: 'Status', reason: 'NotFound', code: 404 });
      if (req.url?.endsWith('/cut')) return res.socket?.destroy();
      res.writeHead(500);
      res.end('boom');
    };
    const c = make(kubeConfig(url, 't'));
    expect(await c.get(Widgets, 'ns', 'gone')).to.equal(undefined);
    const e500 = (await c.delete(Widgets, 'ns', 'x').catch((e: unknown) => e)) as KubeApiError;
    expect(e500).to.be.instanceOf(KubeApiError);
    expect([e500.code, e500.operation, e500.status?.message]).to.deep.equal([
      500,
      'delete widgets.runtime-test.inplace.cluster.x-k8s.io ns/x',
      'boom',
    ]);
    const eNet = (await c.get(Widgets, 'ns', 'cut').catch((e: unknown) => e)) as KubeApiError;
    expect(eNet).to.be.instanceOf(KubeApiError);
    expect([eNet.code, eNet.reason]).to.deep.equal([0, 'NetworkError']);
    expect(infos.map((i) => [i.verb, i.code])).to.deep.equal([
      ['get', 404],
      ['delete', 500],
      ['get', 0],
    ]);
  });

  /** Serves the stream as the given chunks (each its own HTTP chunk) and collects what the client delivers. */
  const watchChunks = async (chunks: Buffer[]): Promise<{ got: WatchEvent<Widget>[]; error: unknown }> => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      let i = 0;
      const next = (): void => {
        if (i === chunks.length) return void res.end();
        res.write(chunks[i++], () => setImmediate(next));
      };
      next();
    };
    const c = client ?? make(kubeConfig(url, 't'));
    const got: WatchEvent<Widget>[] = [];
    const h = await c.watch<Widget>(Widgets, 'ns', { resourceVersion: '7', allowWatchBookmarks: true }, (e) => got.push(e));
    const error = await h.done.then(
      () => undefined,
      (e: unknown) => e,
    );
    return { got, error };
  };

  it('delivers the same events however the stream is chunked (mid-line, mid-character, many lines per chunk, empty lines)', async () => {
    const evs = events(40);
    const bytes = streamBytes(evs);
    // Every cut inside the first multi-byte characters, one byte at a time for a stretch, random small and large chunks.
    const firstMulti = bytes.indexOf(Buffer.from('🚀'));
    const chunkings: [string, Buffer[]][] = [
      ['whole', [bytes]],
      [
        'bytes',
        split(
          bytes,
          Array.from({ length: 600 }, (_, i) => i + 1),
        ),
      ],
      ['in the 4-byte character', split(bytes, [firstMulti + 1, firstMulti + 2, firstMulti + 3])],
      ['random small', split(bytes, randomCuts(bytes.length, 7, 40))],
      ['random large', split(bytes, randomCuts(bytes.length, 11, 900))],
      [
        'at newlines',
        split(
          bytes,
          [...bytes.entries()].filter(([, b]) => b === 10).map(([i]) => i + 1),
        ),
      ],
      [
        'before newlines',
        split(
          bytes,
          [...bytes.entries()].filter(([, b]) => b === 10).map(([i]) => i),
        ),
      ],
    ];
    for (const [name, chunks] of chunkings) {
      const { got, error } = await watchChunks(chunks);
      expect(error, name).to.equal(undefined);
      expect(got, name).to.deep.equal(evs);
    }
    expect(seen[0]!.url).to.equal(
      '/apis/runtime-test.inplace.cluster.x-k8s.io/v1/namespaces/ns/widgets?watch=true&resourceVersion=7&allowWatchBookmarks=true',
    );
    expect(seen[0]!.headers['authorization']).to.equal('Bearer t');
    expect(infos.every((i) => i.verb === 'watch' && i.code === 200)).to.equal(true);
  });

  it('ends a watch on a malformed line (delivering nothing after it) and types a non-200 answer', async () => {
    const evs = events(4);
    const good = Buffer.from(`${JSON.stringify(evs[0])}\n${JSON.stringify(evs[1]).slice(0, 30)}`);
    const rest = Buffer.from(`}oops\n${JSON.stringify(evs[2])}\n`);
    const { got, error } = await watchChunks([good, rest]);
    expect(got).to.deep.equal([evs[0]]);
    expect(error).to.be.instanceOf(KubeApiError);
    expect((error as KubeApiError).message).to.match(/malformed watch event/);

    handler = (_req, _body, res) => json(res, 410, { kind: 'Status', reason: 'Expired', code: 410, message: 'too old' });
    const h = await client!.watch<Widget>(Widgets, 'ns', { resourceVersion: '1' }, () => undefined);
    const gone = (await h.done.catch((e: unknown) => e)) as KubeApiError;
    expect([gone.code, gone.reason, gone.operation]).to.deep.equal([
      410,
      'Expired',
      'watch widgets.runtime-test.inplace.cluster.x-k8s.io in ns',
    ]);
  });

  it('stops delivering once the handler aborts the watch mid-chunk', async () => {
    const evs = events(10);
    const c = make(kubeConfig(url, 't'));
    handler = (_req, _body, res) => {
      res.writeHead(200);
      res.end(streamBytes(evs));
    };
    const got: WatchEvent<Widget>[] = [];
    const h: { abort(): void } = { abort: () => undefined };
    const w = await c.watch<Widget>(Widgets, 'ns', {}, (e) => {
      got.push(e);
      if (got.length === 3) h.abort();
    });
    h.abort = () => w.abort();
    await w.done;
    expect(got).to.deep.equal(evs.slice(0, 3));
  });
  it('verifies the server over TLS against the kubeconfig CA and refuses a server signed by another', async () => {
    const good = await selfSignedCertificate('wire-test');
    const other = await selfSignedCertificate('someone-else');
    const tlsServer = https.createServer({ key: good.key, cert: good.cert }, (req, res) =>
      json(res, 200, { auth: req.headers['authorization'] }),
    );
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    const tlsUrl = `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
    const withCa = (ca: string): KubeConfig => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'c', server: tlsUrl, caData: Buffer.from(ca).toString('base64'), skipTLSVerify: false }],
        users: [{ name: 'u', token: 'tls-token' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      return kc;
    };
    try {
      const trusted = createClient(withCa(good.cert));
      try {
        expect(await trusted.get(Widgets, 'ns', 'a')).to.deep.equal({ auth: 'Bearer tls-token' });
        expect(await trusted.get(Widgets, 'ns', 'b')).to.deep.equal({ auth: 'Bearer tls-token' });
      } finally {
        trusted.close();
      }
      const untrusted = createClient(withCa(other.cert));
      try {
        const err = (await untrusted.get(Widgets, 'ns', 'a').catch((e: unknown) => e)) as KubeApiError;
        expect(err).to.be.instanceOf(KubeApiError);
        expect(err.code).to.equal(0);
      } finally {
        untrusted.close();
      }
    } finally {
      tlsServer.closeAllConnections();
      await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
    }
  });
});
