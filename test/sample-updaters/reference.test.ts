import { expect } from 'chai';
import { UpdaterUpdateTasks } from '../../src/api/index.js';
import { taskName, type Task } from '../../src/contract/index.js';
import { MAX_DURATION_SECONDS } from '../../src/sample-updaters/reference/updater.js';
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

const UPDATER = 'ref-timing';
const version = [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }];

describe('reference updater (integration): exact durations and bounded parameters', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  let ref: { stop(): Promise<void> } | undefined;
  const start = async (): Promise<void> => {
    ref = await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, names: [UPDATER], log: noopLogger });
  };
  const task = (machine: string): Promise<Task | undefined> =>
    f.env.client.get<Task>(UpdaterUpdateTasks, f.ns, taskName(TEST_PLAN, machine, UPDATER));
  /** How long the task was updating, from the times the updater recorded in its status. */
  const updatingMs = (t: Task | undefined): number => Date.parse(t!.status!.completionTime!) - Date.parse(t!.status!.startTime!);

  before(async () => {
    f = await startFixture('reference', 3);
    mgr = await startTaskController(f);
    await start();
  });
  after(async () => {
    await ref?.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  it('keeps a task updating for at least parameters.durationSeconds (1.5 s), measured from a precise startTime', async () => {
    const machine = f.machines[0]!;
    await createMachineUpdate(f, 'mu-duration', machine, [
      { name: UPDATER, sequence: 1, parameters: { durationSeconds: 1.5 }, responsibilities: version },
    ]);
    await waitMUStatus(f, 'mu-duration', 'updated', 60_000);
    const t = await task(machine);
    expect(t?.status?.updateStatus).to.equal('updated');
    // RFC 3339 with microseconds: a start cut to the second made a 1.5 s update last 0.5–1.5 s.
    expect(t?.status?.startTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(t?.status?.completionTime).to.match(/\.\d{6}Z$/);
    expect(updatingMs(t)).to.be.at.least(1500);
  });

  it('measures the duration from the recorded start across an updater restart (resumes, does not restart)', async () => {
    const machine = f.machines[1]!;
    await createMachineUpdate(f, 'mu-restart', machine, [
      { name: UPDATER, sequence: 1, parameters: { durationSeconds: 2 }, responsibilities: version },
    ]);
    const updating = await waitFor(
      async () => {
        const t = await task(machine);
        return t?.status?.updateStatus === 'updating' && t.status.startTime ? t : undefined;
      },
      { message: 'reference task updating', timeoutMs: 30_000 },
    );
    await ref!.stop();
    await start();
    await waitMUStatus(f, 'mu-restart', 'updated', 60_000);
    const done = await task(machine);
    expect(done?.status?.startTime).to.equal(updating.status?.startTime);
    expect(updatingMs(done)).to.be.at.least(2000);
  });

  it('fails a task whose durationSeconds is out of bounds (1e300) at once, with a message naming the bound', async () => {
    const machine = f.machines[2]!;
    await createMachineUpdate(f, 'mu-huge', machine, [
      { name: UPDATER, sequence: 1, parameters: { durationSeconds: 1e300 }, responsibilities: version },
    ]);
    const mu = await waitMUStatus(f, 'mu-huge', 'failed', 60_000);
    const want = `parameters.durationSeconds must be a number between 0 and ${MAX_DURATION_SECONDS}, got 1e+300`;
    expect(mu.status?.message).to.equal(`updater ${UPDATER} failed: ${want}`);
    const t = await task(machine);
    // Terminal (C4): the updater never looks at it again, so there is no retry loop (before: "Invalid time value" forever).
    expect(t?.status?.updateStatus).to.equal('failed');
    const ready = t?.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).to.include({ status: 'False', reason: 'Failed', message: want });
    expect(JSON.stringify(t?.status)).not.to.contain('Invalid time value');
    expect(JSON.stringify(t?.status)).not.to.contain('retrying after an error');
  });
});
