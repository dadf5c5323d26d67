import { expect } from 'chai';
import { Labels, UpdaterUpdateTasks } from '../api/index.js';
import { FakeClient } from '../../test/support/fake-client.js';
import type { Task } from './accessors.js';
import { aborted, defineUpdater, done, failed, MAX_REQUEUE_MS, progress, type Result, type UpdaterContext } from './sdk.js';

const T0 = new Date('2026-01-01T00:00:00.250Z');

async function seed(
  client: FakeClient,
  opts: { updater?: string; phase?: 'updating' | 'aborting'; status?: Task['status'] } = {},
): Promise<Task> {
  const t = await client.create<Task>(UpdaterUpdateTasks, {
    apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
    kind: 'UpdaterUpdateTask',
    metadata: { name: 'm1.u', namespace: 'ns', labels: { [Labels.updaterName]: opts.updater ?? 'u' } },
    spec: { updaterName: opts.updater ?? 'u', updatePhase: opts.phase ?? 'updating', machineRef: { name: 'm1' } },
  });
  if (!opts.status) return t;
  return client.patch<Task>(UpdaterUpdateTasks, 'ns', 'm1.u', { status: opts.status }, { type: 'merge', subresource: 'status' });
}

/** An updater whose handlers return what the test says and record their calls. */
function scripted(results: { update?: Result | Error; abort?: Result }, names?: string[], now: () => Date = () => T0) {
  const calls: { handler: string; ctx: UpdaterContext }[] = [];
  const u = defineUpdater({
    name: 'test',
    kind: UpdaterUpdateTasks,
    ...(names ? { names } : {}),
    now,
    async update(_t, ctx) {
      calls.push({ handler: 'update', ctx });
      if (results.update instanceof Error) throw results.update;
      return results.update ?? progress();
    },
    async abort(_t, ctx) {
      calls.push({ handler: 'abort', ctx });
      return results.abort ?? aborted();
    },
  });
  return { u, calls };
}

const get = (c: FakeClient): Promise<Task | undefined> => c.get<Task>(UpdaterUpdateTasks, 'ns', 'm1.u');
const ready = (t: Task | undefined) => t?.status?.conditions?.find((c) => c.type === 'Ready');

describe('updater SDK', () => {
  it('reports progress as updating with observedGeneration, startTime and a Ready reason, and requeues as asked', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: progress(250, 'step 1/3') });
    const action = await u.reconcileTask(c, (await get(c))!);
    expect(action).to.deep.equal({ kind: 'requeue', afterMs: 250 });
    const t = await get(c);
    // Microseconds (metav1.MicroTime layout): a duration measured from startTime is exact, not cut to the second.
    expect(t?.status).to.include({ updateStatus: 'updating', observedGeneration: 1, startTime: '2026-01-01T00:00:00.250000Z' });
    expect(ready(t)).to.include({ status: 'False', reason: 'Updating', message: 'step 1/3' });
  });

  it('marks done as updated with completionTime and Ready True', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: done('all good') });
    expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'awaitChange' });
    const t = await get(c);
    expect(t?.status).to.include({ updateStatus: 'updated', completionTime: '2026-01-01T00:00:00.250000Z' });
    expect(ready(t)).to.include({ status: 'True', reason: 'Updated', message: 'all good' });
  });

  it("puts a failure's message on the Ready condition", async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: failed('disk full') });
    await u.reconcileTask(c, (await get(c))!);
    const t = await get(c);
    expect(t?.status?.updateStatus).to.equal('failed');
    expect(ready(t)).to.include({ status: 'False', reason: 'Failed', message: 'disk full' });
  });

  it('cuts an over-long failure message so that the status write still succeeds', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: failed(`stderr: ${'x'.repeat(200_000)}`) });
    await u.reconcileTask(c, (await get(c))!);
    const t = await get(c);
    expect(t?.status?.updateStatus).to.equal('failed');
    expect(Buffer.byteLength(ready(t)!.message!)).to.be.at.most(8192);
    expect(ready(t)!.message).to.match(/^stderr: x+\.\.\. \(\d+ more bytes\)$/);
  });

  it('calls abort once the task is aborting and reports aborted', async () => {
    const c = new FakeClient();
    await seed(c, { phase: 'aborting' });
    const { u, calls } = scripted({ abort: aborted('stopped') });
    await u.reconcileTask(c, (await get(c))!);
    expect(calls.map((x) => x.handler)).to.deep.equal(['abort']);
    expect((await get(c))?.status?.updateStatus).to.equal('aborted');
  });

  it('turns aborted returned while updating into failed (aborted only answers aborting)', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: aborted('gave up') });
    await u.reconcileTask(c, (await get(c))!);
    const t = await get(c);
    expect(t?.status?.updateStatus).to.equal('failed');
    expect(ready(t)?.message).to.match(/not aborting: gave up/);
  });

  it('never calls a handler for a terminal task and writes nothing when it is current', async () => {
    const c = new FakeClient();
    const seeded = await seed(c, { status: { updateStatus: 'updated', observedGeneration: 1 } });
    const { u, calls } = scripted({ update: progress() });
    await u.reconcileTask(c, seeded);
    expect(calls).to.have.length(0);
    expect((await get(c))?.metadata.resourceVersion).to.equal(seeded.metadata.resourceVersion);
  });

  it('only moves observedGeneration of a terminal task whose spec changed', async () => {
    const c = new FakeClient();
    await seed(c, {
      status: {
        updateStatus: 'updated',
        observedGeneration: 1,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'Updated',
            message: 'ok',
            lastTransitionTime: '2026-01-01T00:00:00Z',
            observedGeneration: 1,
          },
        ],
      },
    });
    const bumped = await c.patch<Task>(UpdaterUpdateTasks, 'ns', 'm1.u', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
    expect(bumped.metadata.generation).to.equal(2);
    const { u, calls } = scripted({ abort: aborted() });
    await u.reconcileTask(c, bumped);
    const t = await get(c);
    expect(calls).to.have.length(0);
    expect(t?.status).to.include({ updateStatus: 'updated', observedGeneration: 2 });
    expect(ready(t)).to.include({ status: 'True', reason: 'Updated', observedGeneration: 2 });
  });

  it('keeps startTime across reconciles so a restarted updater resumes (C7)', async () => {
    const c = new FakeClient();
    await seed(c, { status: { updateStatus: 'updating', observedGeneration: 1, startTime: '2025-12-31T23:59:00Z' } });
    const { u, calls } = scripted({ update: progress(10) });
    await u.reconcileTask(c, (await get(c))!);
    expect(calls[0]?.ctx.startTime.toISOString()).to.equal('2025-12-31T23:59:00.000Z');
    expect((await get(c))?.status?.startTime).to.equal('2025-12-31T23:59:00Z');
  });

  it('asks for a requeue at the deadline a handler names, so a wait costs nothing until then', async () => {
    const c = new FakeClient();
    await seed(c);
    let clock = T0;
    const deadline = T0.getTime() + 90_000;
    const u = defineUpdater({
      name: 'test',
      kind: UpdaterUpdateTasks,
      now: () => clock,
      update: async (_t, ctx) => (ctx.now().getTime() < deadline ? progress(deadline - ctx.now().getTime(), 'waiting') : done()),
      abort: async () => aborted(),
    });
    expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'requeue', afterMs: 90_000 });
    clock = new Date(T0.getTime() + 60_000);
    expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'requeue', afterMs: 30_000 });
    clock = new Date(deadline);
    expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'awaitChange' });
    expect((await get(c))?.status?.updateStatus).to.equal('updated');
  });

  it('caps a far deadline at a resync (a timer cannot wait past 2^31-1 ms: it would fire at once, a busy loop)', async () => {
    for (const far of [3_000_000_000, 1e300, Infinity]) {
      const c = new FakeClient();
      await seed(c);
      const { u } = scripted({ update: progress(far, 'a long wait') });
      expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'requeue', afterMs: MAX_REQUEUE_MS });
    }
    expect(MAX_REQUEUE_MS).to.be.below(2 ** 31 - 1);
  });

  it('never asks for a negative requeue (a deadline already passed looks again at once)', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: progress(-500) });
    expect(await u.reconcileTask(c, (await get(c))!)).to.deep.equal({ kind: 'requeue', afterMs: 0 });
  });

  it('gives the handler the very instant it records as startTime, so the duration it measures is the one recorded', async () => {
    const c = new FakeClient();
    await seed(c);
    let tick = T0.getTime();
    // A clock that moves on every read: the start the handler sees must still be the one written.
    const { u, calls } = scripted({ update: progress(10) }, undefined, () => new Date((tick += 7)));
    await u.reconcileTask(c, (await get(c))!);
    const written = (await get(c))?.status?.startTime;
    expect(Date.parse(written!)).to.equal(calls[0]!.ctx.startTime.getTime());
  });

  it('does not write when the result changes nothing', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: progress(10, 'same') });
    await u.reconcileTask(c, (await get(c))!);
    const first = await get(c);
    await u.reconcileTask(c, first!);
    expect((await get(c))?.metadata.resourceVersion).to.equal(first?.metadata.resourceVersion);
  });

  it('reports a handler error on Ready and rethrows it for backoff', async () => {
    const c = new FakeClient();
    await seed(c);
    const { u } = scripted({ update: new Error('registry unreachable') });
    let thrown: unknown;
    try {
      await u.reconcileTask(c, (await get(c))!);
    } catch (err) {
      thrown = err;
    }
    expect((thrown as Error)?.message).to.equal('registry unreachable');
    const t = await get(c);
    expect(t?.status?.updateStatus).to.equal('updating');
    expect(ready(t)?.message).to.match(/retrying after an error: registry unreachable/);
  });

  it('ignores generic tasks of updater names it does not serve', async () => {
    const c = new FakeClient();
    await seed(c, { updater: 'other' });
    const { u, calls } = scripted({ update: done() }, ['mine']);
    await u.reconcileTask(c, (await get(c))!);
    expect(calls).to.have.length(0);
    expect((await get(c))?.status).to.equal(undefined);
  });

  it('writes through /status with the resourceVersion it read (a stale copy conflicts)', async () => {
    const c = new FakeClient();
    const stale = await seed(c);
    await c.patch(UpdaterUpdateTasks, 'ns', 'm1.u', { metadata: { labels: { touched: 'yes' } } }, { type: 'merge' });
    const { u } = scripted({ update: done() });
    let thrown: unknown;
    try {
      await u.reconcileTask(c, stale);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).to.be.instanceOf(Error);
    expect((await get(c))?.status).to.equal(undefined);
  });
});
