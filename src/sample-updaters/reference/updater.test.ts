import { expect } from 'chai';
import { Labels, Machines, Nodes, SIMULATED_NODE_ANNOTATION, UpdaterUpdateTasks, type KubeObject } from '../../api/index.js';
import type { Task } from '../../contract/index.js';
import { FakeClient } from '../../../test/support/fake-client.js';
import { referenceUpdater } from './updater.js';

const NS = 'ns';
const VERSION = 'v1.31.0';

/** A Machine on Node n1, the Node (simulated or not), and a 0.2 s version task for the machine. */
async function seed(c: FakeClient, simulated = true): Promise<void> {
  c.seed(Machines, {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: { name: 'm1', namespace: NS },
    status: { nodeRef: { name: 'n1' } },
  } as KubeObject);
  c.seed(Nodes, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', ...(simulated ? { annotations: { [SIMULATED_NODE_ANNOTATION]: 'true' } } : {}) },
    status: { nodeInfo: { kubeletVersion: 'v1.30.0' } },
  } as KubeObject);
  await c.create<Task>(UpdaterUpdateTasks, {
    apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
    kind: 'UpdaterUpdateTask',
    metadata: { name: 'm1.ref', namespace: NS, uid: 'uid-1', labels: { [Labels.updaterName]: 'ref' } },
    spec: {
      updaterName: 'ref',
      updatePhase: 'updating',
      machineRef: { name: 'm1' },
      parameters: { durationSeconds: 0.2 },
      responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: VERSION }],
    },
  } as Task);
}

const task = async (c: FakeClient): Promise<Task> => (await c.get<Task>(UpdaterUpdateTasks, NS, 'm1.ref'))!;
const kubelet = async (c: FakeClient): Promise<unknown> =>
  ((await c.get(Nodes, undefined, 'n1')) as { status?: { nodeInfo?: { kubeletVersion?: string } } } | undefined)?.status?.nodeInfo
    ?.kubeletVersion;
/** Waits past the task's 0.2 s (a lower bound only: a busy machine waits longer, which changes nothing). */
const pastDeadline = (): Promise<void> => new Promise((r) => setTimeout(r, 300));
/** Lets the lookahead's reads (started, not awaited, by the first reconcile) finish. */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('reference updater: the simulated kubelet', () => {
  it('looks the Node up while the update runs: at the deadline only the Node write precedes updated', async () => {
    const c = new FakeClient();
    await seed(c);
    const u = referenceUpdater(['ref']);
    const first = await u.reconcileTask(c, await task(c));
    expect(first.kind).to.equal('requeue');
    await settle();
    expect(await kubelet(c), 'nothing reported while updating').to.equal('v1.30.0');
    await pastDeadline();
    const t = await task(c);
    const mark = c.calls.length;
    await u.reconcileTask(c, t);
    const calls = c.calls.slice(mark).map((x) => `${x.verb} ${x.res} ${x.name ?? ''}`);
    // The Node write, then the task's status: nothing read in between.
    expect(calls).to.have.length(2);
    expect(calls[0]).to.match(/^patch nodes n1$/);
    expect(calls[1]).to.match(/^patch updaterupdatetasks\S* m1\.ref$/);
    expect((await task(c)).status?.updateStatus).to.equal('updated');
    expect(await kubelet(c)).to.equal(VERSION);
  });

  it('an updater that did not look ahead (restarted) reads the Machine and Node at the end', async () => {
    const c = new FakeClient();
    await seed(c);
    await referenceUpdater(['ref']).reconcileTask(c, await task(c));
    await settle();
    await pastDeadline();
    const t = await task(c);
    const mark = c.calls.length;
    await referenceUpdater(['ref']).reconcileTask(c, t);
    expect(
      c.calls
        .slice(mark)
        .filter((x) => x.verb === 'get')
        .map((x) => x.name),
    ).to.deep.equal(['m1', 'n1']);
    expect((await task(c)).status?.updateStatus).to.equal('updated');
    expect(await kubelet(c)).to.equal(VERSION);
  });

  it('never writes a Node the CAPI simulator did not make', async () => {
    const c = new FakeClient();
    await seed(c, false);
    const u = referenceUpdater(['ref']);
    await u.reconcileTask(c, await task(c));
    await settle();
    await pastDeadline();
    await u.reconcileTask(c, await task(c));
    expect((await task(c)).status?.updateStatus).to.equal('updated');
    expect(await kubelet(c)).to.equal('v1.30.0');
    expect(c.calls.filter((x) => x.verb === 'patch' && x.name === 'n1')).to.deep.equal([]);
  });
});
