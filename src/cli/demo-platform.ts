// What both demo modes share (`inplace demo` and `inplace demo --hooks`): the local API server with the CRDs and the
// demo inventory, components started as child processes and awaited until ready, and how a run ends (a child died,
// Ctrl-C, --keep-running).
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { Namespaces } from '../api/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../runtime/index.js';
import { componentsTaking } from '../components.js';
import { yamlFilesIn } from './files.js';
import { createOrReplace, installCrds } from './install.js';
import { spawnInplace, stopChildren, tailLog, type Child } from './procs.js';
import { safeLines } from './safe-text.js';
import { ExitCode, type Io } from './verb.js';

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

/** The CRD files the demo installs (the README's "installed N CRDs" is checked against them, test/cli/readme.test.ts). */
export async function demoCrdFiles(root: string): Promise<string[]> {
  const { capiCrdFiles } = await import('../../tools/capi-sim/index.js');
  const { sampleUpdaters } = await import('../sample-updaters/index.js');
  const files = [
    ...yamlFilesIn(join(root, 'crds')),
    ...yamlFilesIn(join(root, 'crds', 'samples')),
    ...Object.values(sampleUpdaters).flatMap((u) => u.crds.map((f) => resolve(root, f))),
    ...capiCrdFiles(),
  ];
  return [...new Set(files)];
}

/** Exit code of a demo interrupted by Ctrl-C (128 + SIGINT). */
export const INTERRUPTED = 130;

/** The address the demo's components serve probes and metrics on. */
export const LOOPBACK = '127.0.0.1';

/** The local platform a demo runs on. */
export interface LocalPlatform {
  client: RestClient;
  kubeconfig: string;
  /** The kubeconfig path as printed (relative to the working directory). */
  rel: string;
  logDir: string;
  children: Child[];
  say(s: string): void;
}

/**
 * Starts the local API server, writes the kubeconfig into `workDir`, prints where things are (`hints`: commands to
 * watch from another terminal), installs every CRD and the demo inventory. Undefined on Ctrl-C during the start.
 * `onStarted` gets, as soon as the server runs, what stops it all (children, client, server): the caller calls it
 * when done, also when this throws.
 */
export async function startLocalPlatform(
  o: { root: string; workDir: string },
  io: Io,
  hints: (kubeconfig: string) => string[],
  onStarted: (close: () => Promise<void>) => void,
): Promise<LocalPlatform | undefined> {
  const say = (s: string): void => io.out(`${s}\n`);
  const logDir = join(o.workDir, 'logs');
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const { startLocalApiServer } = await import('../../tools/local-apiserver/index.js');
  const srv = await startLocalApiServer({ https: true });
  const kubeconfig = join(o.workDir, 'kubeconfig');
  const children: Child[] = [];
  const conn: { client?: RestClient } = {};
  onStarted(async () => {
    await stopChildren(children);
    conn.client?.close();
    await srv.close();
  });
  await srv.writeKubeconfig(kubeconfig);
  const rel = relative(process.cwd(), kubeconfig) || kubeconfig;
  say(`local API server: ${srv.url}`);
  say(`kubeconfig:       ${kubeconfig}`);
  say('watch from another terminal:');
  for (const h of hints(rel)) say(`  ${h}`);
  say(`logs of the components: ${relative(process.cwd(), logDir) || logDir}/`);
  if (io.signal.aborted) return undefined;

  const client = createClient(loadKubeConfig(kubeconfig), { userAgent: 'inplace-demo' });
  conn.client = client;
  const { buildInventory, applyInventory } = await import('../../tools/capi-sim/index.js');
  const crds = await installCrds(client, await demoCrdFiles(o.root));
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
  return { client, kubeconfig, rel, logDir, children, say };
}

/** A component to start: its name (and log file), its `inplace` arguments, the loopback port of its probes if any. */
export interface ComponentSpec {
  name: string;
  args: string[];
  /** /readyz (and /metrics unless `noMetrics`) on this port; none: ready once it logs that it runs. */
  port?: number;
  noMetrics?: boolean;
}

/** Spawns every component as its own process, prints them, and waits until all are ready (an exit code if not). */
export async function startComponents(p: LocalPlatform, specs: ComponentSpec[], io: Io): Promise<true | number> {
  for (const s of specs) p.children.push(spawnInplace(s.name, s.args, p.logDir));
  p.say(`✔ started ${p.children.length} processes: ${p.children.map((c) => `${c.name} (pid ${c.proc.pid})`).join(', ')}`);
  const probed = specs.filter((s) => s.port !== undefined);
  p.say(
    `  /readyz, /healthz and /metrics on ${LOOPBACK}: ${probed.map((s) => `${s.name} :${s.port}${s.noMetrics ? ' (probes only)' : ''}`).join(', ')}`,
  );
  return waitForReady(specs, p.children, io, p.say);
}

/** The `inplace run` arguments of a demo controller: the write policy goes to the components that enforce it. */
export function demoControllerArgs(component: string, writePolicy: string | undefined): string[] {
  return writePolicy !== undefined && componentsTaking('writePolicy').includes(component) ? ['--write-policy', writePolicy] : [];
}

/** Serving options of a component whose probes and metrics share `port` on loopback. */
export const serveOn = (port: number): string[] => [
  '--health-port',
  String(port),
  '--metrics-port',
  String(port),
  '--bind-address',
  LOOPBACK,
];

/** A free TCP port on loopback (bound and released; the child binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, LOOPBACK, () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => res(port));
    });
  });
}

/** Whether a component's /readyz on loopback answers 200. */
export async function probeReady(port: number): Promise<boolean> {
  try {
    const r = await fetch(`http://${LOOPBACK}:${port}/readyz`, { signal: AbortSignal.timeout(1000) });
    return r.status === 200;
  } catch {
    return false; // not listening yet
  }
}

/** How a child ended that was not asked to stop. */
export interface UnexpectedExit {
  child: Child;
  how: string;
}

/** Watches the children; the returned function tells the first one that exited without being stopped. */
export function watchExits(children: readonly Child[]): () => UnexpectedExit | undefined {
  let died: UnexpectedExit | undefined;
  for (const c of children) {
    void c.exited.then(({ code, signal }) => {
      if (!c.stopping && !died) died = { child: c, how: signal ? `signal ${signal}` : `exit code ${code}` };
    });
  }
  return () => died;
}

/** Reports a child that exited while the demo followed the update, with its last log lines. */
export function reportExit(e: UnexpectedExit, io: Io): void {
  io.err(`\nerror: ${e.child.name} exited unexpectedly (${e.how}); its last log lines:\n${safeLines(tailLog(e.child))}\n`);
  io.err(`  full log: ${e.child.logPath}\n`);
}

/** A child that has exited although nobody asked it to stop (checked now, without waiting). */
export function exitedUnexpectedly(children: readonly Child[]): UnexpectedExit | undefined {
  const c = children.find((x) => !x.stopping && (x.proc.exitCode !== null || x.proc.signalCode !== null));
  if (!c) return undefined;
  return { child: c, how: c.proc.signalCode ? `signal ${c.proc.signalCode}` : `exit code ${c.proc.exitCode}` };
}

/**
 * --keep-running: stays up until Ctrl-C or a child exits. Returns the child that exited (the demo then ends non-zero:
 * a platform with a component gone is not the one the user explores), undefined on Ctrl-C.
 */
export async function stayUp(p: LocalPlatform, io: Io, hint: string): Promise<UnexpectedExit | undefined> {
  p.say(`\nstill running (--keep-running): ${hint}   — Ctrl-C to stop`);
  const already = exitedUnexpectedly(p.children);
  if (already) return already;
  const why = await Promise.race([
    new Promise<undefined>((r) => io.signal.addEventListener('abort', () => r(undefined), { once: true })),
    ...p.children.map((c) =>
      c.exited.then(({ code, signal }): UnexpectedExit => ({ child: c, how: signal ? `signal ${signal}` : `exit code ${code}` })),
    ),
  ]);
  p.say(`${why ? `${why.child.name} exited` : 'interrupted'}: stopping every process`);
  return why;
}

/** What the simulator logs once it runs (without --health-port it serves no probes). */
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
 * Waits until every component is ready (/readyz 200; without a port: its "running" log line), printing each one as
 * it comes; on a terminal a spinner line below says what is still awaited. Returns an exit code when a child died or
 * on Ctrl-C.
 */
async function waitForReady(specs: ComponentSpec[], children: Child[], io: Io, say: (s: string) => void): Promise<true | number> {
  const started = Date.now();
  const specOf = new Map(specs.map((s) => [s.name, s]));
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
            const port = specOf.get(c.name)?.port;
            if (port === undefined ? loggedRunning(c) : await probeReady(port)) ready.add(c.name);
          }),
      );
      for (const c of children) {
        if (!ready.has(c.name) || announced.has(c.name)) continue;
        announced.add(c.name);
        clearSpinner();
        const s = specOf.get(c.name);
        const where = s?.port === undefined ? 'running' : `ready    http://${LOOPBACK}:${s.port}/${s.noMetrics ? 'readyz' : 'metrics'}`;
        say(`  ✔ ${c.name.padEnd(30)} ${where}  (${elapsed()})`);
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
