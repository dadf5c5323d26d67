// The campaign case of `npm run bench -- --campaign` (issue 27): one InPlaceUpdateCampaign over many clusters in one
// management cluster, every component its own process (local API server, plan controller, machine task controller,
// campaign controller, the benchmark's reference updater). Reports the wall time against the campaign's lower bound
// (waves × the per-cluster bound, plus the soaks), CPU seconds per machine per process, API requests per machine per
// process, and peak RSS. Results: bench/results/campaign-<clusters>x<machines per cluster>.json.
//
//   npm run bench -- --campaign                                         # 30 clusters x 3 machines (default)
//   npm run bench -- --campaign --clusters 1000 --cp 3 --workers 27 --wave 10% --worker-max-unavailable 9 --apiserver-max-old-space 12288
//                                                                       # 1,000 clusters, 30,000 machines
//   ... --max-wall 1800   # stop after 30 min (setup included) and write what was reached, figures per machine updated
//   ... --cpu-prof DIR [--cpu-prof-components campaign-controller,plan-controller]
//                         # V8 CPU profiles (default: every component) in DIR/<component>/; npx tsx bench/cpu-prof.ts DIR/<component>
//   ... --server-kubeconfig F [--server-pids kube-apiserver=PID,etcd=PID]
//                         # against that API server (a real kube-apiserver) instead of the embedded one, on a server
//                         # without the namespace bench-campaign (the fleet's Nodes are cluster-scoped: use a fresh one);
//                         # the processes named by --server-pids are measured like the platform's (CPU, peak RSS)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION, InPlaceUpdateCampaigns, Namespaces, type InPlaceUpdateCampaign, type KubeObject } from '../src/api/index.js';
import { createClient, isAlreadyExists, loadKubeConfig, type RestClient } from '../src/runtime/index.js';
import { installCrds } from '../src/cli/install.js';
import { yamlFilesIn } from '../src/cli/files.js';
import { buildFleetInventory, capiCrdFiles, type FleetCluster } from '../tools/capi-sim/index.js';
import { openDashboardPage } from './lib/dashboard-page.js';
import { applyFleet } from './lib/fleet.js';
import { serverGitVersion } from '../src/sample-updaters/simulation.js';
import type { ExternalProc } from './lib/procs.js';
import { Proc, ROOT, freePort, maxOldSpaceArgs, parseProm, scrape, stopAll } from './lib/procs.js';

/** Options of the campaign case. */
export interface CampaignBenchOptions {
  clusters: number;
  cp: number;
  workers: number;
  workerMaxUnavailable: number;
  /** maxConcurrentClusters (count or percentage). */
  wave: number | string;
  canaries: number;
  soakSeconds: number;
  durationSeconds: number;
  apiserverMaxOldSpaceMB: number;
  /** The controllers' `--max-old-space-size` (MiB), as the manifests set it from their memory limit; default none. */
  controllerMaxOldSpaceMB?: number;
  /** The plan controller's own V8 old-space limit (MiB), overriding controllerMaxOldSpaceMB for it. */
  planControllerMaxOldSpaceMB?: number;
  /**
   * Stop waiting this many seconds after the case started (setup included) and write what was reached (status
   * "timeout (...)", figures per machine updated): a case too large for the time at hand still leaves its figures.
   */
  maxWallSeconds?: number;
  out: string;
  command: string;
  /** Also run `inplace dashboard` with a headless Chromium page open on it (`--dashboard`): its CPU and RSS are reported. */
  dashboard?: boolean;
  /** Write V8 CPU profiles (`--cpu-prof DIR`) of these components into `DIR/<component>/` (summarise with bench/cpu-prof.ts). */
  cpuProf?: { dir: string; components: string[] };
  /**
   * Run against this API server (`--server-kubeconfig`, e.g. a real kube-apiserver) instead of starting the embedded
   * one; `measured` are its processes (`--server-pids`), reported like the platform's.
   */
  server?: { kubeconfig: string; measured: ExternalProc[] };
}

/** The figures of the case. */
export interface CampaignBenchResult {
  name: string;
  command: string;
  clusters: number;
  machines: number;
  machinesPerCluster: { controlPlane: number; workers: number; workerMaxUnavailable: number };
  waves: number;
  waveSize: number;
  canaries: number;
  soakSeconds: number;
  durationSeconds: number;
  status: string;
  /** The API server's /version gitVersion (the embedded server's ends with -inplace-local). */
  server: string;
  wallSeconds: number;
  perClusterBoundSeconds: number;
  lowerBoundSeconds: number;
  lowerBoundFormula: string;
  ratio: number;
  cpuSecondsPerMachine: Record<string, number>;
  apiRequestsPerMachine: Record<string, number>;
  /** Per component: API requests per machine by `verb resource` (2xx and other codes together), largest first. */
  apiRequestsPerMachineBy: Record<string, Record<string, number>>;
  peakRssMB: Record<string, number>;
  /** The V8 old-space limits the controllers ran with (MiB; null: V8's own). */
  heapLimitsMB: { controllers: number | null; planController: number | null };
  fleetCreateSeconds: number;
  startedAt: string;
  /** Seconds from starting the API server to creating the campaign (fleet, controllers' caches). */
  setupSeconds: number;
  /** Clusters done and machines updated when the case ended (all of them unless it ran out of time). */
  clustersDone: number;
  machinesUpdated: number;
  /** What the per-machine figures divide by: every machine, or (a case cut short) the machines updated. */
  perMachineOf: 'machines' | 'machines updated';
  /**
   * Validation before the first plan: seconds from creating the campaign to its first wave (the per-cluster checks,
   * pre-start check included) and the campaign controller's API requests in that time, per cluster.
   */
  validation: { secondsToFirstWave: number; campaignControllerRequests: number; requestsPerCluster: number };
  /** The campaign's progress over time (phase, clusters done, machines updated), at most one entry per 30 s. */
  timeline: { seconds: number; phase: string; clusters: string; machines: string }[];
}

const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves an int-or-percentage of `total` (percentages round down, at least 1), as the campaign does for waves. */
const waveSizeOf = (wave: number | string, total: number): number =>
  Math.max(1, typeof wave === 'number' ? wave : Math.floor((Number(wave.replace('%', '')) * total) / 100));

/** Runs the case and writes its file. */
export async function runCampaignCase(o: CampaignBenchOptions, say: (s: string) => void): Promise<CampaignBenchResult> {
  const caseStart = Date.now();
  const workDir = join(ROOT, '.inplace', 'bench-campaign');
  mkdirSync(workDir, { recursive: true });
  const kubeconfig = o.server?.kubeconfig ?? join(workDir, 'kubeconfig');
  const procs: Proc[] = [];
  const ports = new Map<string, number>();
  let client: RestClient | undefined;
  let viewer: { close(): Promise<void> } | undefined;
  // A profiled process writes its profile on a clean exit (SIGTERM): give it time to.
  const profArgs = (component: string): string[] => {
    if (!o.cpuProf?.components.includes(component)) return [];
    const dir = join(o.cpuProf.dir, component);
    mkdirSync(dir, { recursive: true });
    return ['--cpu-prof', '--cpu-prof-dir', dir];
  };
  const startEmbeddedServer = async (): Promise<void> => {
    const apiserver = new Proc(
      {
        name: 'local-apiserver',
        inplace: ['local-apiserver', '--kubeconfig-out', kubeconfig],
        env: { NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --max-old-space-size=${o.apiserverMaxOldSpaceMB}`.trim() },
        nodeArgs: profArgs('local-apiserver'),
      },
      workDir,
    );
    procs.push(apiserver);
    apiserver.start();
    await apiserver.waitReady(120_000, /listening on/);
  };
  // Everything measured: the processes started here and the external server's (--server-pids).
  const measured = (): { name: string; stats(): { cpuSeconds: number; peakRssBytes: number } }[] => [
    ...procs,
    ...(o.server?.measured ?? []),
  ];
  try {
    if (!o.server) await startEmbeddedServer();
    client = createClient(loadKubeConfig(kubeconfig), { userAgent: 'inplace-bench', maxSockets: 64 });
    const server = await serverGitVersion(kubeconfig);
    await installCrds(client, [...yamlFilesIn(join(ROOT, 'crds')), ...yamlFilesIn(join(ROOT, 'crds', 'samples')), ...capiCrdFiles()]);
    const ns = 'bench-campaign';
    try {
      await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    } catch (err) {
      // A server that holds an earlier run's fleet (its Nodes already updated) would measure nothing true.
      if (isAlreadyExists(err)) throw new Error(`namespace ${ns} exists on ${server}: an earlier run's fleet; use a fresh API server`);
      throw err;
    }
    const clusters: FleetCluster[] = Array.from({ length: o.clusters }, (_, i) => ({
      name: `c${String(i).padStart(4, '0')}`,
      shape: o.workers > 0 ? 'with-workers' : 'single-node',
      controlPlaneReplicas: o.cp,
      workers: o.workers,
      maxUnavailable: o.workerMaxUnavailable,
      labels: { fleet: 'bench' },
    }));
    const objs: KubeObject[] = buildFleetInventory({ namespace: ns, version: 'v1.30.0', clusters });
    const machines = objs.filter((x) => x.kind === 'Machine').length;
    const t0 = Date.now();
    await applyFleet(client, objs, 64);
    const fleetCreateSeconds = (Date.now() - t0) / 1000;
    say(`  fleet: ${o.clusters} clusters, ${machines} machines (${objs.length} objects) created in ${fleetCreateSeconds.toFixed(1)} s`);

    for (const c of ['plan-controller', 'machine-task-controller', 'campaign-controller']) {
      const port = await freePort();
      ports.set(c, port);
      const p = new Proc(
        {
          name: c,
          inplace: ['run', c, '--kubeconfig', kubeconfig, '-n', ns, '--metrics-port', String(port)],
          // The heap limit the manifests set from the memory limit (--controller-max-old-space), when given.
          nodeArgs: [...profArgs(c), ...maxOldSpaceArgs(c, o.controllerMaxOldSpaceMB, o.planControllerMaxOldSpaceMB)],
        },
        workDir,
      );
      procs.push(p);
      p.start();
    }
    const uport = await freePort();
    ports.set('updater', uport);
    const updater = new Proc(
      {
        name: 'updater',
        tsx: 'bench/updater-main.ts',
        args: ['--kubeconfig', kubeconfig, '--namespace', ns, '--metrics-port', String(uport)],
        nodeArgs: profArgs('updater'),
      },
      workDir,
    );
    procs.push(updater);
    updater.start();
    const dashPort = o.dashboard ? await freePort() : undefined;
    if (dashPort !== undefined) {
      const d = new Proc(
        { name: 'dashboard', inplace: ['dashboard', '--kubeconfig', kubeconfig, '-n', ns, '--port', String(dashPort)] },
        workDir,
      );
      procs.push(d);
      d.start();
    }
    await Promise.all(
      procs
        .filter((p) => p.name !== 'local-apiserver')
        .map((p) => p.waitReady(180_000, p.name === 'dashboard' ? /dashboard: http/ : undefined)),
    );
    if (dashPort !== undefined) viewer = await openDashboardPage(`http://127.0.0.1:${dashPort}/`, say);

    // Per component, its requests by `verb resource` (the key '' holds the total).
    const requestsBy = async (): Promise<Map<string, Map<string, number>>> => {
      const out = new Map<string, Map<string, number>>();
      for (const [name, port] of ports) {
        const by = new Map<string, number>([['', 0]]);
        for (const s of parseProm((await scrape(port)) ?? '').filter((x) => x.name === 'inplace_api_requests_total')) {
          const key = `${s.labels['verb'] ?? ''} ${s.labels['resource'] ?? ''}`;
          by.set(key, (by.get(key) ?? 0) + s.value);
          by.set('', by.get('')! + s.value);
        }
        out.set(name, by);
      }
      return out;
    };
    const requests = async (): Promise<Map<string, number>> => new Map([...(await requestsBy())].map(([n, by]) => [n, by.get('')!]));
    const beforeBy = await requestsBy();
    const before = new Map([...beforeBy].map(([n, by]) => [n, by.get('')!]));
    const cpuBefore = new Map(measured().map((p) => [p.name, p.stats().cpuSeconds]));

    const updater0 = {
      name: 'ref',
      sequence: 1,
      responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }],
      parameters: { durationSeconds: o.durationSeconds },
    };
    const campaign: InPlaceUpdateCampaign & KubeObject = {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdateCampaign',
      metadata: { name: 'bench', namespace: ns },
      spec: {
        clusterSelector: { matchLabels: { fleet: 'bench' } },
        rollout: { canary: { count: o.canaries }, maxConcurrentClusters: o.wave, soakSeconds: o.soakSeconds, failureBudget: 0 },
        template: {
          // No Cluster API machine controller here mirrors a Node into Machine.status.nodeInfo: the plans cannot verify
          // the node (kubelet verification is on by default) and take the updater's word, as the other bench fleets do.
          verification: { mode: 'Disabled' },
          controlPlane: { sequence: 1, updaters: [updater0] },
          ...(o.workers > 0 ? { machineDeployments: [{ sequence: 2, updaters: [updater0] }] } : {}),
        },
      },
    };
    const waveSize = waveSizeOf(o.wave, o.clusters);
    const waves = (o.canaries > 0 ? 1 : 0) + Math.ceil((o.clusters - o.canaries) / waveSize);
    const perCluster =
      o.cp * o.durationSeconds +
      (o.workers > 0 ? Math.ceil(o.workers / Math.min(o.workerMaxUnavailable, o.workers)) * o.durationSeconds : 0);
    const lowerBound = waves * perCluster + (waves - 1) * o.soakSeconds;
    say(
      `  campaign: ${waves} waves (canaries ${o.canaries}, then ${waveSize} clusters), per-cluster bound ${perCluster} s, lower bound ${lowerBound} s`,
    );
    const startedAt = new Date().toISOString();
    const t1 = Date.now();
    await client.create(InPlaceUpdateCampaigns, campaign);
    const setupSeconds = (t1 - caseStart) / 1000;
    let status = '';
    let lastLine = '';
    let last: InPlaceUpdateCampaign['status'] = {};
    const timeline: CampaignBenchResult['timeline'] = [];
    let validation: CampaignBenchResult['validation'] | undefined;
    const deadline =
      o.maxWallSeconds !== undefined
        ? caseStart + o.maxWallSeconds * 1000
        : Date.now() + Math.max(600_000, lowerBound * 10_000 + machines * 100);
    for (;;) {
      const c = await client.get<InPlaceUpdateCampaign & KubeObject>(InPlaceUpdateCampaigns, ns, 'bench');
      status = c?.status?.updateStatus ?? '';
      last = c?.status ?? last;
      if (!validation && ['Canary', 'Wave'].includes(c?.status?.phase ?? '')) {
        const n = (await requests()).get('campaign-controller')! - before.get('campaign-controller')!;
        validation = {
          secondsToFirstWave: round((Date.now() - t1) / 1000, 1),
          campaignControllerRequests: n,
          requestsPerCluster: round(n / o.clusters, 2),
        };
        say(`  validation: first wave after ${validation.secondsToFirstWave} s, ${n} campaign-controller requests`);
      }
      const line = `${c?.status?.phase ?? ''} clusters ${c?.status?.progress ?? ''} machines ${c?.status?.machineProgress ?? ''}`;
      if (line !== lastLine) {
        const seconds = round((Date.now() - t1) / 1000, 1);
        say(`  ${seconds.toFixed(1).padStart(7)} s  ${line}`);
        lastLine = line;
        if (
          timeline.length === 0 ||
          seconds - timeline[timeline.length - 1]!.seconds >= 30 ||
          ['updated', 'failed', 'aborted'].includes(status)
        )
          timeline.push({
            seconds,
            phase: c?.status?.phase ?? '',
            clusters: c?.status?.progress ?? '',
            machines: c?.status?.machineProgress ?? '',
          });
      }
      if (['updated', 'failed', 'aborted'].includes(status)) break;
      if (Date.now() > deadline) {
        status = `timeout (${status})`;
        break;
      }
      const dead = procs.find((p) => p.crashedOnItsOwn);
      if (dead) throw new Error(`${dead.name} exited; see ${dead.logPath}`);
      await sleep(1000);
    }
    const wallSeconds = (Date.now() - t1) / 1000;
    const afterBy = await requestsBy();
    const after = new Map([...afterBy].map(([n, by]) => [n, by.get('')!]));
    const clustersDone = Number((last?.progress ?? '0/0').split('/')[0]) || 0;
    const machinesUpdated = last?.machines?.updated ?? 0;
    const complete = status === 'updated';
    const denom = complete ? machines : Math.max(1, machinesUpdated);
    const result: CampaignBenchResult = {
      name: `campaign-${o.clusters}x${o.cp + o.workers}${o.dashboard ? '-dashboard' : ''}${o.server ? '-external-server' : ''}`,
      command: o.command,
      clusters: o.clusters,
      machines,
      machinesPerCluster: { controlPlane: o.cp, workers: o.workers, workerMaxUnavailable: o.workerMaxUnavailable },
      waves,
      waveSize,
      canaries: o.canaries,
      soakSeconds: o.soakSeconds,
      durationSeconds: o.durationSeconds,
      status,
      server,
      wallSeconds: round(wallSeconds, 1),
      perClusterBoundSeconds: perCluster,
      lowerBoundSeconds: lowerBound,
      lowerBoundFormula: `waves (${waves}) x per-cluster bound (${o.cp} control-plane machines one at a time + ceil(${o.workers} workers / ${o.workerMaxUnavailable}) steps, x ${o.durationSeconds} s) + ${waves - 1} soaks x ${o.soakSeconds} s`,
      ratio: round(lowerBound > 0 ? wallSeconds / lowerBound : 0, 2),
      cpuSecondsPerMachine: Object.fromEntries(
        measured().map((p) => [p.name, round((p.stats().cpuSeconds - (cpuBefore.get(p.name) ?? 0)) / denom, 4)]),
      ),
      apiRequestsPerMachine: Object.fromEntries([...after].map(([n, v]) => [n, round((v - (before.get(n) ?? 0)) / denom, 2)])),
      apiRequestsPerMachineBy: Object.fromEntries(
        [...afterBy].map(([n, by]) => [
          n,
          Object.fromEntries(
            [...by]
              .filter(([k]) => k !== '')
              .map(([k, v]): [string, number] => [k, round((v - (beforeBy.get(n)?.get(k) ?? 0)) / denom, 3)])
              .filter(([, v]) => v > 0)
              .sort((a, b) => b[1] - a[1]),
          ),
        ]),
      ),
      peakRssMB: Object.fromEntries(measured().map((p) => [p.name, round(p.stats().peakRssBytes / 2 ** 20, 0)])),
      heapLimitsMB: {
        controllers: o.controllerMaxOldSpaceMB ?? null,
        planController: o.planControllerMaxOldSpaceMB ?? o.controllerMaxOldSpaceMB ?? null,
      },
      fleetCreateSeconds: round(fleetCreateSeconds, 1),
      startedAt,
      setupSeconds: round(setupSeconds, 1),
      clustersDone,
      machinesUpdated,
      perMachineOf: complete ? 'machines' : 'machines updated',
      validation: validation ?? { secondsToFirstWave: -1, campaignControllerRequests: -1, requestsPerCluster: -1 },
      timeline,
    };
    mkdirSync(o.out, { recursive: true });
    writeFileSync(join(o.out, `${result.name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    say(`  ${result.name}: ${status} in ${result.wallSeconds} s (lower bound ${lowerBound} s, ratio ${result.ratio})`);
    say(`  CPU s/machine: ${JSON.stringify(result.cpuSecondsPerMachine)}`);
    say(`  API requests/machine: ${JSON.stringify(result.apiRequestsPerMachine)}`);
    for (const [n, by] of Object.entries(result.apiRequestsPerMachineBy)) say(`    ${n}: ${JSON.stringify(by)}`);
    say(`  peak RSS MiB: ${JSON.stringify(result.peakRssMB)}`);
    return result;
  } finally {
    client?.close();
    await viewer?.close();
    await stopAll(procs, o.cpuProf ? 120_000 : undefined);
  }
}
