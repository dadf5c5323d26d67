// End to end (issue 18): capi-sim plays upstream Cluster API's in-place update flow (InPlaceUpdates gate) against the
// platform's real runtime extension, registered through an ExtensionConfig with its caBundle and called over HTTPS.
// Two updaters (the reference updater under two InPlaceUpdater registrations: Machine /spec/version and the
// DevMachine image) compose behind the one extension slot; the machine task controller runs their tasks, the MHC
// extension runs alongside. KCP and the MachineDeployment use maxSurge 0, so upstream replaces no machine.
import { expect } from 'chai';
import {
  API_VERSION,
  DevMachines,
  InPlaceUpdaters,
  KubeadmControlPlanes,
  Labels,
  Machines,
  REQUESTED_BY_RUNTIME_EXTENSION,
  type KubeObject,
  type MachineUpdate,
} from '../../src/api/index.js';
import {
  applyInventory,
  changeMachineDeploymentImage,
  buildInventory,
  deleteWorkloadNodes,
  startCapiSimulator,
  type CapiSimulator,
  type Machine,
} from '../../tools/capi-sim/index.js';
import { ExtensionConfigs, type ExtensionConfig } from '../../tools/capi-sim/extension-client.js';
import { UPDATE_IN_PROGRESS_ANNOTATION, UPDATE_MACHINE_FAILED_MESSAGE, UPDATING_CONDITION } from '../../tools/capi-sim/inplace.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { mhcExtension } from '../../src/mhc-extension/index.js';
import { createRuntimeExtension, type RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';
import type { Logger } from '../../src/runtime/pure/types.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from './env.js';
import { CLUSTER, CP, FROM_VERSION, TO_VERSION, type Platform } from './harness.js';

const MD = 'cluster1-md-0';
const IMAGE_PATH = '/spec/backend/docker/customImage';
const IMG_A = 'img-a';
const IMG_B = 'img-b';
const merge = { type: 'merge' } as const;
type Json = Record<string, unknown>;

/** A logger keeping what the simulator logs (its UpdateMachine failures carry the extension's message, as upstream's). */
class RecordingLogger implements Logger {
  lines: (Json & { msg?: string })[] = [];
  private add(obj: object | string, msg?: string): void {
    this.lines.push(typeof obj === 'string' ? { msg: obj } : { ...(obj as Json), ...(msg ? { msg } : {}) });
  }
  debug(): void {}
  info(obj: object | string, msg?: string): void {
    this.add(obj, msg);
  }
  warn(obj: object | string, msg?: string): void {
    this.add(obj, msg);
  }
  error(obj: object | string, msg?: string): void {
    this.add(obj, msg);
  }
  child(): Logger {
    return this;
  }
}

const imageOf = (d: KubeObject | undefined): unknown =>
  ((d?.['spec'] as { backend?: { docker?: { customImage?: unknown } } } | undefined)?.backend?.docker ?? {}).customImage;

describe('e2e: Cluster API in-place updates through the runtime extension (capi-sim, InPlaceUpdates gate)', function () {
  this.timeout(180_000);
  const env = useE2eEnv();
  let sim: CapiSimulator | undefined;
  let ext: RuntimeExtensionComponent | undefined;
  let ecName = '';
  let simLog: RecordingLogger;
  let simNs = '';

  afterEach(async function () {
    // What the simulator logged explains a failure (which hook answered what): printed only then.
    if (this.currentTest?.state === 'failed' && simLog) for (const l of simLog.lines) console.error(JSON.stringify(l));
    // The platform (components, updaters) is stopped by useE2eEnv; the rest is this file's.
    await sim?.stop();
    sim = undefined;
    if (simNs) await deleteWorkloadNodes(env().client, simNs);
    simNs = '';
    if (ecName)
      await env()
        .client.delete(ExtensionConfigs, undefined, ecName)
        .catch(() => undefined);
    ecName = '';
    await ext?.close();
    ext = undefined;
  });

  /** Inventory (3 CP + 3 workers, maxSurge 0), two InPlaceUpdaters, the simulator in-place, the platform, the ExtensionConfig. */
  async function setUp(o: { osFailWith?: string; mhc?: boolean; v115?: boolean } = {}): Promise<Platform> {
    const e = env();
    const p = await e.platform();
    const client = p.client;
    await applyInventory(
      client,
      buildInventory({
        namespace: p.ns,
        clusterName: CLUSTER,
        version: FROM_VERSION,
        image: IMG_A,
        controlPlane: { name: CP, replicas: 3 },
        machineDeployments: [
          { name: MD, replicas: 3, ...(o.v115 ? { maxUnavailable: 0, maxSurge: 1 } : { maxUnavailable: 1, maxSurge: 0 }) },
        ],
        ...(o.mhc === false ? {} : { mhc: { name: 'cluster1-mhc', inPlaceUpdateTimeout: '10m', unhealthyLessThanOrEqualTo: '40%' } }),
      }),
    );
    // With KCP's default maxSurge 1 upstream still creates one new machine first: 0 updates every machine in place.
    // v1.15 with non-disruptive updaters needs no such setting: the extension's affectsAvailability false skips the surge.
    if (!o.v115)
      await client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0 } } } } }, merge);
    const updater = (name: string, sequence: number, selectResource: string, path: string, parameters: Json) =>
      client.create(InPlaceUpdaters, {
        apiVersion: API_VERSION,
        kind: 'InPlaceUpdater',
        metadata: { name, namespace: p.ns },
        spec: { sequence, covers: [{ selectResource, path }], parameters, ...(o.v115 ? { affectsAvailability: false } : {}) },
      } as KubeObject);
    await updater('kubernetes', 1, 'Machine', '/spec/version', { durationSeconds: 0.05 });
    await updater('os', 2, 'InfraMachine', IMAGE_PATH, { durationSeconds: 0.05, ...(o.osFailWith ? { failWith: o.osFailWith } : {}) });

    simLog = new RecordingLogger();
    simNs = p.ns;
    sim = await startCapiSimulator({
      client,
      namespace: p.ns,
      readyDelayMs: 20,
      inPlaceUpdates: true,
      log: simLog,
      ...(o.v115 ? { clusterAPIVersion: 'v1.15.0' } : {}),
    });
    await waitFor(
      async () => {
        const all = await liveMachines(p);
        return all.length === 6 && all.every((m) => m.status?.phase === 'Running') ? true : undefined;
      },
      { timeoutMs: 60_000, message: 'the six machines running' },
    );

    ext = createRuntimeExtension({ port: 0, bindAddress: '127.0.0.1', retryAfterSeconds: 1 });
    await p.startComponent(ext);
    await p.startComponent(machineTaskController);
    await p.startComponent(mhcExtension);
    await p.startSampleUpdaters(['reference']);

    ecName = `inplace-${p.ns}`;
    const ec: ExtensionConfig = {
      apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
      kind: 'ExtensionConfig',
      metadata: { name: ecName },
      spec: {
        clientConfig: { url: ext.url, caBundle: Buffer.from(ext.caBundle).toString('base64') },
        ...(o.v115 ? { settings: { clusterAPIVersion: 'v1.15.0' } } : {}),
      },
    };
    await client.create(ExtensionConfigs, ec);
    await waitFor(
      async () =>
        (await client.get<ExtensionConfig>(ExtensionConfigs, undefined, ecName))?.status?.handlers?.length === 3 ? true : undefined,
      { timeoutMs: 30_000, message: "the simulator discovered the extension's three handlers" },
    );
    // Discovery wrote the status; KCP and the MachineSet controller read it from their own caches (upstream too): a
    // change made before they know the handlers is rolled out, not updated in place.
    await waitFor(() => (sim!.handlers().length === 3 ? true : undefined), {
      timeoutMs: 30_000,
      message: "the simulator's registry knows the three handlers",
    });
    return p;
  }

  const liveMachines = async (p: Platform): Promise<Machine[]> =>
    (await p.client.list<Machine>(Machines, p.ns)).items.filter((m) => !m.metadata.deletionTimestamp);
  const identities = (ms: Machine[]): string[] => ms.map((m) => `${m.metadata.name}/${m.metadata.uid}`).sort();
  const isWorker = (m: Machine): boolean => m.metadata.labels?.[Labels.deploymentName] === MD;

  /** Points the MachineDeployment at a new DevMachineTemplate whose image is `image` (upstream's way to change it). */
  const changeMdImage = (p: Platform, image: string): Promise<string> => changeMachineDeploymentImage(p.client, p.ns, MD, image);

  it('Cluster API v1.15 with non-disruptive updaters (affectsAvailability false) and surge budgets: still none created or replaced', async () => {
    const p = await setUp({ v115: true });
    const before = await liveMachines(p);
    const stats = sim!.stats();
    await p.client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { version: TO_VERSION } }, merge);
    await changeMdImage(p, IMG_B);
    const done = await waitFor(
      async () => {
        const now = await liveMachines(p);
        if (now.length !== 6 || now.some((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined)) return undefined;
        const infra = await Promise.all(now.map((m) => p.client.get(DevMachines, p.ns, m.spec.infrastructureRef.name)));
        const atTarget = now.every((m, i) => (isWorker(m) ? imageOf(infra[i]) === IMG_B : m.spec.version === TO_VERSION));
        return atTarget && sim!.stats().machinesUpdatedInPlace === 6 ? now : undefined;
      },
      { timeoutMs: 150_000, intervalMs: 200, message: 'every machine updated in place without a surge machine' },
    );
    // KCP maxSurge 1 and the MachineDeployment's maxUnavailable 0 would each surge one machine before v1.15.
    expect(identities(done)).to.deep.equal(identities(before));
    expect(sim!.stats()).to.include({ machinesCreated: stats.machinesCreated, machinesDeleted: stats.machinesDeleted });
  });

  it('a KCP version change and an MD image change end with every machine updated in place by both updaters, none replaced', async () => {
    const p = await setUp();
    const before = await liveMachines(p);
    const stats = sim!.stats();

    await p.client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { version: TO_VERSION } }, merge);
    await changeMdImage(p, IMG_B);

    const done = await waitFor(
      async () => {
        const now = await liveMachines(p);
        if (now.length !== 6 || now.some((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined)) return undefined;
        const infra = await Promise.all(now.map((m) => p.client.get(DevMachines, p.ns, m.spec.infrastructureRef.name)));
        const atTarget = now.every((m, i) =>
          isWorker(m) ? imageOf(infra[i]) === IMG_B && m.spec.version === FROM_VERSION : m.spec.version === TO_VERSION,
        );
        return atTarget && sim!.stats().machinesUpdatedInPlace === 6 ? { now, infra } : undefined;
      },
      { timeoutMs: 150_000, intervalMs: 200, message: 'every machine updated in place (CP version, workers image)' },
    );

    // None replaced: the same machines (names and uids), the simulator created and deleted nothing.
    expect(identities(done.now)).to.deep.equal(identities(before));
    expect(sim!.stats()).to.include({ machinesCreated: stats.machinesCreated, machinesDeleted: stats.machinesDeleted });
    // Each machine's spec at the new values; the control plane's DevMachines keep their image.
    for (const [i, m] of done.now.entries()) {
      if (isWorker(m)) expect(imageOf(done.infra[i]), m.metadata.name).to.equal(IMG_B);
      else expect([m.spec.version, imageOf(done.infra[i])], m.metadata.name).to.deep.equal([TO_VERSION, IMG_A]);
    }
    // One MachineUpdate per machine, requested by the extension, updated, with both updaters' tasks in sequence order
    // (both cover a field every machine has: the one whose field did not change finishes at once, C7).
    const mus = (await p.machineUpdates()) as (MachineUpdate & KubeObject)[];
    for (const m of done.now) {
      const own = mus.filter((u) => u.metadata.labels?.[Labels.machineName] === m.metadata.name);
      expect(own, m.metadata.name).to.have.length(1);
      const mu = own[0]!;
      expect(mu.metadata.labels?.[Labels.requestedBy]).to.equal(REQUESTED_BY_RUNTIME_EXTENSION);
      expect(mu.metadata.ownerReferences?.[0]).to.include({ kind: 'Machine', name: m.metadata.name, uid: m.metadata.uid });
      expect(mu.status?.updateStatus, m.metadata.name).to.equal('updated');
      expect(mu.status?.tasks?.map((t) => [t.updater, t.updateStatus])).to.deep.equal([
        ['kubernetes', 'updated'],
        ['os', 'updated'],
      ]);
    }
    // The simulator saw no UpdateMachine failure, and the KCP reports the new version.
    expect(sim!.stats().updateMachineFailures).to.equal(0);
    await waitFor(
      async () => ((await p.client.get(KubeadmControlPlanes, p.ns, CP))?.['status'] as Json | undefined)?.['version'] === TO_VERSION,
      { timeoutMs: 30_000, message: 'KCP status.version follows' },
    );
  });

  it('with a MachineHealthCheck, failed in-place updates are remediated: Cluster API replaces each such machine by one at the new image', async () => {
    const p = await setUp({ osFailWith: 'os-image: disk full' });
    const before = await liveMachines(p);
    const workersBefore = before.filter(isWorker);
    const original = new Set(workersBefore.map((m) => m.metadata.uid));
    // MachineUpdates are owned by their Machine and go with it: the record keeps what they said.
    const rec = await p.recordMachineUpdates();

    await changeMdImage(p, IMG_B);

    // Each worker moved to the new MachineSet fails its update; the MHC extension hands it to Cluster API
    // (remediate-machine), the simulator's MHC deletes it and the new MachineSet creates a replacement from its own
    // template, which carries the new image from the start. Within maxUnavailable 1 and the MHC's budget, one by one.
    const replaced = await waitFor(
      async () => {
        const now = (await liveMachines(p)).filter(isWorker);
        const done = now.length === 3 && now.every((m) => !original.has(m.metadata.uid) && m.status?.phase === 'Running');
        return done ? now : undefined;
      },
      { timeoutMs: 150_000, intervalMs: 200, message: 'every worker remediated and replaced' },
    );
    rec.stop();
    const infra = await Promise.all(replaced.map((m) => p.client.get(DevMachines, p.ns, m.spec.infrastructureRef.name)));
    for (const [i, m] of replaced.entries()) expect(imageOf(infra[i]), m.metadata.name).to.equal(IMG_B);
    // Replaced by remediation after a failed update, not rolled out: each original worker had a MachineUpdate that
    // failed on the os updater, and the simulator's MHC remediated it.
    const remediated = simLog.lines.filter((l) => l.msg === 'capi-sim: remediating machine').map((l) => l['machine']);
    for (const w of workersBefore) {
      const name = w.metadata.name ?? '';
      const failed = rec.events.find(
        (e) => e.object.metadata.labels?.[Labels.machineName] === name && e.object.status?.updateStatus === 'failed',
      );
      expect(
        failed?.object.status?.tasks?.map((t) => [t.updater, t.updateStatus]),
        name,
      ).to.deep.equal([
        ['kubernetes', 'updated'],
        ['os', 'failed'],
      ]);
      expect(remediated, name).to.include(name);
    }
    expect(sim!.stats().machinesUpdatedInPlace).to.equal(0);
    // The control plane was not touched: its machines are the same ones.
    expect(identities((await liveMachines(p)).filter((m) => !isWorker(m)))).to.deep.equal(identities(before.filter((m) => !isWorker(m))));
  });

  it("a failing updater: UpdateMachine answers Failure with the updater's own message, and the machine is not replaced", async () => {
    // No MachineHealthCheck here: with one, the MHC extension lifts its protection from a failed update and CAPI
    // remediates (replaces) the machine within its budget, as designed (docs/hooks.md "MHC"); this scenario looks at
    // the hook's answer and at Cluster API leaving the machine alone on its own.
    const p = await setUp({ osFailWith: 'os-image: disk full', mhc: false });
    const before = await liveMachines(p);
    const stats = sim!.stats();

    await changeMdImage(p, IMG_B);

    // Upstream logs the extension's message (the Machine's condition carries only its generic text): the simulator too.
    const failure = await waitFor(
      () =>
        simLog.lines.find(
          (l) =>
            l.msg === 'capi-sim: UpdateMachine failed' && typeof l['extensionMessage'] === 'string' && l['extensionMessage'].length > 0,
        ),
      { timeoutMs: 120_000, intervalMs: 200, message: 'the simulator got a Failure from UpdateMachine' },
    );
    expect(failure['extensionMessage']).to.contain('os-image: disk full');
    expect(sim!.stats().updateMachineFailures).to.be.at.least(1);

    const machine = failure['machine'] as string;
    const failed = await waitFor(
      async () =>
        (await p.machineUpdates()).find((u) => u.metadata.labels?.[Labels.machineName] === machine && u.status?.updateStatus === 'failed'),
      { timeoutMs: 30_000, message: `the MachineUpdate of ${machine} failed` },
    );
    expect(failed.status?.tasks?.map((t) => [t.updater, t.updateStatus])).to.deep.equal([
      ['kubernetes', 'updated'],
      ['os', 'failed'],
    ]);

    // Cluster API keeps retrying the hook; the answer stays Failure and the machine stays (not replaced, still in update).
    const failuresSoFar = sim!.stats().updateMachineFailures;
    await waitFor(() => (sim!.stats().updateMachineFailures > failuresSoFar ? true : undefined), {
      timeoutMs: 30_000,
      message: 'the simulator retried UpdateMachine',
    });
    const now = await liveMachines(p);
    expect(identities(now)).to.deep.equal(identities(before));
    expect(sim!.stats()).to.include({
      machinesCreated: stats.machinesCreated,
      machinesDeleted: stats.machinesDeleted,
      machinesUpdatedInPlace: 0,
    });
    const m = now.find((x) => x.metadata.name === machine)!;
    expect(m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION]).to.not.equal(undefined);
    // On the Machine, upstream's generic text only (the extension's message goes to the controller log).
    expect(m.status?.conditions?.find((c) => c.type === UPDATING_CONDITION)).to.include({
      status: 'True',
      reason: 'InPlaceUpdateFailed',
      message: UPDATE_MACHINE_FAILED_MESSAGE,
    });
    expect(
      simLog.lines
        .filter((l) => l.msg === 'capi-sim: UpdateMachine failed')
        .every((l) => String(l['extensionMessage']).includes('os-image: disk full')),
    ).to.equal(true);
  });
});
