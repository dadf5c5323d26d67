// Benchmark of the local API server over its real HTTPS protocol: create, update and watch fan-out (10 watchers)
// throughput at the given object counts, and heap per 10,000 stored objects.
// Run: node --expose-gc --import tsx bench/local-apiserver.ts [sizes...]   (default 10000 100000)
import type { ClientRequest } from 'node:http';
import https from 'node:https';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { startLocalApiServer, type LocalApiServer } from '../tools/local-apiserver/index.js';
import { forEachLimit } from '../src/runtime/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CONCURRENCY = 32;
const WATCHERS = 10;

/** Figures for one size. */
export interface LocalApiServerBenchResult {
  objects: number;
  createPerSec: number;
  updatePerSec: number;
  /** Events delivered per second summed over all watchers (each update reaches every watcher). */
  watchEventsPerSec: number;
  /** Updates per second while 10 watchers receive every one of them. */
  fanoutUpdatesPerSec: number;
  heapBytesPer10k: number;
}

interface Client {
  req(method: string, path: string, body?: unknown, ct?: string): Promise<{ status: number; body: string }>;
  close(): void;
}

function client(s: LocalApiServer): Client {
  const url = new URL(s.url);
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: Buffer.from(s.caData!, 'base64') });
  return {
    req: (method, path, body, ct = 'application/json') =>
      new Promise((resolveReq, reject) => {
        const data = body === undefined ? undefined : JSON.stringify(body);
        const r = https.request(
          {
            hostname: url.hostname,
            port: url.port,
            path,
            method,
            agent,
            headers: {
              Authorization: `Bearer ${s.token}`,
              Accept: 'application/json',
              ...(data ? { 'Content-Type': ct, 'Content-Length': Buffer.byteLength(data) } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolveReq({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          },
        );
        r.on('error', reject);
        if (data) r.write(data);
        r.end();
      }),
    close: () => agent.destroy(),
  };
}

function machineCrd(): { crd: Record<string, unknown>; path: string; make: (i: number) => Record<string, unknown> } {
  const file = join(process.env['CAPI_CRDS_DIR'] ?? join(ROOT, '../shared/reference/capi-crds'), 'cluster.x-k8s.io_machines.yaml');
  if (!existsSync(file)) throw new Error(`the benchmark stores real CAPI Machines; no CRD at ${file} (set CAPI_CRDS_DIR)`);
  return {
    crd: parse(readFileSync(file, 'utf8')) as Record<string, unknown>,
    path: '/apis/cluster.x-k8s.io/v1beta2/namespaces/bench/machines',
    make: (i) => ({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: {
        name: `m-${i}`,
        namespace: 'bench',
        labels: { 'cluster.x-k8s.io/cluster-name': 'c1', 'cluster.x-k8s.io/deployment-name': `md-${i % 100}` },
      },
      spec: {
        clusterName: 'c1',
        bootstrap: { dataSecretName: `m-${i}-bootstrap` },
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: `m-${i}` },
        version: 'v1.30.1',
      },
    }),
  };
}

function heap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

async function benchOne(n: number): Promise<LocalApiServerBenchResult> {
  const server = await startLocalApiServer({ watchCacheSize: 10000 });
  const c = client(server);
  try {
    const { crd, path, make } = machineCrd();
    await c.req('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    await c.req('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    const heapBefore = heap();
    let t0 = performance.now();
    await forEachLimit([...Array(n).keys()], CONCURRENCY, async (i) => {
      const r = await c.req('POST', path, make(i));
      if (r.status !== 201) throw new Error(`create ${i}: ${r.status} ${r.body.slice(0, 200)}`);
    });
    const createPerSec = n / ((performance.now() - t0) / 1000);
    const heapBytesPer10k = ((heap() - heapBefore) / n) * 10000;

    t0 = performance.now();
    await forEachLimit([...Array(n).keys()], CONCURRENCY, async (i) => {
      const r = await c.req('PATCH', `${path}/m-${i}/status`, { status: { phase: 'Running' } }, 'application/merge-patch+json');
      if (r.status !== 200) throw new Error(`update ${i}: ${r.status} ${r.body.slice(0, 200)}`);
    });
    const updatePerSec = n / ((performance.now() - t0) / 1000);

    const rv = JSON.parse((await c.req('GET', `${path}?limit=1`)).body).metadata.resourceVersion as string;
    const url = new URL(server.url);
    const counts = new Array<number>(WATCHERS).fill(0);
    const watchAgent = new https.Agent({ keepAlive: false, ca: Buffer.from(server.caData!, 'base64') });
    const reqs: ClientRequest[] = [];
    let allDone!: () => void;
    const done = new Promise<void>((r) => (allDone = r));
    let finished = 0;
    await Promise.all(
      Array.from(
        { length: WATCHERS },
        (_, w) =>
          new Promise<void>((ready) => {
            const r = https.request(
              {
                hostname: url.hostname,
                port: url.port,
                path: `${path}?watch=1&resourceVersion=${rv}`,
                agent: watchAgent,
                headers: { Authorization: `Bearer ${server.token}` },
              },
              (res) => {
                ready();
                res.on('data', (chunk: Buffer) => {
                  for (const b of chunk) if (b === 10) counts[w]!++;
                  if (counts[w] === n && ++finished === WATCHERS) allDone();
                });
              },
            );
            reqs.push(r);
            r.end();
          }),
      ),
    );
    t0 = performance.now();
    await forEachLimit([...Array(n).keys()], CONCURRENCY, async (i) => {
      const r = await c.req('PATCH', `${path}/m-${i}`, { metadata: { labels: { round: '2' } } }, 'application/merge-patch+json');
      if (r.status !== 200) throw new Error(`fan-out update ${i}: ${r.status}`);
    });
    const updatesDone = performance.now();
    await done;
    const seconds = (performance.now() - t0) / 1000;
    for (const r of reqs) r.destroy();
    watchAgent.destroy();
    return {
      objects: n,
      createPerSec: Math.round(createPerSec),
      updatePerSec: Math.round(updatePerSec),
      watchEventsPerSec: Math.round((n * WATCHERS) / seconds),
      fanoutUpdatesPerSec: Math.round(n / ((updatesDone - t0) / 1000)),
      heapBytesPer10k: Math.round(heapBytesPer10k),
    };
  } finally {
    c.close();
    await server.close();
  }
}

/** Runs the benchmark for each object count; returns the figures (no thresholds). */
export async function benchLocalApiServer(sizes: number[]): Promise<object> {
  const results: LocalApiServerBenchResult[] = [];
  for (const n of sizes) results.push(await benchOne(n));
  return {
    name: 'local-apiserver',
    concurrency: CONCURRENCY,
    watchers: WATCHERS,
    gcExposed: typeof (globalThis as { gc?: unknown }).gc === 'function',
    results,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((x) => x > 0);
  const out = (await benchLocalApiServer(sizes.length ? sizes : [10000, 100000])) as { results: LocalApiServerBenchResult[] };
  for (const r of out.results) {
    console.log(
      `objects=${r.objects}  create=${r.createPerSec}/s  update=${r.updatePerSec}/s  watch fan-out (10 watchers)=${r.watchEventsPerSec} events/s (${r.fanoutUpdatesPerSec} updates/s)  heap per 10k objects=${(r.heapBytesPer10k / 1048576).toFixed(1)} MiB`,
    );
  }
  console.log(JSON.stringify(out));
}
