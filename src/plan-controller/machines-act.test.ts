import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../api/index.js';
import { Finalizers } from '../api/index.js';
import { deepFreeze } from '../runtime/pure/freeze.js';
import { KubeApiError } from '../runtime/pure/errors.js';
import { MemoryStore } from '../runtime/store.js';
import type { KubeClient, Logger } from '../runtime/pure/types.js';
import type { PlanDeps } from './deps.js';
import { reconcileStatus } from './act/plan.js';
import { reconcileMachines, type Expectations } from './machines/start.js';
import type { PlanDecision } from './decide.js';
import { machine, plan, started, versionUpdater } from './testkit.js';

const silent = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;

/** A client that records writes in order and fails the label patch of the machines named in `failLabel`. */
function recordingClient(failLabel: ReadonlySet<string>): { client: KubeClient; writes: string[] } {
  const writes: string[] = [];
  const client = {
    async patch(res: { kind: string }, _ns: string, name: string) {
      if (res.kind === 'Machine' && failLabel.has(name)) throw new KubeApiError(`patch machines ${name}`, 503);
      await new Promise((r) => setTimeout(r, 1));
      writes.push(`label ${name}`);
      return {} as KubeObject;
    },
    async create(_res: unknown, obj: MachineUpdate) {
      writes.push(`create ${obj.spec.machineRef.name}`);
      return obj;
    },
  } as unknown as KubeClient;
  return { client, writes };
}

function depsWith(client: KubeClient, names: string[]): PlanDeps {
  const machines = new MemoryStore();
  for (const n of names) machines.upsert(machine(n, { md: 'cluster1-md-0' }));
  return {
    client,
    machines,
    metrics: { machinesStarted: { inc: () => undefined } },
    ctrl: () => ({ enqueue: () => undefined }),
  } as unknown as PlanDeps;
}

function decision(names: string[]): PlanDecision {
  return {
    create: names.map((m) => ({
      name: `p1-${m}`,
      machine: m,
      target: { kind: 'MachineDeployment' as const, name: 'cluster1-md-0' },
      updaters: [versionUpdater()],
    })),
    label: names.map((m) => ({ machine: m, startedAt: '2026-01-01T00:00:00Z' })),
    abort: [],
    unlabel: [],
  } as unknown as PlanDecision;
}

describe('plan controller: starting machines (reconcileMachines)', () => {
  const p = { ...plan(started), metadata: { ...plan(started).metadata, uid: 'u1' } } as Parameters<typeof reconcileMachines>[1];

  it('creates each MachineUpdate only after its own machine was labelled, without waiting for the other labels', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `m${i}`);
    const { client, writes } = recordingClient(new Set());
    await reconcileMachines(depsWith(client, names), p, decision(names), silent);
    for (const n of names) {
      expect(writes.indexOf(`label ${n}`)).to.be.greaterThan(-1);
      expect(writes.indexOf(`create ${n}`)).to.be.greaterThan(writes.indexOf(`label ${n}`));
    }
    // Pipelined: the first create is not held back until the 40th label landed.
    expect(writes.indexOf(`create m0`)).to.be.lessThan(writes.indexOf(`label m39`));
  });

  it('starts no machine whose label failed, starts the others, and reports the failure', async () => {
    const names = ['m0', 'm1', 'm2'];
    const { client, writes } = recordingClient(new Set(['m1']));
    const deps = depsWith(client, names);
    const expectations: Expectations = new Map();
    let err: unknown;
    try {
      await reconcileMachines(deps, p, decision(names), silent, { expectations });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(KubeApiError);
    expect(writes).to.include.members(['label m0', 'create m0', 'label m2', 'create m2']);
    expect(writes).not.to.include('create m1');
    expect([...expectations.keys()].sort()).to.deep.equal(['p1-m0', 'p1-m2']);
  });
});

describe('plan controller: the status write (reconcileStatus)', () => {
  const statusDeps = (): { deps: PlanDeps; sent: { subresource?: string; body: Record<string, unknown> }[] } => {
    const sent: { subresource?: string; body: Record<string, unknown> }[] = [];
    const client = {
      async patch(_res: unknown, _ns: string, _name: string, body: Record<string, unknown>, opts: { subresource?: string }) {
        sent.push({ ...(opts.subresource ? { subresource: opts.subresource } : {}), body });
        return { ...(body as object), metadata: { resourceVersion: String(sent.length + 10) } } as unknown as KubeObject;
      },
    } as unknown as KubeClient;
    return { deps: { client } as unknown as PlanDeps, sent };
  };
  const current = (): InPlaceUpdatePlan & KubeObject => {
    const p = plan({ ...started }) as InPlaceUpdatePlan & KubeObject;
    p.metadata.resourceVersion = '5';
    return deepFreeze(p);
  };
  const decision = (status: InPlaceUpdatePlan['status'], finalizer?: 'remove'): PlanDecision =>
    ({ status, ...(finalizer ? { finalizer } : {}) }) as unknown as PlanDecision;

  it('sends nothing and returns the plan as read when the decided status is the same', async () => {
    const { deps, sent } = statusDeps();
    const p = current();
    expect(await reconcileStatus(deps, p, decision(structuredClone(p.status)))).to.equal(p);
    expect(sent).to.deep.equal([]);
  });

  it("sends the changed status through /status on the plan's resourceVersion, without touching the plan read", async () => {
    const { deps, sent } = statusDeps();
    const p = current();
    const written = await reconcileStatus(deps, p, decision({ ...p.status, updateStatus: 'updated' }));
    expect(written).to.not.equal(p);
    expect(sent).to.deep.equal([
      { subresource: 'status', body: { status: { updateStatus: 'updated' }, metadata: { resourceVersion: '5' } } },
    ]);
    expect(p.status?.updateStatus).to.equal('updating');
  });

  it('removes the finalizer after the status (the last write)', async () => {
    const { deps, sent } = statusDeps();
    const p = current();
    await reconcileStatus(deps, p, decision({ ...p.status, updateStatus: 'updated' }, 'remove'));
    expect(sent.map((s) => [s.subresource ?? 'main', Object.keys(s.body).sort()])).to.deep.equal([
      ['status', ['metadata', 'status']],
      ['main', ['metadata']],
    ]);
    expect((sent[1]!.body['metadata'] as { finalizers: unknown }).finalizers).to.deep.equal([]);
    expect(p.metadata.finalizers).to.deep.equal([Finalizers.plan]);
  });
});
