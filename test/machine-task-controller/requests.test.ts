// What one MachineUpdate costs the machine task controller in API requests (issue 25): the Machine the commit patches
// comes from the cache (no GET), the commit journal rides on status writes that happen anyway, and an updater's
// progress is held back to at most one write per interval, so a one-updater update writes its status three times
// (start, the journal with "committing", the end; a fourth only when the updater's progress outlives the interval).
// The same single-object patch of the same plan is dry-run once, and a successful update records no Event.
import { expect } from 'chai';
import { Labels, Machines, type KubeObject } from '../../src/api/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { createManager, createMetrics, noopLogger, type RuntimeManager, type RuntimeMetrics } from '../../src/runtime/index.js';
import { waitFor } from '../support/wait.js';
import { createMachineUpdate, startFixture, waitMUStatus, TEST_PLAN, type Fixture } from './support.js';

describe('machine task controller: API requests of one MachineUpdate (integration)', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  let metrics: RuntimeMetrics;
  let updater: { stop(): Promise<void> };

  before(async () => {
    f = await startFixture('mtc-req', 2);
    metrics = createMetrics({ processMetrics: false });
    mgr = createManager({ client: f.env.client, name: 'mtc-req', namespace: f.ns, metrics });
    await machineTaskController.setup(mgr);
    await mgr.start();
    updater = await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, catchAll: true, log: noopLogger });
  });
  after(async () => {
    await updater?.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  /** Successful requests of the controller by `verb resource` (the resource's plural). */
  const requests = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const v of (await metrics.apiRequests.get()).values) {
      if (!/^2/.test(String(v.labels['code']))) continue;
      const k = `${String(v.labels['verb'])} ${String(v.labels['resource']).split('.')[0]}`;
      out.set(k, (out.get(k) ?? 0) + v.value);
    }
    return out;
  };

  it('reads no Machine, writes the status at most four times, records no Event, and leaves no journal; the next machine skips the dry-run', async () => {
    const one = async (machine: string, name: string): Promise<Map<string, number>> => {
      // The plan labels the machine before it creates the MachineUpdate; here the cache is given time to see the label,
      // so that the ownership check does not confirm a refusal with live reads.
      await f.env.client.patch(Machines, f.ns, machine, { metadata: { labels: { [Labels.planName]: TEST_PLAN } } }, { type: 'merge' });
      await waitFor(() => mgr.informer<KubeObject>(Machines).store.peek(f.ns, machine)?.metadata.labels?.[Labels.planName] === TEST_PLAN);
      const before = await requests();
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
      const after = await requests();
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
