// Crash suite: every controller process (plan controller, machine task controller, MHC extension, reference
// updater) is killed with SIGKILL at random moments, repeatedly, while a plan runs; the plan must still complete
// with every machine committed exactly once, no duplicate task, and no Machine left labelled or skip-remediated.
// Size: INPLACE_RELIABILITY_SCALE worker machines (e.g. 500); CI default 60. Seed: INPLACE_RELIABILITY_SEED.
import { expect } from 'chai';
import { InPlaceUpdatePlans } from '../../src/api/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import {
  Recorder,
  SEED,
  machinesBefore,
  settledInvariants,
  platformSpecs,
  reliabilityScale,
  report,
  rng,
  startProcs,
  startWorld,
  stopWorld,
  waitPlan,
  type World,
} from './harness.js';
import { delay } from '../support/wait.js';

const WORKERS = reliabilityScale(60);
const MD_SIZE = WORKERS <= 100 ? 30 : 100;
const MAX_UNAVAILABLE = 2;

describe(`reliability: kill -9 of controller processes during a plan (${WORKERS + 3} machines, seed ${SEED})`, function () {
  this.timeout(Math.max(300_000, WORKERS * 2_000));
  let w: World | undefined;

  before(async () => {
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: WORKERS, mdSize: MD_SIZE, maxUnavailable: MAX_UNAVAILABLE, mhcTimeout: '30m' },
      'crash',
    );
  });
  after(async () => stopWorld(w));

  it('completes the plan: one task per machine and updater, every machine committed exactly once, nothing left labelled', async () => {
    const world = w!;
    const random = rng(SEED);
    const rec = new Recorder(world.client, world.ns);
    await rec.start();
    const before = await machinesBefore(world.client, world.ns);
    const procs = startProcs(world, platformSpecs(world.env.kubeconfigPath, world.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
    // Long enough per machine that kills land while tasks are in flight, short enough for CI.
    const plan = fleetPlan(world.fleet, { name: 'crash-v1-30-1', toVersion: 'v1.30.1', durationSeconds: 1 });
    await world.client.create(InPlaceUpdatePlans, plan);

    // Chaos: rounds in which every process is killed once, in random order, at a random moment, and restarted after
    // a random pause; the next kill waits until the restarted process is up again (else nothing would ever run).
    let done = false;
    const finished = waitPlan(world, plan.metadata.name!, ['updated', 'failed', 'aborted'], this.timeout() - 60_000).finally(
      () => (done = true),
    );
    const selfExits: string[] = [];
    const killsDuringPlan = new Map<string, number>();
    let rounds = 0;
    while (!done && rounds < 50) {
      const order = [...procs].sort(() => random() - 0.5);
      for (const p of order) {
        await delay(random() * 2000);
        if (done) break;
        if (p.crashedOnItsOwn) selfExits.push(`${p.name}:\n${p.tail(10)}`);
        await p.kill9();
        killsDuringPlan.set(p.name, (killsDuringPlan.get(p.name) ?? 0) + 1);
        await delay(random() * 1000);
        p.start();
        await p.waitReady();
      }
      rounds++;
    }
    const final = await finished;
    if (process.env['INPLACE_RELIABILITY_VERBOSE'])
      console.log(`      kills while the plan ran: ${JSON.stringify(Object.fromEntries(killsDuringPlan))}, rounds ${rounds}`);
    await delay(1500); // let the MHC extension and the plan controller settle labels after the last kill
    await rec.stop();
    const kills = Object.fromEntries(killsDuringPlan);
    expect(selfExits, `processes that exited on their own: ${selfExits.join('\n')}`).to.deep.equal([]);
    expect(final.status?.updateStatus, `plan ended ${final.status?.updateStatus}; kills ${JSON.stringify(kills)}`).to.equal('updated');
    for (const p of procs)
      expect(killsDuringPlan.get(p.name) ?? 0, `kills of ${p.name} while the plan ran (${JSON.stringify(kills)})`).to.be.at.least(1);
    const violations = await settledInvariants(
      world,
      { plan: plan.metadata.name!, planStatuses: ['updated'], allUpdated: true, toVersion: 'v1.30.1', before },
      rec,
    );
    expect(violations, report(violations)).to.deep.equal([]);
  });
});
