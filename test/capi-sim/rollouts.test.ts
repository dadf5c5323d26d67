// The simulator's faithful rollouts against an API server: what upstream's KubeadmControlPlane, MachineDeployment,
// MachineSet and topology controllers would do with the same objects (the decisions are table-tested in
// tools/capi-sim/rollout.test.ts; these check the wiring and the objects written).
import { expect } from 'chai';
import {
  Annotations,
  Clusters,
  DevMachines,
  KubeadmConfigs,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  MachineSets,
  Machines,
  type KubeObject,
} from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import {
  CAPI_FIXTURE_CRDS_DIR,
  CLONED_FROM_GROUPKIND_ANNOTATION,
  CLONED_FROM_NAME_ANNOTATION,
  DevMachineTemplates,
  KubeadmConfigTemplates,
  TOPOLOGY_DEPLOYMENT_NAME_LABEL,
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  startCapiSimulator,
  type CapiSimulator,
  type KubeadmControlPlane,
  type Machine,
  type MachineDeployment,
  type MachineSet,
} from '../../tools/capi-sim/index.js';
import { startTestEnv, type TestEnv } from '../support/env.js';
import { loadCrdsByKind, schemaProblems } from './schema-check.js';
import { waitFor } from '../support/wait.js';
import { requireRealCapiCrds } from '../support/real-capi-crds.js';

const merge = { type: 'merge' } as const;

describe('capi-sim faithful rollouts', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let client: KubeClient;
  let sim: CapiSimulator | undefined;
  let ns = '';

  const machines = async (): Promise<Machine[]> =>
    (await client.list<Machine>(Machines, ns)).items.filter((m) => !m.metadata.deletionTimestamp);
  const cp = async (): Promise<Machine[]> => (await machines()).filter((m) => m.metadata.labels?.[Labels.controlPlaneName] === 'c1-cp');
  const ofMd = async (): Promise<Machine[]> => (await machines()).filter((m) => m.metadata.labels?.[Labels.deploymentName] === 'c1-md');
  const running = (ms: Machine[]): boolean => ms.every((m) => m.status?.phase === 'Running');
  /** Runs passes over every owner and returns the machines created / deleted meanwhile. */
  const churn = async (passes = 3): Promise<number> => {
    const before = sim!.stats();
    await sim!.reconcileOwners(passes);
    const after = sim!.stats();
    return after.machinesCreated - before.machinesCreated + after.machinesDeleted - before.machinesDeleted;
  };

  before(async () => {
    env = await startTestEnv({ crds: capiCrdDirs() });
    client = env.client;
  });
  after(async () => env?.stop());
  beforeEach(async () => {
    ns = await env.newNamespace('capi-sim-rollout');
    await applyInventory(
      client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.29.5',
        image: 'img-a',
        controlPlane: { name: 'c1-cp', replicas: 3 },
        machineDeployments: [{ name: 'c1-md', replicas: 2, maxUnavailable: 0, maxSurge: 1 }],
      }),
    );
    sim = await startCapiSimulator({ client, namespace: ns, readyDelayMs: 20 });
  });
  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
    await deleteWorkloadNodes(client, ns);
  });

  it("builds an inventory upstream would have built: clones carry cloned-from annotations, the MachineSet has the deployment's template", async () => {
    for (const m of await cp()) {
      const dm = await client.get(DevMachines, ns, m.spec.infrastructureRef.name);
      expect(dm?.metadata.annotations).to.include({
        [CLONED_FROM_NAME_ANNOTATION]: 'c1-cp',
        [CLONED_FROM_GROUPKIND_ANNOTATION]: 'DevMachineTemplate.infrastructure.cluster.x-k8s.io',
      });
    }
    for (const m of await ofMd()) {
      expect((await client.get(DevMachines, ns, m.spec.infrastructureRef.name))?.metadata.annotations).to.include({
        [CLONED_FROM_NAME_ANNOTATION]: 'c1-md',
      });
      expect((await client.get(KubeadmConfigs, ns, m.spec.bootstrap.configRef!.name))?.metadata.annotations).to.include({
        [CLONED_FROM_NAME_ANNOTATION]: 'c1-md',
        [CLONED_FROM_GROUPKIND_ANNOTATION]: 'KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io',
      });
    }
    const md = (await client.get<MachineDeployment>(MachineDeployments, ns, 'c1-md'))!;
    const [ms] = (await client.list<MachineSet>(MachineSets, ns)).items;
    expect(ms?.spec.template).to.deep.equal(md.spec.template);
    expect(await churn()).to.equal(0);
  });

  it('KCP replaces a control-plane machine whose version was changed in place (the plan-without-owners loop), one at a time', async () => {
    const [victim] = await cp();
    await client.patch(Machines, ns, victim!.metadata.name!, { spec: { version: 'v1.30.1' } }, merge);
    await waitFor(
      async () => {
        const now = await cp();
        return !now.some((m) => m.metadata.name === victim!.metadata.name) && now.length === 3 && running(now) ? now : undefined;
      },
      { timeoutMs: 30_000, message: 'out-of-date machine replaced' },
    );
    const now = await cp();
    expect(now.map((m) => m.spec.version)).to.deep.equal(['v1.29.5', 'v1.29.5', 'v1.29.5']);
    expect(sim!.stats()).to.include({ machinesCreated: 1, machinesDeleted: 1 });
    const kcp = await client.get<KubeadmControlPlane>(KubeadmControlPlanes, ns, 'c1-cp');
    await waitFor(async () => (await client.get<KubeadmControlPlane>(KubeadmControlPlanes, ns, 'c1-cp'))?.status?.upToDateReplicas === 3, {
      message: 'KCP status up to date',
    });
    expect(kcp?.spec.version).to.equal('v1.29.5');
  });

  it('KCP replaces a machine whose KubeadmConfig differs from kubeadmConfigSpec', async () => {
    const [victim] = await cp();
    await client.patch(
      KubeadmConfigs,
      ns,
      victim!.spec.bootstrap.configRef!.name,
      { spec: { ntp: { enabled: true, servers: ['time.example.com'] } } },
      merge,
    );
    await waitFor(
      async () => {
        const now = await cp();
        return !now.some((m) => m.metadata.name === victim!.metadata.name) && now.length === 3 && running(now);
      },
      { timeoutMs: 30_000, message: 'machine with a drifted KubeadmConfig replaced' },
    );
  });

  it('a paused KCP leaves an out-of-date machine alone; unpaused, it replaces it', async () => {
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { metadata: { annotations: { [Annotations.paused]: '' } } }, merge);
    await waitFor(
      async () => (await client.get(KubeadmControlPlanes, ns, 'c1-cp'))?.metadata.annotations?.[Annotations.paused] !== undefined,
      { message: 'paused' },
    );
    // Like a real controller, the simulator acts on its cache: let it see the pause before the drift.
    await sim!.reconcileOwners(2);
    const [victim] = await cp();
    await client.patch(Machines, ns, victim!.metadata.name!, { spec: { version: 'v1.30.1' } }, merge);
    expect(await churn()).to.equal(0);
    expect((await cp()).map((m) => m.metadata.name)).to.include(victim!.metadata.name);
    await client.patch(KubeadmControlPlanes, ns, 'c1-cp', { metadata: { annotations: { [Annotations.paused]: null } } }, merge);
    await waitFor(async () => !(await cp()).some((m) => m.metadata.name === victim!.metadata.name), {
      timeoutMs: 30_000,
      message: 'replaced once unpaused',
    });
  });

  it('a MachineDeployment template change rolls out a new MachineSet whose machines are cloned from the new templates; the old set goes', async () => {
    const old = new Set((await ofMd()).map((m) => m.metadata.name));
    await client.create(DevMachineTemplates, {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'DevMachineTemplate',
      metadata: { name: 'c1-md-v2', namespace: ns },
      spec: { template: { spec: { backend: { docker: { customImage: 'img-b' } } } } },
    });
    await client.patch(
      MachineDeployments,
      ns,
      'c1-md',
      {
        spec: {
          template: {
            spec: {
              version: 'v1.30.1',
              infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 'c1-md-v2' },
            },
          },
        },
      },
      merge,
    );
    const now = await waitFor(
      async () => {
        const ms = await ofMd();
        const sets = (await client.list<MachineSet>(MachineSets, ns)).items;
        return ms.length === 2 && ms.every((m) => !old.has(m.metadata.name) && m.status?.phase === 'Running') && sets.length === 1
          ? ms
          : undefined;
      },
      { timeoutMs: 30_000, message: 'rolled out to a new MachineSet' },
    );
    const [set] = (await client.list<MachineSet>(MachineSets, ns)).items;
    for (const m of now) {
      expect(m.spec.version).to.equal('v1.30.1');
      expect(m.metadata.labels?.[Labels.setName]).to.equal(set!.metadata.name);
      const dm = await client.get(DevMachines, ns, m.spec.infrastructureRef.name);
      expect(dm).to.have.nested.property('spec.backend.docker.customImage', 'img-b');
      expect(dm?.metadata.annotations?.[CLONED_FROM_NAME_ANNOTATION]).to.equal('c1-md-v2');
    }
    expect(await churn()).to.equal(0);
    // Everything the rollout wrote survives the real CRDs' pruning and validation.
    const crds = loadCrdsByKind(process.env['CAPI_CRDS_DIR'] ?? CAPI_FIXTURE_CRDS_DIR);
    const all = (
      await Promise.all(
        [Machines, MachineSets, MachineDeployments, KubeadmControlPlanes, DevMachines, KubeadmConfigs].map(
          async (r) => (await client.list(r, ns)).items,
        ),
      )
    ).flat();
    const problems = all.flatMap((o) => schemaProblems(o, crds));
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });

  it("a MachineSet keeps machines changed in place; a paused Cluster stops the MachineDeployment's rollout", async () => {
    const [m] = await ofMd();
    await client.patch(Machines, ns, m!.metadata.name!, { spec: { version: 'v1.30.1' } }, merge);
    expect(await churn()).to.equal(0);
    await client.patch(Clusters, ns, 'c1', { spec: { paused: true } }, merge);
    await waitFor(async () => ((await client.get(Clusters, ns, 'c1'))?.['spec'] as { paused?: boolean }).paused === true, {
      message: 'cluster paused',
    });
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { template: { spec: { version: 'v1.30.1' } } } }, merge);
    expect(await churn()).to.equal(0);
    expect((await client.list(MachineSets, ns)).items).to.have.length(1);
  });

  it('owners aligned the way a plan must align them see every in-place updated machine as up to date (the contract for owner alignment)', async () => {
    const pause = async (res: typeof KubeadmControlPlanes, name: string, on: boolean): Promise<void> => {
      await client.patch(res, ns, name, { metadata: { annotations: { [Annotations.paused]: on ? '' : null } } }, merge);
    };
    const ntp = { enabled: true, servers: ['time.example.com'] };
    await pause(KubeadmControlPlanes, 'c1-cp', true);
    await pause(MachineDeployments, 'c1-md', true);
    await sim!.reconcileOwners(2);
    // In-place commits on every machine and its clones (what C8 writes).
    for (const m of await machines()) {
      await client.patch(Machines, ns, m.metadata.name!, { spec: { version: 'v1.30.1' } }, merge);
      await client.patch(
        DevMachines,
        ns,
        m.spec.infrastructureRef.name,
        { spec: { backend: { docker: { customImage: 'img-b' } } } },
        merge,
      );
      await client.patch(KubeadmConfigs, ns, m.spec.bootstrap.configRef!.name, { spec: { ntp } }, merge);
    }
    // New templates (templates are immutable by CAPI convention): cloned with the new values.
    const tpl = (res: typeof DevMachineTemplates, name: string, spec: Record<string, unknown>): KubeObject => ({
      apiVersion: `${res.group}/${res.version}`,
      kind: res.kind,
      metadata: { name, namespace: ns },
      spec: { template: { spec } },
    });
    await client.create(DevMachineTemplates, tpl(DevMachineTemplates, 'c1-cp-v2', { backend: { docker: { customImage: 'img-b' } } }));
    await client.create(DevMachineTemplates, tpl(DevMachineTemplates, 'c1-md-v2', { backend: { docker: { customImage: 'img-b' } } }));
    await client.create(KubeadmConfigTemplates, tpl(KubeadmConfigTemplates, 'c1-md-v2', { format: 'cloud-config', ntp }));
    const infraRef = (name: string) => ({ apiGroup: DevMachineTemplates.group, kind: DevMachineTemplates.kind, name });
    // KCP: version, kubeadmConfigSpec, infrastructure template; the InfraMachines now count as cloned from the new one.
    await client.patch(
      KubeadmControlPlanes,
      ns,
      'c1-cp',
      { spec: { version: 'v1.30.1', kubeadmConfigSpec: { ntp }, machineTemplate: { spec: { infrastructureRef: infraRef('c1-cp-v2') } } } },
      merge,
    );
    for (const m of await cp())
      await client.patch(
        DevMachines,
        ns,
        m.spec.infrastructureRef.name,
        { metadata: { annotations: { [CLONED_FROM_NAME_ANNOTATION]: 'c1-cp-v2' } } },
        merge,
      );
    // MachineDeployment and the MachineSet that owns the machines: the same new template.
    const template = {
      spec: {
        version: 'v1.30.1',
        infrastructureRef: infraRef('c1-md-v2'),
        bootstrap: { configRef: { apiGroup: KubeadmConfigTemplates.group, kind: KubeadmConfigTemplates.kind, name: 'c1-md-v2' } },
      },
    };
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { template } }, merge);
    const [set] = (await client.list<MachineSet>(MachineSets, ns)).items;
    await client.patch(MachineSets, ns, set!.metadata.name!, { spec: { template } }, merge);
    const names = (await machines()).map((m) => m.metadata.name).sort();
    await pause(KubeadmControlPlanes, 'c1-cp', false);
    await pause(MachineDeployments, 'c1-md', false);
    expect(await churn(5)).to.equal(0);
    expect((await machines()).map((m) => m.metadata.name).sort()).to.deep.equal(names);
    expect((await client.list(MachineSets, ns)).items).to.have.length(1);
    // Machines created later are born with the new values.
    await client.patch(MachineDeployments, ns, 'c1-md', { spec: { replicas: 3 } }, merge);
    const born = await waitFor(async () => (await ofMd()).find((m) => !names.includes(m.metadata.name) && m.status?.phase === 'Running'), {
      timeoutMs: 30_000,
      message: 'new MD machine',
    });
    expect(born.spec.version).to.equal('v1.30.1');
    expect(await client.get(DevMachines, ns, born.spec.infrastructureRef.name)).to.have.nested.property(
      'spec.backend.docker.customImage',
      'img-b',
    );
    expect((await client.get(KubeadmConfigs, ns, born.spec.bootstrap.configRef!.name))?.['spec']).to.have.deep.property('ntp', ntp);
  });

  it('the topology controller writes Cluster.spec.topology.version to the KCP, then to managed MachineDeployments', async function () {
    // The fixture Cluster CRD does not declare spec.topology; the real one does.
    if (!process.env['CAPI_CRDS_DIR']) requireRealCapiCrds(this, '(CAPI_CRDS_DIR unset)'); // skips locally, fails in CI
    await client.patch(MachineDeployments, ns, 'c1-md', { metadata: { labels: { [TOPOLOGY_DEPLOYMENT_NAME_LABEL]: 'md' } } }, merge);
    await client.patch(Clusters, ns, 'c1', { spec: { topology: { classRef: { name: 'cc' }, version: 'v1.30.1' } } }, merge);
    const cluster = await client.get<KubeObject>(Clusters, ns, 'c1');
    expect(cluster).to.have.nested.property('spec.topology.version', 'v1.30.1');
    await waitFor(
      async () => {
        const md = await client.get<MachineDeployment>(MachineDeployments, ns, 'c1-md');
        const ms = await machines();
        return (
          md?.spec.template.spec.version === 'v1.30.1' &&
          ms.length === 5 &&
          ms.every((m) => m.spec.version === 'v1.30.1' && m.status?.phase === 'Running')
        );
      },
      { timeoutMs: 45_000, message: 'control plane, then workers rolled out to the topology version' },
    );
    expect((await client.get<KubeadmControlPlane>(KubeadmControlPlanes, ns, 'c1-cp'))?.spec.version).to.equal('v1.30.1');
  });
});
