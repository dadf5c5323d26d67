// Abort suite: plans are aborted at random moments (during the control plane, during the MachineDeployments, right
// after creation); every machine must end updated or aborted, only updated machines are committed, nothing stays
// in flight or labelled, and a following plan then runs to completion. Seed: INPLACE_RELIABILITY_SEED.
import { expect } from 'chai';
import { InPlaceUpdatePlans } from '../../src/api/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import { waitFor } from '../support/wait.js';
import { planUpdates, recordRun, startFleet } from './fleet-run.js';
import { SEED, platformSpecs, reliabilityScale, report, rng, startProcs, stopWorld, waitPlan, type World } from './harness.js';

const WORKERS = reliabilityScale(40);
const ROUNDS = 3;

describe(`reliability: abort at random moments (${WORKERS + 3} machines, ${ROUNDS} aborted plans, seed ${SEED})`, function () {
  this.timeout(Math.max(300_000, WORKERS * 2_000));
  let w: World | undefined;
  const random = rng(SEED + 1);

  before(async () => {
    w = await startFleet({ workers: WORKERS, mdSize: 20, maxUnavailable: 2 }, 'abort');
    const procs = startProcs(w, platformSpecs(w.env.kubeconfigPath, w.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
  });
  after(async () => stopWorld(w));

  for (let round = 1; round <= ROUNDS; round++) {
    it(`aborted plan ${round}: every machine ends updated or aborted, commits only for updated ones, nothing stuck or labelled`, async () => {
      const world = w!;
      const toVersion = `v1.30.${round}`;
      const name = `abort-${round}`;
      const run = await recordRun(world);
      const plan = fleetPlan(world.fleet, { name, toVersion, durationSeconds: 0.5 });
      await world.client.create(InPlaceUpdatePlans, plan);
      // Round 1 aborts right after creation, round 2 during the control plane, later rounds at a random point of the
      // MachineDeployments phase: the moment is chosen by progress (machines updated), not by time, so it lands inside
      // the plan however fast the machine is.
      const total = world.fleet.objects.filter((o) => o.kind === 'Machine').length;
      const cp = world.fleet.cpReplicas;
      const abortAt = round === 1 ? 0 : round === 2 ? Math.floor(random() * cp) : cp + Math.floor(random() * 0.8 * (total - cp));
      await waitFor(async () => (await planUpdates(world, name)).filter((m) => m.status?.updateStatus === 'updated').length >= abortAt, {
        timeoutMs: 120_000,
        intervalMs: 25,
        message: `${abortAt} machines updated by ${name}`,
      });
      await world.client.patch(InPlaceUpdatePlans, world.ns, name, { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
      const final = await waitPlan(world, name, ['aborted', 'updated', 'failed'], 120_000);
      const counts = (await planUpdates(world, name)).reduce<Record<string, number>>(
        (a, m) => ({ ...a, [m.status?.updateStatus ?? '']: (a[m.status?.updateStatus ?? ''] ?? 0) + 1 }),
        {},
      );
      expect(
        final.status?.updateStatus,
        `plan ${name} aborted after ${abortAt} machines were updated; MachineUpdates ${JSON.stringify(counts)}`,
      ).to.equal('aborted');
      const violations = await run.settle({ plan: name, planStatuses: ['aborted'], allUpdated: false, toVersion });
      expect(violations, report(violations)).to.deep.equal([]);
    });
  }

  it('then runs a new plan to completion over the mixed fleet, committing every machine exactly once', async () => {
    const world = w!;
    const run = await recordRun(world);
    const plan = fleetPlan(world.fleet, { name: 'after-aborts', toVersion: 'v1.31.0', durationSeconds: 0.05 });
    await world.client.create(InPlaceUpdatePlans, plan);
    const final = await waitPlan(world, 'after-aborts', ['updated', 'failed', 'aborted'], 180_000);
    expect(final.status?.updateStatus).to.equal('updated');
    const violations = await run.settle({ plan: 'after-aborts', planStatuses: ['updated'], allUpdated: true, toVersion: 'v1.31.0' });
    expect(violations, report(violations)).to.deep.equal([]);
  });
});
