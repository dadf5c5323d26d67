// End to end on the embedded API server: a plan whose maintenance window is closed waits and says until when; a
// window opened by patching the plan lets it run to completion.
import { expect } from 'chai';
import { Events } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from './env.js';
import { conditionOf, dailyUtcWindow, planObject, refUpdater } from './harness.js';

describe('e2e: maintenance windows', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('a plan outside its window waits with the reason and the next opening; opening the window lets it run', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    // Opens in 6 hours, for 1 hour: closed now, whatever the time of day the test runs.
    plan.spec.maintenanceWindows = [dailyUtcWindow(6, 1)];
    await p.apply(plan);
    const waiting = await p.waitPlan(
      'p',
      (x) => conditionOf(x, 'Ready')?.reason === 'WaitingForMaintenanceWindow',
      'plan waits for its window',
    );
    expect(waiting.status?.updateStatus).to.equal('pending');
    expect(conditionOf(waiting, 'Ready')?.message).to.match(/^window closed until \w{3} \d\d:\d\d UTC \(\d{4}-.*Z\)$/);
    expect(waiting.status?.maintenanceWindow).to.include({ state: 'Closed' });
    expect(Date.parse(waiting.status!.maintenanceWindow!.nextChange!)).to.be.greaterThan(Date.now());
    expect(await p.machineUpdates()).to.deep.equal([]);
    const closedEvent = await waitFor(
      async () => (await env().client.list(Events, p.ns)).items.find((e) => e['reason'] === 'MaintenanceWindowClosed'),
      { message: 'MaintenanceWindowClosed Event' },
    );
    expect(closedEvent['message']).to.match(/no new machine starts, machines in update finish/);

    // Open it now: the window list is mutable, like paused.
    await p.patchPlan('p', { maintenanceWindows: [dailyUtcWindow(-1, 4)] });
    const done = await p.drive('p', 'manual');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.maintenanceWindow).to.include({ state: 'Open' });
    const reasons = (await env().client.list(Events, p.ns)).items.map((e) => e['reason']);
    expect(reasons).to.include('MaintenanceWindowOpened');
  });

  it('invalid windows: Valid=False names each problem, nothing starts', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 1, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['ref'] });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.maintenanceWindows = [{ days: ['Sun'], start: '24:00', duration: '10d', timeZone: 'Europe/Atlantis' }];
    await p.apply(plan);
    const invalid = await p.waitPlan('p', (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False');
    const msg = conditionOf(invalid, 'Valid')?.message ?? '';
    for (const part of ['maintenanceWindows[0].start', 'maintenanceWindows[0].duration', 'maintenanceWindows[0].timeZone'])
      expect(msg).to.contain(part);
    expect(await p.machineUpdates()).to.deep.equal([]);
  });
});
