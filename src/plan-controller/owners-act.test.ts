import { expect } from 'chai';
import type { KubeObject, MachineUpdate } from '../api/index.js';
import { Annotations } from '../api/index.js';
import { KubeApiError } from '../runtime/pure/errors.js';
import type { KubeClient, Logger } from '../runtime/pure/types.js';
import type { PlanDecision } from './decide.js';
import { actOwners, blockedTargets, type OwnerDeps } from './owners-act.js';
import { PAUSED_BY_PLAN } from './owners.js';
import { md, plan, snapshot, started, target } from './testkit.js';

const silent = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;
const MDS = Array.from({ length: 6 }, (_, i) => `cluster1-md-${i}`);

/**
 * A client whose owner patches answer only once every patch issued so far has been issued (a flush on the next
 * macrotask), last issued first: a sequential loop sees one in flight, side-by-side steps see them all. `fail` names
 * owners whose patch fails with a 503.
 */
function pausingClient(fail: ReadonlySet<string>): { client: KubeClient; patched: string[]; maxInFlight: () => number } {
  const patched: string[] = [];
  let pending: (() => void)[] = [];
  let inFlight = 0;
  let max = 0;
  const client = {
    async patch(_res: unknown, _ns: string, name: string, body: KubeObject) {
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise<void>((r) => {
        pending.push(r);
        if (pending.length === 1)
          setImmediate(() => {
            const batch = pending.reverse();
            pending = [];
            for (const go of batch) go();
          });
      });
      inFlight--;
      if (fail.has(name)) throw new KubeApiError(`patch machinedeployments ${name}`, 503);
      patched.push(name);
      return { ...body, metadata: { ...body.metadata, name } } as KubeObject;
    },
  } as unknown as KubeClient;
  return { client, patched, maxInFlight: () => max };
}

function deps(client: KubeClient): OwnerDeps {
  return {
    client,
    fieldManager: 'test',
    writesInFlight: 16,
    maxInfraWrites: 128,
    reads: {
      ref: () => Promise.reject(new Error('no template read expected')),
      machineSet: () => undefined,
    },
  };
}

/** Six MachineDeployments whose first machines start in this reconcile: every owner is to be paused (hold). */
function holdAll(): { snap: ReturnType<typeof snapshot>; d: PlanDecision } {
  const p = plan({ ...started, cp: null, mds: MDS.map((n) => target(n, 1)) });
  const snap = snapshot({ plan: p, kcp: null, mds: MDS.map((n) => md(n)), machines: [], mus: [] as MachineUpdate[] });
  const d = {
    create: MDS.map((n) => ({
      name: `p1-${n}-0`,
      machine: `${n}-0`,
      target: { kind: 'MachineDeployment' as const, name: n },
      updaters: [],
    })),
    status: { targets: MDS.map((n) => ({ kind: 'MachineDeployment' as const, name: n, sequence: 1, updateStatus: 'updating' as const })) },
    events: [],
  } as unknown as PlanDecision;
  return { snap, d };
}

describe('plan controller: owner steps of several targets (actOwners)', () => {
  it('pauses every owner side by side (not one round trip after another) and records the events in target order', async () => {
    const { client, patched, maxInFlight } = pausingClient(new Set());
    const { snap, d } = holdAll();
    const outcomes = await actOwners(deps(client), snap, d, silent);
    expect(outcomes.map((o) => [o.name, o.op, o.pending])).to.deep.equal(MDS.map((n) => [n, 'hold', undefined]));
    expect([...patched].sort()).to.deep.equal(MDS);
    expect(maxInFlight(), 'owner patches in flight at once').to.equal(MDS.length);
    // Answers came last-issued first; the events still follow the plan's targets.
    expect(d.events.map((e) => e.message.split(' ').slice(1, 3).join(' '))).to.deep.equal(MDS.map((n) => `MachineDeployment ${n}`));
    expect(blockedTargets(outcomes).size).to.equal(0);
  });

  it("a target whose pause fails is pending (its machines do not start); the others' pauses land", async () => {
    const { client, patched } = pausingClient(new Set(['cluster1-md-2']));
    const { snap, d } = holdAll();
    const outcomes = await actOwners(deps(client), snap, d, silent);
    expect(outcomes.find((o) => o.name === 'cluster1-md-2')?.pending).to.match(/503/);
    expect(outcomes.filter((o) => o.pending !== undefined)).to.have.length(1);
    expect([...blockedTargets(outcomes)]).to.deep.equal(['MachineDeployment/cluster1-md-2']);
    expect([...patched].sort()).to.deep.equal(MDS.filter((n) => n !== 'cluster1-md-2'));
    expect(d.events).to.have.length(MDS.length - 1);
  });

  it('an owner already paused by the plan needs no write', async () => {
    const { client, patched } = pausingClient(new Set());
    const { snap, d } = holdAll();
    snap.machineDeployments = MDS.map((n) => {
      const o = md(n);
      o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p1' };
      return o;
    });
    const outcomes = await actOwners(deps(client), snap, d, silent);
    expect(outcomes.map((o) => o.op)).to.deep.equal(MDS.map(() => 'hold'));
    expect(patched).to.deep.equal([]);
    expect(d.events).to.deep.equal([]);
  });
});
