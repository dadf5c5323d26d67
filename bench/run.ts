// `npm run bench`: plan throughput of the whole platform at fleet scale, against the theoretical lower bound, with the
// platform overhead per machine step (and where a step's time goes, stage by stage: stagesMs), API requests per
// machine, CPU and memory per process, a comparison with a poll-based orchestration (upstream's webhook design), and
// the local API server's own benchmark.
//
//   npm run bench                                            # 1,000 machines (default; about 6-8 minutes on 2 cores)
//   npm run bench -- --sizes 1000,10000,30000 --duration 2   # larger fleets (opt-in)
//   npm run bench -- --max-unavailable 10% --durations 0 --no-poll --no-apiserver   # one quick case
//   npm run bench -- --history-plans 20 --sizes 1000 --max-unavailable 10% --durations 0   # idle and history (bench/history.ts)
//   npm run bench -- --sizes 1000 --max-unavailable 1 --durations 2 --no-poll --no-apiserver --faults   # + the case under API faults
//   npm run bench -- --campaign [--clusters 1000 --cp 3 --workers 27 --worker-max-unavailable 9]   # one campaign (bench/campaign.ts)
//                                [--dashboard]   # with inplace dashboard and a headless Chromium page on it
//                                [--server-kubeconfig F [--server-pids kube-apiserver=PID,etcd=PID]]   # on that (fresh) API server
//   ... --apiserver-max-old-space 1024   # the API server's V8 old-space limit in MiB (default 12288, for 30,000 machines)
//   ... --apiserver-heap-compaction off   # the API server's `--heap-compaction` (default: the verb's own, on)
//   ... --controller-heap-growing-percent N   # the controllers' `inplace run --heap-growing-percent N` (default: run's own)
//   ... --controller-max-old-space N   # the controllers' V8 old-space limit in MiB, as the manifests set it (384 for the default 512 MiB limit; default: none)
//   ... --plan-controller-max-old-space N   # the plan controller's alone (default: the controllers')
//   ... --cpu-prof /tmp/prof [--cpu-prof-components plan-controller]   # V8 CPU profiles per component (bench/cpu-prof.ts reads them)
//   ... --debug-components plan-controller                         # controllers logging at debug level (one line per plan reconcile)
//
// Every process is separate, as in a cluster: the local API server (`inplace local-apiserver`), the plan controller,
// the machine task controller and the MHC extension (`inplace run <component> --metrics-port N`), and the updater
// (bench/updater-main.ts: the reference updater, or its poll-based variant). CPU seconds and peak RSS come from
// /proc/<pid>; API requests from each process's inplace_api_requests_total counter; timings from watches in this
// process. Results: bench/results/<case>.json and bench/results/README.md.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { cpus, totalmem } from 'node:os';
import { InPlaceUpdatePlans, Labels, MachineUpdates, Namespaces, UpdaterUpdateTasks } from '../src/api/index.js';
import { capiCrdFiles } from '../tools/capi-sim/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../src/runtime/index.js';
import { installCrds } from '../src/cli/install.js';
import { yamlFilesIn } from '../src/cli/files.js';
import { applyFleet, buildFleet, fleetPlan, setMaxUnavailable, type Fleet } from './lib/fleet.js';
import { PlanObserver, stages, type Stages, type Summary } from './lib/observe.js';
import { runHistoryCase } from './history.js';
import { runHooksLatencyCase } from './hooks-latency.js';
import { runCampaignCase } from './campaign.js';
import { Proc, ROOT, externalProcs, freePort, maxOldSpaceArgs, parseProm, scrape, type ProcStats } from './lib/procs.js';
import { seededRandom, startFaultProxy, type FaultProxy, type ProxyFaults } from './lib/fault-proxy.js';
import { parse as parseYaml } from 'yaml';

// ---------------------------------------------------------------------------------------------------------------
// Options

interface Options {
  sizes: number[];
  durations: number[];
  maxUnavailable: (number | string)[];
  mdSize: number;
  poll: boolean;
  pollRetrySeconds: number;
  pollMaxUnavailable: (number | string)[];
  pollDuration: number;
  apiserver: boolean;
  apiserverSizes: number[];
  out: string;
  /** Plans of the idle-and-history case (bench/history.ts); 0 = the throughput cases. */
  historyPlans: number;
  idleSeconds: number;
  /** The plan controller's --finished-plans-per-cluster (undefined: its default). */
  historyLimit: string | undefined;
  /** `--heap-growing-percent` for the controllers' `inplace run` (undefined: run's default). */
  controllerHeapGrowing: string | undefined;
  /** The controllers' `--max-old-space-size` (MiB) as the manifests set it from the memory limit (cdk8s/charts.ts
   * heapSizeMiB; undefined: none, V8's own limit). V8's heap growing factor shrinks with the limit. */
  controllerMaxOldSpaceMB: number | undefined;
  /** The plan controller's own V8 old-space limit (MiB), overriding controllerMaxOldSpaceMB for it. */
  planControllerMaxOldSpaceMB: number | undefined;
  /** The API server's V8 old-space limit (MiB): 30,000 machines need about 12 GiB; the heap grows up to ~4x its live
   * data between full collections once the limit is 2 GiB or more, less with a smaller limit (history case). */
  apiserverMaxOldSpaceMB: number;
  /** `--heap-compaction` for the API server's `inplace local-apiserver` (undefined: the verb's default). */
  apiserverHeapCompaction: string | undefined;
  /** Route the platform through the fault proxy and re-run the first case with faults on (bench/lib/fault-proxy.ts). */
  faults: boolean;
  /** Three updaters per machine (Machine, InfraMachine, BootstrapConfig): the plan's end of target clones templates. */
  threeUpdaters: boolean;
  /** Write V8 CPU profiles of the named components into this directory (`--cpu-prof DIR`; summarise with bench/cpu-prof.ts). */
  cpuProfDir: string | undefined;
  /** The components profiled with --cpu-prof (`--cpu-prof-components`; default: the three controllers and the updater;
   * `local-apiserver` names the embedded API server). */
  cpuProfComponents: string[];
  /** Controllers that log at debug level (`--debug-components`; e.g. plan-controller: one line per reconcile with its phases). */
  debugComponents: string[];
}

function parseOptions(argv: string[]): Options {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : process.env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`];
  };
  const list = (v: string | undefined, dflt: string): string[] =>
    (v ?? dflt)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const intOrPct = (s: string): number | string => (s.endsWith('%') ? s : Number(s));
  const d = get('duration');
  const o: Options = {
    sizes: list(get('sizes'), '1000').map(Number),
    durations: get('durations') ? list(get('durations'), '').map(Number) : [Number(d ?? 2), 0],
    maxUnavailable: list(get('max-unavailable'), '1,10%,100%').map(intOrPct),
    mdSize: Number(get('md-size') ?? 50),
    poll: !argv.includes('--no-poll'),
    pollRetrySeconds: Number(get('poll-retry') ?? 5),
    pollMaxUnavailable: list(get('poll-max-unavailable'), '10%').map(intOrPct),
    pollDuration: Number(get('poll-duration') ?? d ?? 2),
    apiserver: !argv.includes('--no-apiserver'),
    apiserverSizes: list(get('apiserver-sizes'), '10000').map(Number),
    out: get('out') ?? join(ROOT, 'bench', 'results'),
    historyPlans: Number(get('history-plans') ?? 0),
    idleSeconds: Number(get('idle-seconds') ?? 60),
    historyLimit: get('history-limit'),
    controllerHeapGrowing: get('controller-heap-growing-percent'),
    controllerMaxOldSpaceMB: get('controller-max-old-space') !== undefined ? Number(get('controller-max-old-space')) : undefined,
    planControllerMaxOldSpaceMB:
      get('plan-controller-max-old-space') !== undefined ? Number(get('plan-controller-max-old-space')) : undefined,
    apiserverMaxOldSpaceMB: Number(get('apiserver-max-old-space') ?? 12288),
    apiserverHeapCompaction: get('apiserver-heap-compaction'),
    faults: argv.includes('--faults'),
    threeUpdaters: argv.includes('--three-updaters'),
    cpuProfDir: get('cpu-prof'),
    cpuProfComponents: list(get('cpu-prof-components'), 'plan-controller,machine-task-controller,mhc-extension,updater'),
    debugComponents: list(get('debug-components'), ''),
  };
  for (const s of o.sizes) if (!Number.isInteger(s) || s < 1) throw new Error(`--sizes: bad size ${s}`);
  for (const x of o.durations) if (!(x >= 0)) throw new Error(`--durations: bad duration ${x}`);
  if (!Number.isInteger(o.mdSize) || o.mdSize < 1) throw new Error(`--md-size: bad size ${o.mdSize}`);
  if (o.controllerMaxOldSpaceMB !== undefined && !(Number.isInteger(o.controllerMaxOldSpaceMB) && o.controllerMaxOldSpaceMB >= 64))
    throw new Error(`--controller-max-old-space: want whole MiB of at least 64, got ${String(get('controller-max-old-space'))}`);
  if (
    o.planControllerMaxOldSpaceMB !== undefined &&
    !(Number.isInteger(o.planControllerMaxOldSpaceMB) && o.planControllerMaxOldSpaceMB >= 64)
  )
    throw new Error(`--plan-controller-max-old-space: want whole MiB of at least 64, got ${String(get('plan-controller-max-old-space'))}`);
  if (!Number.isInteger(o.apiserverMaxOldSpaceMB) || o.apiserverMaxOldSpaceMB < 64)
    throw new Error(`--apiserver-max-old-space: bad size ${o.apiserverMaxOldSpaceMB} (MiB, at least 64)`);
  // The plan CRD lists at most MAX_PLAN_MDS MachineDeployments (its maxItems); a bigger fleet needs bigger ones.
  for (const s of o.sizes) {
    if (Math.ceil(s / o.mdSize) > MAX_PLAN_MDS)
      throw new Error(
        `--sizes ${s} with --md-size ${o.mdSize} makes ${Math.ceil(s / o.mdSize)} MachineDeployments; a plan names at most ${MAX_PLAN_MDS}: use --md-size ${Math.ceil(s / MAX_PLAN_MDS)} or more`,
      );
  }
  return o;
}

/** maxItems of an InPlaceUpdatePlan's spec.machineDeployments (crds/). */
const MAX_PLAN_MDS = 500;

// ---------------------------------------------------------------------------------------------------------------
// The lower bound

/** maxUnavailable resolved against a MachineDeployment's replicas (percentages round down, as Kubernetes does). */
export function concurrencyOf(maxUnavailable: number | string, replicas: number): number {
  const n = typeof maxUnavailable === 'number' ? maxUnavailable : Math.floor((Number(maxUnavailable.replace('%', '')) * replicas) / 100);
  return Math.max(1, Math.min(n, replicas));
}

/**
 * Lower bound of a plan's wall time: Σ over sequence groups of (max over the group's targets — they run in parallel —
 * of ⌈machines / concurrency⌉ × step), where the control plane (group 1) has concurrency 1 (so one step per
 * control-plane machine) and each MachineDeployment (group 2) its resolved maxUnavailable. step = d for the
 * watch-driven platform; for a poll-based orchestration a step is noticed on a retry tick: max(r, ⌈d / r⌉ × r).
 */
export function lowerBound(fleet: Fleet, maxUnavailable: number | string, step: number): number {
  const cp = fleet.cpReplicas * step;
  const mds = Math.max(
    0,
    ...fleet.mdNames.map((n) => Math.ceil(fleet.mdReplicas[n]! / concurrencyOf(maxUnavailable, fleet.mdReplicas[n]!)) * step),
  );
  return cp + mds;
}
/** The step of a poll-based orchestration with retry period r. */
export const pollStep = (d: number, r: number): number => Math.max(r, Math.ceil(d / r) * r);

// ---------------------------------------------------------------------------------------------------------------
// The platform under test

const COMPONENTS = ['plan-controller', 'machine-task-controller', 'mhc-extension'] as const;

interface Platform {
  apiserver: Proc;
  /** The API server's /metrics port (V8 heap, stored objects and watch events per resource). */
  apiserverMetricsPort: number;
  client: RestClient;
  kubeconfig: string;
  ns: string;
  fleet: Fleet;
  fleetSeconds: number;
  /** Plans run on this fleet so far: each goes one minor version up (the no-skipped-minor rule refuses more). */
  plansRun: number;
  controllers: { proc: Proc; port: number }[];
  updater: { proc: Proc; port: number; mode: 'watch' | 'poll' };
  workDir: string;
  /** The fault proxy the platform's processes talk through (--faults); transparent outside the faults case. */
  proxy?: FaultProxy;
  /** The components write CPU profiles (--cpu-prof). */
  cpuProf?: boolean;
}

/**
 * glibc malloc settings for the API server process (read at process start only, hence set by the launcher): two
 * arenas, and fixed mmap/trim thresholds of 128 KiB. By default glibc raises both after a large block (a list response,
 * a watch's initial events) is freed, up to 32/64 MiB, and then keeps that much freed memory in its heap: the server's
 * native memory (RSS beyond the V8 heap) grew 77 -> 122 MiB over 20 plans at 1,003 machines, 68 -> 83 MiB with these (bench/results/SCALING.md).
 */
export const APISERVER_GLIBC_TUNABLES = 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072';

/**
 * Waits until the controllers are ready as a Deployment's readiness probe sees them (/readyz: informers synced) and
 * the plan controller watches the fleet's provider kinds: a plan is applied to a running platform, not to processes
 * still listing the fleet (the first plan's start then included the plan controller's list of every machine).
 */
async function settled(controllers: { proc: Proc; port: number }[]): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (const c of controllers) {
    if (c.proc.name === 'plan-controller') await c.proc.waitReady(180_000, /provider kinds watched ahead of plans/);
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${c.port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`${c.proc.name}: /readyz not 200 after 180 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The faults of the faults case: as issue 25's hostile network (10 % of requests fail, half of them after executing). */
const BENCH_FAULTS: ProxyFaults = { errorRate: 0.05, ambiguousWriteRate: 0.05, dropWatchesEveryMs: 5000 };

const say = (s: string): void => {
  process.stdout.write(`${s}\n`);
};

/**
 * Node options that make a component write a V8 CPU profile when it exits (a clean exit: stopPlatform's SIGTERM), into
 * `<--cpu-prof>/<size>/<component>/`; none unless --cpu-prof names a directory and the component is profiled.
 */
function cpuProfArgs(o: Options, component: string, size: number): string[] {
  if (!o.cpuProfDir || !o.cpuProfComponents.includes(component)) return [];
  const dir = join(resolve(o.cpuProfDir), String(size), component);
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-dir', dir];
}

async function waitLog(p: Proc, marker: RegExp, timeoutMs = 120_000): Promise<void> {
  await p.waitReady(timeoutMs, marker);
}

async function startPlatform(size: number, o: Options, workDir: string): Promise<Platform> {
  mkdirSync(workDir, { recursive: true });
  const kubeconfig = join(workDir, 'kubeconfig');
  const apiserverMetricsPort = await freePort();
  // 30,000 machines with their infrastructure and bootstrap objects outgrow V8's default old space (about 4 GiB).
  // APISERVER_GLIBC_TUNABLES: glibc keeps less freed native memory (tools/local-apiserver/README.md, "Memory").
  const apiserver = new Proc(
    {
      name: 'local-apiserver',
      inplace: [
        'local-apiserver',
        '--kubeconfig-out',
        kubeconfig,
        '--metrics-port',
        String(apiserverMetricsPort),
        ...(o.apiserverHeapCompaction !== undefined ? ['--heap-compaction', o.apiserverHeapCompaction] : []),
      ],
      env: {
        NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --max-old-space-size=${o.apiserverMaxOldSpaceMB}`.trim(),
        GLIBC_TUNABLES: process.env['GLIBC_TUNABLES'] ?? APISERVER_GLIBC_TUNABLES,
      },
      nodeArgs: cpuProfArgs(o, 'local-apiserver', size),
    },
    workDir,
  );
  apiserver.start();
  await waitLog(apiserver, /listening on/);
  const client = createClient(loadKubeConfig(kubeconfig), { userAgent: 'inplace-bench', maxSockets: 64 });
  // With --faults the platform's processes talk through the proxy; this process (fleet, observer) talks to the server.
  let proxy: FaultProxy | undefined;
  let platformKubeconfig = kubeconfig;
  if (o.faults) {
    const kc = parseYaml(readFileSync(kubeconfig, 'utf8')) as {
      clusters: { cluster: { server: string } }[];
      users: { user: { token: string } }[];
    };
    proxy = await startFaultProxy(kc.clusters[0]!.cluster.server, seededRandom(Number(process.env['BENCH_FAULT_SEED'] ?? 25)));
    platformKubeconfig = join(workDir, 'proxy-kubeconfig');
    writeFileSync(platformKubeconfig, proxy.kubeconfigYaml(kc.users[0]!.user.token), { mode: 0o600 });
  }
  await installCrds(client, [...yamlFilesIn(join(ROOT, 'crds')), ...yamlFilesIn(join(ROOT, 'crds', 'samples')), ...capiCrdFiles()]);
  const ns = `bench-${size}`;
  await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const fleet = buildFleet({
    namespace: ns,
    clusterName: 'fleet',
    version: 'v1.30.0',
    workers: size,
    mdSize: o.mdSize,
    maxUnavailable: 1,
    mhcTimeout: '30m',
  });
  const t0 = Date.now();
  await applyFleet(client, fleet.objects, 64);
  const fleetSeconds = (Date.now() - t0) / 1000;
  say(
    `  fleet: ${fleet.objects.length} objects (${size + fleet.cpReplicas} machines in ${fleet.mdNames.length} MachineDeployments of ${o.mdSize} + a ${fleet.cpReplicas}-machine control plane) created in ${fleetSeconds.toFixed(1)} s`,
  );
  const controllers = [];
  for (const c of COMPONENTS) {
    const port = await freePort();
    const history = c === 'plan-controller' && o.historyLimit !== undefined ? ['--finished-plans-per-cluster', o.historyLimit] : [];
    const heap = o.controllerHeapGrowing !== undefined ? ['--heap-growing-percent', o.controllerHeapGrowing] : [];
    const debug = o.debugComponents.includes(c) ? ['--log-level', 'debug'] : [];
    const proc = new Proc(
      {
        name: c,
        inplace: [
          'run',
          c,
          '--kubeconfig',
          platformKubeconfig,
          '-n',
          ns,
          '--metrics-port',
          String(port),
          '--health-port',
          String(port),
          ...history,
          ...heap,
          ...debug,
        ],
        nodeArgs: [...cpuProfArgs(o, c, size), ...maxOldSpaceArgs(c, o.controllerMaxOldSpaceMB, o.planControllerMaxOldSpaceMB)],
      },
      workDir,
    );
    proc.start();
    controllers.push({ proc, port });
  }
  const updater = await startUpdater(platformKubeconfig, ns, 'watch', o, workDir);
  await Promise.all([...controllers.map((c) => c.proc.waitReady(180_000)), updater.proc.waitReady(180_000)]);
  await settled(controllers);
  return {
    apiserver,
    apiserverMetricsPort,
    client,
    kubeconfig: platformKubeconfig,
    ns,
    fleet,
    fleetSeconds,
    plansRun: 0,
    controllers,
    updater,
    workDir,
    ...(proxy ? { proxy } : {}),
    ...(o.cpuProfDir ? { cpuProf: true } : {}),
  };
}

async function startUpdater(
  kubeconfig: string,
  ns: string,
  mode: 'watch' | 'poll',
  o: Options,
  workDir: string,
): Promise<Platform['updater']> {
  const port = await freePort();
  const proc = new Proc(
    {
      name: `updater-${mode}`,
      tsx: 'bench/updater-main.ts',
      args: [
        '--kubeconfig',
        kubeconfig,
        '--namespace',
        ns,
        '--metrics-port',
        String(port),
        '--mode',
        mode,
        '--retry-after',
        String(o.pollRetrySeconds),
      ],
      nodeArgs: cpuProfArgs(o, 'updater', Number(ns.replace(/^bench-/, '')) || 0),
    },
    workDir,
  );
  proc.start();
  return { proc, port, mode };
}

async function stopPlatform(p: Platform): Promise<void> {
  // A profiled process writes its profile on the way out: give it time to.
  const graceMs = p.cpuProf ? 120_000 : 5000;
  await Promise.all([...p.controllers.map((c) => c.proc.stop(graceMs)), p.updater.proc.stop(graceMs)]);
  p.client.close();
  await p.proxy?.close();
  await p.apiserver.stop(graceMs);
}

// ---------------------------------------------------------------------------------------------------------------
// One plan run

/** Figures of one plan run. */
export interface CaseResult {
  name: string;
  machines: number;
  controlPlaneMachines: number;
  machineDeployments: number;
  machinesPerMachineDeployment: number;
  maxUnavailable: number | string;
  concurrencyPerMachineDeployment: number;
  durationSeconds: number;
  orchestration: 'watch' | 'poll';
  /** The faults injected in this case (--faults), with what the proxy did. */
  faults?: ProxyFaults & { failedBefore: number; failedAfter: number; watchesDropped: number };
  pollRetrySeconds?: number;
  status: string;
  wallSeconds: number;
  lowerBoundSeconds: number;
  lowerBoundFormula: string;
  ratio: number | null;
  wallMsPerMachine: number;
  overheadMs: {
    nextTask: Summary;
    /** A MachineUpdate updated -> the next one of its target created (the plan controller's share of a refill). */
    nextMachineUpdate?: Summary;
    taskToMachineUpdateUpdated: Summary;
    machineUpdateToTask: Summary;
    groupHandoff: number | undefined;
  };
  /** Where the wall time went: per-step stages, the critical path's sums, plan start and end (bench/lib/observe.ts, stages). */
  stagesMs?: Stages;
  apiRequestsPerMachine: Record<string, number>;
  apiRequestsPerMachineByComponent: Record<string, Record<string, number>>;
  /** Per component: requests per machine by `verb resource` (with the code when it was an error). */
  apiRequestsPerMachineByResource?: Record<string, Record<string, number>>;
  /**
   * The platform's requests per machine (issue 25's ≤ 12, writes ≤ 8): the controllers' requests and the updater's
   * contract traffic (its task reads and writes), not the bench updater's simulated work on the machine (its Node
   * and Machine reads, the Node write that plays the kubelet reporting the new version).
   */
  apiRequestsPerMachinePlatform?: { all: number; writes: number };
  /** Reconciles during the run per controller: count, mean duration, total busy seconds, errors (retried). */
  reconciles?: Record<string, { count: number; meanMs: number; busySeconds: number; errors: number }>;
  cpuSeconds: Record<string, number>;
  peakRssMB: Record<string, number>;
  processModel: string;
  startedAt: string;
  /** The command that produced this case. */
  command?: string;
  /** How long creating the fleet (Machines, DevMachines, KubeadmConfigs, Nodes, ...) took before the first case. */
  fleetCreateSeconds?: number;
}

type Counts = Map<string, Map<string, number>>;

/**
 * Scrapes every platform process: API requests by verb, and (key `reconcile:<controller>`) reconcile count, seconds
 * and errors. A process whose /metrics does not answer within 60 s (blocked event loop) is left out of that sample.
 */
async function requestCounts(p: Platform): Promise<Counts> {
  const out: Counts = new Map();
  for (const { proc, port } of [...p.controllers, p.updater]) {
    const text = (await scrape(port)) ?? '';
    const byVerb = new Map<string, number>();
    const detail = new Map<string, number>();
    for (const s of parseProm(text)) {
      if (s.name === 'inplace_api_requests_total') {
        byVerb.set(s.labels['verb'] ?? '?', (byVerb.get(s.labels['verb'] ?? '?') ?? 0) + s.value);
        // Which resource, and whether it failed (a 409 is a conflict the controller caused or met).
        const code = s.labels['code'] ?? '?';
        const k = `${s.labels['verb'] ?? '?'} ${s.labels['resource'] ?? '?'}${/^2|^404$/.test(code) ? '' : ` ${code}`}`;
        detail.set(k, (detail.get(k) ?? 0) + s.value);
      }
      const c = s.labels['controller'];
      if (!c) continue;
      const r = out.get(`reconcile:${c}`) ?? new Map<string, number>();
      if (s.name === 'inplace_reconcile_duration_seconds_sum') r.set('seconds', s.value);
      if (s.name === 'inplace_reconcile_duration_seconds_count') r.set('count', s.value);
      if (s.name === 'inplace_reconcile_total' && s.labels['result'] === 'error') r.set('errors', s.value);
      out.set(`reconcile:${c}`, r);
    }
    if (text) {
      out.set(proc.name.replace(/-(watch|poll)$/, ''), byVerb);
      out.set(`detail:${proc.name.replace(/-(watch|poll)$/, '')}`, detail);
    }
  }
  return out;
}

const procsOf = (p: Platform): Proc[] => [p.apiserver, ...p.controllers.map((c) => c.proc), p.updater.proc];
const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

let planCounter = 0;
/** The command line of this invocation (recorded in every case file). */
const COMMAND = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;

async function runCase(p: Platform, maxUnavailable: number | string, d: number, o: Options, faulty = false): Promise<CaseResult> {
  const fleet = p.fleet;
  const machines = fleet.objects.filter((x) => x.kind === 'Machine').length;
  const mode = p.updater.mode;
  const name = `plan-${machines}-mu${String(maxUnavailable).replace('%', 'pct')}-d${d}${mode === 'poll' ? `-poll${o.pollRetrySeconds}s` : ''}${o.threeUpdaters ? '-3u' : ''}${faulty ? '-faults' : ''}`;
  planCounter++;
  const planName = `bench-${planCounter}`;
  // Per fleet, not per invocation: a second size's fleet starts at v1.30 again.
  p.plansRun++;
  const toVersion = `v1.${30 + p.plansRun}.0`;
  await setMaxUnavailable(p.client, fleet, maxUnavailable);
  const observer = new PlanObserver(p.client, p.ns, planName);
  await observer.start();
  const countsBefore = await requestCounts(p);
  const cpuBefore = new Map(procsOf(p).map((x) => [x.name, x.stats()]));
  // Three updaters run one after the other on a machine: a step is three durations.
  const step = (mode === 'poll' ? pollStep(d, o.pollRetrySeconds) : d) * (o.threeUpdaters ? 3 : 1);
  const lb = lowerBound(fleet, maxUnavailable, step);
  const timeoutMs = Math.max(300_000, lb * 4000 + machines * 60);
  const startedAt = new Date();
  const countsProxy = p.proxy ? { ...p.proxy.counts } : undefined;
  if (faulty) p.proxy?.setFaults(BENCH_FAULTS);
  const t0 = Date.now();
  await p.client.create(
    InPlaceUpdatePlans,
    fleetPlan(fleet, { name: planName, toVersion, durationSeconds: d, ...(o.threeUpdaters ? { infraValue: `img-${planCounter}` } : {}) }),
  );
  const ticker = setInterval(() => {
    const pr = observer.progress();
    say(`      ${name}: ${pr.updated}/${machines} updated after ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }, 15_000);
  const terminal = await observer.waitTerminal(timeoutMs);
  clearInterval(ticker);
  p.proxy?.setFaults(undefined);
  const wallSeconds = ((terminal?.at ?? Date.now()) - t0) / 1000;
  const countsAfter = await requestCounts(p);
  const stats = new Map<string, ProcStats>(procsOf(p).map((x) => [x.name, x.stats()]));
  const conc = new Map<string, number>([
    [fleet.cpName, 1],
    ...fleet.mdNames.map((n): [string, number] => [n, concurrencyOf(maxUnavailable, fleet.mdReplicas[n]!)]),
  ]);
  const ov = observer.overhead(conc, fleet.cpName);
  const st = stages(observer, t0, step * 1000, conc, fleet.cpName);
  await observer.stop();

  const byComponent: Record<string, Record<string, number>> = {};
  const total: Record<string, number> = {};
  const reconciles: Record<string, { count: number; meanMs: number; busySeconds: number; errors: number }> = {};
  for (const [key, after] of countsAfter) {
    if (!key.startsWith('reconcile:')) continue;
    const b = countsBefore.get(key) ?? new Map<string, number>();
    const count = (after.get('count') ?? 0) - (b.get('count') ?? 0);
    const secs = (after.get('seconds') ?? 0) - (b.get('seconds') ?? 0);
    reconciles[key.slice('reconcile:'.length)] = {
      count,
      meanMs: count > 0 ? round((secs * 1000) / count, 1) : 0,
      busySeconds: round(secs, 1),
      errors: (after.get('errors') ?? 0) - (b.get('errors') ?? 0),
    };
  }
  const byResource: Record<string, Record<string, number>> = {};
  for (const [key, after] of countsAfter) {
    if (!key.startsWith('detail:')) continue;
    const before = countsBefore.get(key) ?? new Map<string, number>();
    const row: Record<string, number> = {};
    for (const [k, n] of [...after].sort(([a], [b]) => a.localeCompare(b))) {
      const delta = n - (before.get(k) ?? 0);
      if (delta > 0) row[k] = round(delta / machines, 3);
    }
    byResource[key.slice('detail:'.length)] = row;
  }
  for (const [comp, after] of countsAfter) {
    if (comp.startsWith('reconcile:') || comp.startsWith('detail:') || !countsBefore.has(comp)) continue;
    const before = countsBefore.get(comp) ?? new Map<string, number>();
    const row: Record<string, number> = {};
    for (const [verb, n] of after) {
      const delta = n - (before.get(verb) ?? 0);
      if (delta <= 0) continue;
      row[verb] = round(delta / machines, 3);
      total[verb] = round((total[verb] ?? 0) + delta / machines, 3);
    }
    byComponent[comp] = row;
  }
  total['all'] = round(
    Object.values(total).reduce((a, b) => a + b, 0),
    3,
  );
  const mdReplicas = fleet.mdReplicas[fleet.mdNames[0]!]!;
  const r: CaseResult = {
    name,
    machines,
    controlPlaneMachines: fleet.cpReplicas,
    machineDeployments: fleet.mdNames.length,
    machinesPerMachineDeployment: mdReplicas,
    maxUnavailable,
    concurrencyPerMachineDeployment: concurrencyOf(maxUnavailable, mdReplicas),
    durationSeconds: d,
    orchestration: mode,
    ...(mode === 'poll' ? { pollRetrySeconds: o.pollRetrySeconds } : {}),
    status: terminal?.status ?? `timeout after ${Math.round(timeoutMs / 1000)} s (${JSON.stringify(observer.progress())})`,
    wallSeconds: round(wallSeconds),
    lowerBoundSeconds: round(lb),
    lowerBoundFormula: `${fleet.cpReplicas} control-plane machines x ${step}s + max over ${fleet.mdNames.length} MachineDeployments of ceil(${mdReplicas}/${concurrencyOf(maxUnavailable, mdReplicas)}) x ${step}s`,
    ratio: lb > 0 ? round(wallSeconds / lb, 3) : null,
    wallMsPerMachine: round((wallSeconds * 1000) / machines, 2),
    overheadMs: {
      nextTask: ov.nextTask,
      nextMachineUpdate: ov.nextMachineUpdate,
      taskToMachineUpdateUpdated: ov.taskToMuUpdated,
      machineUpdateToTask: ov.muToTask,
      groupHandoff: ov.groupHandoffMs,
    },
    stagesMs: st,
    apiRequestsPerMachine: total,
    apiRequestsPerMachineByComponent: byComponent,
    apiRequestsPerMachineByResource: byResource,
    apiRequestsPerMachinePlatform: platformRequests(byResource),
    reconciles,
    cpuSeconds: Object.fromEntries([...stats].map(([k, s]) => [k, round(s.cpuSeconds - (cpuBefore.get(k)?.cpuSeconds ?? 0))])),
    peakRssMB: Object.fromEntries([...stats].map(([k, s]) => [k, round(s.peakRssBytes / 2 ** 20, 1)])),
    processModel:
      'separate child processes: inplace local-apiserver; inplace run <component> (plan-controller, machine-task-controller, mhc-extension); bench/updater-main.ts; CPU from /proc/<pid>/stat (delta over the run), peak RSS = VmHWM since process start',
    startedAt: startedAt.toISOString(),
    command: COMMAND,
    fleetCreateSeconds: round(p.fleetSeconds, 1),
    ...(faulty && p.proxy && countsProxy
      ? {
          faults: {
            ...BENCH_FAULTS,
            failedBefore: p.proxy.counts.failedBefore - countsProxy.failedBefore,
            failedAfter: p.proxy.counts.failedAfter - countsProxy.failedAfter,
            watchesDropped: p.proxy.counts.watchesDropped - countsProxy.watchesDropped,
          },
        }
      : {}),
  };
  say(
    `    ${name}: ${r.status} in ${r.wallSeconds} s (lower bound ${r.lowerBoundSeconds} s${r.ratio !== null ? `, ratio ${r.ratio}` : ''}); next task after a slot frees: median ${fmt(ov.nextTask.median)} ms, p99 ${fmt(ov.nextTask.p99)} ms (next MachineUpdate: median ${fmt(ov.nextMachineUpdate.median)} ms, p99 ${fmt(ov.nextMachineUpdate.p99)} ms); ${total['all']} API requests/machine (platform ${r.apiRequestsPerMachinePlatform?.all ?? '-'}, writes ${r.apiRequestsPerMachinePlatform?.writes ?? '-'})`,
  );
  say(stagesText(st));
  await cleanup(p, planName);
  return r;
}

const WRITE_VERBS = new Set(['create', 'patch', 'update', 'delete', 'deletecollection']);

/** The platform's share of `byResource`: every component but the updater, and the updater's task requests. */
export function platformRequests(byResource: Record<string, Record<string, number>>): { all: number; writes: number } {
  let all = 0;
  let writes = 0;
  for (const [comp, row] of Object.entries(byResource)) {
    for (const [key, n] of Object.entries(row)) {
      const [verb = '', resource = ''] = key.split(' ');
      if (comp.startsWith('updater') && !resource.startsWith('updaterupdatetasks.')) continue;
      all += n;
      if (WRITE_VERBS.has(verb)) writes += n;
    }
  }
  return { all: round(all, 3), writes: round(writes, 3) };
}

const fmt = (x: number): string => (Number.isFinite(x) ? String(Math.round(x)) : '-');
const fmtU = (x: number | undefined): string => (x === undefined ? '-' : fmt(x));

/** The stage breakdown of one case, for the console (the same figures as `stagesMs` in the case JSON). */
export function stagesText(st: Stages): string {
  const row = (label: string, x: Summary): string =>
    `      ${label}: median ${fmt(x.median)} / mean ${fmt(x.mean)} / p99 ${fmt(x.p99)} ms (n ${x.n})`;
  const c = st.criticalPath;
  return [
    '      where a step goes (ms, per machine step):',
    row('slot free → MachineUpdate created', st.perStep.slotFreeToMuCreated),
    row('MachineUpdate created → task created', st.perStep.muCreatedToTaskCreated),
    row('task created → updater started', st.perStep.taskCreatedToUpdaterStarted),
    row('updater started → task updated', st.perStep.updaterStartedToUpdated),
    row("updater's own overrun (completionTime − startTime − d)", st.perStep.updaterOverrun),
    row('task updated → MachineUpdate updated', st.perStep.taskUpdatedToMuUpdated),
    `      critical path (control plane + ${c.target ?? '-'}, ${c.steps} steps), overhead summed in ms: plan start ${fmt(c.planStart)}, slot free → MU ${fmt(c.slotFreeToMuCreated)}, MU → task ${fmt(c.muCreatedToTaskCreated)}, task → updater started ${fmt(c.taskCreatedToUpdaterStarted)}, updater beyond d ${fmt(c.updaterOverrun)}, task → MU updated ${fmt(c.taskUpdatedToMuUpdated)}, control plane → MachineDeployments ${fmt(c.handoff)}, plan end ${fmt(c.planEnd)}; total ${fmt(c.total)}`,
    `      plan start: created → first MachineUpdate ${fmtU(st.planStart.toFirstMu)}, → first MachineDeployment MachineUpdate ${fmtU(st.planStart.toFirstMdMu)}; plan end: last MachineUpdate updated → plan terminal ${fmtU(st.planEnd.lastMuUpdatedToPlanTerminal)}, last target updated → plan terminal ${fmtU(st.planEnd.lastTargetToPlanTerminal)}; per target, last MachineUpdate updated → target updated: median ${fmt(st.planEnd.lastMuToTargetUpdated.median)} / p99 ${fmt(st.planEnd.lastMuToTargetUpdated.p99)} / max ${fmt(st.planEnd.lastMuToTargetUpdated.max)}`,
  ].join('\n');
}

/** Deletes the plan and waits until its MachineUpdates and tasks are gone (garbage collection), so runs do not interfere. */
async function cleanup(p: Platform, planName: string): Promise<void> {
  await p.client.delete(InPlaceUpdatePlans, p.ns, planName).catch(() => undefined);
  const deadline = Date.now() + 15 * 60_000;
  while (Date.now() < deadline) {
    const sel = { labelSelector: `${Labels.planName}=${planName}`, limit: 1 };
    const [mus, tasks, plan] = await Promise.all([
      p.client.list(MachineUpdates, p.ns, sel),
      p.client.list(UpdaterUpdateTasks, p.ns, sel),
      p.client.get(InPlaceUpdatePlans, p.ns, planName),
    ]);
    if (mus.items.length === 0 && tasks.items.length === 0 && !plan) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  say(`    warning: plan ${planName} was not fully cleaned up after 15 min`);
}

// ---------------------------------------------------------------------------------------------------------------
// Report

function table(results: CaseResult[]): string {
  const verbs = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'];
  const head = [
    'machines',
    'maxUnavailable (per MD)',
    'd (s)',
    'orchestration',
    'status',
    'wall (s)',
    'lower bound (s)',
    'ratio',
    'wall/machine (ms)',
    'next task after slot frees: median / p99 (ms)',
    'task updated → MU updated: median / p99 (ms)',
    'API req/machine (all)',
    'platform req/machine (writes)',
    ...verbs.map((v) => `${v}/machine`),
    'CPU s: apiserver / plan / tasks / mhc / updater',
    'peak RSS MB: apiserver / plan / tasks / mhc / updater',
    'run started (UTC)',
  ];
  const procOrder = ['local-apiserver', 'plan-controller', 'machine-task-controller', 'mhc-extension'];
  const rows = results.map((r) => {
    const upd = Object.keys(r.cpuSeconds).find((k) => k.startsWith('updater')) ?? '';
    const order = [...procOrder, upd];
    return [
      String(r.machines),
      `${r.maxUnavailable} (=${r.concurrencyPerMachineDeployment} of ${r.machinesPerMachineDeployment})`,
      String(r.durationSeconds),
      r.orchestration +
        (r.pollRetrySeconds ? ` (${r.pollRetrySeconds}s)` : '') +
        (r.faults
          ? ` + faults (${Math.round((r.faults.errorRate + r.faults.ambiguousWriteRate) * 100)} % errors, half after executing; watches dropped every ${r.faults.dropWatchesEveryMs / 1000} s)`
          : ''),
      r.status,
      String(r.wallSeconds),
      String(r.lowerBoundSeconds),
      r.ratio === null ? '–' : String(r.ratio),
      String(r.wallMsPerMachine),
      `${fmt(r.overheadMs.nextTask.median)} / ${fmt(r.overheadMs.nextTask.p99)}`,
      `${fmt(r.overheadMs.taskToMachineUpdateUpdated.median)} / ${fmt(r.overheadMs.taskToMachineUpdateUpdated.p99)}`,
      String(r.apiRequestsPerMachine['all'] ?? 0),
      r.apiRequestsPerMachinePlatform ? `${r.apiRequestsPerMachinePlatform.all} (${r.apiRequestsPerMachinePlatform.writes})` : '–',
      ...verbs.map((v) => String(r.apiRequestsPerMachine[v] ?? 0)),
      order.map((k) => r.cpuSeconds[k] ?? '-').join(' / '),
      order.map((k) => r.peakRssMB[k] ?? '-').join(' / '),
      r.startedAt.slice(0, 16).replace('T', ' '),
    ];
  });
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

function reconcileTable(results: CaseResult[]): string {
  const withData = results.filter((r) => r.reconciles && Object.keys(r.reconciles).length);
  if (!withData.length) return '';
  const ctrls = [...new Set(withData.flatMap((r) => Object.keys(r.reconciles!)))].sort();
  const head = ['case', ...ctrls.map((c) => `${c}: reconciles / mean ms / busy s / errors`)];
  return [
    "Reconciles during each run (from each process's inplace_reconcile_* metrics; busy s = summed reconcile time; a controller busy close to its wall time x concurrency is the bottleneck):",
    '',
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...withData.map(
      (r) =>
        `| ${r.name} | ${ctrls
          .map((c) => {
            const x = r.reconciles![c];
            return x ? `${x.count} / ${x.meanMs} / ${x.busySeconds} / ${x.errors}` : '–';
          })
          .join(' | ')} |`,
    ),
  ].join('\n');
}

function pollTable(results: CaseResult[], o: Options, fleets: Map<number, Fleet>): string {
  const lines = [
    '| machines | maxUnavailable | d (s) | watch-driven lower bound (s) | poll every r s lower bound (s) | poll / watch |',
    '|---|---|---|---|---|---|',
  ];
  const seen = new Set<string>();
  for (const r of results) {
    if (r.orchestration !== 'watch' || r.durationSeconds === 0) continue;
    const key = `${r.machines}/${r.maxUnavailable}/${r.durationSeconds}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const fleet = fleets.get(r.machines)!;
    const w = lowerBound(fleet, r.maxUnavailable, r.durationSeconds);
    const pl = lowerBound(fleet, r.maxUnavailable, pollStep(r.durationSeconds, o.pollRetrySeconds));
    lines.push(`| ${r.machines} | ${r.maxUnavailable} | ${r.durationSeconds} | ${round(w)} | ${round(pl)} | ${round(pl / w)}× |`);
  }
  const measured = results
    .filter((r) => r.orchestration === 'poll')
    .map((pr) => {
      const wr = results.find(
        (r) =>
          r.orchestration === 'watch' &&
          r.machines === pr.machines &&
          r.maxUnavailable === pr.maxUnavailable &&
          r.durationSeconds === pr.durationSeconds,
      );
      return `| ${pr.machines} | ${pr.maxUnavailable} | ${pr.durationSeconds} | ${wr ? wr.wallSeconds : '–'} | ${pr.wallSeconds} | ${wr ? `${round(pr.wallSeconds / wr.wallSeconds)}×` : '–'} |`;
    });
  return [
    `Analytical (r = ${o.pollRetrySeconds} s; a poll-driven step takes max(r, ⌈d/r⌉·r) because completion is only noticed on a retry tick):`,
    '',
    ...lines,
    '',
    'Measured (same fleet, same plan; only the updater process differs):',
    '',
    '| machines | maxUnavailable | d (s) | watch-driven wall (s) | poll-driven wall (s) | poll / watch |',
    '|---|---|---|---|---|---|',
    ...measured,
  ].join('\n');
}

/** Every case file in the results directory (earlier invocations included), in a stable order. */
function allResults(out: string): CaseResult[] {
  const rs = readdirSync(out)
    .filter((f) => f.endsWith('.json') && f.startsWith('plan-'))
    .map((f) => JSON.parse(readFileSync(join(out, f), 'utf8')) as CaseResult);
  const muKey = (m: number | string): number => (typeof m === 'number' ? m : 1e6 + Number(m.replace('%', '')));
  return rs.sort(
    (a, b) =>
      a.machines - b.machines ||
      (a.orchestration === b.orchestration ? 0 : a.orchestration === 'watch' ? -1 : 1) ||
      b.durationSeconds - a.durationSeconds ||
      muKey(a.maxUnavailable) - muKey(b.maxUnavailable),
  );
}

function readme(
  results: CaseResult[],
  apiserverResult: unknown,
  o: Options,
  fleets: Map<number, Fleet>,
  fleetSeconds: Map<number, number>,
): string {
  const commands = [...new Set(results.map((r) => r.command ?? 'npm run bench'))];
  for (const r of results)
    if (r.fleetCreateSeconds !== undefined && !fleetSeconds.has(r.machines)) fleetSeconds.set(r.machines, r.fleetCreateSeconds);
  return `# Benchmark results

Produced by ${commands.map((c) => `\`${c}\``).join(' and ')} (each case file records its command and start time); machine:
${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}. Figures are from one
run each, not averages; nothing else ran on the machine during the runs recorded here (each row has its start time).
See SCALING.md for what limited scale and what changed between runs.

## How to reproduce

\`\`\`sh
npm run bench                                              # default: 1,000 machines, maxUnavailable 1 / 10% / 100%, d = 2 s and 0
npm run bench -- --sizes 10000 --max-unavailable 1,10%,100% --durations 2,0 --no-poll --no-apiserver
npm run bench -- --sizes 30000 --md-size 100 --max-unavailable 1,10%,100% --durations 2 --no-poll --no-apiserver
                                                           # a plan names at most 500 MachineDeployments: 30,000 machines need --md-size ≥ 60
\`\`\`

Options: \`--sizes\` (worker machines; a 3-machine control plane is added), \`--duration d\` (the updater's simulated
seconds; runs use d and 0) or \`--durations a,b\`, \`--max-unavailable 1,10%,100%\` (set on every MachineDeployment),
\`--md-size\` (machines per MachineDeployment, default 50), \`--no-poll\`, \`--poll-retry 5\`, \`--poll-max-unavailable 10%\`,
\`--no-apiserver\`, \`--apiserver-sizes 10000\`, \`--three-updaters\` (each target also writes the InfraMachine's image and the BootstrapConfig's NTP: three tasks per machine, template clones at each target's end; the lower bound counts one d per updater), \`--faults\` (the platform talks through a fault proxy; the first case is re-run with 5 % of requests failing before the server, 5 % of writes failing after it and watches dropped every 5 s: completion time under faults next to the clean run), \`--cpu-prof DIR\` (V8 CPU profiles of the controllers and the updater in \`DIR/<size>/<component>/\`, written when they stop; \`npx tsx bench/cpu-prof.ts DIR/<size>/plan-controller\` lists self and total time by function), \`--debug-components plan-controller\` (those controllers log at debug level: the plan controller one line per reconcile with its phases' milliseconds). Each case writes \`bench/results/<case>.json\`.

## Setup

One cluster: a 3-machine KubeadmControlPlane (sequence 1) and N MachineDeployments of m machines (sequence 2, all
in parallel), built with the capi-sim inventory builder and created in parallel, 64 requests in flight${fleetSeconds.size ? ` (${[...fleetSeconds].map(([n, s]) => `${n} machines: ${s.toFixed(1)} s`).join(', ')})` : ''}.
The plan has one updater per target (the reference updater, generic UpdaterUpdateTask) owning Machine \`/spec/version\`.
Every component is its own process with its default settings: \`inplace local-apiserver\` (HTTPS), \`inplace run plan-controller|machine-task-controller|mhc-extension -n <ns> --metrics-port N\`,
and \`bench/updater-main.ts\` (the reference updater with an instrumented client and 64 workers (it plays one agent per machine); or its poll-based variant). An
MHC with the in-place-update annotation selects every machine, so the MHC extension works during the plan too.
Between cases the plan is deleted and its MachineUpdates and tasks garbage-collected.

**Lower bound** = Σ over sequence groups of max over the targets of the group (they run in parallel) of
⌈machines / concurrency⌉ × d, with concurrency 1 for the control plane (one d per control-plane machine) and the
resolved maxUnavailable (percentages rounded down, at least 1) for each MachineDeployment. Here:
3 × d + ⌈m / c⌉ × d, m = machines per MachineDeployment (50; 100 at 30,000 machines; the maxUnavailable column shows it). **ratio** = wall / lower bound (undefined for d = 0; see wall/machine).

**Overhead per machine step** (ms, from watch events received by the benchmark process):
*next task after a slot frees* = a task's status seen \`updated\` → the next task of the same target seen created
(commit + MachineUpdate status + plan controller starting the next machine + machine task controller creating its
task); *task updated → MU updated* = the commit and MachineUpdate status alone.

**API requests per machine** = increase of \`inplace_api_requests_total\` (by verb) of every platform process over the
run, divided by the machines (watch = watch requests opened, not events). **CPU s** = user+system seconds of each
process during the run (/proc/<pid>/stat); **peak RSS** = VmHWM (peak since the process started).

## Plan throughput

${table(results)}

${reconcileTable(results)}

## Watch-driven completion vs. poll-based orchestration (upstream webhook design, retryAfterSeconds = ${o.pollRetrySeconds})

${pollTable(results, o, fleets)}

## Completion detection: Cluster API's hooks (poll) vs. the plan flow (watch) (bench/hooks-latency.ts)

${hooksSection(o.out)}

## Idle cost and plan history (bench/history.ts)

${historySection(o.out)}

## Local API server (bench/local-apiserver.ts)

${apiserverResult === undefined ? 'skipped (--no-apiserver)' : `\`\`\`json\n${JSON.stringify(apiserverResult, null, 2)}\n\`\`\``}
`;
}

type PhaseFigures = { machines: number; medianMs: number; p90Ms: number; maxMs: number; wallSeconds: number };
type HooksFile = {
  fleet: { controlPlane: number; workers: number };
  updaterDurationSeconds: number;
  retryAfterSeconds: number;
  planFlow: PhaseFigures;
  hooksFlow: PhaseFigures & { machinesCreated: number; machinesDeleted: number };
};

/** The hooks-latency case, when its file is there. */
function hooksSection(out: string): string {
  const path = join(out, 'hooks-latency.json');
  if (!existsSync(path)) return 'not run (`npm run bench -- --hooks-latency`)';
  const h = JSON.parse(readFileSync(path, 'utf8')) as HooksFile;
  const row = (name: string, r: PhaseFigures): string =>
    `| ${name} | ${r.machines} | ${r.medianMs} | ${r.p90Ms} | ${r.maxMs} | ${r.wallSeconds} |`;
  return `\`npm run bench -- --hooks-latency --sizes ${h.fleet.workers} --cp ${h.fleet.controlPlane} --retry-after ${h.retryAfterSeconds} --duration ${h.updaterDurationSeconds}\`:
the same fleet updated twice in one run, each machine by updaters of ${h.updaterDurationSeconds} s. Latency = the flow noticing a machine
done − the benchmark's own watch seeing its last task terminal. With the hooks, Cluster API (capi-sim, InPlaceUpdates)
notices on its next UpdateMachine poll (retryAfterSeconds ${h.retryAfterSeconds}); replaced machines: ${h.hooksFlow.machinesCreated} created, ${h.hooksFlow.machinesDeleted} deleted.

| Flow | machines | median ms | p90 ms | max ms | wall s |
|------|---------:|----------:|-------:|-------:|-------:|
${row('plan flow (watch)', h.planFlow)}
${row(`hooks (poll every ${h.retryAfterSeconds} s)`, h.hooksFlow)}`;
}

type HistoryFile = {
  machines: number;
  rows: { plan: string; plansLeft: number; machineUpdatesLeft: number; rssMB: Record<string, number> }[];
};

/** The history cases there are: plans and MachineUpdates left, and RSS per process, after the second and the last plan. */
function historySection(out: string): string {
  const files = readdirSync(out).filter((f) => f.startsWith('history-') && f.endsWith('.json'));
  if (files.length === 0) return 'not run (`npm run bench -- --history-plans 20 --sizes 1000 --max-unavailable 10% --durations 0`)';
  const lines = [
    '| File | machines | plans | plans left | MachineUpdates left | RSS MiB after plan 2 → last |',
    '|---|---:|---:|---:|---:|---|',
  ];
  for (const f of files.sort()) {
    const h = JSON.parse(readFileSync(join(out, f), 'utf8')) as HistoryFile;
    const second = h.rows[1] ?? h.rows[0];
    const last = h.rows[h.rows.length - 1];
    if (!second || !last) continue;
    const rss = Object.keys(last.rssMB)
      .map((k) => `${k} ${second.rssMB[k] ?? '?'} → ${last.rssMB[k]}`)
      .join(', ');
    lines.push(`| ${f} | ${h.machines} | ${h.rows.length} | ${last.plansLeft} | ${last.machineUpdatesLeft} | ${rss} |`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Main

/** Rewrites bench/results/README.md from every case file there (so several invocations add up to one report). */
function writeReport(o: Options, fleets: Map<number, Fleet>, fleetSeconds: Map<number, number>, apiserverResult?: unknown): void {
  const all = allResults(o.out);
  const apiPath = join(o.out, 'local-apiserver.json');
  const api = apiserverResult ?? (existsSync(apiPath) ? (JSON.parse(readFileSync(apiPath, 'utf8')) as unknown) : undefined);
  for (const r of all) {
    if (!fleets.has(r.machines))
      fleets.set(
        r.machines,
        buildFleet({
          namespace: 'x',
          clusterName: 'fleet',
          version: 'v1.30.0',
          workers: r.machines - r.controlPlaneMachines,
          mdSize: r.machinesPerMachineDeployment,
        }),
      );
  }
  writeFileSync(join(o.out, 'README.md'), readme(all, api, o, fleets, fleetSeconds));
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = parseOptions(argv);
  mkdirSync(o.out, { recursive: true });
  if (argv.includes('--report-only')) {
    writeReport(o, new Map(), new Map());
    say(`wrote ${relative(process.cwd(), join(o.out, 'README.md'))} from the case files in ${o.out}`);
    return;
  }
  if (argv.includes('--campaign')) {
    // One campaign over many clusters (issue 27): bench/campaign.ts.
    const arg = (name: string): string | undefined => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined);
    const wave = arg('wave') ?? '10%';
    await runCampaignCase(
      {
        clusters: Number(arg('clusters') ?? 30),
        cp: Number(arg('cp') ?? 1),
        workers: Number(arg('workers') ?? 2),
        workerMaxUnavailable: Number(arg('worker-max-unavailable') ?? 1),
        wave: wave.endsWith('%') ? wave : Number(wave),
        canaries: Number(arg('canaries') ?? 1),
        soakSeconds: Number(arg('soak') ?? 0),
        durationSeconds: Number(arg('duration') ?? 1),
        ...(arg('max-wall') !== undefined ? { maxWallSeconds: Number(arg('max-wall')) } : {}),
        apiserverMaxOldSpaceMB: o.apiserverMaxOldSpaceMB,
        ...(o.controllerMaxOldSpaceMB !== undefined ? { controllerMaxOldSpaceMB: o.controllerMaxOldSpaceMB } : {}),
        ...(o.planControllerMaxOldSpaceMB !== undefined ? { planControllerMaxOldSpaceMB: o.planControllerMaxOldSpaceMB } : {}),
        out: o.out,
        command: COMMAND,
        dashboard: argv.includes('--dashboard'),
        ...(arg('server-kubeconfig') !== undefined
          ? { server: { kubeconfig: resolve(arg('server-kubeconfig')!), measured: externalProcs(arg('server-pids')) } }
          : {}),
        ...(o.cpuProfDir
          ? {
              cpuProf: {
                dir: resolve(o.cpuProfDir),
                components: (
                  arg('cpu-prof-components') ?? 'local-apiserver,plan-controller,machine-task-controller,campaign-controller,updater'
                )
                  .split(',')
                  .map((s) => s.trim()),
              },
            }
          : {}),
      },
      say,
    );
    return;
  }
  if (argv.includes('--hooks-latency')) {
    // Completion detection latency, hooks (poll on retryAfterSeconds) vs the plan flow (watch): bench/hooks-latency.ts.
    const arg = (name: string): string | undefined => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined);
    await runHooksLatencyCase(
      {
        workers: Number(arg('sizes') ?? 6),
        cp: Number(arg('cp') ?? 3),
        retryAfterSeconds: Number(arg('retry-after') ?? 5),
        durationSeconds: Number(arg('duration') ?? 1),
        out: o.out,
      },
      say,
    );
    writeReport(o, new Map(), new Map());
    return;
  }
  const started = Date.now();
  const results: CaseResult[] = [];
  const fleets = new Map<number, Fleet>();
  const fleetSeconds = new Map<number, number>();
  let current: Platform | undefined;
  const killAll = (): void => {
    for (const p of current ? procsOf(current) : []) p.proc?.kill('SIGKILL');
  };
  process.once('exit', killAll);
  process.once('SIGINT', () => {
    killAll();
    process.exit(130);
  });
  say(
    `bench: sizes ${o.sizes.join(', ')}; maxUnavailable ${o.maxUnavailable.join(', ')}; d ${o.durations.join(', ')} s; poll comparison ${o.poll ? `r=${o.pollRetrySeconds}s at ${o.sizes[0]} machines` : 'off'}`,
  );
  if (o.historyPlans > 0) {
    for (const size of o.sizes) {
      say(`\n== idle and history: ${size} worker machines`);
      const p = await startPlatform(size, o, join(ROOT, '.inplace', 'bench', `history-${size}`));
      current = p;
      try {
        await runHistoryCase(
          {
            client: p.client,
            ns: p.ns,
            fleet: p.fleet,
            procs: procsOf(p),
            metricsPorts: Object.fromEntries([
              [p.apiserver.name, p.apiserverMetricsPort],
              ...[...p.controllers, p.updater].map((c) => [c.proc.name, c.port]),
            ]),
          },
          {
            plans: o.historyPlans,
            maxUnavailable: o.maxUnavailable[0] ?? '10%',
            durationSeconds: o.durations[0] ?? 0,
            idleSeconds: o.idleSeconds,
            out: o.out,
          },
        );
      } finally {
        await stopPlatform(p);
        current = undefined;
      }
    }
    writeReport(o, new Map(), new Map());
    return;
  }
  for (const size of o.sizes) {
    say(`\n== ${size} worker machines`);
    const workDir = join(ROOT, '.inplace', 'bench', String(size));
    const p = await startPlatform(size, o, workDir);
    current = p;
    fleets.set(size + p.fleet.cpReplicas, p.fleet);
    fleetSeconds.set(size + p.fleet.cpReplicas, p.fleetSeconds);
    try {
      for (const d of o.durations) {
        for (const mu of o.maxUnavailable) {
          const r = await runCase(p, mu, d, o);
          results.push(r);
          writeFileSync(join(o.out, `${r.name}.json`), JSON.stringify(r, null, 2));
          writeReport(o, fleets, fleetSeconds);
        }
      }
      if (o.faults) {
        // The first case again with the proxy failing requests: completion time under faults next to the clean run.
        const r = await runCase(p, o.maxUnavailable[0] ?? 1, o.durations[0] ?? 2, o, true);
        results.push(r);
        writeFileSync(join(o.out, `${r.name}.json`), JSON.stringify(r, null, 2));
        writeReport(o, fleets, fleetSeconds);
      }
      if (o.poll && size === o.sizes[0]) {
        await p.updater.proc.stop();
        p.updater = await startUpdater(p.kubeconfig, p.ns, 'poll', o, workDir);
        await p.updater.proc.waitReady(180_000);
        for (const mu of o.pollMaxUnavailable) {
          const r = await runCase(p, mu, o.pollDuration, o);
          results.push(r);
          writeFileSync(join(o.out, `${r.name}.json`), JSON.stringify(r, null, 2));
          writeReport(o, fleets, fleetSeconds);
        }
      }
    } finally {
      await stopPlatform(p);
      current = undefined;
    }
  }
  let apiserverResult: unknown;
  if (o.apiserver) {
    say('\n== local API server');
    try {
      const mod = (await import('./local-apiserver.js')) as { benchLocalApiServer?: (sizes: number[]) => Promise<object> };
      if (mod.benchLocalApiServer) {
        apiserverResult = await mod.benchLocalApiServer(o.apiserverSizes);
        writeFileSync(join(o.out, 'local-apiserver.json'), JSON.stringify(apiserverResult, null, 2));
        say(JSON.stringify(apiserverResult));
      }
    } catch (err) {
      apiserverResult = { error: (err as Error).message };
      say(`  local API server bench failed: ${(err as Error).message}`);
    }
  }
  writeReport(o, fleets, fleetSeconds, apiserverResult);
  say(
    `\n${table(results)}\n\nwrote ${relative(process.cwd(), join(o.out, 'README.md'))} and ${results.length} case files in ${Math.round((Date.now() - started) / 1000)} s`,
  );
}

await main();
process.exit(0);
