// `inplace demo` (= npm start): the whole platform on the local API server, updating a demo CAPI cluster,
// with live progress and a summary. Components run as separate processes, as they would in a cluster.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { Namespaces } from '../api/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../runtime/index.js';
import { finalState, followPlan } from './demo-follow.js';
import { yamlFilesIn } from './files.js';
import { applyFile, createOrReplace, installCrds, readYamlDocs } from './install.js';
import { spawnInplace, stopChildren, tailLog, projectRoot, type Child } from './procs.js';
import { renderSummary, secs } from './progress.js';
import { safeLines, safeText } from './safe-text.js';
import { CliError, ExitCode, flag, secondsOption, str, UsageError, type Io, type Verb } from './verb.js';

/** The demo inventory (docs/design.md §7): one cluster, a 3-machine control plane, two 3-machine MachineDeployments, an MHC. */
export const DEMO = {
  namespace: 'fleet-a',
  clusterName: 'cluster1',
  version: 'v1.29.5',
  controlPlane: { name: 'cluster1-cp', replicas: 3 },
  machineDeployments: [
    { name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 },
    { name: 'cluster1-md-1', replicas: 3, maxUnavailable: 1 },
  ],
  mhc: { name: 'cluster1-mhc', inPlaceUpdateTimeout: '10m', unhealthyLessThanOrEqualTo: '40%', nodeStartupTimeoutSeconds: 600 },
} as const;

/** Exit code of a demo interrupted by Ctrl-C (128 + SIGINT). */
const INTERRUPTED = 130;

/** `inplace demo`. */
export const demoVerb: Verb = {
  name: 'demo',
  summary: 'Run the whole platform on a local API server and update a demo cluster',
  help: `Usage: inplace demo [--plan FILE] [--keep-running] [--state-out FILE] [--timeout SECONDS]   (npm start)

Starts the local API server (HTTPS on loopback), writes a kubeconfig to .inplace/demo/kubeconfig,
installs the CRDs and a demo CAPI inventory (namespace ${DEMO.namespace}: cluster ${DEMO.clusterName}, control plane
${DEMO.controlPlane.name} x3, MachineDeployments ${DEMO.machineDeployments.map((m) => m.name).join(', ')} x3, a MachineHealthCheck), starts every
controller, the sample updaters and a CAPI simulator as separate processes, applies the plan and
shows live progress until the plan is terminal, then a summary.
Exit code 0 when the plan ended updated with every change committed, 1 otherwise, 130 on Ctrl-C.

Options:
  --plan FILE         plan (and templates) to apply (default: examples/plan.yaml)
  --keep-running      stay up after the plan finished (explore with kubectl; Ctrl-C to stop)
  --state-out FILE    write the final plan, MachineUpdates and Machines as JSON
  --timeout SECONDS   give up when the plan is not terminal after this long (default: 300)
  --work-dir DIR      where the kubeconfig and logs go (default: .inplace/demo)`,
  options: {
    plan: { type: 'string' },
    'keep-running': { type: 'boolean' },
    'state-out': { type: 'string' },
    timeout: { type: 'string' },
    'work-dir': { type: 'string' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const root = projectRoot();
    const planPath = resolve(str(args, 'plan') ?? join(root, 'examples', 'plan.yaml'));
    // Read and check the plan before starting anything: a wrong file fails in a second, not after the setup.
    const planDoc = readYamlDocs(planPath).find((d) => d.kind === 'InPlaceUpdatePlan');
    if (!planDoc?.metadata?.name)
      throw new CliError(
        `"${planPath}" contains no InPlaceUpdatePlan with a name`,
        'pass a file with an InPlaceUpdatePlan (see examples/plan.yaml)',
      );
    return runDemo(
      {
        root,
        planPath,
        planName: planDoc.metadata.name,
        planNamespace: planDoc.metadata.namespace ?? DEMO.namespace,
        keepRunning: flag(args, 'keep-running'),
        stateOut: str(args, 'state-out'),
        timeoutMs: secondsOption(args, 'timeout', 300) * 1000,
        workDir: resolve(str(args, 'work-dir') ?? join(root, '.inplace', 'demo')),
      },
      io,
    );
  },
};

interface DemoOptions {
  root: string;
  planPath: string;
  planName: string;
  planNamespace: string;
  keepRunning: boolean;
  stateOut: string | undefined;
  timeoutMs: number;
  workDir: string;
}

async function runDemo(o: DemoOptions, io: Io): Promise<number> {
  const started = Date.now();
  const say = (s: string): void => io.out(`${s}\n`);
  const logDir = join(o.workDir, 'logs');
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });

  const children: Child[] = [];
  let server: { close(): Promise<void> } | undefined;
  let client: RestClient | undefined;
  const shutdown = async (): Promise<void> => {
    await stopChildren(children);
    client?.close();
    await server?.close();
  };

  try {
    const { startLocalApiServer } = await import('../local-apiserver/index.js');
    const srv = await startLocalApiServer({ https: true });
    server = srv;
    const kubeconfig = join(o.workDir, 'kubeconfig');
    await srv.writeKubeconfig(kubeconfig);
    const rel = relative(process.cwd(), kubeconfig) || kubeconfig;
    say(`local API server: ${srv.url}`);
    say(`kubeconfig:       ${kubeconfig}`);
    say('watch from another terminal:');
    for (const h of watchHints(rel, o.planName, o.planNamespace)) say(`  ${h}`);
    say(`logs of the components: ${relative(process.cwd(), logDir) || logDir}/`);
    if (io.signal.aborted) return INTERRUPTED;

    client = createClient(loadKubeConfig(kubeconfig), { userAgent: 'inplace-demo' });
    const { capiCrdFiles, buildInventory, applyInventory } = await import('../capi-sim/index.js');
    const { sampleUpdaters } = await import('../sample-updaters/index.js');
    const crdFiles = [
      ...yamlFilesIn(join(o.root, 'crds')),
      ...yamlFilesIn(join(o.root, 'crds', 'samples')),
      ...Object.values(sampleUpdaters).flatMap((u) => u.crds.map((p) => resolve(o.root, p))),
      ...capiCrdFiles(),
    ];
    const crds = await installCrds(client, [...new Set(crdFiles)]);
    say(`✔ installed ${crds.length} CRDs`);

    const inventory = buildInventory({
      namespace: DEMO.namespace,
      clusterName: DEMO.clusterName,
      version: DEMO.version,
      controlPlane: { ...DEMO.controlPlane },
      machineDeployments: DEMO.machineDeployments.map((m) => ({ ...m })),
      mhc: { ...DEMO.mhc },
    });
    await createOrReplace(client, Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEMO.namespace } });
    await applyInventory(client, inventory);
    const machines = inventory.filter((x) => x.kind === 'Machine').length;
    say(
      `✔ demo inventory: cluster ${DEMO.namespace}/${DEMO.clusterName}, ${machines} machines at ${DEMO.version}, MHC ${DEMO.mhc.name} (in-place timeout ${DEMO.mhc.inPlaceUpdateTimeout})`,
    );

    const kc = ['--kubeconfig', kubeconfig];
    // Each controller and updater serves its probes and metrics on a free loopback port (the API server is
    // loopback-only too), so the demo waits for /readyz as a kubelet would and prints where to scrape.
    const controllers = ['plan-controller', 'machine-task-controller', 'mhc-extension'];
    const updaters = Object.keys(sampleUpdaters);
    const ports = new Map<string, number>();
    for (const c of [...controllers, ...updaters.map((u) => `updater-${u}`)]) ports.set(c, await freePort());
    const serve = (name: string): string[] => [
      '--health-port',
      String(ports.get(name)),
      '--metrics-port',
      String(ports.get(name)),
      '--bind-address',
      LOOPBACK,
    ];
    const specs: [string, string[]][] = [
      ['capi-sim', ['capi-sim', ...kc]],
      ...controllers.map((c): [string, string[]] => [c, ['run', c, ...kc, ...serve(c)]]),
      ...updaters.map((u): [string, string[]] => [`updater-${u}`, ['updater', u, ...kc, ...serve(`updater-${u}`)]]),
    ];
    for (const [name, args] of specs) children.push(spawnInplace(name, args, logDir));
    say(`✔ started ${children.length} processes: ${children.map((c) => `${c.name} (pid ${c.proc.pid})`).join(', ')}`);
    say(`  /readyz, /healthz and /metrics on ${LOOPBACK}: ${[...ports].map(([n, p]) => `${n} :${p}`).join(', ')}`);
    const ready = await waitForReady(ports, children, io, say);
    if (ready !== true) return ready;

    await applyFile(client, o.planPath, DEMO.namespace);
    say(`✔ applied ${relative(process.cwd(), o.planPath) || o.planPath}: InPlaceUpdatePlan ${o.planNamespace}/${o.planName}`);
    say('');

    const outcome = await followPlan(client, o, children, io, started);
    if (outcome.kind === 'interrupted') {
      say('\ninterrupted: stopping every process');
      return INTERRUPTED;
    }
    if (outcome.kind === 'childExited') {
      io.err(
        `\nerror: ${outcome.child.name} exited unexpectedly (${outcome.how}); its last log lines:\n${safeLines(tailLog(outcome.child))}\n`,
      );
      io.err(`  full log: ${outcome.child.logPath}\n`);
      return ExitCode.failure;
    }
    const state = await finalState(client, o, outcome.plan);
    if (o.stateOut) writeFileSync(o.stateOut, JSON.stringify(state, null, 2));
    io.out(
      renderSummary({
        view: outcome.view,
        plan: state.plan,
        mus: state.machineUpdates,
        wallMs: Date.now() - started,
        stillLabelled: state.stillLabelled,
        committed: state.committed,
      }),
    );
    if (outcome.kind === 'invalid')
      io.err(
        `\nerror: the plan is invalid and will not start: ${safeText(outcome.message)}\n  fix ${o.planPath} (check it first with: inplace preview -f ${o.planPath} --kubeconfig ${rel})\n`,
      );
    if (outcome.kind === 'timeout')
      io.err(
        `\nerror: the plan is still ${outcome.view.status} after ${secs(o.timeoutMs)}; see inplace status ${o.planName} -n ${o.planNamespace} and the logs in ${logDir}\n`,
      );

    const ok =
      outcome.kind === 'terminal' &&
      state.plan.status?.updateStatus === 'updated' &&
      state.committed.ok === state.committed.total &&
      state.stillLabelled.length === 0;
    if (o.keepRunning) {
      say(`\nstill running (--keep-running): kubectl --kubeconfig ${rel} get iup,mu -A   — Ctrl-C to stop`);
      const why = await Promise.race([
        new Promise<string>((r) => io.signal.addEventListener('abort', () => r('interrupted'), { once: true })),
        ...children.map((c) => c.exited.then(() => `${c.name} exited (see ${c.logPath})`)),
      ]);
      say(`${why}: stopping every process`);
    }
    return ok ? ExitCode.ok : ExitCode.failure;
  } finally {
    await shutdown();
  }
}

/**
 * The commands the demo suggests for watching from another terminal (a test runs each of them). kubectl ≥ 1.32 watches
 * one resource type per command (`get a,b -w` is refused), hence one line per kind.
 */
export function watchHints(kubeconfig: string, planName: string, namespace: string): string[] {
  return [
    `kubectl --kubeconfig ${kubeconfig} get inplaceupdateplans -A -w`,
    `kubectl --kubeconfig ${kubeconfig} get machineupdates -n ${namespace} -w`,
    `npx inplace status ${planName} -n ${namespace} -w --kubeconfig ${kubeconfig}`,
  ];
}

/** A free TCP port on loopback (bound and released; the child binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => res(port));
    });
  });
}

/** The address the demo's components serve probes and metrics on. */
const LOOPBACK = '127.0.0.1';

/** What the simulator logs once it runs (it serves no probes). */
const CAPI_SIM_RUNNING = 'CAPI simulator running';

/** Whether a child without probes (the CAPI simulator) said it runs. */
function loggedRunning(child: Child): boolean {
  try {
    return readFileSync(child.logPath, 'utf8').includes(CAPI_SIM_RUNNING);
  } catch {
    return false;
  }
}

/**
 * Waits until every component is ready (/readyz 200; the simulator: its "running" log line), printing each one as it
 * comes; on a terminal a spinner line below says what is still awaited. Returns an exit code when a child died or on
 * Ctrl-C.
 */
async function waitForReady(ports: Map<string, number>, children: Child[], io: Io, say: (s: string) => void): Promise<true | number> {
  const started = Date.now();
  const ready = new Set<string>();
  const announced = new Set<string>();
  const SPIN = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
  let spun = 0;
  let spinnerShown = false;
  const clearSpinner = (): void => {
    if (spinnerShown) io.out('\r\x1b[K');
    spinnerShown = false;
  };
  const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  try {
    for (;;) {
      if (io.signal.aborted) {
        clearSpinner();
        say('interrupted: stopping every process');
        return INTERRUPTED;
      }
      const dead = children.find((c) => c.proc.exitCode !== null || c.proc.signalCode !== null);
      if (dead) {
        clearSpinner();
        io.err(
          `error: ${dead.name} exited while starting (${dead.proc.signalCode ?? `exit code ${dead.proc.exitCode}`}); its last log lines:\n${safeLines(tailLog(dead))}\n  full log: ${dead.logPath}\n`,
        );
        return ExitCode.failure;
      }
      await Promise.all(
        children
          .filter((c) => !ready.has(c.name))
          .map(async (c) => {
            const port = ports.get(c.name);
            if (port === undefined) {
              if (loggedRunning(c)) ready.add(c.name);
              return;
            }
            try {
              const r = await fetch(`http://${LOOPBACK}:${port}/readyz`, { signal: AbortSignal.timeout(1000) });
              if (r.status === 200) ready.add(c.name);
            } catch {
              // not listening yet
            }
          }),
      );
      for (const c of children) {
        if (!ready.has(c.name) || announced.has(c.name)) continue;
        announced.add(c.name);
        clearSpinner();
        const port = ports.get(c.name);
        say(`  ✔ ${c.name.padEnd(30)} ${port === undefined ? 'running' : `ready    http://${LOOPBACK}:${port}/metrics`}  (${elapsed()})`);
      }
      const waiting = children.filter((c) => !ready.has(c.name)).map((c) => c.name);
      if (waiting.length === 0) {
        clearSpinner();
        say(`✔ all ${children.length} components ready after ${elapsed()}`);
        return true;
      }
      if (io.isTTY) {
        const line = `${SPIN[spun++ % SPIN.length]} ${ready.size}/${children.length} ready after ${elapsed()}, starting: ${waiting.join(', ')}`;
        io.out(`\r\x1b[K${line.slice(0, Math.max(20, io.columns - 1))}`);
        spinnerShown = true;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    clearSpinner();
  }
}

export type { DemoState } from './demo-follow.js';
