// A fault-injecting HTTP proxy in front of the embedded API server, as a hostile network would be: it fails a share
// of requests before they reach the server, answers a share of writes with an error *after* the server executed them
// (ambiguous writes: the client cannot tell whether its write landed), and drops every open watch periodically.
// The platform's processes talk to it (plain HTTP on 127.0.0.1, the token passed through); the test's own client
// talks to the server directly, so the checks are not subject to the faults.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import type { AddressInfo } from 'node:net';

/** What the proxy injects. */
export interface ProxyFaults {
  /** Share of requests (watches excepted) answered 503 without reaching the server. */
  errorRate: number;
  /** Share of writes (POST/PUT/PATCH/DELETE) the server executes and the proxy answers 500 (the answer is lost). */
  ambiguousWriteRate: number;
  /** Every open watch is cut this often (0: never). */
  dropWatchesEveryMs: number;
}

/** Counts of what the proxy did. */
export interface ProxyCounts {
  forwarded: number;
  failedBefore: number;
  failedAfter: number;
  watchesDropped: number;
}

/** A running proxy. */
export interface FaultProxy {
  url: string;
  counts: ProxyCounts;
  /** A kubeconfig pointing at the proxy with the server's token. */
  kubeconfigYaml(token: string): string;
  /** Stops injecting (forwards everything) or starts again. */
  setFaults(f: ProxyFaults | undefined): void;
  close(): Promise<void>;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const statusBody = (code: number, message: string): string =>
  JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    code,
    reason: code === 503 ? 'ServiceUnavailable' : 'InternalError',
    message,
  });

function fail(res: ServerResponse, code: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(statusBody(code, message));
}

/** Starts the proxy in front of `upstream` (https URL of the embedded server); `rand` decides every fault (seeded). */
export async function startFaultProxy(upstream: string, rand: () => number, faults?: ProxyFaults): Promise<FaultProxy> {
  const up = new URL(upstream);
  // The embedded server's certificate is self-signed; the proxy runs in the test process only.
  const agent = new Agent({ keepAlive: true, maxSockets: 256, rejectUnauthorized: false });
  let current = faults;
  const counts: ProxyCounts = { forwarded: 0, failedBefore: 0, failedAfter: 0, watchesDropped: 0 };
  const watches = new Set<{ res: ServerResponse; upReq: ReturnType<typeof request> }>();
  let dropTimer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    if (dropTimer) clearInterval(dropTimer);
    dropTimer = undefined;
    if (current && current.dropWatchesEveryMs > 0) {
      dropTimer = setInterval(() => {
        for (const w of [...watches]) {
          counts.watchesDropped++;
          w.upReq.destroy();
          w.res.destroy();
          watches.delete(w);
        }
      }, current.dropWatchesEveryMs);
      dropTimer.unref();
    }
  };
  arm();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const isWatch = /[?&]watch=(true|1)(&|$)/.test(url);
    const f = current;
    if (f && !isWatch && rand() < f.errorRate) {
      counts.failedBefore++;
      req.resume();
      req.on('end', () => fail(res, 503, 'injected by the fault proxy: the request did not reach the server'));
      return;
    }
    const ambiguous = !!f && !isWatch && WRITES.has(req.method ?? '') && rand() < f.ambiguousWriteRate;
    const upReq = request(
      {
        protocol: up.protocol,
        hostname: up.hostname,
        port: up.port,
        method: req.method,
        path: url,
        headers: { ...req.headers, host: up.host },
        agent,
      },
      (upRes) => {
        counts.forwarded++;
        if (ambiguous) {
          // The server executed the write; its answer is thrown away.
          counts.failedAfter++;
          upRes.resume();
          upRes.on('end', () => fail(res, 500, 'injected by the fault proxy: the server executed the request, its answer was lost'));
          return;
        }
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
        if (isWatch) {
          const w = { res, upReq };
          watches.add(w);
          res.on('close', () => watches.delete(w));
        }
      },
    );
    upReq.on('error', () => fail(res, 502, 'fault proxy: upstream error'));
    res.on('close', () => {
      if (!res.writableFinished) upReq.destroy();
    });
    req.pipe(upReq);
  };

  const server = createServer(handle);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    counts,
    kubeconfigYaml: (token) =>
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: fault-proxy',
        '  cluster:',
        `    server: ${url}`,
        // client-node refuses plain http unless TLS verification is marked off.
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: fault-proxy',
        '  user:',
        `    token: ${token}`,
        'contexts:',
        '- name: fault-proxy',
        '  context:',
        '    cluster: fault-proxy',
        '    user: fault-proxy',
        '    namespace: default',
        'current-context: fault-proxy',
        '',
      ].join('\n'),
    setFaults(f) {
      current = f;
      arm();
    },
    async close() {
      current = undefined;
      arm();
      for (const w of watches) {
        w.upReq.destroy();
        w.res.destroy();
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

/** A seeded PRNG (mulberry32): a faults run can be replayed with the same seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
