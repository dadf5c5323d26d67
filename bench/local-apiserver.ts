// Benchmark of the local API server over its real HTTPS protocol: create, update and watch fan-out (10 watchers)
// throughput at the given object counts, and heap per 10,000 stored objects.
// Run: node --expose-gc --import tsx bench/local-apiserver.ts [sizes...]   (default 10000 100000)
// The server's own CPU per request, in its own process: node --import tsx bench/local-apiserver.ts --server-process [n] (below).
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

// ---------------------------------------------------------------------------------------------------------------
// CPU of the API server alone, per request: `inplace local-apiserver` (HTTPS, its defaults) in its own process, as the
// campaign bench runs it, driven by this process; CPU from /proc/<pid>/stat per phase, so the client's work is not
// counted. The writes are a controller's (Machine creates, status patches with conditions, label patches, GETs)
// while watchers of the namespace receive every event (WATCHERS_CPU: three whole, two label-selected).
//   node --import tsx bench/local-apiserver.ts --server-process [machines] [--cpu-prof DIR]

/** Server CPU per request of one phase. */
export interface ServerCpuPhase {
  phase: string;
  requests: number;
  serverCpuMs: number;
  serverCpuMsPerRequest: number;
}

const WATCHERS_CPU = [undefined, undefined, undefined, 'cluster.x-k8s.io/cluster-name=c1', 'round=2'];

/** Runs the per-request CPU benchmark against a separate `inplace local-apiserver` process. */
export async function benchServerProcess(n: number, cpuProfDir?: string): Promise<{ machines: number; phases: ServerCpuPhase[] }> {
  const { Proc, procStats } = await import('./lib/procs.js');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'apiserver-cpu-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const proc = new Proc(
    {
      name: 'local-apiserver',
      inplace: ['local-apiserver', '--kubeconfig-out', kubeconfig],
      ...(cpuProfDir ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] } : {}),
    },
    dir,
  );
  proc.start();
  const phases: ServerCpuPhase[] = [];
  try {
    await proc.waitReady(120_000, /listening on/);
    const kc = parse(readFileSync(kubeconfig, 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { token: string } }[];
    };
    const server = {
      url: kc.clusters[0]!.cluster.server,
      caData: kc.clusters[0]!.cluster['certificate-authority-data'],
      token: kc.users[0]!.user.token,
    } as LocalApiServer;
    const c = client(server);
    const { crd, path, make } = machineCrd();
    await c.req('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    await c.req('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    // The CRD's versions are served once it is established.
    for (let i = 0; (await c.req('GET', `${path}?limit=1`)).status !== 200 && i < 100; i++) await new Promise((r) => setTimeout(r, 100));
    const url = new URL(server.url);
    const watchAgent = new https.Agent({ keepAlive: false, ca: Buffer.from(server.caData!, 'base64') });
    const watches = WATCHERS_CPU.map((sel) => {
      const r = https.request({
        hostname: url.hostname,
        port: url.port,
        path: `${path}?watch=1&allowWatchBookmarks=true${sel ? `&labelSelector=${encodeURIComponent(sel)}` : ''}`,
        agent: watchAgent,
        headers: { Authorization: `Bearer ${server.token}` },
      });
      r.on('response', (res) => res.resume());
      r.on('error', () => undefined);
      r.end();
      return r;
    });
    await new Promise((r) => setTimeout(r, 500));
    const phase = async (name: string, one: (i: number) => Promise<void>): Promise<void> => {
      const before = procStats(proc.pid!)!.cpuSeconds;
      await forEachLimit([...Array(n).keys()], CONCURRENCY, one);
      // Let the watch lines of the last requests go out before the sample.
      await new Promise((r) => setTimeout(r, 300));
      const ms = (procStats(proc.pid!)!.cpuSeconds - before) * 1000;
      phases.push({ phase: name, requests: n, serverCpuMs: Math.round(ms), serverCpuMsPerRequest: Number((ms / n).toFixed(3)) });
    };
    const expect = (r: { status: number; body: string }, code: number, what: string): void => {
      if (r.status !== code) throw new Error(`${what}: ${r.status} ${r.body.slice(0, 300)}`);
    };
    await phase('create', async (i) => expect(await c.req('POST', path, make(i)), 201, `create ${i}`));
    await phase('status patch', async (i) => {
      const status = {
        status: {
          phase: 'Running',
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'Ready',
              message: '',
              lastTransitionTime: new Date(1_700_000_000_000 + i * 1000).toISOString(),
            },
            {
              type: 'Available',
              status: 'True',
              reason: 'Available',
              message: '',
              lastTransitionTime: new Date(1_700_000_000_000).toISOString(),
            },
          ],
        },
      };
      expect(await c.req('PATCH', `${path}/m-${i}/status`, status, 'application/merge-patch+json'), 200, `status ${i}`);
    });
    await phase('label patch', async (i) =>
      expect(
        await c.req('PATCH', `${path}/m-${i}`, { metadata: { labels: { round: '2' } } }, 'application/merge-patch+json'),
        200,
        `label ${i}`,
      ),
    );
    await phase('get', async (i) => expect(await c.req('GET', `${path}/m-${i}`), 200, `get ${i}`));
    for (const w of watches) w.destroy();
    watchAgent.destroy();
    c.close();
  } finally {
    await proc.stop(10_000);
  }
  return { machines: n, phases };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.argv.includes('--server-process')) {
  const args = process.argv.slice(2);
  const prof = args.includes('--cpu-prof') ? args[args.indexOf('--cpu-prof') + 1] : undefined;
  const n = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--cpu-prof') ?? 3000);
  const out = await benchServerProcess(n, prof);
  for (const p of out.phases)
    console.log(`${p.phase}: ${p.serverCpuMsPerRequest} ms server CPU per request (${p.serverCpuMs} ms / ${p.requests})`);
  console.log(JSON.stringify(out));
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
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
