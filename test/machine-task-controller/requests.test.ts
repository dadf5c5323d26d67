// What one MachineUpdate costs the machine task controller in API requests (issue 25): the Machine the commit patches
// comes from the cache (no GET), the commit journal rides on status writes that happen anyway, and an updater's
// progress is held back to at most one write per interval, so a one-updater update writes its status two to four
// times (start and end; the journal's "committing" only when the Machine does not hold the recorded previous values,
// a fourth only when the updater's progress outlives the interval). The same single-object patch of the same plan is
// dry-run once, and a successful update records no Event.
// Requests are counted as the controller sends them (test/support/requests.ts says why).
import { expect } from 'chai';
import { Labels, Machines, type KubeObject } from '../../src/api/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { createManager, noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import { countRequests } from '../support/requests.js';
import { waitFor } from '../support/wait.js';
import { createMachineUpdate, startFixture, waitMUStatus, TEST_PLAN, type Fixture } from './support.js';

describe('machine task controller: API requests of one MachineUpdate (integration)', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  /** The controller's requests by `verb resource` (the resource's plural), counted as they are sent. */
  let requests: () => Map<string, number>;
  let updater: { stop(): Promise<void> };

  before(async () => {
    f = await startFixture('mtc-req', 2);
    const counted = countRequests(f.env.client);
    requests = counted.counts;
    mgr = createManager({ client: counted.client, name: 'mtc-req', namespace: f.ns });
    await machineTaskController.setup(mgr);
    await mgr.start();
    updater = await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, catchAll: true, log: noopLogger });
  });
  after(async () => {
    await updater?.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  it('reads no Machine, writes the status at most four times, records no Event, and leaves no journal; the next machine skips the dry-run', async () => {
    const one = async (machine: string, name: string): Promise<Map<string, number>> => {
      // The plan labels the machine before it creates the MachineUpdate; here the cache is given time to see the label,
      // so that the ownership check does not confirm a refusal with live reads.
      await f.env.client.patch(Machines, f.ns, machine, { metadata: { labels: { [Labels.planName]: TEST_PLAN } } }, { type: 'merge' });
      await waitFor(() => mgr.informer<KubeObject>(Machines).store.peek(f.ns, machine)?.metadata.labels?.[Labels.planName] === TEST_PLAN);
      const before = requests();
      await createMachineUpdate(f, name, machine, [
        {
          name: 'version',
          sequence: 1,
          parameters: { durationSeconds: 0 },
          responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
        },
      ]);
      const mu = await waitMUStatus(f, name, 'updated');
      expect(mu.status?.message).to.match(/committed Machine .* \/spec\/version/);
      expect(mu.status).to.not.have.property('commit');
      const after = requests();
      return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
    };
    for (const [i, name] of ['mu-req', 'mu-req-2'].entries()) {
      const delta = await one(f.machines[i]!, name);
      expect(delta.get('get machines') ?? 0, 'Machine GETs').to.equal(0);
      expect(delta.get('create updaterupdatetasks'), 'task creates').to.equal(1);
      expect(delta.get('create events') ?? 0, 'Events').to.equal(0);
      // The first machine: the dry-run and the commit; the second: the commit only (same plan, kind and patch).
      expect(delta.get('patch machines'), `Machine patches of ${name}`).to.equal(i === 0 ? 2 : 1);
      expect(delta.get('patch machineupdates'), 'MachineUpdate status writes').to.be.within(2, 4);
    }
  });
});
