// Completion detection latency (issue 18): how long after an updater's task completes does the flow notice the machine
// is done? (a) the plan flow: the machine task controller watches the task and marks the MachineUpdate updated;
// (b) the hooks flow: Cluster API (capi-sim, InPlaceUpdates) polls UpdateMachine every retryAfterSeconds and only then
// marks the machine updated (removes its in-progress annotation). Same fleet, one run, all in-process on the local API
// server: the plan flow first (simulator without in-place updates), then the simulator restarted with them.
//
//   npm run bench -- --hooks-latency [--sizes 6] [--cp 3] [--retry-after 5] [--duration 1]
//
// A task's completionTime has second precision (Kubernetes time), so the reference point is the moment the bench's own
// watch sees the task terminal (completionTime set): latency = flow noticed − task observed complete, in ms.
//
import { createWriteStream, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import {
  API_VERSION,
  Annotations,
  InPlaceUpdatePlans,
  InPlaceUpdaters,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineUpdates,
  Machines,
  Labels,
  UpdaterUpdateTasks,
  type KubeObject,
  type MachineUpdate,
} from '../src/api/index.js';
import { changeMachineDeploymentImage, startCapiSimulator, type CapiSimulator, type Machine } from '../tools/capi-sim/index.js';
import { ExtensionConfigs, type ExtensionConfig } from '../tools/capi-sim/extension-client.js';
import { UPDATE_IN_PROGRESS_ANNOTATION } from '../tools/capi-sim/inplace.js';
import { createRuntimeExtension } from '../src/runtime-extension/index.js';
import { createLogger } from '../src/runtime/log.js';
import { startE2eEnv } from '../test/e2e/env.js';
import { CLUSTER, CP, FROM_VERSION, TO_VERSION, planObject, refUpdater, type Platform } from '../test/e2e/harness.js';
import { waitFor } from '../test/support/wait.js';

const MD = 'cluster1-md-0';
const HOOKS_VERSION = 'v1.30.2';
const merge = { type: 'merge' } as const;

/** Options of the hooks-latency case. */
export interface HooksLatencyOptions {
  workers: number;
  cp: number;
  retryAfterSeconds: number;
  durationSeconds: number;
  out: string;
}

/** Latency summary of one phase. */
export interface PhaseResult {
  machines: number;
  medianMs: number;
  p90Ms: number;
  maxMs: number;
  wallSeconds: number;
  latenciesMs: Record<string, number>;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

/** Watches the namespace's tasks; per machine, the time the last of its tasks was first seen terminal. */
async function watchTaskCompletion(p: Platform): Promise<{ done: Map<string, number>; stop(): void }> {
  const seen = new Map<string, number>();
  const done = new Map<string, number>();
  const h = await p.client.watch<KubeObject>(UpdaterUpdateTasks, p.ns, {}, (e) => {
    if (e.type !== 'ADDED' && e.type !== 'MODIFIED') return;
    const st = e.object['status'] as { completionTime?: string } | undefined;
    const key = e.object.metadata.uid ?? e.object.metadata.name ?? '';
    if (!st?.completionTime || seen.has(key)) return;
    seen.set(key, Date.now());
    const m = e.object.metadata.labels?.[Labels.machineName];
    if (m) done.set(m, Math.max(done.get(m) ?? 0, Date.now()));
  });
  return { done, stop: () => h.abort() };
}

function summarize(noticed: Map<string, number>, completed: Map<string, number>, wallMs: number): PhaseResult {
  const latenciesMs: Record<string, number> = {};
  for (const [m, t] of noticed) {
    const c = completed.get(m);
    if (c !== undefined) latenciesMs[m] = t - c;
  }
  const xs = Object.values(latenciesMs);
  return {
    machines: xs.length,
    medianMs: pct(xs, 50),
    p90Ms: pct(xs, 90),
    maxMs: Math.max(...xs),
    wallSeconds: Math.round(wallMs / 100) / 10,
    latenciesMs,
  };
}

/** Runs both phases on one fleet and writes bench/results/hooks-latency.json. */
export async function runHooksLatencyCase(o: HooksLatencyOptions, say: (s: string) => void): Promise<unknown> {
  const env = await startE2eEnv();
  let sim: CapiSimulator | undefined;
  let ext: ReturnType<typeof createRuntimeExtension> | undefined;
  let ecName = '';
  let simLog: WriteStream | undefined;
  const total = o.cp + o.workers;
  try {
    const p = await env.platform();
    await p.provision({ cpReplicas: o.cp, mds: [{ name: MD, replicas: o.workers, maxUnavailable: o.workers }] });
    const machines = async (): Promise<Machine[]> =>
      (await p.client.list<Machine>(Machines, p.ns)).items.filter((m) => !m.metadata.deletionTimestamp);
    await waitFor(async () => ((await machines()).filter((m) => m.status?.phase === 'Running').length === total ? true : undefined), {
      timeoutMs: 120_000,
      message: `${total} machines running`,
    });
    await p.startPlatform();

    // (a) the plan flow.
    say(`== plan flow: ${total} machines, updater ${o.durationSeconds} s`);
    const tasksA = await watchTaskCompletion(p);
    const updatedA = new Map<string, number>();
    const hA = await p.client.watch<MachineUpdate & KubeObject>(MachineUpdates, p.ns, {}, (e) => {
      const m = e.object.metadata.labels?.[Labels.machineName];
      if (m && e.object.status?.updateStatus === 'updated' && !updatedA.has(m)) updatedA.set(m, Date.now());
    });
    const t0 = Date.now();
    const upd = refUpdater({ durationSeconds: o.durationSeconds });
    await p.client.create(
      InPlaceUpdatePlans,
      planObject(p.ns, 'bench', {
        cp: { name: CP, sequence: 1, updaters: [upd] },
        mds: [{ name: MD, sequence: 2, updaters: [upd] }],
      }),
    );
    await waitFor(() => (updatedA.size >= total ? true : undefined), { timeoutMs: 600_000, message: 'plan flow: every machine updated' });
    const a = summarize(updatedA, tasksA.done, Date.now() - t0);
    // The plan lifts its pause from the KCP and the MachineDeployment after the last MachineUpdate: stopping the plan
    // controller before would leave them paused, and the hooks flow would never start on them.
    await p.waitStatus('bench', 'updated', 120_000);
    await waitFor(
      async () => {
        const owners = [await p.client.get(KubeadmControlPlanes, p.ns, CP), await p.client.get(MachineDeployments, p.ns, MD)];
        return owners.every((o) => o && o.metadata.annotations?.[Annotations.paused] === undefined) ? true : undefined;
      },
      { timeoutMs: 120_000, message: 'plan flow: the KCP and the MachineDeployment unpaused' },
    );
    hA.abort();
    tasksA.stop();
    await p.stopComponent('plan-controller');

    // (b) the hooks flow: the simulator plays upstream's in-place updates and polls the extension.
    say(`== hooks flow: ${total} machines, retryAfterSeconds ${o.retryAfterSeconds}, updater ${o.durationSeconds} s`);
    await p.simulator.stop();
    await p.client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0 } } } } }, merge);
    await p.client.patch(
      MachineDeployments,
      p.ns,
      MD,
      { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: o.workers } } } } },
      merge,
    );
    const reg = (name: string, sequence: number, selectResource: string, path: string) =>
      p.client.create(InPlaceUpdaters, {
        apiVersion: API_VERSION,
        kind: 'InPlaceUpdater',
        metadata: { name, namespace: p.ns },
        spec: { sequence, covers: [{ selectResource, path }], parameters: { durationSeconds: o.durationSeconds } },
      } as KubeObject);
    await reg('kubernetes', 1, 'Machine', '/spec/version');
    await reg('os', 2, 'InfraMachine', '/spec/backend/docker/customImage');
    // The simulator's log (every rollout decision, hook answer and replaced machine) goes to a file beside the results.
    simLog = createWriteStream(join(o.out, 'hooks-latency-sim.log'));
    sim = await startCapiSimulator({
      client: p.client,
      namespace: p.ns,
      readyDelayMs: 20,
      inPlaceUpdates: true,
      log: createLogger({ name: 'capi-sim', level: 'debug', pretty: false, destination: simLog }),
    });
    ext = createRuntimeExtension({ port: 0, bindAddress: '127.0.0.1', retryAfterSeconds: o.retryAfterSeconds });
    await p.startComponent(ext);
    ecName = `inplace-${p.ns}`;
    const ec: ExtensionConfig = {
      apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
      kind: 'ExtensionConfig',
      metadata: { name: ecName },
      spec: { clientConfig: { url: ext.url, caBundle: Buffer.from(ext.caBundle).toString('base64') } },
    };
    await p.client.create(ExtensionConfigs, ec);
    await waitFor(
      async () =>
        (await p.client.get<ExtensionConfig>(ExtensionConfigs, undefined, ecName))?.status?.handlers?.length === 3 ? true : undefined,
      { timeoutMs: 60_000, message: 'the simulator discovered the extension' },
    );
    // KCP and the MachineSet controller read the handlers from their own cache, after the status is written.
    await waitFor(() => (sim!.handlers().length === 3 ? true : undefined), { timeoutMs: 60_000, message: "the simulator's registry" });
    say('hooks flow: extension discovered');

    const tasksB = await watchTaskCompletion(p);
    const inUpdate = new Set<string>();
    const updatedB = new Map<string, number>();
    const hB = await p.client.watch<Machine & KubeObject>(Machines, p.ns, {}, (e) => {
      const n = e.object.metadata.name ?? '';
      if (e.object.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined) inUpdate.add(n);
      else if (inUpdate.has(n) && !updatedB.has(n)) updatedB.set(n, Date.now());
    });
    const t1 = Date.now();
    await p.client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { version: HOOKS_VERSION } }, merge);
    await changeMachineDeploymentImage(p.client, p.ns, MD, 'img-bench');
    let lastSay = Date.now();
    await waitFor(
      () => {
        if (Date.now() - lastSay > 15_000) {
          lastSay = Date.now();
          say(`hooks flow: ${updatedB.size}/${total} noticed, in update ${inUpdate.size}, sim ${JSON.stringify(sim!.stats())}`);
        }
        return updatedB.size >= total && sim!.stats().machinesUpdatedInPlace >= total ? true : undefined;
      },
      {
        timeoutMs: 240_000,
        intervalMs: 200,
        message: 'hooks flow: every machine updated in place',
      },
    );
    const b = summarize(updatedB, tasksB.done, Date.now() - t1);
    hB.abort();
    tasksB.stop();
    const st = sim.stats();

    const result = {
      case: 'hooks-latency',
      fleet: { cluster: CLUSTER, controlPlane: o.cp, workers: o.workers, versions: [FROM_VERSION, TO_VERSION, HOOKS_VERSION] },
      updaterDurationSeconds: o.durationSeconds,
      retryAfterSeconds: o.retryAfterSeconds,
      reference: 'per machine: the bench watch first seeing its last task terminal (completionTime has 1 s precision)',
      planFlow: { noticedBy: 'MachineUpdate status.updateStatus=updated (watch)', ...a },
      hooksFlow: {
        noticedBy: 'capi-sim removes the in-place annotation after UpdateMachine answers Done',
        machinesCreated: st.machinesCreated,
        machinesDeleted: st.machinesDeleted,
        ...b,
      },
    };
    for (const [name, r] of [
      ['plan flow (watch)', a],
      [`hooks flow (poll ${o.retryAfterSeconds}s)`, b],
    ] as const)
      say(`${name}: ${r.machines} machines, median ${r.medianMs} ms, p90 ${r.p90Ms} ms, max ${r.maxMs} ms, wall ${r.wallSeconds} s`);
    writeFileSync(join(o.out, 'hooks-latency.json'), JSON.stringify(result, null, 2) + '\n');
    return result;
  } finally {
    await sim?.stop();
    if (ecName) await env.client.delete(ExtensionConfigs, undefined, ecName).catch(() => undefined);
    await ext?.close();
    await env.stop();
    simLog?.end();
  }
}
