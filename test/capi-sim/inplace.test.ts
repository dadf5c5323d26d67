// capi-sim with upstream's InPlaceUpdates gate against an API server and a fake runtime extension (an HTTPS server in
// this test answering upstream-shaped JSON): discovery through an ExtensionConfig, KubeadmControlPlane offering each
// out-of-date machine to CanUpdateMachine one at a time, UpdateMachine polled on retryAfterSeconds, fallback to the
// rollout when the answer does not cover the change, and a Failure answer reported on the machine and retried.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  DevMachines,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  MachineSets,
  Machines,
  type KubeObject,
} from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import {
  CLONED_FROM_NAME_ANNOTATION,
  DevMachineTemplates,
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  startCapiSimulator,
  type CapiSimulator,
  type Machine,
  type MachineSet,
} from '../../tools/capi-sim/index.js';
import { ExtensionConfigs, type ExtensionConfig } from '../../tools/capi-sim/extension-client.js';
import {
  PENDING_HOOKS_ANNOTATION,
  UPDATE_IN_PROGRESS_ANNOTATION,
  UPDATE_MACHINE_FAILED_MESSAGE,
  UPDATING_CONDITION,
} from '../../tools/capi-sim/inplace.js';
import { selfSignedCertificate } from '../../src/runtime/tls.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const merge = { type: 'merge' } as const;
type Json = Record<string, unknown>;
const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64');

/** How the fake extension answers. */
interface FakeBehaviour {
  /** full: patches covering every change; machineOnly: a patch for the Machine only (partial coverage); none: no patches. */
  canUpdate: 'full' | 'machineOnly' | 'none';
  /** UpdateMachine calls per machine answered in progress (retryAfterSeconds 1) before Done. */
  inProgressCalls: number;
  /** UpdateMachine calls per machine answered Failure first. */
  failures: number;
  /** affectsAvailability on CanUpdate answers (Cluster API v1.15); unset: not answered. */
  affectsAvailability?: boolean;
}

/** A runtime extension speaking upstream's Runtime SDK, recording the calls it gets. */
class FakeExtension {
  server!: Server;
  ca = '';
  calls: { path: string; body: Json }[] = [];
  behaviour: FakeBehaviour = { canUpdate: 'full', inProgressCalls: 1, failures: 0 };
  private perMachine = new Map<string, number>();

  async start(): Promise<void> {
    const { key, cert } = await selfSignedCertificate('localhost');
    this.ca = Buffer.from(cert).toString('base64');
    this.server = createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json;
        const path = (req.url ?? '').split('?')[0] ?? '';
        this.calls.push({ path, body });
        const answer = req.method === 'POST' ? this.answer(path, body) : undefined;
        res.writeHead(answer ? 200 : 404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(answer ?? { error: 'not found' }));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, 'localhost', r));
  }

  get url(): string {
    return `https://localhost:${(this.server.address() as AddressInfo).port}`;
  }

  /** Machine names of the UpdateMachine calls, in order. */
  updateMachineCalls(): string[] {
    return this.calls
      .filter((c) => c.path.endsWith('/updatemachine/update-machine'))
      .map((c) => ((c.body['desired'] as Json)['machine'] as { metadata: { name: string } }).metadata.name);
  }

  private answer(path: string, body: Json): Json | undefined {
    const base = '/hooks.runtime.cluster.x-k8s.io/v1alpha1';
    const hook = (apiVersion: string, h: string, name: string): Json => ({
      name,
      requestHook: { apiVersion, hook: h },
      timeoutSeconds: 5,
      failurePolicy: 'Fail',
    });
    if (path === `${base}/discovery` && body['kind'] === 'DiscoveryRequest') {
      const av = 'hooks.runtime.cluster.x-k8s.io/v1alpha1';
      return {
        apiVersion: av,
        kind: 'DiscoveryResponse',
        status: 'Success',
        handlers: [
          hook(av, 'CanUpdateMachine', 'can-update-machine'),
          hook(av, 'CanUpdateMachineSet', 'can-update-machineset'),
          hook(av, 'UpdateMachine', 'update-machine'),
        ],
      };
    }
    if (path === `${base}/canupdatemachine/can-update-machine`) {
      const cur = body['current'] as Record<string, { spec: unknown }>;
      const des = body['desired'] as Record<string, { spec: unknown }>;
      const out: Json = { apiVersion: body['apiVersion'], kind: 'CanUpdateMachineResponse', status: 'Success' };
      if (this.behaviour.canUpdate === 'none') return out;
      if (this.behaviour.affectsAvailability !== undefined) out['affectsAvailability'] = this.behaviour.affectsAvailability;
      // A JSONPatch for the Machine, JSON merge patches for the clones: both patch types upstream defines.
      out['machinePatch'] = { patchType: 'JSONPatch', patch: b64([{ op: 'replace', path: '/spec', value: des['machine']!.spec }]) };
      if (this.behaviour.canUpdate === 'full') {
        out['infrastructureMachinePatch'] = { patchType: 'JSONMergePatch', patch: b64({ spec: des['infrastructureMachine']!.spec }) };
        if (cur['bootstrapConfig'])
          out['bootstrapConfigPatch'] = {
            patchType: 'JSONPatch',
            patch: b64([{ op: 'replace', path: '/spec', value: des['bootstrapConfig']!.spec }]),
          };
      }
      return out;
    }
    if (path === `${base}/canupdatemachineset/can-update-machineset`) {
      const des = body['desired'] as Record<string, { spec: Json }>;
      const out: Json = { apiVersion: body['apiVersion'], kind: 'CanUpdateMachineSetResponse', status: 'Success' };
      if (this.behaviour.canUpdate === 'none') return out;
      if (this.behaviour.affectsAvailability !== undefined) out['affectsAvailability'] = this.behaviour.affectsAvailability;
      out['machineSetPatch'] = { patchType: 'JSONMergePatch', patch: b64({ spec: { template: des['machineSet']!.spec['template'] } }) };
      if (this.behaviour.canUpdate === 'full') {
        out['infrastructureMachineTemplatePatch'] = {
          patchType: 'JSONMergePatch',
          patch: b64({ spec: des['infrastructureMachineTemplate']!.spec }),
        };
        if (des['bootstrapConfigTemplate'])
          out['bootstrapConfigTemplatePatch'] = { patchType: 'JSONMergePatch', patch: b64({ spec: des['bootstrapConfigTemplate'].spec }) };
      }
      return out;
    }
    if (path === `${base}/updatemachine/update-machine`) {
      const name = ((body['desired'] as Json)['machine'] as { metadata: { name: string } }).metadata.name;
      const n = (this.perMachine.get(name) ?? 0) + 1;
      this.perMachine.set(name, n);
      const out = { apiVersion: body['apiVersion'], kind: 'UpdateMachineResponse' };
      if (n <= this.behaviour.failures) return { ...out, status: 'Failure', message: `updater broke on ${name}` };
      if (n <= this.behaviour.failures + this.behaviour.inProgressCalls)
        return { ...out, status: 'Success', message: 'updating', retryAfterSeconds: 1 };
      return { ...out, status: 'Success', message: 'done' };
    }
    return undefined;
  }
}

describe('capi-sim in-place updates (InPlaceUpdates gate, runtime extension over HTTPS)', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let client: KubeClient;
  let sim: CapiSimulator | undefined;
  let ext: FakeExtension;
  let ns = '';
  const ecName = () => `inplace-${ns}`;

  const cp = async (): Promise<Machine[]> =>
    (await client.list<Machine>(Machines, ns)).items.filter(
      (m) => !m.metadata.deletionTimestamp && m.metadata.labels?.[Labels.controlPlaneName] === 'c1-cp',
    );
  const workers = async (): Promise<Machine[]> =>
    (await client.list<Machine>(Machines, ns)).items.filter(
      (m) => !m.metadata.deletionTimestamp && m.metadata.labels?.[Labels.deploymentName] === 'c1-md',
    );
  const names = (ms: Machine[]): string[] => ms.map((m) => m.metadata.name ?? '').sort();

  before(async () => {
    env = await startTestEnv({ crds: capiCrdDirs() });
    client = env.client;
  });
  after(async () => env?.stop());
  beforeEach(async () => {
    ext = new FakeExtension();
    await ext.start();
    ns = await env.newNamespace('capi-sim-inplace');
    await applyInventory(
      client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.29.5',
        image: 'img-a',
        controlPlane: { name: 'c1-cp', replicas: 3 },
        machineDeployments: [{ name: 'c1-md', replicas: 3, maxUnavailable: 1, maxSurge: 0 }],
      }),
    );
    // Upstream replaces no machine only without a surge: with maxSurge 1 KCP still creates one first.
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0 } } } } }, merge);
    sim = await startCapiSimulator({ client, namespace: ns, readyDelayMs: 20, inPlaceUpdates: true });
    await waitFor(
      async () => {
        const all = [...(await cp()), ...(await workers())];
        return all.length === 6 && all.every((m) => m.status?.phase === 'Running') ? true : undefined;
      },
      {
        timeoutMs: 30_000,
        message: 'control plane running',
      },
    );
    const ec: ExtensionConfig = {
      apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
      kind: 'ExtensionConfig',
      metadata: { name: ecName() },
      spec: { clientConfig: { url: ext.url, caBundle: ext.ca } },
    };
    await client.create(ExtensionConfigs, ec);
    await waitFor(
      async () =>
        (await client.get<ExtensionConfig>(ExtensionConfigs, undefined, ecName()))?.status?.handlers?.length === 3 ? true : undefined,
      {
        message: 'discovery wrote status.handlers',
      },
    );
    // The simulated KCP and MachineSet controllers read the handlers from their own cache of that status.
    await waitFor(() => (sim!.handlers().length === 3 ? true : undefined), { message: "the simulator's registry knows the handlers" });
  });
  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
    await client.delete(ExtensionConfigs, undefined, ecName()).catch(() => undefined);
    await deleteWorkloadNodes(client, ns);
    await new Promise<void>((r) => ext.server.close(() => r()));
  });

  it('discovers the handlers as upstream registers them (<handler>.<ExtensionConfig>, defaults kept)', async () => {
    const ec = await client.get<ExtensionConfig>(ExtensionConfigs, undefined, ecName());
    expect(ec?.status?.handlers?.map((h) => [h.name, h.requestHook.hook, h.failurePolicy, h.timeoutSeconds])).to.deep.equal([
      [`can-update-machine.${ecName()}`, 'CanUpdateMachine', 'Fail', 5],
      [`can-update-machineset.${ecName()}`, 'CanUpdateMachineSet', 'Fail', 5],
      [`update-machine.${ecName()}`, 'UpdateMachine', 'Fail', 5],
    ]);
    expect(ext.calls[0]?.body).to.include({ apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1', kind: 'DiscoveryRequest' });
  });

  /** Moves the KCP to v1.30.1 and waits until its three machines were updated in place: the same machines, none created or deleted. */
  async function versionInPlace(): Promise<Awaited<ReturnType<typeof cp>>> {
    const before = names(await cp());
    const stats = sim!.stats();
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.30.1' } }, merge);
    const done = await waitFor(
      async () => {
        const now = await cp();
        const finished = now.every(
          (m) => m.spec.version === 'v1.30.1' && m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined,
        );
        return finished && sim!.stats().machinesUpdatedInPlace === 3 ? now : undefined;
      },
      { timeoutMs: 60_000, message: 'every control-plane machine updated in place' },
    );
    expect(names(done)).to.deep.equal(before);
    expect(sim!.stats()).to.include({ machinesCreated: stats.machinesCreated, machinesDeleted: stats.machinesDeleted });
    return done;
  }

  it('a KCP version change updates every control-plane machine in place, one at a time, none replaced', async () => {
    const done = await versionInPlace();
    for (const m of done) {
      expect(m.metadata.annotations?.[PENDING_HOOKS_ANNOTATION]).to.equal(undefined);
      expect(m.status?.conditions?.find((c) => c.type === UPDATING_CONDITION)).to.include({ status: 'False', reason: 'NotUpdating' });
    }
    // One at a time: each machine's UpdateMachine calls are contiguous, every machine polled again after retryAfterSeconds.
    const seq = ext.updateMachineCalls();
    const order = seq.filter((n, i) => i === 0 || seq[i - 1] !== n);
    expect(order).to.have.length(3);
    expect(new Set(order).size).to.equal(3);
    for (const n of names(done)) expect(seq.filter((x) => x === n)).to.have.length(2);
    // The CanUpdateMachine request carries current and desired Machine, InfraMachine and BootstrapConfig.
    const can = ext.calls.find((c) => c.path.endsWith('/canupdatemachine/can-update-machine'))!.body as Record<
      string,
      Record<string, Json>
    >;
    expect(can['kind']).to.equal('CanUpdateMachineRequest');
    expect(Object.keys(can['current']!).sort()).to.deep.equal(['bootstrapConfig', 'infrastructureMachine', 'machine']);
    expect((can['current']!['machine']!['spec'] as Json)['version']).to.equal('v1.29.5');
    expect((can['desired']!['machine']!['spec'] as Json)['version']).to.equal('v1.30.1');
    await waitFor(
      async () => ((await client.get(KubeadmControlPlanes, ns, 'c1-cp'))?.['status'] as Json | undefined)?.['version'] === 'v1.30.1',
      {
        message: 'KCP status.version follows',
      },
    );
  });

  it('an answer that does not cover every change falls back to the rollout (machines replaced)', async () => {
    ext.behaviour.canUpdate = 'none';
    const before = names(await cp());
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.30.1' } }, merge);
    const done = await waitFor(
      async () => {
        const now = await cp();
        return now.length === 3 && now.every((m) => m.spec.version === 'v1.30.1' && m.status?.phase === 'Running') ? now : undefined;
      },
      { timeoutMs: 60_000, message: 'control plane rolled out' },
    );
    expect(names(done).filter((n) => before.includes(n))).to.deep.equal([]);
    expect(sim!.stats().machinesUpdatedInPlace).to.equal(0);
    expect(ext.updateMachineCalls()).to.deep.equal([]);
    expect(ext.calls.filter((c) => c.path.endsWith('/canupdatemachine/can-update-machine')).length).to.be.greaterThan(0);
  });

  it('a partial answer (Machine covered, a KubeadmConfig change not) falls back to the rollout', async () => {
    ext.behaviour.canUpdate = 'machineOnly';
    const before = names(await cp());
    await client.patch(
      KubeadmControlPlanes,
      ns,
      'c1-cp',
      { spec: { version: 'v1.30.1', kubeadmConfigSpec: { ntp: { servers: ['ntp.in-place.test'] } } } },
      merge,
    );
    const done = await waitFor(
      async () => {
        const now = await cp();
        return now.length === 3 &&
          now.every((m) => m.spec.version === 'v1.30.1' && m.status?.phase === 'Running') &&
          names(now).every((n) => !before.includes(n))
          ? now
          : undefined;
      },
      { timeoutMs: 60_000, message: 'control plane rolled out' },
    );
    expect(done).to.have.length(3);
    expect(sim!.stats().machinesUpdatedInPlace).to.equal(0);
    expect(ext.updateMachineCalls()).to.deep.equal([]);
  });

  /** Changes the MD's version and waits until the three workers run it in the one MachineSet left, updated in place. */
  async function changeWorkersVersion(version: string): Promise<Machine[]> {
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { template: { spec: { version } } } }, merge);
    // What the last poll saw, for the failure message: slow (still moving) and stuck (e.g. a fourth update) differ.
    let seen = '';
    return waitFor(
      async () => {
        const now = await workers();
        const sets = (await client.list<MachineSet>(MachineSets, ns)).items.filter((x) => !x.metadata.deletionTimestamp);
        seen =
          `sets ${sets.map((x) => `${x.metadata.name}=${x.spec.replicas}`).join(',')}; updated in place ${sim!.stats().machinesUpdatedInPlace}; ` +
          now
            .map(
              (m) =>
                `${m.metadata.name}@${m.metadata.labels?.[Labels.setName]}:${m.spec.version}${m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined ? '' : '(updating)'}`,
            )
            .join(' ');
        const finished =
          now.length === 3 &&
          sets.length === 1 &&
          sim!.stats().machinesUpdatedInPlace === 3 &&
          now.every(
            (m) =>
              m.spec.version === version &&
              m.metadata.labels?.[Labels.setName] === sets[0]!.metadata.name &&
              m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined,
          );
        return finished ? now : undefined;
      },
      { timeoutMs: 60_000, message: 'every worker updated in place' },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last seen: ${seen}`);
    });
  }

  it('an MD template change moves the workers to the new MachineSet and updates them in place within maxUnavailable, none replaced', async () => {
    const before = names(await workers());
    const stats = sim!.stats();
    const done = await changeWorkersVersion('v1.30.1');
    expect(names(done)).to.deep.equal(before);
    expect(sim!.stats()).to.include({
      machinesCreated: stats.machinesCreated,
      machinesDeleted: stats.machinesDeleted,
      machinesUpdatedInPlace: 3,
    });
    // maxUnavailable 1: one worker at a time, each polled once more after retryAfterSeconds.
    const seq = ext.updateMachineCalls();
    const order = seq.filter((n, i) => i === 0 || seq[i - 1] !== n);
    expect(order).to.have.length(3);
    expect(new Set(order).size).to.equal(3);
    const req = ext.calls.find((c) => c.path.endsWith('/canupdatemachineset/can-update-machineset'))!.body as Record<
      string,
      Record<string, unknown>
    >;
    expect(req['kind']).to.equal('CanUpdateMachineSetRequest');
    expect(Object.keys(req['current']!).sort()).to.deep.equal(['bootstrapConfigTemplate', 'infrastructureMachineTemplate', 'machineSet']);
  });

  it('maxUnavailable = replicas: every worker moves at once and is updated in place, none created for moved machines not yet acknowledged', async () => {
    await client.patch(
      MachineDeployments,
      ns,
      'c1-md',
      { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: 3 } } } } },
      merge,
    );
    const before = names(await workers());
    const stats = sim!.stats();
    const done = await changeWorkersVersion('v1.30.1');
    expect(names(done)).to.deep.equal(before);
    // The new set never grew past the machines it had (upstream's NewMSNewReplicas counts status.replicas): nothing
    // was created for a machine still waiting for its move to be acknowledged, nor deleted afterwards.
    expect(sim!.stats()).to.include({ machinesCreated: stats.machinesCreated, machinesDeleted: stats.machinesDeleted });
    const sets = (await client.list<MachineSet>(MachineSets, ns)).items.filter((x) => !x.metadata.deletionTimestamp);
    expect(sets.map((x) => x.spec.replicas)).to.deep.equal([3]);
  });

  describe('affectsAvailability (Cluster API v1.15, capi#14160)', () => {
    const noSurgeBudget = { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } } } };
    const restartSim = async (clusterAPIVersion: string) => {
      await sim?.stop();
      sim = await startCapiSimulator({ client, namespace: ns, readyDelayMs: 20, inPlaceUpdates: true, clusterAPIVersion });
      await waitFor(() => (sim!.handlers().length === 3 ? true : undefined), { message: "the simulator's registry knows the handlers" });
    };

    it('v1.15, maxUnavailable 0, the answer says false: no surge machine, one worker at a time, none replaced', async () => {
      await restartSim('v1.15.0');
      ext.behaviour.affectsAvailability = false;
      await client.patch(MachineDeployments, ns, 'c1-md', noSurgeBudget, merge);
      const before = names(await workers());
      const stats = sim!.stats();
      const done = await changeWorkersVersion('v1.30.1');
      expect(names(done)).to.deep.equal(before);
      expect(sim!.stats()).to.include({ machinesCreated: stats.machinesCreated, machinesDeleted: stats.machinesDeleted });
      // Paced by the rollout's speed (maxSurge + maxUnavailable = 1): one machine in update at a time.
      const seq = ext.updateMachineCalls();
      const order = seq.filter((n, i) => i === 0 || seq[i - 1] !== n);
      expect(order, `UpdateMachine calls: ${seq.join(', ')}`).to.have.length(3);
      const req = ext.calls.find((c) => c.path.endsWith('/canupdatemachineset/can-update-machineset'))!.body;
      expect(req['kind']).to.equal('CanUpdateMachineSetRequest');
    });

    it('v1.15 KCP with maxSurge 1: a non-disruptive answer updates every control-plane machine in place, no surge machine', async () => {
      await restartSim('v1.15.0');
      ext.behaviour.affectsAvailability = false;
      await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 1 } } } } }, merge);
      await versionInPlace();
    });

    it('v1.15 KCP with maxSurge 1 and a disruptive answer: the surge machine comes first, as in v1.12', async () => {
      await restartSim('v1.15.0');
      ext.behaviour.affectsAvailability = true;
      await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { rollout: { strategy: { rollingUpdate: { maxSurge: 1 } } } } }, merge);
      const stats = sim!.stats();
      await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.30.1' } }, merge);
      await waitFor(() => (sim!.stats().machinesCreated > stats.machinesCreated ? true : undefined), {
        timeoutMs: 60_000,
        message: 'a surge machine',
      });
    });

    it('v1.15 with the answer true (or unset), and v1.12 whatever the answer: maxUnavailable 0 surges by one machine first', async () => {
      for (const [version, answer] of [
        ['v1.15.0', true],
        ['v1.15.0', undefined],
        ['v1.12.0', false],
      ] as const) {
        await restartSim(version);
        if (answer === undefined) delete ext.behaviour.affectsAvailability;
        else ext.behaviour.affectsAvailability = answer;
        await client.patch(MachineDeployments, ns, 'c1-md', noSurgeBudget, merge);
        const stats = sim!.stats();
        const next = `v1.30.${version === 'v1.12.0' ? 3 : answer === true ? 1 : 2}`;
        await client.patch(MachineDeployments, ns, 'c1-md', { spec: { template: { spec: { version: next } } } }, merge);
        await waitFor(() => (sim!.stats().machinesCreated > stats.machinesCreated ? true : undefined), {
          timeoutMs: 60_000,
          message: `${version} answer ${String(answer)}: a surge machine`,
        });
        // Let this rollout finish before the next case starts another one.
        await waitFor(
          async () => {
            const now = await workers();
            return now.length === 3 && now.every((m) => m.spec.version === next && m.status?.phase === 'Running') ? true : undefined;
          },
          { timeoutMs: 60_000, message: `${version}: workers at ${next}` },
        );
      }
    });
  });

  it("an MD image change (a new DevMachineTemplate) is made in place too: the DevMachines get the new template's spec", async () => {
    const before = names(await workers());
    const tpl = (await client.get<KubeObject & { spec: { template: { spec: Json } } }>(DevMachineTemplates, ns, 'c1-md'))!;
    const spec = structuredClone(tpl.spec);
    (spec.template.spec['backend'] as { docker: Json }).docker['customImage'] = 'img-b';
    await client.create(DevMachineTemplates, {
      apiVersion: tpl.apiVersion,
      kind: tpl.kind,
      metadata: { name: 'c1-md-b', namespace: ns },
      spec,
    });
    await client.patch(
      MachineDeployments,
      ns,
      'c1-md',
      { spec: { template: { spec: { infrastructureRef: { name: 'c1-md-b' } } } } },
      merge,
    );
    const done = await waitFor(
      async () => {
        const now = await workers();
        const infra = await Promise.all(now.map((m) => client.get(DevMachines, ns, m.spec.infrastructureRef.name)));
        const finished =
          now.length === 3 &&
          now.every((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined) &&
          infra.every((d) => d?.metadata.annotations?.[CLONED_FROM_NAME_ANNOTATION] === 'c1-md-b');
        return finished ? infra : undefined;
      },
      { timeoutMs: 60_000, message: 'every worker updated in place to the new template' },
    );
    expect(names(await workers())).to.deep.equal(before);
    for (const d of done) expect(((d?.['spec'] as Json)['backend'] as { docker: Json }).docker['customImage']).to.equal('img-b');
  });

  it('a Failure answer shows on the machine (upstream message) and the call is retried until it succeeds', async () => {
    ext.behaviour = { canUpdate: 'full', inProgressCalls: 0, failures: 2 };
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.30.1' } }, merge);
    const failing = await waitFor(
      async () =>
        (await cp()).find((m) => {
          const c = m.status?.conditions?.find((x) => x.type === UPDATING_CONDITION);
          return c?.status === 'True' && c.reason === 'InPlaceUpdateFailed';
        }),
      { timeoutMs: 30_000, message: 'Updating condition reports the failure' },
    );
    expect(failing.status?.conditions?.find((c) => c.type === UPDATING_CONDITION)?.message).to.equal(UPDATE_MACHINE_FAILED_MESSAGE);
    const m = await waitFor(
      async () => {
        const now = (await cp()).find((x) => x.metadata.name === failing.metadata.name);
        return now && now.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined ? now : undefined;
      },
      { timeoutMs: 30_000, message: 'update completed after the retries' },
    );
    expect(m.spec.version).to.equal('v1.30.1');
    expect(ext.updateMachineCalls().filter((n) => n === failing.metadata.name)).to.have.length(3);
    expect(sim!.stats().updateMachineFailures).to.be.at.least(2);
  });
});
