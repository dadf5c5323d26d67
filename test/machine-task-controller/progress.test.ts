// The task controller mirrors an updater's progress at a bounded rate (issue 25): a progress-only change is written at
// most once per PROGRESS_WRITE_INTERVAL_MS after the last status write, and is never lost (the latest progress shows
// once due), while the end of the updater's work is written at once. The test plays the updater by hand.
import { expect } from 'chai';
import { Labels, Machines, UpdaterUpdateTasks, type KubeObject } from '../../src/api/index.js';
import { taskName } from '../../src/contract/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { PROGRESS_WRITE_INTERVAL_MS } from '../../src/machine-task-controller/status.js';
import { createManager, type RuntimeManager } from '../../src/runtime/index.js';
import { countRequests } from '../support/requests.js';
import { waitFor } from '../support/wait.js';
import { createMachineUpdate, startFixture, waitMU, waitMUStatus, TEST_PLAN, type Fixture } from './support.js';

describe('machine task controller: progress written at a bounded rate (integration)', function () {
  this.timeout(90_000);
  let f: Fixture;
  let mgr: RuntimeManager;
  /** The controller's requests so far, counted as they are sent (test/support/requests.ts). */
  let requests: () => Map<string, number>;

  before(async () => {
    f = await startFixture('mtc-progress', 1);
    const counted = countRequests(f.env.client);
    requests = counted.counts;
    mgr = createManager({ client: counted.client, name: 'mtc-progress', namespace: f.ns });
    await machineTaskController.setup(mgr);
    await mgr.start();
  });
  after(async () => {
    await mgr?.stop();
    await f?.env.stop();
  });

  /** MachineUpdate status writes the controller has sent so far. */
  const statusWrites = (): number => requests().get('patch machineupdates') ?? 0;

  /** Writes the task's status as an updater does (C5, C6). */
  const report = async (name: string, updateStatus: 'updating' | 'updated', message: string): Promise<void> => {
    const t = await f.env.client.get<KubeObject>(UpdaterUpdateTasks, f.ns, name);
    await f.env.client.patch(
      UpdaterUpdateTasks,
      f.ns,
      name,
      {
        status: {
          updateStatus,
          observedGeneration: t!.metadata.generation,
          conditions: [
            {
              type: 'Ready',
              status: updateStatus === 'updated' ? 'True' : 'False',
              reason: updateStatus === 'updated' ? 'Updated' : 'Updating',
              message,
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              observedGeneration: t!.metadata.generation,
            },
          ],
        },
      },
      { type: 'merge', subresource: 'status' },
    );
  };

  it('shows the latest progress within the interval, writes at most one progress status per interval, and the end at once', async () => {
    const machine = f.machines[0]!;
    await f.env.client.patch(Machines, f.ns, machine, { metadata: { labels: { [Labels.planName]: TEST_PLAN } } }, { type: 'merge' });
    await waitFor(() => mgr.informer<KubeObject>(Machines).store.peek(f.ns, machine)?.metadata.labels?.[Labels.planName] === TEST_PLAN);
    await createMachineUpdate(f, 'mu-progress', machine, [
      {
        name: 'by-hand',
        sequence: 1,
        responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.2' }],
      },
    ]);
    const task = taskName(TEST_PLAN, machine, 'by-hand');
    // The start: the task exists and the MachineUpdate says it waits for its updater.
    await waitMU(f, 'mu-progress', (mu) => mu.status?.tasks?.length === 1, 'the start written');
    const before = statusWrites();
    const started = Date.now();
    const steps = 12;
    for (let i = 1; i <= steps; i++) await report(task, 'updating', `step ${i}/${steps}`);
    // The latest progress shows (held back at most an interval, never dropped).
    await waitMU(f, 'mu-progress', (mu) => mu.status?.message?.includes(`step ${steps}/${steps}`) === true, 'the latest progress', 60_000);
    const progressWrites = statusWrites() - before;
    const elapsed = Date.now() - started;
    // At most one progress write per interval since the start's write (plus the one that comes due at the end).
    expect(progressWrites, `${steps} progress reports in ${elapsed} ms`).to.be.at.least(1);
    expect(progressWrites).to.be.at.most(Math.floor(elapsed / PROGRESS_WRITE_INTERVAL_MS) + 1);
    expect(progressWrites).to.be.below(steps);
    // The end is not held back: reported right after a progress write, it is committed and written.
    await report(task, 'updated', 'done');
    const mu = await waitMUStatus(f, 'mu-progress', 'updated', 60_000);
    expect(mu.status?.message).to.match(/committed Machine .* \/spec\/version/);
  });
});
