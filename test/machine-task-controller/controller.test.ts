import { expect } from 'chai';
import { DevMachines, KubeadmConfigs, Labels, MachineUpdates, Machines, UpdaterUpdateTasks, type KubeObject } from '../../src/api/index.js';
import { taskName, type Task } from '../../src/contract/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import { waitFor } from '../support/wait.js';
import { createMachineUpdate, startFixture, startTaskController, waitMU, waitMUStatus, TEST_PLAN, type Fixture } from './support.js';

/** A harmless extra responsibility (an updater needs at least one). */
const NTP = { selectResource: 'BootstrapConfig' as const, path: '/spec/ntp', value: { enabled: true, servers: ['time.example.com'] } };

describe('machine task controller (integration)', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  let updater: { stop(): Promise<void> };

  before(async () => {
    f = await startFixture('mtc', 8);
    mgr = await startTaskController(f);
    updater = await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, catchAll: true, log: noopLogger });
  });
  after(async () => {
    await updater?.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  const getTask = (name: string): Promise<Task | undefined> => f.env.client.get<Task>(UpdaterUpdateTasks, f.ns, name);
  const tasksOf = async (machine: string): Promise<Task[]> =>
    (await f.env.client.list<Task>(UpdaterUpdateTasks, f.ns, { labelSelector: `${Labels.machineName}=${machine}` })).items;

  it('runs the updaters in ascending sequence and commits to the Machine, DevMachine and KubeadmConfig', async () => {
    const machine = f.machines[0]!;
    await createMachineUpdate(f, 'mu-happy', machine, [
      {
        name: 'version',
        sequence: 2,
        parameters: { durationSeconds: 0 },
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
      {
        name: 'os',
        sequence: 1,
        parameters: { durationSeconds: 0 },
        responsibilities: [
          { selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04-k8s-1.30.1' },
          { selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true, servers: ['0.pool.ntp.org', '1.pool.ntp.org'] } },
        ],
      },
    ]);
    const mu = await waitMUStatus(f, 'mu-happy', 'updated');

    expect(mu.status?.tasks?.map((t) => [t.updater, t.name, t.updateStatus])).to.deep.equal([
      ['os', taskName(TEST_PLAN, machine, 'os'), 'updated'],
      ['version', taskName(TEST_PLAN, machine, 'version'), 'updated'],
    ]);
    const os = (await getTask(taskName(TEST_PLAN, machine, 'os')))!;
    const version = (await getTask(taskName(TEST_PLAN, machine, 'version')))!;
    // creationTimestamp is cut to the second; the task's completionTime is precise (microseconds): compare seconds.
    expect(Date.parse(version.metadata.creationTimestamp!)).to.be.at.least(
      Math.floor(Date.parse(os.status!.completionTime!) / 1000) * 1000,
    );
    expect(os.metadata.labels).to.include({
      [Labels.clusterName]: 'c1',
      [Labels.planName]: 'p1',
      [Labels.machineName]: machine,
      [Labels.updaterName]: 'os',
    });
    expect(os.metadata.ownerReferences).to.deep.equal([
      {
        apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
        kind: 'MachineUpdate',
        name: 'mu-happy',
        uid: mu.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(os.spec).to.include({ updaterName: 'os', updatePhase: 'updating' });
    expect(os.spec.machineRef).to.deep.equal({ name: machine });

    const m = await f.env.client.get<KubeObject & { spec: { version: string } }>(Machines, f.ns, machine);
    const dm = await f.env.client.get<KubeObject & { spec: { backend: { docker: { customImage: string } } } }>(DevMachines, f.ns, machine);
    const kc = await f.env.client.get<KubeObject & { spec: { ntp?: unknown } }>(KubeadmConfigs, f.ns, machine);
    expect(m?.spec.version).to.equal('v1.30.1');
    expect(dm?.spec.backend.docker.customImage).to.equal('ubuntu-24.04-k8s-1.30.1');
    expect(kc?.spec.ntp).to.deep.equal({ enabled: true, servers: ['0.pool.ntp.org', '1.pool.ntp.org'] });

    const ready = mu.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).to.include({ status: 'True', reason: 'Updated' });
    expect(mu.status?.conditions?.find((c) => c.type === 'InPlaceUpdate')).to.include({ status: 'False', reason: 'Updated' });
    expect(mu.status?.completionTime).to.be.a('string');
    expect(mu.status?.message).to.match(/committed .*\/spec\/version/);
    // No updater is in flight any more: the UPDATER column is empty.
    expect(mu.status?.currentUpdater).to.equal(undefined);
  });

  it('ends updated with reason AlreadyInPlace (not committed) when every value was already on the objects', async () => {
    const machine = f.machines[6]!;
    await createMachineUpdate(f, 'mu-in-place', machine, [
      {
        name: 'same',
        sequence: 1,
        parameters: { durationSeconds: 0 },
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.0' }],
      },
    ]);
    const mu = await waitMUStatus(f, 'mu-in-place', 'updated');
    expect(mu.status?.conditions?.find((c) => c.type === 'InPlaceUpdate')).to.include({ status: 'False', reason: 'AlreadyInPlace' });
    expect(mu.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'True', reason: 'AlreadyInPlace' });
    expect(mu.status?.message).to.match(/already in place \(verified\), nothing written$/);
    expect(mu.status?.currentUpdater).to.equal(undefined);
  });

  it("fails with the updater's own message, starts no later updater and commits nothing", async () => {
    const machine = f.machines[1]!;
    await createMachineUpdate(f, 'mu-fail', machine, [
      {
        name: 'first',
        sequence: 1,
        parameters: { durationSeconds: 0, failWith: 'kubelet did not come back: disk full' },
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
      { name: 'second', sequence: 2, parameters: { durationSeconds: 0 }, responsibilities: [NTP] },
    ]);
    const mu = await waitMUStatus(f, 'mu-fail', 'failed');
    expect(mu.status?.message).to.equal('updater first failed: kubelet did not come back: disk full');
    expect(mu.status?.currentUpdater).to.equal(undefined);
    expect(mu.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'False', reason: 'Failed' });
    expect((await tasksOf(machine)).map((t) => t.metadata.name)).to.deep.equal([taskName(TEST_PLAN, machine, 'first')]);
    const m = await f.env.client.get<KubeObject & { spec: { version: string } }>(Machines, f.ns, machine);
    expect(m?.spec.version).to.equal('v1.30.0');
  });

  it('aborts the current task, starts nothing new and commits nothing', async () => {
    const machine = f.machines[2]!;
    await createMachineUpdate(f, 'mu-abort', machine, [
      {
        name: 'slow',
        sequence: 1,
        parameters: { durationSeconds: 30 },
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
      },
      { name: 'never', sequence: 2, parameters: { durationSeconds: 0 }, responsibilities: [NTP] },
    ]);
    await waitFor(async () => (await getTask(taskName(TEST_PLAN, machine, 'slow')))?.status?.updateStatus === 'updating', {
      message: 'slow task updating',
    });
    await f.env.client.patch(MachineUpdates, f.ns, 'mu-abort', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    const mu = await waitMUStatus(f, 'mu-abort', 'aborted');
    const task = (await getTask(taskName(TEST_PLAN, machine, 'slow')))!;
    expect(task.spec.updatePhase).to.equal('aborting');
    expect(task.status?.updateStatus).to.equal('aborted');
    expect(mu.status?.message).to.match(/updater slow aborted/);
    expect((await tasksOf(machine)).length).to.equal(1);
    const m = await f.env.client.get<KubeObject & { spec: { version: string } }>(Machines, f.ns, machine);
    expect(m?.spec.version).to.equal('v1.30.0');
  });

  it('ends aborted at once when aborting arrives before any task exists', async () => {
    const machine = f.machines[3]!;
    await createMachineUpdate(f, 'mu-abort-early', machine, [{ name: 'x', sequence: 1, responsibilities: [NTP] }], 'aborting');
    const mu = await waitMUStatus(f, 'mu-abort-early', 'aborted');
    expect(mu.status?.message).to.match(/before any updater started/);
    expect(await tasksOf(machine)).to.have.length(0);
  });

  it('fails naming the object and the path when the commit is pruned', async () => {
    const machine = f.machines[4]!;
    await createMachineUpdate(f, 'mu-pruned', machine, [
      {
        name: 'os',
        sequence: 1,
        parameters: { durationSeconds: 0 },
        responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'ubuntu-24.04' }],
      },
    ]);
    const mu = await waitMUStatus(f, 'mu-pruned', 'failed');
    expect(mu.status?.message).to.match(new RegExp(`nothing committed: DevMachine ${machine} would not keep /spec/image`));
    expect(mu.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ reason: 'CommitFailed' });
  });

  it('resumes after a controller restart mid-update without creating a second task', async () => {
    const machine = f.machines[5]!;
    await createMachineUpdate(f, 'mu-restart', machine, [
      {
        name: 'a',
        sequence: 1,
        parameters: { durationSeconds: 1 },
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.2' }],
      },
      { name: 'b', sequence: 2, parameters: { durationSeconds: 0 }, responsibilities: [NTP] },
    ]);
    await waitFor(async () => (await getTask(taskName(TEST_PLAN, machine, 'a')))?.status?.updateStatus === 'updating', {
      message: 'task a updating',
    });
    await mgr.stop();
    // Forget the MachineUpdate's progress as a crash between task creation and status write would.
    await f.env.client.patch(
      MachineUpdates,
      f.ns,
      'mu-restart',
      { status: { tasks: null, currentUpdater: null } },
      { type: 'merge', subresource: 'status' },
    );
    mgr = await startTaskController(f);
    const mu = await waitMUStatus(f, 'mu-restart', 'updated');
    const tasks = await tasksOf(machine);
    expect(tasks.map((t) => t.metadata.name).sort()).to.deep.equal([taskName(TEST_PLAN, machine, 'a'), taskName(TEST_PLAN, machine, 'b')]);
    expect(mu.status?.tasks?.map((t) => t.updater)).to.deep.equal(['a', 'b']);
    const m = await f.env.client.get<KubeObject & { spec: { version: string } }>(Machines, f.ns, machine);
    expect(m?.spec.version).to.equal('v1.30.2');
  });

  it("waits for an earlier update's in-flight task that holds its task name, and is woken by that task's end (no polling)", async () => {
    const machine = f.machines[7]!;
    const name = taskName(TEST_PLAN, machine, 'shared');
    await createMachineUpdate(f, 'mu-old', machine, [
      { name: 'shared', sequence: 1, parameters: { durationSeconds: 300 }, responsibilities: [NTP] },
    ]);
    await waitFor(async () => (await getTask(name))?.status?.updateStatus === 'updating', { message: 'old task updating' });
    await createMachineUpdate(f, 'mu-new', machine, [
      { name: 'shared', sequence: 1, parameters: { durationSeconds: 0 }, responsibilities: [NTP] },
    ]);
    await waitMU(
      f,
      'mu-new',
      (mu) => /still used by the in-flight update/.test(mu.status?.message ?? ''),
      'mu-new waiting for the task name',
    );
    await f.env.client.patch(MachineUpdates, f.ns, 'mu-old', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    await waitMUStatus(f, 'mu-old', 'aborted');
    const mu = await waitMUStatus(f, 'mu-new', 'updated', 30_000);
    const task = await getTask(name);
    expect(task?.metadata.ownerReferences?.find((r) => r.controller)?.uid).to.equal(mu.metadata.uid);
    expect(task?.status?.updateStatus).to.equal('updated');
  });

  it('never leaves a terminal MachineUpdate', async () => {
    const before = await waitMUStatus(f, 'mu-fail', 'failed');
    await f.env.client.patch(MachineUpdates, f.ns, 'mu-fail', { metadata: { labels: { touched: 'yes' } } }, { type: 'merge' });
    await waitMU(f, 'mu-fail', (mu) => mu.metadata.labels?.['touched'] === 'yes', 'label visible');
    const after = await waitMUStatus(f, 'mu-fail', 'failed');
    expect(after.status).to.deep.equal(before.status);
  });
});
