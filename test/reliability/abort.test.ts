// Abort suite: plans are aborted at random moments (during the control plane, during the MachineDeployments, right
// after creation); every machine must end updated or aborted, only updated machines are committed, nothing stays
// in flight or labelled, and a following plan then runs to completion. Seed: INPLACE_RELIABILITY_SEED.
import { expect } from 'chai';
import { InPlaceUpdatePlans, MachineUpdates, type KubeObject, type MachineUpdate } from '../../src/api/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import { delay } from '../support/wait.js';
import { SEED, Recorder, machinesBefore, platformSpecs, reliabilityScale, report, rng, settledInvariants, startProcs, startWorld, stopWorld, waitPlan, type World } from './harness.js';

const WORKERS = reliabilityScale(40);
const ROUNDS = 3;

describe(`reliability: abort at random moments (${WORKERS + 3} machines, ${ROUNDS} aborted plans, seed ${SEED})`, function () {
  this.timeout(Math.max(300_000, WORKERS * 2_000));
  let w: World | undefined;
  const random = rng(SEED + 1);

  before(async () => {
    w = await startWorld({ clusterName: 'c1', version: 'v1.30.0', workers: WORKERS, mdSize: 20, maxUnavailable: 2, mhcTimeout: '30m' }, 'abort');
    const procs = startProcs(w, platformSpecs(w.env.kubeconfigPath, w.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
  });
  after(async () => stopWorld(w));

  for (let round = 1; round <= ROUNDS; round++) {
    it(`aborted plan ${round}: every machine ends updated or aborted, commits only for updated ones, nothing stuck or labelled`, async () => {
      const world = w!;
      const toVersion = `v1.30.${round}`;
      const name = `abort-${round}`;
      const rec = new Recorder(world.client, world.ns);
      await rec.start();
      const before = await machinesBefore(world.client, world.ns);
      const plan = fleetPlan(world.fleet, { name, toVersion, durationSeconds: 0.5 });
      await world.client.create(InPlaceUpdatePlans, plan);
      // Round 1 aborts almost at once, later rounds somewhere in the control plane or MachineDeployment phase.
      const abortAfterMs = round === 1 ? random() * 300 : 500 + random() * 6000;
      await delay(abortAfterMs);
      await world.client.patch(InPlaceUpdatePlans, world.ns, name, { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
      const final = await waitPlan(world, name, ['aborted', 'updated', 'failed'], 120_000);
      const mus = (await world.client.list<MachineUpdate & KubeObject>(MachineUpdates, world.ns)).items.filter((m) => m.spec.planName === name);
      const counts = mus.reduce<Record<string, number>>((a, m) => ({ ...a, [m.status?.updateStatus ?? '']: (a[m.status?.updateStatus ?? ''] ?? 0) + 1 }), {});
      expect(final.status?.updateStatus, `plan ${name} aborted after ${Math.round(abortAfterMs)} ms; MachineUpdates ${JSON.stringify(counts)}`).to.equal('aborted');
      const violations = await settledInvariants(world, { plan: name, planStatuses: ['aborted'], allUpdated: false, toVersion, before }, rec);
      await rec.stop();
      expect(violations, report(violations)).to.deep.equal([]);
    });
  }

  it('then runs a new plan to completion over the mixed fleet, committing every machine exactly once', async () => {
    const world = w!;
    const rec = new Recorder(world.client, world.ns);
    await rec.start();
    const before = await machinesBefore(world.client, world.ns);
    const plan = fleetPlan(world.fleet, { name: 'after-aborts', toVersion: 'v1.31.0', durationSeconds: 0.05 });
    await world.client.create(InPlaceUpdatePlans, plan);
    const final = await waitPlan(world, 'after-aborts', ['updated', 'failed', 'aborted'], 180_000);
    expect(final.status?.updateStatus).to.equal('updated');
    const violations = await settledInvariants(world, { plan: 'after-aborts', planStatuses: ['updated'], allUpdated: true, toVersion: 'v1.31.0', before }, rec);
    await rec.stop();
    expect(violations, report(violations)).to.deep.equal([]);
  });
});
