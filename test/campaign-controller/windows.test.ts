// Integration: a campaign's maintenance windows on the embedded API server (or a real cluster). Outside every window no
// cluster starts and the campaign says until when; once a window is open the waves go, and the plans carry the windows.
import { expect } from 'chai';
import { Events, InPlaceUpdateCampaigns } from '../../src/api/index.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { dailyUtcWindow } from '../e2e/harness.js';
import { waitFor } from '../support/wait.js';
import { campaignObject, conditionOf, FLEET_LABEL, useFleetEnv } from './fleet.js';

describe('campaign controller: maintenance windows', function () {
  this.timeout(240_000);
  const { env, start } = useFleetEnv();

  it('outside its window no cluster starts (reason, next opening, Event); opened, the waves go and the plans carry the windows', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(2, 'w', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'win', { maintenanceWindows: [dailyUtcWindow(6, 1)], rollout: { maxConcurrentClusters: 2 } }),
    );
    const waiting = await fleet.waitCampaign(
      'win',
      (c) => conditionOf(c, 'Ready')?.reason === 'WaitingForMaintenanceWindow',
      'waits for its window',
    );
    expect(waiting.status?.maintenanceWindow).to.include({ state: 'Closed' });
    expect(Date.parse(waiting.status!.maintenanceWindow!.nextChange!)).to.be.greaterThan(Date.now());
    expect(conditionOf(waiting, 'Ready')?.message).to.match(
      /^maintenance window closed until \w{3} \d\d:\d\d UTC \(.*\): wave 1 \(2 clusters\)/,
    );
    expect(conditionOf(waiting, 'Valid')?.status).to.equal('True');
    expect(await fleet.plans()).to.deep.equal([]);
    await waitFor(
      async () =>
        (await env().client.list(Events, p.ns)).items.find(
          (e) => e['reason'] === 'MaintenanceWindowClosed' && (e['involvedObject'] as { kind?: string }).kind === 'InPlaceUpdateCampaign',
        ),
      { timeoutMs: 30_000, message: 'MaintenanceWindowClosed Event on the campaign' },
    );

    // Open it now (the window list is mutable): the wave starts, its plans get the window, the campaign completes.
    const open = [dailyUtcWindow(-1, 4)];
    await p.client.patch(InPlaceUpdateCampaigns, p.ns, 'win', { spec: { maintenanceWindows: open } }, { type: 'merge' });
    const done = await fleet.waitCampaign('win', (c) => c.status?.updateStatus === 'updated', 'updated', 120_000);
    expect(done.status?.maintenanceWindow).to.include({ state: 'Open' });
    const plans = await fleet.plans('win');
    expect(plans).to.have.length(2);
    for (const pl of plans) expect(pl.spec.maintenanceWindows).to.deep.equal(open);
    const reasons = (await env().client.list(Events, p.ns)).items
      .filter((e) => (e['involvedObject'] as { kind?: string }).kind === 'InPlaceUpdateCampaign')
      .map((e) => e['reason']);
    expect(reasons).to.include('MaintenanceWindowOpened');
  });
});
