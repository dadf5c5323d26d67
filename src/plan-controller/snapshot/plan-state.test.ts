// The plan controller's memory is bounded by the plans it has: everything it keeps for a plan is one PlanState,
// created on the plan's first reconcile (anew for a new uid) and dropped when the plan is gone. A reconcile runs here
// over in-memory stores and a recording client, so a plan leaves expectations, memos, counted rows and its last
// status write behind; once it is deleted nothing keyed by it may remain anywhere in the controller's deps.
import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { KubeApiError } from '../../runtime/pure/errors.js';
import { MemoryStore } from '../../runtime/store.js';
import { noopLogger, type KubeClient, type Manager } from '../../runtime/index.js';
import { reconcile } from '../controller.js';
import type { PlanDeps } from '../deps.js';
import type { PlanMetrics } from '../metrics.js';
import { ReconcileTiming } from '../timing.js';
import { NS, cluster, md, mdMachines, plan, started } from '../testkit.js';
import { planKey, PlanStates } from './plan-state.js';

const KEY = planKey(NS, 'p1');

/** A client that accepts every write and answers discovery with 404 (no provider kind served). */
const client = {
  resolve: async () => {
    throw new KubeApiError('resolve', 404);
  },
  patch: async (_res: unknown, _ns: string, name: string) => ({ metadata: { name, namespace: NS, resourceVersion: '2' } }),
  create: async (_res: unknown, obj: KubeObject) => obj,
  get: async () => undefined,
} as unknown as KubeClient;

const count = { inc: () => undefined };
const metrics = {
  machinesStarted: count,
  machinesUpdated: count,
  machinesFailed: count,
  gateFailures: count,
  recordHolds: () => undefined,
};

function depsWith(p: InPlaceUpdatePlan & KubeObject): PlanDeps {
  const plans = new MemoryStore<InPlaceUpdatePlan & KubeObject>();
  plans.upsert(p);
  const machines = new MemoryStore();
  for (const m of mdMachines(3)) machines.upsert(m);
  const machineDeployments = new MemoryStore();
  machineDeployments.upsert(md('cluster1-md-0', { replicas: 3 }));
  const clusters = new MemoryStore();
  clusters.upsert(cluster());
  const timing = new ReconcileTiming(undefined, noopLogger);
  return {
    mgr: { events: { event: () => undefined }, log: noopLogger } as unknown as Manager,
    client,
    ctrl: () => ({ enqueue: () => undefined, watch: async () => undefined }) as unknown as ReturnType<PlanDeps['ctrl']>,
    plans,
    machineUpdates: new MemoryStore<MachineUpdate & KubeObject>(),
    machines,
    machineDeployments,
    machineSets: new MemoryStore(),
    clusters,
    metrics: metrics as unknown as PlanMetrics,
    states: new PlanStates((key) => timing.drop(key)),
    timing,
    taskCrds: new Map(),
    refKindFailures: new Map(),
  };
}

/** Every Map or Set reachable from the deps (one level into objects), with the keys it holds. */
function keysHeld(deps: PlanDeps): string[] {
  const out: string[] = [];
  const visit = (v: unknown, depth: number): void => {
    if (v instanceof Map || v instanceof Set) for (const k of v.keys()) out.push(String(k));
    else if (v && typeof v === 'object' && depth < 2) for (const x of Object.values(v)) visit(x, depth + 1);
  };
  for (const v of Object.values(deps)) visit(v, 0);
  return out;
}

describe('plan controller: per-plan state (snapshot/plan-state.ts)', () => {
  const planObj = (uid: string): InPlaceUpdatePlan & KubeObject => {
    const p = plan({ cp: null, ...started }) as InPlaceUpdatePlan & KubeObject;
    p.metadata.uid = uid;
    return p;
  };

  it('keeps one state per plan key, anew for a plan recreated under the same name (new uid)', () => {
    const dropped: string[] = [];
    const states = new PlanStates((k) => dropped.push(k));
    const s = states.of(planObj('u1'));
    s.statusWrittenAt = 1;
    expect(states.of(planObj('u1'))).to.equal(s);
    const fresh = states.of(planObj('u2'));
    expect(fresh).to.not.equal(s);
    expect(fresh.statusWrittenAt).to.equal(undefined);
    expect(states.size).to.equal(1);
    states.drop(KEY);
    expect(states.size).to.equal(0);
    expect(dropped).to.deep.equal([KEY]);
  });

  it('a reconcile keeps what the plan needs in its state; once the plan is deleted nothing keyed by it remains', async () => {
    const p = planObj('u1');
    const deps = depsWith(p);
    await reconcile(deps, { namespace: NS, name: 'p1' }, noopLogger);
    const s = deps.states.peek(KEY);
    // The reconcile started the target's machine (an expectation), wrote the status and counted its rows.
    expect(s?.expectations.size, 'expectations').to.be.greaterThan(0);
    expect(s?.statusWrittenAt, 'status written').to.be.a('number');
    expect(s?.counted, 'counted rows').to.not.equal(undefined);
    expect(s?.decide, 'decision memo').to.not.equal(undefined);
    expect(
      keysHeld(deps).filter((k) => k.includes(KEY)),
      'the clock',
    ).to.not.deep.equal([]);

    (deps.plans as MemoryStore<InPlaceUpdatePlan & KubeObject>).remove(NS, 'p1');
    await reconcile(deps, { namespace: NS, name: 'p1' }, noopLogger);
    expect(deps.states.size).to.equal(0);
    expect(keysHeld(deps).filter((k) => k.includes(KEY))).to.deep.equal([]);
  });
});
