import { expect } from 'chai';
import {
  DevMachines,
  KubernetesVersionUpdateTaskTemplates,
  KubernetesVersionUpdateTasks,
  MachineUpdates,
  Machines,
  Nodes,
  OSImageUpdateTaskTemplates,
  OSImageUpdateTasks,
  UpdaterUpdateTasks,
  apiVersionOf,
  type KubeObject,
  type ResourceType,
} from '../../src/api/index.js';
import { nodeNameFor } from '../../tools/capi-sim/index.js';
import { buildGenericTask, machineUpdateOwnerRef, taskLabels, taskName, type Task } from '../../src/contract/index.js';
import { RUNNING_IMAGE_ANNOTATION } from '../../src/sample-updaters/os-image/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import { waitFor } from '../support/wait.js';
import {
  createMachineUpdate,
  startFixture,
  startTaskController,
  waitMUStatus,
  TEST_PLAN,
  type Fixture,
} from '../machine-task-controller/support.js';

type Node = KubeObject & {
  spec?: { unschedulable?: boolean };
  status?: { nodeInfo?: { kubeletVersion?: string; osImage?: string; bootID?: string } };
};

describe('sample updaters (integration)', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  const running: { stop(): Promise<void> }[] = [];
  let kv: { stop(): Promise<void> };

  const template = async (res: ResourceType, name: string, spec: Record<string, unknown>): Promise<void> => {
    await f.env.client.create(res, {
      apiVersion: apiVersionOf(res),
      kind: res.kind,
      metadata: { name, namespace: f.ns },
      spec: { template: { spec } },
    });
  };
  const ref = (res: ResourceType, name: string) => ({ apiVersion: apiVersionOf(res), kind: res.kind, name });
  const node = (machine: string): Promise<Node | undefined> => f.env.client.get<Node>(Nodes, undefined, nodeNameFor(f.ns, machine));

  before(async () => {
    f = await startFixture('samples', 6);
    mgr = await startTaskController(f);
    kv = await sampleUpdaters['kubernetes-version'].start({ client: f.env.client, namespace: f.ns, log: noopLogger });
    running.push(await sampleUpdaters['os-image'].start({ client: f.env.client, namespace: f.ns, log: noopLogger }));
    running.push(await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, names: ['served'], log: noopLogger }));
    await template(KubernetesVersionUpdateTaskTemplates, 'kv-fast', { simulatedStepSeconds: 0.05 });
    await template(KubernetesVersionUpdateTaskTemplates, 'kv-slow', { simulatedStepSeconds: 1.5 });
    await template(OSImageUpdateTaskTemplates, 'os-fast', { simulatedStepSeconds: 0.05, imageRepository: 'registry.local/os' });
  });
  after(async () => {
    await kv?.stop();
    for (const r of running) await r.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  it('updates the OS image then the Kubernetes version of a machine through templated tasks, and the platform commits both', async () => {
    const machine = f.machines[0]!;
    const bootBefore = (await node(machine))?.status?.nodeInfo?.bootID;
    expect(bootBefore).to.be.a('string');
    await createMachineUpdate(f, 'mu-both', machine, [
      {
        name: 'k8s',
        sequence: 2,
        updaterUpdateTemplateRef: ref(KubernetesVersionUpdateTaskTemplates, 'kv-fast'),
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
      {
        name: 'os',
        sequence: 1,
        updaterUpdateTemplateRef: ref(OSImageUpdateTaskTemplates, 'os-fast'),
        responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04-k8s-1.30.1' }],
      },
    ]);
    const mu = await waitMUStatus(f, 'mu-both', 'updated');
    expect(mu.status?.tasks?.map((t) => [t.kind, t.name])).to.deep.equal([
      ['OSImageUpdateTask', taskName(TEST_PLAN, machine, 'os')],
      ['KubernetesVersionUpdateTask', taskName(TEST_PLAN, machine, 'k8s')],
    ]);
    const kvTask = await f.env.client.get<Task>(KubernetesVersionUpdateTasks, f.ns, taskName(TEST_PLAN, machine, 'k8s'));
    expect(kvTask?.spec['simulatedStepSeconds']).to.equal(0.05);
    expect(kvTask?.status).to.include({ updateStatus: 'updated', step: 'Uncordon', nodeName: nodeNameFor(f.ns, machine) });
    const osTask = await f.env.client.get<Task>(OSImageUpdateTasks, f.ns, taskName(TEST_PLAN, machine, 'os'));
    expect(osTask?.status).to.include({ updateStatus: 'updated', step: 'VerifyImage', image: 'registry.local/os/ubuntu-24.04-k8s-1.30.1' });

    const n = await node(machine);
    expect(n?.status?.nodeInfo?.kubeletVersion).to.equal('v1.30.1');
    expect(n?.spec?.unschedulable ?? false).to.equal(false);
    expect(n?.metadata.annotations?.[RUNNING_IMAGE_ANNOTATION]).to.equal('registry.local/os/ubuntu-24.04-k8s-1.30.1');
    // The simulated host reports what it booted (the plan's verification reads it, mirrored into the Machine).
    expect(n?.status?.nodeInfo?.osImage).to.equal('ubuntu-24.04-k8s-1.30.1');
    expect(n?.status?.nodeInfo?.bootID).to.not.equal(bootBefore);
    const m = await f.env.client.get<KubeObject & { spec: { version: string } }>(Machines, f.ns, machine);
    expect(m?.spec.version).to.equal('v1.30.1');
    const dm = await f.env.client.get<KubeObject & { spec: { backend: { docker: { customImage: string } } } }>(DevMachines, f.ns, machine);
    expect(dm?.spec.backend.docker.customImage).to.equal('ubuntu-24.04-k8s-1.30.1');
  });

  it('aborts a Kubernetes version update during the cordon step and uncordons the node', async () => {
    const machine = f.machines[1]!;
    await createMachineUpdate(f, 'mu-kv-abort', machine, [
      {
        name: 'k8s',
        sequence: 1,
        updaterUpdateTemplateRef: ref(KubernetesVersionUpdateTaskTemplates, 'kv-slow'),
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
    ]);
    await waitFor(async () => (await node(machine))?.spec?.unschedulable === true, { message: 'node cordoned' });
    await f.env.client.patch(MachineUpdates, f.ns, 'mu-kv-abort', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    const mu = await waitMUStatus(f, 'mu-kv-abort', 'aborted');
    expect(mu.status?.message).to.match(/uncordoned/);
    const n = await node(machine);
    expect(n?.spec?.unschedulable ?? false).to.equal(false);
    expect(n?.status?.nodeInfo?.kubeletVersion).to.equal('v1.30.0');
  });

  it('fails a Kubernetes version update whose machine has no node, with a message saying so', async () => {
    const machine = f.machines[2]!;
    await f.env.client.patch(Machines, f.ns, machine, { status: { nodeRef: null } }, { type: 'merge', subresource: 'status' });
    await createMachineUpdate(f, 'mu-kv-nonode', machine, [
      {
        name: 'k8s',
        sequence: 1,
        updaterUpdateTemplateRef: ref(KubernetesVersionUpdateTaskTemplates, 'kv-fast'),
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
    ]);
    const mu = await waitMUStatus(f, 'mu-kv-nonode', 'failed');
    expect(mu.status?.message).to.match(/updater k8s failed: Machine .* has no status.nodeRef/);
  });

  it('resumes a Kubernetes version update at the step it reached after an updater restart', async () => {
    const machine = f.machines[3]!;
    await createMachineUpdate(f, 'mu-kv-restart', machine, [
      {
        name: 'k8s',
        sequence: 1,
        updaterUpdateTemplateRef: ref(KubernetesVersionUpdateTaskTemplates, 'kv-slow'),
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
    ]);
    const name = taskName(TEST_PLAN, machine, 'k8s');
    const at = await waitFor(
      async () => {
        const t = await f.env.client.get<Task>(KubernetesVersionUpdateTasks, f.ns, name);
        return t?.status?.['step'] === 'UpgradeKubelet' ? t : undefined;
      },
      { message: 'task at UpgradeKubelet' },
    );
    await kv.stop();
    kv = await sampleUpdaters['kubernetes-version'].start({ client: f.env.client, namespace: f.ns, log: noopLogger });
    await waitMUStatus(f, 'mu-kv-restart', 'updated');
    const done = await f.env.client.get<Task>(KubernetesVersionUpdateTasks, f.ns, name);
    expect(done?.status?.startTime).to.equal(at.status?.startTime);
    expect((await node(machine))?.status?.nodeInfo?.kubeletVersion).to.equal('v1.30.1');
  });

  it('serves only the generic updater names it is given', async () => {
    const machine = f.machines[4]!;
    const mu = await createMachineUpdate(
      f,
      'mu-names',
      machine,
      [{ name: 'unused', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] }],
      'aborting',
    );
    const mk = (updater: string): Promise<Task> =>
      f.env.client.create<Task>(
        UpdaterUpdateTasks,
        buildGenericTask({
          name: `names-${updater}`,
          namespace: f.ns,
          labels: taskLabels({ cluster: 'c1', plan: 'p1', machine, updater }),
          owner: machineUpdateOwnerRef(mu),
          updatePhase: 'updating',
          machineName: machine,
          responsibilities: [],
          updaterName: updater,
          parameters: { durationSeconds: 0 },
        }),
      );
    await mk('not-served');
    await mk('served');
    await waitFor(
      async () => (await f.env.client.get<Task>(UpdaterUpdateTasks, f.ns, 'names-served'))?.status?.updateStatus === 'updated',
      { message: 'served task updated' },
    );
    expect((await f.env.client.get<Task>(UpdaterUpdateTasks, f.ns, 'names-not-served'))?.status).to.equal(undefined);
  });
});
