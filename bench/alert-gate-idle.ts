// What idle alert gates cost (issue 42, item 3): N plans with an alert gate that stays Clear and nothing else to do
// (paused: no machine starts, the gate is still read), the local API server and the plan controller each their own
// process. Prints, over a window after the plans settled, the plan controller's plan writes per minute (status and
// metadata, from its inplace_api_requests_total) and the requests the alerts endpoint (served here) received per
// minute, against the documented interval (one read per plan per ALERTS_POLL_MS). Results:
// bench/results/alert-gate-idle-<plans>.json.
//
//   npx tsx bench/alert-gate-idle.ts                       # 1,000 plans, 60 s window (about 3-5 minutes on 2 cores)
//   npx tsx bench/alert-gate-idle.ts --plans 100 --window 30
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_VERSION, InPlaceUpdatePlans, Namespaces, type InPlaceUpdatePlan, type KubeObject } from '../src/api/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../src/runtime/index.js';
import { installCrds } from '../src/cli/install.js';
import { yamlFilesIn } from '../src/cli/files.js';
import { ALERTS_POLL_MS } from '../src/rules/gates.js';
import { buildFleetInventory, capiCrdFiles, type FleetCluster } from '../tools/capi-sim/index.js';
import { applyFleet } from './lib/fleet.js';
import { Proc, ROOT, freePort, parseProm, scrape, stopAll } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    plans: { type: 'string', default: '1000' },
    window: { type: 'string', default: '60' },
    settle: { type: 'string', default: '20' },
    out: { type: 'string', default: join(ROOT, 'bench', 'results') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'Usage: npx tsx bench/alert-gate-idle.ts [--plans N (1000)] [--window SECONDS (60)] [--settle SECONDS (20)] [--out DIR]\n',
  );
  process.exit(0);
}
const plans = Number(values.plans);
const windowS = Number(values.window);
const settleS = Number(values.settle);
const say = (s: string): void => void process.stdout.write(`${s}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Successful writes (patch, update) of plans in a scrape of the plan controller's /metrics. */
const planWrites = (text: string | undefined): number =>
  parseProm(text ?? '')
    .filter(
      (s) =>
        s.name === 'inplace_api_requests_total' &&
        (s.labels['verb'] === 'patch' || s.labels['verb'] === 'update') &&
        (s.labels['resource'] ?? '').startsWith('inplaceupdateplans') &&
        /^2/.test(s.labels['code'] ?? ''),
    )
    .reduce((n, s) => n + s.value, 0);

async function main(): Promise<void> {
  const workDir = join(ROOT, '.inplace', 'bench-alert-gate-idle');
  mkdirSync(workDir, { recursive: true });
  const kubeconfig = join(workDir, 'kubeconfig');
  const procs: Proc[] = [];
  let client: RestClient | undefined;
  let queries = 0;
  const endpoint = createServer((req, res) => {
    if (req.url === '/api/v1/alerts') queries++;
    res.setHeader('content-type', 'application/json');
    res.end('{"status":"success","data":{"alerts":[]}}');
  });
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  const env = { INPLACE_FROM_SOURCE: '1' };
  try {
    const apiserver = new Proc({ name: 'local-apiserver', inplace: ['local-apiserver', '--kubeconfig-out', kubeconfig], env }, workDir);
    procs.push(apiserver);
    apiserver.start();
    await apiserver.waitReady(120_000, /listening on/);
    client = createClient(loadKubeConfig(kubeconfig), { userAgent: 'inplace-bench', maxSockets: 64 });
    await installCrds(client, [...yamlFilesIn(join(ROOT, 'crds')), ...yamlFilesIn(join(ROOT, 'crds', 'samples')), ...capiCrdFiles()]);
    const ns = 'bench-gates';
    await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const clusters: FleetCluster[] = Array.from({ length: plans }, (_, i) => ({
      name: `c${String(i).padStart(4, '0')}`,
      shape: 'single-node',
    }));
    await applyFleet(client, buildFleetInventory({ namespace: ns, version: 'v1.30.0', clusters }), 64);
    const policyFile = join(workDir, 'alert-gate-policy.yaml');
    writeFileSync(policyFile, `endpoints:\n  - url: ${url}\n`);
    const port = await freePort();
    const pc = new Proc(
      {
        name: 'plan-controller',
        inplace: [
          'run',
          'plan-controller',
          '--kubeconfig',
          kubeconfig,
          '-n',
          ns,
          '--metrics-port',
          String(port),
          '--alert-gate-policy',
          policyFile,
        ],
        env,
      },
      workDir,
    );
    procs.push(pc);
    pc.start();
    await pc.waitReady(180_000);
    // Paused plans: valid, nothing to start, the gate read on its interval all the same (what an idle gated plan costs).
    const c = client;
    const objs = clusters.map((cl): InPlaceUpdatePlan & KubeObject => ({
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdatePlan',
      metadata: { name: `p-${cl.name}`, namespace: ns },
      spec: {
        clusterName: cl.name,
        paused: true,
        controlPlane: {
          name: `${cl.name}-cp`,
          sequence: 1,
          updaters: [
            { name: 'ref', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] },
          ],
        },
        alertGate: { url, holdTimeout: '24h' },
      },
    }));
    for (let i = 0; i < objs.length; i += 64) await Promise.all(objs.slice(i, i + 64).map((o) => c.create(InPlaceUpdatePlans, o)));
    const t0 = Date.now();
    for (;;) {
      const items = (await c.list<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns)).items;
      const clear = items.filter((p) => p.status?.alertGate?.state === 'Clear').length;
      if (clear === plans) break;
      if (Date.now() - t0 > 300_000) {
        const other = items.find((p) => p.status?.alertGate?.state !== 'Clear');
        throw new Error(
          `only ${clear}/${plans} plans reached alertGate Clear in 5 min; e.g. ${JSON.stringify(other?.status).slice(0, 1500)}`,
        );
      }
      await sleep(2000);
    }
    say(`${plans} gated plans Clear after ${((Date.now() - t0) / 1000).toFixed(1)} s; settling ${settleS} s`);
    await sleep(settleS * 1000);
    const w0 = planWrites(await scrape(port));
    const q0 = queries;
    const s0 = Date.now();
    await sleep(windowS * 1000);
    const w1 = planWrites(await scrape(port));
    const q1 = queries;
    const minutes = (Date.now() - s0) / 60_000;
    const result = {
      plans,
      windowSeconds: windowS,
      statusWritesPerMinute: Math.round((w1 - w0) / minutes),
      endpointRequestsPerMinute: Math.round((q1 - q0) / minutes),
      documentedRequestsPerMinute: Math.round((plans * 60_000) / ALERTS_POLL_MS),
      planControllerCpuSeconds: pc.stats().cpuSeconds,
      command: `npx tsx bench/alert-gate-idle.ts --plans ${plans} --window ${windowS}`,
    };
    say(JSON.stringify(result, null, 2));
    mkdirSync(values.out!, { recursive: true });
    writeFileSync(join(values.out!, `alert-gate-idle-${plans}.json`), `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    client?.close();
    await stopAll(procs.reverse());
    endpoint.close();
  }
}

await main();
