// The REST client's CPU per request and per watch event, in process: a child process serves quick answers and a
// pre-built watch stream, this process measures its own CPU (process.cpuUsage) for N requests and M watch events.
// Usage: npx tsx bench/client-cpu.ts [--requests 20000] [--concurrency 16] [--events 200000] [--chunk 65536] [--runs 3]
//        [--https] [--client src/runtime/client.ts]   (another copy of the client module to compare, e.g. the previous version)
import { fork } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import type { ResourceType } from '../src/api/kube.js';
import type * as ClientModule from '../src/runtime/client.js';
import { selfSignedCertificate } from '../src/runtime/tls.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '16' },
    events: { type: 'string', default: '200000' },
    chunk: { type: 'string', default: '65536' },
    runs: { type: 'string', default: '3' },
    client: { type: 'string', default: 'src/runtime/client.ts' },
    serve: { type: 'boolean', default: false },
    https: { type: 'boolean', default: false },
  },
});

const Machines: ResourceType = { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'machines', kind: 'Machine', namespaced: true };

/** A Machine-sized object (about 1.5 KB of JSON), as the controllers read and write them. */
const machine = (i: number): Record<string, unknown> => ({
  apiVersion: 'cluster.x-k8s.io/v1beta1',
  kind: 'Machine',
  metadata: {
    name: `md-${i % 300}-machine-${i}`,
    namespace: 'fleet',
    resourceVersion: String(1000 + i),
    labels: { 'cluster.x-k8s.io/cluster-name': 'c1', 'cluster.x-k8s.io/deployment-name': `md-${i % 300}` },
    annotations: { 'inplace.cluster.x-k8s.io/plan': 'p1' },
    ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'MachineSet', name: `ms-${i % 300}`, uid: 'u-1', controller: true }],
  },
  spec: {
    clusterName: 'c1',
    version: 'v1.30.2',
    bootstrap: { dataSecretName: `b-${i}` },
    infrastructureRef: { kind: 'X', name: `x-${i}` },
  },
  status: {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-26T10:00:00Z' },
      { type: 'InfrastructureReady', status: 'True', lastTransitionTime: '2026-11-26T10:00:00Z' },
    ],
  },
});

if (args.serve) {
  const events = Number(args.events);
  const chunk = Number(args.chunk);
  // The watch stream, built once: one event per line, cut into `chunk`-byte writes (cuts fall mid-line).
  const stream = Buffer.from(
    Array.from(
      { length: events },
      (_, i) => JSON.stringify({ type: i % 50 === 49 ? 'BOOKMARK' : 'MODIFIED', object: machine(i) }) + '\n',
    ).join(''),
  );
  const answer = Buffer.from(JSON.stringify(machine(1)));
  const pems = args.https ? await selfSignedCertificate('client-cpu') : undefined;
  const serve: http.RequestListener = (req, res) => {
    if (req.url?.includes('watch=true')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      let at = 0;
      const next = (): void => {
        if (at >= stream.length) return void res.end();
        const part = stream.subarray(at, at + chunk);
        at += chunk;
        if (res.write(part)) setImmediate(next);
        else res.once('drain', next);
      };
      next();
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': answer.length });
      res.end(answer);
    });
  };
  const server = pems ? https.createServer({ key: pems.key, cert: pems.cert }, serve) : http.createServer(serve);
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port, ca: pems?.cert }));
} else {
  await main();
}

async function main(): Promise<void> {
  const child = fork(
    new URL(import.meta.url).pathname,
    ['--serve', '--events', args.events!, '--chunk', args.chunk!, ...(args.https ? ['--https'] : [])],
    {
      execArgv: process.execArgv,
    },
  );
  const { port, ca } = await new Promise<{ port: number; ca?: string }>((res) =>
    child.once('message', (m) => res(m as { port: number; ca?: string })),
  );
  const mod = (await import(pathToFileURL(resolve(args.client!)).href)) as typeof ClientModule;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `${ca ? 'https' : 'http'}://127.0.0.1:${port}`,
        skipTLSVerify: false,
        ...(ca ? { caData: Buffer.from(ca).toString('base64') } : {}),
      },
    ],
    users: [{ name: 'u', token: 'bench-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  let metrics = 0;
  const client = mod.createClient(kc, { onRequest: () => metrics++ });
  const n = Number(args.requests);
  const conc = Number(args.concurrency);
  const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;
  console.log(
    `client ${args.client}${ca ? ' (https)' : ''}: ${n} requests (${conc} in flight, get + patch alternating), ${args.events} watch events in ${args.chunk}-byte chunks`,
  );
  for (let run = 0; run < Number(args.runs); run++) {
    let c0 = process.cpuUsage();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < n) {
        const i = next++;
        if (i % 2) await client.get(Machines, 'fleet', `m-${i}`);
        else await client.patch(Machines, 'fleet', `m-${i}`, { metadata: { labels: { x: String(i) } } }, { type: 'merge' });
      }
    };
    await Promise.all(Array.from({ length: conc }, worker));
    const reqCpu = cpuMs(process.cpuUsage(c0));

    c0 = process.cpuUsage();
    let got = 0;
    const h = await client.watch(Machines, 'fleet', { resourceVersion: '1', allowWatchBookmarks: true }, () => got++);
    await h.done;
    const watchCpu = cpuMs(process.cpuUsage(c0));
    if (got !== Number(args.events)) throw new Error(`watch delivered ${got} events, expected ${args.events}`);
    console.log(
      `run ${run + 1}: requests ${reqCpu.toFixed(0)} ms CPU (${(n ? (reqCpu * 1000) / n : 0).toFixed(1)} us/request); ` +
        `watch ${watchCpu.toFixed(0)} ms CPU (${((watchCpu * 1000) / got).toFixed(2)} us/event)`,
    );
  }
  if (metrics < n) throw new Error(`onRequest saw ${metrics} requests`);
  client.close();
  child.kill();
}
