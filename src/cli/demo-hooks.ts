// `inplace demo --hooks` (npm start -- --hooks): the demo platform driven the way an operator of Cluster API ≥ 1.12
// with the InPlaceUpdates gate drives it (docs/hooks.md): InPlaceUpdaters declare what the updaters cover, the
// runtime extension is registered through an ExtensionConfig, and the operator only changes the KCP version and the
// MachineDeployments' template; the simulated Cluster API calls the hooks and the platform's updaters do the work.
// No InPlaceUpdatePlan, hence no plan controller.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  Annotations,
  DevMachines,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  Machines,
  MachineUpdates,
  REQUESTED_BY_RUNTIME_EXTENSION,
  type KubeObject,
  type MachineUpdate,
  type ResourceType,
} from '../api/index.js';
import { selfSignedCertificate } from '../runtime/tls.js';
import type { RestClient } from '../runtime/index.js';
import {
  DEMO,
  INTERRUPTED,
  freePort,
  probeReady,
  reportExit,
  serveOn,
  startComponents,
  startLocalPlatform,
  stayUp,
  exitedUnexpectedly,
  watchExits,
  type ComponentSpec,
  type LocalPlatform,
  type UnexpectedExit,
} from './demo-platform.js';
import { applyFile, createOrReplace } from './install.js';
import { secs } from './progress.js';
import { ExitCode, type Io } from './verb.js';

/** What the operator changes: the KCP's and the MachineDeployments' version, and the workers' OS image. */
export const HOOKS_TARGET = { version: 'v1.30.1', image: 'ubuntu-24.04-k8s-1.30.1' } as const;

/** The cluster-scoped ExtensionConfig the demo registers its runtime extension with. */
const EXTENSION_CONFIG = 'inplace';
/** Cluster API's annotation on a Machine while its in-place update runs (docs/hooks-sim.md). */
const UPDATE_IN_PROGRESS = Annotations.capiUpdateInProgress;
const merge = { type: 'merge' } as const;

/** Options of the hooks demo. */
export interface HooksDemoOptions {
  root: string;
  keepRunning: boolean;
  stateOut: string | undefined;
  timeoutMs: number;
  workDir: string;
}

type Machine = KubeObject & { spec: { version?: string; infrastructureRef: { name: string } } };
type Mu = MachineUpdate & KubeObject;

/** Final state of a hooks demo, as written by --state-out. */
export interface HooksDemoState {
  machines: Machine[];
  machineUpdates: Mu[];
  summary: HooksSummary;
}

/** The counts the summary prints. */
export interface HooksSummary {
  /** Machines before the change. */
  total: number;
  /** Machines of before (same uid) at the target, updated by a MachineUpdate the runtime extension requested. */
  updatedInPlace: number;
  /** Machines of before whose uid is gone (Cluster API replaced them). */
  replaced: number;
  /** The updaters that ran, from the MachineUpdates' tasks. */
  updaters: string[];
  elapsedMs: number;
}

/** The commands the hooks demo suggests for watching from another terminal. */
export function hooksWatchHints(kubeconfig: string, namespace: string): string[] {
  return [
    `kubectl --kubeconfig ${kubeconfig} get machines -n ${namespace} -w`,
    `kubectl --kubeconfig ${kubeconfig} get machineupdates -n ${namespace} -w`,
  ];
}

/** Runs the hooks demo; the exit code is 0 only when every machine was updated in place and none replaced. */
export async function runHooksDemo(o: HooksDemoOptions, io: Io): Promise<number> {
  const started = Date.now();
  let close: (() => Promise<void>) | undefined;
  try {
    const p = await startLocalPlatform(
      o,
      io,
      (rel) => hooksWatchHints(rel, DEMO.namespace),
      (c) => (close = c),
    );
    if (!p) return INTERRUPTED;
    const { client, say } = p;
    const ns = DEMO.namespace;

    const tls = await prepareHooksCluster(p, o);
    const { specs, simPort, extensionPort } = await hooksComponents(p.kubeconfig, tls.certDir);
    say('  (no plan controller: Cluster API decides which machines update and when)');
    const ready = await startComponents(p, specs, io);
    if (ready !== true) return ready;
    const exited = watchExits(p.children);
    const deadline = started + o.timeoutMs;
    const stopped = (w: WaitEnd): number => {
      if (w === 'interrupted') {
        say('\ninterrupted: stopping every process');
        return INTERRUPTED;
      }
      if (w === 'timeout') {
        io.err(`\nerror: timed out after ${secs(o.timeoutMs)} waiting for the runtime extension's registration; logs in ${p.logDir}\n`);
        return ExitCode.failure;
      }
      reportExit(w, io);
      return ExitCode.failure;
    };

    const registered = await registerExtension(p, { cert: tls.cert, extensionPort, simPort }, { io, exited, started, deadline });
    if (registered !== true) return stopped(registered);
    const before = await liveMachines(client, ns);
    await changeToTarget(client, say);
    const outcome = await follow(client, { ns, before, started, deadline }, io, exited);
    if (outcome === 'interrupted' || typeof outcome === 'object') return stopped(outcome);
    const state = await finalHooksState(client, ns, before, started);
    if (o.stateOut) writeFileSync(o.stateOut, JSON.stringify(state, null, 2));
    io.out(renderHooksSummary(state.summary));
    if (outcome === 'timeout')
      io.err(
        `\nerror: not every machine is at ${HOOKS_TARGET.version} without ${UPDATE_IN_PROGRESS} after ${secs(o.timeoutMs)}; logs in ${p.logDir}\n`,
      );
    const s = state.summary;
    const ok = outcome === 'done' && s.updatedInPlace === s.total && s.replaced === 0;
    const died = exitedUnexpectedly(p.children);
    if (died) {
      reportExit(died, io);
      return ExitCode.failure;
    }
    if (o.keepRunning) {
      const gone = await stayUp(p, io, `kubectl --kubeconfig ${p.rel} get machines,machineupdates -n ${ns}`);
      if (gone) {
        reportExit(gone, io);
        return ExitCode.failure;
      }
    }
    return ok ? ExitCode.ok : ExitCode.failure;
  } finally {
    await close?.();
  }
}

/** The demo's cluster made ready for in-place updates: no surge, the InPlaceUpdaters, the extension's certificate. */
async function prepareHooksCluster(p: LocalPlatform, o: HooksDemoOptions): Promise<{ certDir: string; cert: string }> {
  const { client, say } = p;
  const ns = DEMO.namespace;
  // With KCP's default maxSurge 1 upstream still creates one new machine first (docs/hooks-sim.md): 0 updates
  // every machine in place. A merge patch keeps the MachineDeployments' maxUnavailable.
  const noSurge = { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0 } } } } };
  await client.patch(KubeadmControlPlanes, ns, DEMO.controlPlane.name, noSurge, merge);
  for (const md of DEMO.machineDeployments) await client.patch(MachineDeployments, ns, md.name, noSurge, merge);
  say(
    `✔ maxSurge 0 on ${[DEMO.controlPlane.name, ...DEMO.machineDeployments.map((m) => m.name)].join(', ')} (in place, no new machine first)`,
  );

  const updatersFile = join(o.root, 'examples', 'hooks', 'updaters.yaml');
  const applied = await applyFile(client, updatersFile, ns);
  const declared = applied.filter((d) => d.kind === 'InPlaceUpdater').map((d) => d.metadata.name);
  say(`✔ applied ${relative(process.cwd(), updatersFile) || updatersFile}: InPlaceUpdaters ${declared.join(', ')}`);

  // The extension serves the certificate the demo writes; the same PEM is the ExtensionConfig's caBundle.
  // selfSignedCertificate always covers localhost and 127.0.0.1, where the extension listens.
  const certDir = join(o.workDir, 'extension-certs');
  mkdirSync(certDir, { recursive: true });
  const tls = await selfSignedCertificate('inplace-runtime-extension');
  writeFileSync(join(certDir, 'tls.crt'), tls.cert);
  writeFileSync(join(certDir, 'tls.key'), tls.key, { mode: 0o600 });
  return { certDir, cert: tls.cert };
}

/** The processes of the hooks demo: the simulator with InPlaceUpdates, the extension side and the sample updaters. */
async function hooksComponents(
  kubeconfig: string,
  certDir: string,
): Promise<{ specs: ComponentSpec[]; simPort: number; extensionPort: number }> {
  const kc = ['--kubeconfig', kubeconfig];
  const { sampleUpdaters } = await import('../sample-updaters/index.js');
  const simPort = await freePort();
  const extensionPort = await freePort();
  const specs: ComponentSpec[] = [
    {
      name: 'capi-sim',
      args: ['capi-sim', '--in-place-updates', ...kc, '--health-port', String(simPort), '--bind-address', '127.0.0.1'],
      port: simPort,
      noMetrics: true,
    },
  ];
  for (const c of ['runtime-extension', 'machine-task-controller', 'mhc-extension']) {
    const port = await freePort();
    const ext = c === 'runtime-extension' ? ['--extension-port', String(extensionPort), '--cert-dir', certDir] : [];
    specs.push({ name: c, args: ['run', c, ...ext, ...kc, ...serveOn(port)], port });
  }
  for (const u of Object.keys(sampleUpdaters)) {
    const port = await freePort();
    // The demo alone runs the reference updater as a catch-all (a real deployment names what it serves).
    const serves = sampleUpdaters[u as keyof typeof sampleUpdaters].generic ? ['--catch-all'] : [];
    specs.push({ name: `updater-${u}`, args: ['updater', u, ...serves, ...kc, ...serveOn(port)], port });
  }
  return { specs, simPort, extensionPort };
}

/** What a wait of the demo watches: Ctrl-C, the children, the deadline; `started` for elapsed times. */
interface Waiting {
  io: Io;
  exited: () => UnexpectedExit | undefined;
  started: number;
  deadline: number;
}

/** Registers the runtime extension and waits until Cluster API (the simulator's registry) knows its handlers. */
async function registerExtension(
  p: LocalPlatform,
  ext: { cert: string; extensionPort: number; simPort: number },
  w: Waiting,
): Promise<true | WaitEnd> {
  const url = `https://127.0.0.1:${ext.extensionPort}`;
  await createOrReplace(p.client, ExtensionConfigs, {
    apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
    kind: 'ExtensionConfig',
    metadata: { name: EXTENSION_CONFIG },
    spec: { clientConfig: { url, caBundle: Buffer.from(ext.cert).toString('base64') } },
  });
  let handlers: string[] = [];
  const discovered = await waitUntil(w.io, w.exited, w.deadline, async () => {
    const ec = await p.client.get<KubeObject & { status?: { handlers?: { name: string }[] } }>(
      ExtensionConfigs,
      undefined,
      EXTENSION_CONFIG,
    );
    handlers = (ec?.status?.handlers ?? []).map((h) => h.name);
    return handlers.length === 3;
  });
  if (discovered !== true) return discovered;
  p.say(`✔ ExtensionConfig ${EXTENSION_CONFIG} (${url}): discovered ${handlers.join(', ')}  (${secs(Date.now() - w.started)})`);
  // Cluster API's managers read the handlers from their own caches: a change made before they know them is
  // rolled out, not updated in place. The simulator's /readyz says when its registry has them.
  const known = await waitUntil(w.io, w.exited, w.deadline, () => probeReady(ext.simPort));
  if (known !== true) return known;
  p.say(`✔ capi-sim's registry knows the handlers  (${secs(Date.now() - w.started)})`);
  return true;
}

/** The change Cluster API then rolls out in place: the control plane's version, the workers' image and version. */
async function changeToTarget(client: RestClient, say: (line: string) => void): Promise<void> {
  const ns = DEMO.namespace;
  await client.patch(KubeadmControlPlanes, ns, DEMO.controlPlane.name, { spec: { version: HOOKS_TARGET.version } }, merge);
  say(`✔ KubeadmControlPlane ${DEMO.controlPlane.name}: spec.version ${DEMO.version} → ${HOOKS_TARGET.version}`);
  const { changeMachineDeploymentImage } = await import('../../tools/capi-sim/index.js');
  for (const md of DEMO.machineDeployments) {
    const tpl = await changeMachineDeploymentImage(client, ns, md.name, HOOKS_TARGET.image, { version: HOOKS_TARGET.version });
    say(`✔ MachineDeployment ${md.name}: DevMachineTemplate ${tpl} (image ${HOOKS_TARGET.image}), version ${HOOKS_TARGET.version}`);
  }
  say('');
}

/** How a wait ended other than with success. */
type WaitEnd = 'interrupted' | 'timeout' | UnexpectedExit;

/** Polls `check` until it holds, Ctrl-C, a child exits or the deadline passes. */
async function waitUntil(
  io: Io,
  exited: () => UnexpectedExit | undefined,
  deadline: number,
  check: () => Promise<boolean>,
): Promise<true | WaitEnd> {
  for (;;) {
    if (io.signal.aborted) return 'interrupted';
    const died = exited();
    if (died) return died;
    if (await check()) return true;
    if (Date.now() > deadline) return 'timeout';
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Cluster API's ExtensionConfig (cluster-scoped; as tools/capi-sim's, which the CLI only loads lazily). */
const ExtensionConfigs: ResourceType = {
  group: 'runtime.cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'extensionconfigs',
  kind: 'ExtensionConfig',
  namespaced: false,
};

async function liveMachines(client: RestClient, ns: string): Promise<Machine[]> {
  const all = await client.list<Machine>(Machines, ns, { labelSelector: `${Labels.clusterName}=${DEMO.clusterName}` });
  return all.items.filter((m) => !m.metadata.deletionTimestamp);
}

const imageOf = (d: KubeObject | undefined): unknown =>
  ((d?.['spec'] as { backend?: { docker?: { customImage?: unknown } } } | undefined)?.backend?.docker ?? {}).customImage;
const isWorker = (m: Machine): boolean => m.metadata.labels?.[Labels.deploymentName] !== undefined;

/**
 * Prints per machine when its in-place update starts (Cluster API's update-in-progress annotation on, its Updating
 * condition) and ends (annotation off), and which updater works on it, until every machine is at the target with no
 * annotation ('done'), or the deadline / Ctrl-C / a child exiting.
 */
async function follow(
  client: RestClient,
  { ns, before, started, deadline }: { ns: string; before: Machine[]; started: number; deadline: number },
  io: Io,
  exited: () => UnexpectedExit | undefined,
): Promise<'done' | WaitEnd> {
  const line = (s: string): void => io.out(`[${secs(Date.now() - started).padStart(6)}] ${s}\n`);
  const annotated = new Map<string, boolean>();
  const seen = new Set(before.map((m) => m.metadata.name ?? ''));
  const taskStatus = new Map<string, string>();
  for (;;) {
    if (io.signal.aborted) return 'interrupted';
    const died = exited();
    if (died) return died;
    const machines = await liveMachines(client, ns);
    const infra = new Map((await client.list(DevMachines, ns)).items.map((d) => [d.metadata.name, d]));
    const mus = (await client.list<Mu>(MachineUpdates, ns)).items;
    for (const m of machines) {
      const name = m.metadata.name ?? '';
      if (!seen.has(name)) {
        seen.add(name);
        line(`machine ${name}: created by Cluster API (a replacement, not an in-place update)`);
      }
      const on = m.metadata.annotations?.[UPDATE_IN_PROGRESS] !== undefined;
      const was = annotated.get(name) ?? false;
      if (on && !was) {
        const cond = (m['status'] as { conditions?: { type: string; reason?: string }[] } | undefined)?.conditions?.find(
          (c) => c.type === 'Updating',
        );
        line(`machine ${name}: in-place update started by Cluster API${cond?.reason ? ` (Updating: ${cond.reason})` : ''}`);
      }
      if (!on && was) {
        const image = isWorker(m) ? `, image ${String(imageOf(infra.get(m.spec.infrastructureRef.name)))}` : '';
        line(`machine ${name}: updated in place (version ${m.spec.version}${image})`);
      }
      annotated.set(name, on);
      reportTasks(m, mus, taskStatus, line);
    }
    for (const name of [...seen].filter((n) => !machines.some((m) => m.metadata.name === n) && annotated.get(n) !== undefined)) {
      annotated.delete(name);
      line(`machine ${name}: deleted by Cluster API`);
    }
    const atTarget = machines.every(
      (m) =>
        m.spec.version === HOOKS_TARGET.version &&
        m.metadata.annotations?.[UPDATE_IN_PROGRESS] === undefined &&
        (!isWorker(m) || imageOf(infra.get(m.spec.infrastructureRef.name)) === HOOKS_TARGET.image),
    );
    if (machines.length === before.length && atTarget) return 'done';
    if (Date.now() > deadline) return 'timeout';
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Prints a machine's updater tasks that started or failed since last seen (`taskStatus`: last status per task). */
function reportTasks(m: Machine, mus: readonly Mu[], taskStatus: Map<string, string>, line: (s: string) => void): void {
  const name = m.metadata.name ?? '';
  for (const mu of mus.filter((u) => u.metadata.ownerReferences?.some((r) => r.uid === m.metadata.uid))) {
    for (const t of mu.status?.tasks ?? []) {
      const key = `${mu.metadata.name}/${t.updater}`;
      if (taskStatus.get(key) === t.updateStatus) continue;
      taskStatus.set(key, t.updateStatus ?? '');
      if (t.updateStatus === 'updating' || t.updateStatus === 'failed') line(`machine ${name}: updater ${t.updater} ${t.updateStatus}`);
    }
  }
}

/** Reads the final machines and MachineUpdates and counts who was updated in place and who was replaced. */
async function finalHooksState(client: RestClient, ns: string, before: Machine[], started: number): Promise<HooksDemoState> {
  const machines = await liveMachines(client, ns);
  const machineUpdates = (await client.list<Mu>(MachineUpdates, ns)).items.filter(
    (u) => u.metadata.labels?.[Labels.requestedBy] === REQUESTED_BY_RUNTIME_EXTENSION,
  );
  const now = new Set(machines.map((m) => m.metadata.uid));
  const replaced = before.filter((m) => !now.has(m.metadata.uid)).length;
  const updaters = new Set<string>();
  let updatedInPlace = 0;
  for (const m of machines) {
    if (!before.some((b) => b.metadata.uid === m.metadata.uid) || m.spec.version !== HOOKS_TARGET.version) continue;
    const own = machineUpdates.filter(
      (u) => u.metadata.ownerReferences?.some((r) => r.uid === m.metadata.uid) && u.status?.updateStatus === 'updated',
    );
    if (own.length === 0) continue;
    updatedInPlace++;
    for (const u of own) for (const t of u.status?.tasks ?? []) updaters.add(t.updater);
  }
  return {
    machines,
    machineUpdates,
    summary: { total: before.length, updatedInPlace, replaced, updaters: [...updaters].sort(), elapsedMs: Date.now() - started },
  };
}

/** The summary block of the hooks demo. */
export function renderHooksSummary(s: HooksSummary): string {
  return [
    '',
    `Summary: Cluster API in-place updates of ${DEMO.namespace}/${DEMO.clusterName} through the runtime extension`,
    `  updated in place:  ${s.updatedInPlace}/${s.total} machines, by the updaters ${s.updaters.join(', ') || '(none)'}`,
    `  replaced:          ${s.replaced} (machines whose uid changed)`,
    `  elapsed:           ${secs(s.elapsedMs)}`,
    '',
  ].join('\n');
}
