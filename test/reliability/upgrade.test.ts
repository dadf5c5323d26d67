// Upgrade suite: the platform is replaced while a plan runs, as a Deployment rollout replaces it (docs/operations.md,
// "Upgrading"): every component of the "old build" runs with --leader-elect; mid-plan the "new build" starts next to
// it with other flags and defaults (machine-task-controller concurrency, abort grace period, unreported-task timeout,
// finished-plan retention, heap growth, metrics), waits as followers, then the old processes get SIGTERM; meanwhile
// the plan's spec is edited. The new processes finish the plan with every invariant kept: each machine committed
// exactly once, one task per machine and updater, the owners' maxUnavailable (and one control-plane machine at a
// time) never exceeded across the handover, the owners unpaused, nothing left labelled, the plan's
// status.observedGeneration current, and the leases held by the new processes.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import {
  Annotations,
  InPlaceUpdatePlans,
  KubeadmControlPlanes,
  Leases,
  MachineDeployments,
  MachineUpdates,
  isTerminal,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../../src/api/index.js';
import { createInformer, type Lease } from '../../src/runtime/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import { waitFor } from '../support/wait.js';
import {
  CONTROLLERS,
  Recorder,
  machinesBefore,
  platformSpecs,
  report,
  settledInvariants,
  startProcs,
  startWorld,
  stopWorld,
  waitPlan,
  type World,
} from './harness.js';
import type { Proc, ProcSpec } from '../../bench/lib/procs.js';

const WORKERS = 16;
const MD_SIZE = 8;
const MAX_UNAVAILABLE = 2;
const TO_VERSION = 'v1.30.1';

/** What the new build runs with that the old one did not: other flags, other values than the defaults. */
const NEW_FLAGS: Record<string, string[]> = {
  'plan-controller': ['--finished-plans-per-cluster', '1', '--heap-growing-percent', '100', '--metrics-port', '0'],
  'machine-task-controller': [
    '--concurrency',
    '4',
    '--abort-grace-period',
    '30s',
    '--unreported-task-timeout',
    '90s',
    '--metrics-port',
    '0',
  ],
  'mhc-extension': ['--log-level', 'debug', '--metrics-port', '0'],
};

/** The new build's process specs: the platform's, with NEW_FLAGS added to each controller. */
function newBuild(kubeconfig: string, ns: string): ProcSpec[] {
  return platformSpecs(kubeconfig, ns, { leaderElect: true, replica: 'new' }).map((s) => {
    const component = CONTROLLERS.find((c) => s.name === `${c}-new`);
    return component && 'inplace' in s ? { ...s, inplace: [...s.inplace, ...NEW_FLAGS[component]!] } : s;
  });
}

/** Largest number of MachineUpdates in flight at once per target, replaying the watched changes in order. */
class InFlight {
  readonly max = new Map<string, number>();
  private readonly state = new Map<string, { target: string; terminal: boolean }>();
  see(mu: MachineUpdate & KubeObject): void {
    this.state.set(mu.metadata.name ?? '', { target: mu.spec.target.name, terminal: isTerminal(mu.status?.updateStatus) });
    const counts = new Map<string, number>();
    for (const s of this.state.values()) if (!s.terminal) counts.set(s.target, (counts.get(s.target) ?? 0) + 1);
    for (const [t, n] of counts) this.max.set(t, Math.max(this.max.get(t) ?? 0, n));
  }
  /** Updated and in-flight machines now. */
  counts(): { updated: number; inFlight: number } {
    const all = [...this.state.values()];
    return { updated: all.filter((s) => s.terminal).length, inFlight: all.filter((s) => !s.terminal).length };
  }
}

/** Per process (one per component, in platformSpecs order): whether it holds its component's Lease. */
async function holders(world: World, procs: readonly Proc[]): Promise<boolean[]> {
  return Promise.all(
    procs.map(async (p) => {
      const component = p.name.replace(/-(old|new)$/, '');
      const holder = (await world.client.get<Lease & KubeObject>(Leases, world.ns, `inplace-${component}`))?.spec?.holderIdentity;
      return holder !== undefined && holder !== null && readFileSync(p.logPath, 'utf8').includes(`"identity":"${holder}"`);
    }),
  );
}

describe(`reliability: upgrade of the platform mid-plan (${WORKERS + 3} machines)`, function () {
  this.timeout(300_000);
  let w: World | undefined;
  before(async () => {
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: WORKERS, mdSize: MD_SIZE, maxUnavailable: MAX_UNAVAILABLE, mhcTimeout: '30m' },
      'upgrade',
    );
  });
  after(async () => stopWorld(w));

  it('the new build, started with other flags, takes over from the old one and finishes the plan with every invariant kept', async () => {
    const world = w!;
    const kubeconfig = world.env.kubeconfigPath;
    const old = startProcs(world, platformSpecs(kubeconfig, world.ns, { leaderElect: true, replica: 'old' }));
    await Promise.all(old.map((p) => p.waitReady()));
    await waitFor(async () => (await holders(world, old)).every((h) => h), {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: 'the old build holding every lease',
    });

    // The rollout: the new pods start next to the old ones (surge) and become Ready as followers. A process takes
    // seconds to start here, so they start before the plan; what must happen mid-plan is the handover below.
    const fresh = startProcs(world, newBuild(kubeconfig, world.ns));
    await Promise.all(fresh.map((p) => p.waitReady()));
    expect(await holders(world, old), 'the old build still leads').to.deep.equal(old.map(() => true));

    const rec = new Recorder(world.client, world.ns);
    await rec.start();
    const inFlight = new InFlight();
    const mus = createInformer<MachineUpdate & KubeObject>(world.client, MachineUpdates, { namespace: world.ns });
    mus.onChange((mu) => inFlight.see(mu));
    mus.start();
    await mus.synced();
    const before = await machinesBefore(world.client, world.ns);
    const total = before.size;
    const plan = fleetPlan(world.fleet, { name: 'upgrade-v1-30-1', toVersion: TO_VERSION, durationSeconds: 1 });
    await world.client.create(InPlaceUpdatePlans, plan);
    const name = plan.metadata.name!;

    // When the plan is under way (the control plane done, machines in flight), the old pods are replaced.
    await waitFor(
      async () => {
        const c = inFlight.counts();
        return c.updated >= 3 && c.inFlight > 0 && c.updated < total - MAX_UNAVAILABLE;
      },
      { timeoutMs: 120_000, intervalMs: 100, message: 'the plan under way with machines in flight' },
    );

    // The operator edits the plan meanwhile (a generation the new build must observe)...
    await world.client.patch(InPlaceUpdatePlans, world.ns, name, { spec: { ttlSecondsAfterFinished: 86_400 } }, { type: 'merge' });
    // ...and the old pods are terminated (SIGTERM: they stop and release their leases).
    const atHandover = inFlight.counts();
    await Promise.all(old.map((p) => p.stop(10_000)));

    const final = await waitPlan(world, name, ['updated', 'failed', 'aborted'], 240_000);
    await mus.stop();
    expect(final.status?.updateStatus, JSON.stringify(final.status?.conditions)).to.equal('updated');
    expect(atHandover.updated, 'machines the old build finished').to.be.above(0);
    if (process.env['INPLACE_RELIABILITY_VERBOSE']) console.log(`      at the handover: ${JSON.stringify(atHandover)} of ${total}`);
    expect(atHandover.updated, 'machines left for the new build').to.be.below(total);

    const violations = await settledInvariants(
      world,
      { plan: name, planStatuses: ['updated'], allUpdated: true, toVersion: TO_VERSION, before },
      rec,
    );
    await rec.stop();
    expect(violations, report(violations)).to.deep.equal([]);

    // Concurrency across the handover: one control-plane machine at a time, maxUnavailable per MachineDeployment.
    expect(inFlight.max.get(world.fleet.cpName), 'control-plane machines in flight at once').to.equal(1);
    for (const md of world.fleet.mdNames)
      expect(inFlight.max.get(md) ?? 0, `${md}: machines in flight at once`).to.be.within(1, MAX_UNAVAILABLE);

    // The owners are released: no pause left on the control plane or any MachineDeployment.
    const owners = [
      ...(await world.client.list(MachineDeployments, world.ns)).items,
      ...(await world.client.list(KubeadmControlPlanes, world.ns)).items,
    ];
    for (const o of owners) {
      const paused = Object.keys(o.metadata.annotations ?? {}).filter((k) => k === Annotations.paused || /paused/.test(k));
      expect(paused, `${o.kind} ${o.metadata.name} still paused`).to.deep.equal([]);
    }

    // The plan's status is about its current spec, and the new build is the one leading.
    const plan2 = await world.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, world.ns, name);
    expect(plan2?.metadata.generation).to.be.above(1);
    await waitFor(
      async () => {
        const p = await world.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, world.ns, name);
        return p?.status?.observedGeneration === p?.metadata.generation;
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'status.observedGeneration = metadata.generation' },
    );
    expect(await holders(world, fresh), 'the new build holds every lease').to.deep.equal(fresh.map(() => true));
    expect([...old, ...fresh].filter((p) => p.crashedOnItsOwn).map((p) => p.name)).to.deep.equal([]);
  });
});
