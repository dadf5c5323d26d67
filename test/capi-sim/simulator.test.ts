import { expect } from 'chai';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Annotations,
  DevMachines,
  KubeadmConfigs,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  MachineHealthChecks,
  MachineSets,
  Machines,
  Nodes,
  type KubeObject,
  type ResourceType,
} from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import {
  CAPI_FIXTURE_CRDS_DIR,
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  nodeNameFor,
  startCapiSimulator,
  type CapiSimulator,
  type Machine,
} from '../../tools/capi-sim/index.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';
import { loadCrdsByKind, schemaProblems } from './schema-check.js';
import { requireRealCapiCrds } from '../support/real-capi-crds.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const realDir = process.env['CAPI_CRDS_DIR'] ?? resolve(repoRoot, '../shared/reference/capi-crds');
let ns = '';
const merge = { type: 'merge' } as const;

const list = async <T extends KubeObject = KubeObject>(client: KubeClient, res: ResourceType): Promise<T[]> =>
  (await client.list<T>(res, res.namespaced ? ns : undefined)).items;
const running = (ms: Machine[]): Machine[] => ms.filter((m) => m.status?.phase === 'Running' && m.status.nodeRef);
const ofDeployment = (ms: Machine[], md: string): Machine[] => ms.filter((m) => m.metadata.labels?.[Labels.deploymentName] === md);

describe('capi-sim simulator', () => {
  let env: TestEnv;
  let client: KubeClient;
  let sim: CapiSimulator | undefined;

  before(async () => {
    env = await startTestEnv({ crds: capiCrdDirs() });
    client = env.client;
  });
  after(async () => env?.stop());

  beforeEach(async () => {
    ns = await env.newNamespace('capi-sim');
    await applyInventory(
      client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.29.5',
        image: 'img-a',
        controlPlane: { name: 'c1-cp', replicas: 1 },
        machineDeployments: [{ name: 'c1-md', replicas: 2, maxUnavailable: 1 }],
        mhc: { name: 'c1-mhc', unhealthyLessThanOrEqualTo: '50%' },
      }),
    );
    sim = await startCapiSimulator({ client, namespace: ns, readyDelayMs: 20 });
  });
  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
    await deleteWorkloadNodes(client, ns);
  });

  it('scales a MachineDeployment up with Ready machines, each with its DevMachine, KubeadmConfig and Node', async () => {
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 3 } }, merge);
    const ms = await waitFor(
      async () => {
        const r = running(ofDeployment(await list<Machine>(client, Machines), 'c1-md'));
        return r.length === 3 ? r : undefined;
      },
      { timeoutMs: 10_000, message: '3 running machines' },
    );
    for (const m of ms) {
      expect(m.spec.version).to.equal('v1.29.5');
      expect(m.status?.conditions?.find((c) => c.type === 'Ready')?.status).to.equal('True');
      expect(m.status?.initialization).to.deep.equal({ infrastructureProvisioned: true, bootstrapDataSecretCreated: true });
      expect(await client.get(DevMachines, ns, m.spec.infrastructureRef.name)).to.have.nested.property(
        'spec.backend.docker.customImage',
        'img-a',
      );
      expect(await client.get(KubeadmConfigs, ns, m.spec.bootstrap.configRef!.name)).to.not.equal(undefined);
      expect(await client.get(Nodes, undefined, nodeNameFor(ns, m.metadata.name!))).to.have.nested.property(
        'status.nodeInfo.kubeletVersion',
        'v1.29.5',
      );
    }
    await waitFor(
      async () => {
        const md = await client.get(MachineDeployments, ns, 'c1-md');
        const s = md?.['status'] as Record<string, number> | undefined;
        return s?.['replicas'] === 3 && s['readyReplicas'] === 3 && s['availableReplicas'] === 3 && s['upToDateReplicas'] === 3;
      },
      { timeoutMs: 10_000, message: 'MD status counts 3 ready machines' },
    );
  });

  it('applying the same inventory again changes nothing (idempotent), and owners are linked by uid', async () => {
    await sim?.stop();
    sim = undefined;
    const before = (await list(client, Machines)).map((m) => `${m.metadata.name}@${m.metadata.resourceVersion}`).sort();
    const again = await applyInventory(
      client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.29.5',
        image: 'img-a',
        controlPlane: { name: 'c1-cp', replicas: 1 },
        machineDeployments: [{ name: 'c1-md', replicas: 2, maxUnavailable: 1 }],
        mhc: { name: 'c1-mhc', unhealthyLessThanOrEqualTo: '50%' },
      }),
    );
    expect((await list(client, Machines)).map((m) => `${m.metadata.name}@${m.metadata.resourceVersion}`).sort()).to.deep.equal(before);
    const uids = new Map(again.map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.uid]));
    for (const o of again)
      for (const ref of o.metadata.ownerReferences ?? [])
        expect(ref.uid, `${o.kind} ${o.metadata.name} -> ${ref.kind} ${ref.name}`).to.equal(uids.get(`${ref.kind}/${ref.name}`));
  });

  it('scales down by deleting the newest machine, with its node, infrastructure and bootstrap config', async () => {
    const before = new Set(ofDeployment(await list<Machine>(client, Machines), 'c1-md').map((m) => m.metadata.name));
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 3 } }, merge);
    const newest = await waitFor(
      async () => running(ofDeployment(await list<Machine>(client, Machines), 'c1-md')).find((m) => !before.has(m.metadata.name)),
      { timeoutMs: 10_000, message: 'new machine' },
    );
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 2 } }, merge);
    await waitFor(async () => (await client.get(Machines, ns, newest.metadata.name!)) === undefined, {
      timeoutMs: 10_000,
      message: 'newest machine deleted',
    });
    await waitFor(
      async () =>
        (await client.get(Nodes, undefined, nodeNameFor(ns, newest.metadata.name!))) === undefined &&
        (await client.get(DevMachines, ns, newest.metadata.name!)) === undefined &&
        (await client.get(KubeadmConfigs, ns, newest.metadata.name!)) === undefined,
      { timeoutMs: 10_000, message: 'children deleted' },
    );
    expect(ofDeployment(await list<Machine>(client, Machines), 'c1-md')).to.have.length(2);
  });

  it("replaces a machine marked remediate-machine with a new one at the owner's original version", async () => {
    const [victim] = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
    // The platform committed an in-place version change before remediation.
    await client.patch(
      Machines,
      ns,
      victim!.metadata.name!,
      { spec: { version: 'v1.30.1' }, metadata: { annotations: { [Annotations.remediateMachine]: '' } } },
      merge,
    );
    const before = new Set(ofDeployment(await list<Machine>(client, Machines), 'c1-md').map((m) => m.metadata.name));
    const replacement = await waitFor(
      async () => {
        const ms = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
        return !ms.some((m) => m.metadata.name === victim!.metadata.name) && running(ms).length === 2
          ? running(ms).find((m) => !before.has(m.metadata.name))
          : undefined;
      },
      { timeoutMs: 10_000, message: 'replacement running' },
    );
    expect(replacement.spec.version).to.equal('v1.29.5');
    expect(replacement.metadata.labels?.[Labels.setName]).to.equal(victim!.metadata.labels?.[Labels.setName]);
  });

  it("replaces a control-plane machine marked remediate-machine at the control plane's version", async () => {
    const [cp] = (await list<Machine>(client, Machines)).filter((m) => m.metadata.labels?.[Labels.controlPlaneName] === 'c1-cp');
    await client.patch(Machines, ns, cp!.metadata.name!, { metadata: { annotations: { [Annotations.remediateMachine]: '' } } }, merge);
    const next = await waitFor(
      async () =>
        running(
          (await list<Machine>(client, Machines)).filter(
            (m) => m.metadata.labels?.[Labels.controlPlaneName] === 'c1-cp' && m.metadata.name !== cp!.metadata.name,
          ),
        )[0],
      { timeoutMs: 10_000, message: 'cp replacement' },
    );
    expect(next.metadata.labels).to.include({ [Labels.controlPlane]: '', [Labels.clusterName]: 'c1' });
    expect(next.spec.version).to.equal('v1.29.5');
    expect(await client.get(Machines, ns, cp!.metadata.name!)).to.equal(undefined);
  });

  it('leaves a machine carrying skip-remediation alone even when marked remediate-machine', async () => {
    const [m] = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
    await client.patch(
      Machines,
      ns,
      m!.metadata.name!,
      { metadata: { annotations: { [Annotations.remediateMachine]: '', [Annotations.skipRemediation]: '' } } },
      merge,
    );
    // Drive a full reconcile round through the same controllers, then check nothing was deleted.
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 3 } }, merge);
    await waitFor(async () => running(ofDeployment(await list<Machine>(client, Machines), 'c1-md')).length === 3, {
      timeoutMs: 10_000,
      message: 'scaled',
    });
    expect(await client.get(Machines, ns, m!.metadata.name!)).to.not.equal(undefined);
  });

  it("does not honour remediate-machine beyond the MHC's unhealthy limit (CAPI's MHC gates it)", async () => {
    // MHC: 50% of 3 machines = 1 unhealthy allowed. b is already unhealthy, so marking a makes 2: no remediation.
    const [a, b] = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
    const hc = (status: 'True' | 'False') => ({
      status: {
        conditions: [
          ...(b!.status?.conditions ?? []).filter((x) => x.type !== 'HealthCheckSucceeded'),
          {
            type: 'HealthCheckSucceeded',
            status,
            reason: status === 'True' ? 'Healthy' : 'UnhealthyNode',
            message: '',
            lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          },
        ],
      },
    });
    await client.patch(Machines, ns, b!.metadata.name!, hc('False'), { type: 'merge', subresource: 'status' });
    await client.patch(Machines, ns, a!.metadata.name!, { metadata: { annotations: { [Annotations.remediateMachine]: '' } } }, merge);
    await waitFor(
      async () => {
        const s = (await client.get(MachineHealthChecks, ns, 'c1-mhc'))?.['status'] as Record<string, number> | undefined;
        return s?.['currentHealthy'] === 1 && s['remediationsAllowed'] === 0;
      },
      { timeoutMs: 10_000, message: 'MHC sees two unhealthy machines' },
    );
    expect(await client.get(Machines, ns, a!.metadata.name!)).to.not.equal(undefined);
    // b recovers: the unhealthy count is back within the limit and a is remediated.
    await client.patch(Machines, ns, b!.metadata.name!, hc('True'), { type: 'merge', subresource: 'status' });
    await waitFor(async () => (await client.get(Machines, ns, a!.metadata.name!)) === undefined, {
      timeoutMs: 10_000,
      message: 'a remediated',
    });
    expect(await client.get(Machines, ns, b!.metadata.name!)).to.not.equal(undefined);
  });

  it('mirrors the kubelet version and OS image the Node reports into the Machine, and leaves the Node to the kubelet', async () => {
    const [m] = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
    const nodeName = nodeNameFor(ns, m!.metadata.name!);
    // An updater upgrades the kubelet (the Node reports it); later the platform commits Machine /spec/version.
    await client.patch(
      Nodes,
      undefined,
      nodeName,
      { status: { nodeInfo: { kubeletVersion: 'v1.30.1', osImage: 'img-b' } } },
      { type: 'merge', subresource: 'status' },
    );
    await waitFor(
      async () => {
        const got = await client.get<Machine>(Machines, ns, m!.metadata.name!);
        return got?.status?.nodeInfo?.kubeletVersion === 'v1.30.1' && got.status.nodeInfo.osImage === 'img-b';
      },
      { timeoutMs: 10_000, message: 'machine node info follows the node' },
    );
    await client.patch(Machines, ns, m!.metadata.name!, { spec: { version: 'v1.31.0' } }, merge);
    await client.patch(DevMachines, ns, m!.spec.infrastructureRef.name, { spec: { backend: { docker: { customImage: 'img-c' } } } }, merge);
    // The simulator reacts to the Machine change (its status conditions are refreshed) without touching the Node.
    await waitFor(async () => (await client.get<Machine>(Machines, ns, m!.metadata.name!))?.metadata.generation === 2, {
      timeoutMs: 10_000,
      message: 'machine spec changed',
    });
    const node = await client.get(Nodes, undefined, nodeName);
    expect(node).to.have.nested.property('status.nodeInfo.kubeletVersion', 'v1.30.1');
    expect(node).to.have.nested.property('status.nodeInfo.osImage', 'img-b');
  });

  it("reflects a NotReady node in the Machine's Ready and NodeHealthy conditions", async () => {
    const [m] = ofDeployment(await list<Machine>(client, Machines), 'c1-md');
    await client.patch(
      Nodes,
      undefined,
      nodeNameFor(ns, m!.metadata.name!),
      { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'rebooting' }] } },
      { type: 'merge', subresource: 'status' },
    );
    await waitFor(
      async () => {
        const got = await client.get<Machine>(Machines, ns, m!.metadata.name!);
        const c = Object.fromEntries((got?.status?.conditions ?? []).map((x) => [x.type, x.status]));
        return c['Ready'] === 'False' && c['NodeHealthy'] === 'False';
      },
      { timeoutMs: 10_000, message: 'machine not ready' },
    );
  });

  it('reports MHC status: expected machines, healthy ones and remediations allowed', async () => {
    await waitFor(
      async () => {
        const s = (await client.get(MachineHealthChecks, ns, 'c1-mhc'))?.['status'] as Record<string, number> | undefined;
        return s?.['expectedMachines'] === 3 && s['currentHealthy'] === 3 && s['remediationsAllowed'] === 1;
      },
      { timeoutMs: 10_000, message: 'mhc status' },
    );
  });

  for (const [label, dir] of [
    ['the fixture CRDs', CAPI_FIXTURE_CRDS_DIR],
    ['the real CAPI CRDs', realDir],
  ] as const) {
    it(`never writes a field ${label} would prune or reject`, async function () {
      requireRealCapiCrds(this, dir);
      await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 3 } }, merge);
      const [cp] = (await list<Machine>(client, Machines)).filter((m) => m.metadata.labels?.[Labels.controlPlaneName]);
      await client.patch(Machines, ns, cp!.metadata.name!, { metadata: { annotations: { [Annotations.remediateMachine]: '' } } }, merge);
      await waitFor(
        async () => running(await list<Machine>(client, Machines)).length === 4 && !(await client.get(Machines, ns, cp!.metadata.name!)),
        { timeoutMs: 10_000, message: 'settled' },
      );
      const crds = loadCrdsByKind(dir);
      const all = (
        await Promise.all(
          [Machines, MachineSets, MachineDeployments, KubeadmControlPlanes, MachineHealthChecks, DevMachines, KubeadmConfigs].map((r) =>
            list(client, r),
          ),
        )
      ).flat();
      const problems = all.flatMap((o) => schemaProblems(o, crds));
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });
  }
});
