// Leader-election suite: two replicas of every controller and of the reference updater run with --leader-elect; while
// a plan runs, every leader is killed with SIGKILL. The other replica must take the Lease within the lease duration
// (measured from the dead leader's last renewal; the follower notices on its retry period), and the plan completes
// with every invariant holding.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { InPlaceUpdatePlans, Leases, type KubeObject } from '../../src/api/index.js';
import type { Lease } from '../../src/runtime/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import type { Proc } from '../../bench/lib/procs.js';
import { delay, waitFor } from '../support/wait.js';
import {
  Recorder,
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

const WORKERS = reliabilityScale(40);
/** The runtime's default retry period: how often a follower looks at the Lease. */
const RETRY_PERIOD_MS = 2000;
/** Lease names: `inplace run <c>` uses inplace-<c>; the updater SDK inplace-updater-<name>. */
const LEASES = ['inplace-plan-controller', 'inplace-machine-task-controller', 'inplace-mhc-extension', 'inplace-updater-reference'];
const componentOf = (lease: string): string => lease.replace(/^inplace-/, '');

describe(`reliability: leader election, two replicas of each component, leaders killed mid-plan (${WORKERS + 3} machines)`, function () {
  this.timeout(300_000);
  let w: World | undefined;
  before(async () => {
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: WORKERS, mdSize: 20, maxUnavailable: 2, mhcTimeout: '30m' },
      'leader',
    );
  });
  after(async () => stopWorld(w));

  it('hands every Lease over to the other replica within the lease duration and completes the plan', async () => {
    const world = w!;
    const procs = [
      ...startProcs(world, platformSpecs(world.env.kubeconfigPath, world.ns, { leaderElect: true, replica: 'a' })),
      ...startProcs(world, platformSpecs(world.env.kubeconfigPath, world.ns, { leaderElect: true, replica: 'b' })),
    ];
    await Promise.all(procs.map((p) => p.waitReady()));
    const lease = async (name: string): Promise<Lease | undefined> => world.client.get<Lease & KubeObject>(Leases, world.ns, name);
    // Every lease is held, and its holder is one of our two replicas (found by the identity in its log).
    const leaders = new Map<string, Proc>();
    await waitFor(
      async () => {
        for (const l of LEASES) {
          const holder = (await lease(l))?.spec?.holderIdentity;
          const p = holder
            ? procs.find(
                (x) =>
                  x.name.startsWith(componentOf(l)) && logOf(x).includes(`"identity":"${holder}"`) && logOf(x).includes('became leader'),
              )
            : undefined;
          if (!p) return false;
          leaders.set(l, p);
        }
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'every lease held by a replica' },
    );

    const rec = new Recorder(world.client, world.ns);
    await rec.start();
    const before = await machinesBefore(world.client, world.ns);
    const plan = fleetPlan(world.fleet, { name: 'leader-v1-30-1', toVersion: 'v1.30.1', durationSeconds: 1 });
    await world.client.create(InPlaceUpdatePlans, plan);
    await delay(4000); // into the MachineDeployments phase

    const old = new Map<string, Lease>();
    for (const l of LEASES) old.set(l, (await lease(l))!);
    const killedAt = Date.now();
    await Promise.all([...leaders.values()].map((p) => p.kill9()));
    const handovers = await Promise.all(
      LEASES.map(async (l) => {
        const prev = old.get(l)!;
        const next = await waitFor(
          async () => {
            const cur = await lease(l);
            return cur?.spec?.holderIdentity && cur.spec.holderIdentity !== prev.spec?.holderIdentity ? cur : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 100, message: `a new holder of lease ${l}` },
        );
        const observedMs = Date.now() - killedAt;
        const lastRenew = Date.parse(prev.spec?.renewTime ?? prev.spec?.acquireTime ?? '');
        const acquired = Date.parse(next.spec?.acquireTime ?? next.spec?.renewTime ?? '');
        const durationMs = (prev.spec?.leaseDurationSeconds ?? 15) * 1000;
        const follower = procs.find((x) => x.name.startsWith(componentOf(l)) && x !== leaders.get(l))!;
        return {
          lease: l,
          observedMs,
          sinceLastRenewMs: acquired - lastRenew,
          durationMs,
          newHolderIsFollower: logOf(follower).includes(`"identity":"${next.spec?.holderIdentity}"`),
        };
      }),
    );
    if (process.env['INPLACE_RELIABILITY_VERBOSE']) console.log(`      handovers: ${JSON.stringify(handovers)}`);
    for (const h of handovers) {
      expect(h.newHolderIsFollower, `${h.lease}: the new holder is the surviving replica`).to.equal(true);
      // The lease expires leaseDuration after its last renewal as the follower observed it (it looks every retry period,
      // so it sees the renewal up to one period late) and is taken on the follower's next attempt after expiry: at most
      // two retry periods (plus request latency on a loaded machine) after the lease duration.
      expect(
        h.sinceLastRenewMs,
        `${h.lease}: taken ${h.sinceLastRenewMs} ms after the dead leader's last renewal (lease ${h.durationMs} ms)`,
      ).to.be.at.most(h.durationMs + 2 * RETRY_PERIOD_MS + 2000);
      expect(h.sinceLastRenewMs, `${h.lease}: not taken before the lease expired`).to.be.at.least(h.durationMs - 1000);
    }

    const final = await waitPlan(world, plan.metadata.name!, ['updated', 'failed', 'aborted'], 180_000);
    expect(final.status?.updateStatus).to.equal('updated');
    const violations = await settledInvariants(
      world,
      { plan: plan.metadata.name!, planStatuses: ['updated'], allUpdated: true, toVersion: 'v1.30.1', before },
      rec,
    );
    await rec.stop();
    expect(violations, report(violations)).to.deep.equal([]);
    expect(procs.filter((p) => p.crashedOnItsOwn).map((p) => p.name)).to.deep.equal([]);
  });
});

const logOf = (p: Proc): string => {
  try {
    return readFileSync(p.logPath, 'utf8');
  } catch {
    return '';
  }
};
