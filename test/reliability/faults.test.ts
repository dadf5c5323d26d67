// Fault suite: the local API server fails 5% of requests (500, 429, 409), adds latency and drops every watch
// periodically while a plan runs; the plan must complete with the crash suite's invariants.
// Local API server only (a real cluster cannot inject faults). Size: INPLACE_RELIABILITY_SCALE; CI default 60.
import { expect } from 'chai';
import { InPlaceUpdatePlans } from '../../src/api/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import {
  Recorder,
  SEED,
  machinesBefore,
  platformSpecs,
  reliabilityScale,
  report,
  settledInvariants,
  startProcs,
  startWorld,
  stopWorld,
  waitPlan,
  type World,
} from './harness.js';

const WORKERS = reliabilityScale(60);

describe(`reliability: API faults during a plan (${WORKERS + 3} machines, seed ${SEED})`, function () {
  this.timeout(Math.max(300_000, WORKERS * 2_000));
  let w: World | undefined;

  before(async function () {
    if (process.env['INPLACE_TEST_KUBECONFIG']) {
      console.log('    (skipped on INPLACE_TEST_KUBECONFIG: needs the embedded API server for fault injection)');
      this.skip();
    }
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: WORKERS, mdSize: WORKERS <= 100 ? 30 : 100, maxUnavailable: 3, mhcTimeout: '30m' },
      'faults',
    );
  });
  after(async () => stopWorld(w));

  it('completes the plan under 5% errors (500/429/409), latency and dropped watches, with every invariant holding', async () => {
    const world = w!;
    const server = world.env.server!;
    const rec = new Recorder(world.client, world.ns);
    await rec.start();
    const before = await machinesBefore(world.client, world.ns);
    const procs = startProcs(world, platformSpecs(world.env.kubeconfigPath, world.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
    server.setFaults({ errorRate: 0.05, errorCodes: [500, 429, 409], latencyMs: 5, dropWatchesEveryMs: 3000 });
    const plan = fleetPlan(world.fleet, { name: 'faults-v1-30-1', toVersion: 'v1.30.1', durationSeconds: 0.3 });
    // The test's own client is subject to the faults too: retry the create like any client would.
    for (let i = 0; ; i++) {
      try {
        await world.client.create(InPlaceUpdatePlans, plan);
        break;
      } catch (err) {
        if (i > 20 || /already exists/.test((err as Error).message)) break;
      }
    }
    let final;
    try {
      final = await waitPlan(world, plan.metadata.name!, ['updated', 'failed', 'aborted'], this.timeout() - 60_000);
    } finally {
      server.setFaults(undefined);
    }
    const selfExits = procs.filter((p) => p.crashedOnItsOwn).map((p) => `${p.name}:\n${p.tail(10)}`);
    expect(selfExits, 'processes that exited under faults').to.deep.equal([]);
    expect(final.status?.updateStatus).to.equal('updated');
    const violations = await settledInvariants(
      world,
      { plan: plan.metadata.name!, planStatuses: ['updated'], allUpdated: true, toVersion: 'v1.30.1', before },
      rec,
    );
    await rec.stop();
    expect(violations, report(violations)).to.deep.equal([]);
  });
});
