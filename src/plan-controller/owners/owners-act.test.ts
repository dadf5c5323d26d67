import { expect } from 'chai';
import type { KubeObject, MachineUpdate, PlanUpdater, ResourceType } from '../../api/index.js';
import { Annotations, Labels } from '../../api/index.js';
import { KubeApiError } from '../../runtime/pure/errors.js';
import { deepFreeze } from '../../runtime/pure/freeze.js';
import type { KubeClient, Logger } from '../../runtime/pure/types.js';
import type { PlanDecision } from '../decide.js';
import { PlanCache } from '../cache/plan-cache.js';
import { groupsThrough } from '../cache/groups.js';
import { actOwners, blockedTargets, ownerSteps, type OwnerDeps } from './owners-act.js';
import { CLONED_FROM_NAME, PAUSED_BY_PLAN, carrierName, ownerValues } from '../../rules/owners.js';
import type { PlanSnapshot } from '../scope.js';
import { CLUSTER, NOW, NS, cpUpdated, kcp, machine, md, mu, plan, snapshot, started, target, versionUpdater } from '../testkit.js';

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

describe('plan controller: owner steps over reconciles (reuse by identity)', () => {
  const pausedByPlan = { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p1' };
  // A machine of cluster1-md-0 owned by MachineSet `set`, frozen as the store gives it.
  const inSet = (name: string, set: string, deleting = false): KubeObject => {
    const m = machine(name, { md: 'cluster1-md-0', deleting });
    m.metadata.labels![Labels.setName] = set;
    return deepFreeze(m);
  };
  /** cluster1-md-0 finished (align: reads the MachineSets of its machines), cluster1-md-1 running (hold). */
  function finished(machines: KubeObject[], machinesByTarget: PlanDecision['machinesByTarget']): { snap: PlanSnapshot; d: PlanDecision } {
    const names = ['cluster1-md-0', 'cluster1-md-1'];
    const p = plan({ ...started, cp: null, mds: names.map((n) => target(n, 1)) });
    const snap = snapshot({
      plan: p,
      kcp: null,
      mds: names.map((n) => md(n, { annotations: pausedByPlan })),
      machines,
      mus: [mu('cluster1-md-0-a', 'updated'), mu('cluster1-md-1-0', 'updating', { target: 'cluster1-md-1' })],
    });
    const d = {
      create: [],
      status: {
        targets: [
          { kind: 'MachineDeployment' as const, name: 'cluster1-md-0', sequence: 1, updateStatus: 'updated' as const },
          { kind: 'MachineDeployment' as const, name: 'cluster1-md-1', sequence: 1, updateStatus: 'updating' as const },
        ],
      },
      events: [],
      ...(machinesByTarget ? { machinesByTarget } : {}),
    } as unknown as PlanDecision;
    return { snap, d };
  }
  const readingDeps = (): { deps: OwnerDeps; sets: string[] } => {
    const sets: string[] = [];
    const client = { patch: async (_r: unknown, _ns: string, _n: string, body: KubeObject) => body } as unknown as KubeClient;
    return {
      sets,
      deps: {
        ...deps(client),
        reads: {
          ref: () => Promise.reject(new Error('no template read expected')),
          machineSet: (_ns, name) => (sets.push(name), undefined),
        },
      },
    };
  };
  const align = async (machines: KubeObject[], byTarget: PlanDecision['machinesByTarget']): Promise<string[]> => {
    const { deps: dp, sets } = readingDeps();
    const { snap, d } = finished(machines, byTarget);
    const outcomes = await actOwners(dp, snap, d, silent);
    expect(outcomes.map((o) => [o.name, o.op, o.pending])).to.deep.equal([
      ['cluster1-md-0', 'align', undefined],
      ['cluster1-md-1', 'hold', undefined],
    ]);
    return [...sets].sort();
  };

  it("a machine that starts deleting is left out of its target's alignment while the other groups are reused (the plan cache)", async () => {
    const memo = new PlanCache();
    const other = deepFreeze(machine('cluster1-md-1-0', { md: 'cluster1-md-1' }));
    const first = [inSet('cluster1-md-0-a', 'ms-a'), inSet('cluster1-md-0-b', 'ms-b'), other];
    const g1 = groupsThrough(memo, CLUSTER, first);
    expect(await align(first, g1)).to.deep.equal(['ms-a', 'ms-b']);
    // Reconcile 2: the same groups (nothing changed) are reused as they were.
    const g2 = groupsThrough(memo, CLUSTER, first);
    expect(g2.get('MachineDeployment/cluster1-md-0')).to.equal(g1.get('MachineDeployment/cluster1-md-0'));
    expect(await align(first, g2)).to.deep.equal(['ms-a', 'ms-b']);
    // Reconcile 3: ms-b's machine is being deleted (a new object in place of the old one): only its group is new.
    const second = [first[0]!, inSet('cluster1-md-0-b', 'ms-b', true), other];
    const g3 = groupsThrough(memo, CLUSTER, second);
    expect(g3.get('MachineDeployment/cluster1-md-0')).to.not.equal(g1.get('MachineDeployment/cluster1-md-0'));
    expect(g3.get('MachineDeployment/cluster1-md-1')).to.equal(g1.get('MachineDeployment/cluster1-md-1'));
    expect(await align(second, g3)).to.deep.equal(['ms-a']);
    // Reconcile 4: it is back (deletion is not undone in CAPI, but the level must follow the objects either way).
    const g4 = groupsThrough(memo, CLUSTER, first);
    expect(await align(first, g4)).to.deep.equal(['ms-a', 'ms-b']);
  });

  it('a group that is not frozen is read afresh every reconcile (a machine changed in place is seen)', async () => {
    const a = machine('cluster1-md-0-a', { md: 'cluster1-md-0' });
    const b = machine('cluster1-md-0-b', { md: 'cluster1-md-0' });
    a.metadata.labels![Labels.setName] = 'ms-a';
    b.metadata.labels![Labels.setName] = 'ms-b';
    const group = [a, b];
    const byTarget = new Map([['MachineDeployment/cluster1-md-0', group]]);
    expect(await align(group, byTarget)).to.deep.equal(['ms-a', 'ms-b']);
    b.metadata.deletionTimestamp = NOW;
    expect(await align(group, byTarget)).to.deep.equal(['ms-a']);
  });

  it('a target is started by its own MachineUpdates only, wherever they are in the list (other kinds, other names first)', () => {
    const names = ['cluster1-md-0', 'cluster1-md-1'];
    const p = plan({ ...started, cp: null, mds: names.map((n) => target(n, 1)) });
    const snap = snapshot({
      plan: p,
      kcp: null,
      mds: names.map((n) => md(n)),
      machines: [],
      // Two updates of targets the plan does not have, and one of a control plane named like an MD, before md-0's.
      mus: [
        mu('x-0', 'updating', { target: 'cluster1-md-8' }),
        mu('x-1', 'updating', { target: 'cluster1-md-9' }),
        mu('x-2', 'updating', { kind: 'ControlPlane', target: 'cluster1-md-1' }),
        mu('cluster1-md-0-0', 'updating'),
      ],
    });
    const d = {
      create: [],
      status: {
        targets: names.map((n) => ({ kind: 'MachineDeployment' as const, name: n, sequence: 1, updateStatus: 'updating' as const })),
      },
      events: [],
    } as unknown as PlanDecision;
    expect(ownerSteps(snap, d).map((t) => [t.name, t.step.op])).to.deep.equal([
      ['cluster1-md-0', 'hold'],
      ['cluster1-md-1', 'none'],
    ]);
    // A create of this decision starts its target as well.
    d.create = [
      { name: 'p1-x', machine: 'cluster1-md-1-0', target: { kind: 'MachineDeployment', name: 'cluster1-md-1' }, updaters: [] },
    ] as PlanDecision['create'];
    expect(ownerSteps(snap, d).map((t) => t.step.op)).to.deep.equal(['hold', 'hold']);
  });
});

describe('plan controller: InfraMachine annotations ahead of a target end (annotateAhead)', () => {
  const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
  const imageUpdater = (value: string): PlanUpdater => ({
    name: 'os',
    sequence: 2,
    responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value }],
  });
  const obj = (kind: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): KubeObject =>
    deepFreeze({
      apiVersion: `${INFRA_GROUP}/v1beta2`,
      kind,
      metadata: {
        name,
        namespace: NS,
        resourceVersion: '3',
        labels: { [Labels.clusterName]: CLUSTER },
        ...(annotations ? { annotations } : {}),
      },
      spec,
    });
  /**
   * cluster1-md-0 running (held, already paused by the plan) with four machines, three finished by this plan, each with
   * its DevMachine; `carried` names the InfraMachines that already carry the clone's name.
   */
  function running(carried: (carrier: string) => ReadonlySet<string>): {
    snap: PlanSnapshot;
    d: PlanDecision;
    deps: OwnerDeps;
    patched: string[];
    reads: Map<string, number>;
  } {
    const template = obj('DevMachineTemplate', 'md-0-tpl', { template: { spec: { image: 'img-1' } } });
    const owner = md('cluster1-md-0', { annotations: { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p1' } });
    (owner['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['infrastructureRef'] = {
      apiGroup: INFRA_GROUP,
      kind: 'DevMachineTemplate',
      name: 'md-0-tpl',
    };
    const values = ownerValues('MachineDeployment', [imageUpdater('img-2')]);
    const carrier = carrierName(template, 'md-0-tpl', values)!;
    const names = [0, 1, 2, 3].map((i) => `cluster1-md-0-${i}`);
    const store = new Map<string, KubeObject>([[`DevMachineTemplate/md-0-tpl`, template]]);
    const machines = names.map((n) => {
      const m = machine(n, { md: 'cluster1-md-0' });
      (m['spec'] as Record<string, unknown>)['infrastructureRef'] = { apiGroup: INFRA_GROUP, kind: 'DevMachine', name: `${n}-im` };
      const im = obj('DevMachine', `${n}-im`, { image: 'img-1' }, carried(carrier).has(n) ? { [CLONED_FROM_NAME]: carrier } : undefined);
      store.set(`DevMachine/${n}-im`, im);
      return deepFreeze(m);
    });
    const p = plan({ ...started, cp: null, mds: [target('cluster1-md-0', 1, [versionUpdater(), imageUpdater('img-2')])] });
    const snap = snapshot({
      plan: p,
      kcp: null,
      mds: [owner],
      machines,
      mus: [...names.slice(0, 3).map((n) => mu(n, 'updated')), mu(names[3]!, 'updating')],
    });
    const d = {
      create: [],
      status: { targets: [{ kind: 'MachineDeployment' as const, name: 'cluster1-md-0', sequence: 1, updateStatus: 'updating' as const }] },
      events: [],
    } as unknown as PlanDecision;
    const patched: string[] = [];
    const reads = new Map<string, number>();
    const client = {
      patch: async (_r: unknown, _ns: string, name: string, body: KubeObject) => (patched.push(name), body),
      create: async (_r: unknown, body: KubeObject) => body,
    } as unknown as KubeClient;
    const res = (kind: string): ResourceType => ({
      group: INFRA_GROUP,
      version: 'v1beta2',
      kind,
      plural: `${kind.toLowerCase()}s`,
      namespaced: true,
    });
    const deps: OwnerDeps = {
      client,
      fieldManager: 'test',
      writesInFlight: 4,
      maxInfraWrites: 128,
      reads: {
        // As the controller's: the kind's informer answers for the object and, by name, for the others of its kind.
        ref: async (_ns, ref) => {
          reads.set(ref.kind, (reads.get(ref.kind) ?? 0) + 1);
          const byName = (n: string): KubeObject | undefined => store.get(`${ref.kind}/${n}`);
          const o = byName(ref.name);
          return { res: res(ref.kind), ...(o ? { obj: o } : {}), byName };
        },
        machineSet: () => undefined,
      },
    };
    return { snap, d, deps, patched, reads };
  }

  it("annotates the finished machines' InfraMachines not carrying the clone yet, reading each kind once", async () => {
    const { snap, d, deps: dp, patched, reads } = running(() => new Set(['cluster1-md-0-1']));
    const outcomes = await actOwners(dp, snap, d, silent);
    expect(outcomes.map((o) => [o.op, o.pending])).to.deep.equal([['hold', undefined]]);
    // Machine 1's already carries it, machine 3 is still updating.
    expect([...patched].sort()).to.deep.equal(['cluster1-md-0-0-im', 'cluster1-md-0-2-im']);
    expect(Object.fromEntries(reads)).to.deep.equal({ DevMachineTemplate: 2, DevMachine: 2 });
  });

  it('writes nothing once every finished machine carries it', async () => {
    const { snap, d, deps: dp, patched } = running(() => new Set(['cluster1-md-0-0', 'cluster1-md-0-1', 'cluster1-md-0-2']));
    await actOwners(dp, snap, d, silent);
    expect(patched).to.deep.equal([]);
  });
});

describe('plan controller: a finished control plane aligned on every reconcile', () => {
  /** The decision of a reconcile that finds the control plane target updated. */
  const cpDone = (): PlanDecision =>
    ({
      create: [],
      status: { targets: [{ kind: 'ControlPlane' as const, name: 'cluster1-cp', sequence: 1, updateStatus: 'updated' as const }] },
      events: [],
    }) as unknown as PlanDecision;
  /** The control plane (version only) done, its KCP as given; returns the patches sent and the outcome. */
  async function alignCp(kcpObj: KubeObject): Promise<{ patches: Record<string, unknown>[]; outcome: unknown[]; events: number }> {
    const patches: Record<string, unknown>[] = [];
    const client = {
      patch: async (_r: unknown, _ns: string, _n: string, body: Record<string, unknown>) => (patches.push(body), body),
    } as unknown as KubeClient;
    const p = plan({ ...started, mds: [] });
    const snap = snapshot({ plan: p, kcp: kcpObj, mds: [], machines: [], mus: cpUpdated() });
    const d = cpDone();
    const outcomes = await actOwners(deps(client), snap, d, silent);
    return { patches, outcome: outcomes.map((o) => [o.op, o.pending, o.problems]), events: d.events.length };
  }
  const paused = (o: KubeObject): KubeObject => ({
    ...o,
    metadata: { ...o.metadata, annotations: { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p1' } },
  });

  it('goes on aligning after the plan ended while OwnersAligned says unfinished (a conflict: Aligning; AlignFailed), not once Aligned', () => {
    const kcpObj = deepFreeze(paused(kcp('cluster1-cp', 3, 'v1.30.0')));
    const stepsWith = (reason: string): string[] => {
      const condition = {
        type: 'OwnersAligned',
        status: reason === 'Aligned' ? 'True' : 'False',
        reason,
        message: '',
        lastTransitionTime: NOW,
      };
      const p = plan({ ...started, mds: [], status: { updateStatus: 'updated', conditions: [condition] } } as Parameters<typeof plan>[0]);
      const snap = snapshot({ plan: p, kcp: kcpObj, mds: [], machines: [], mus: cpUpdated() });
      const d = cpDone();
      return ownerSteps(snap, d).map((t) => t.step.op);
    };
    expect(stepsWith('Aligning'), 'a 409 on the first try must not end the alignment').to.deep.equal(['align']);
    expect(stepsWith('AlignFailed')).to.deep.equal(['align']);
    expect(stepsWith('Aligned')).to.deep.equal(['none']);
  });

  it('writes nothing when the KubeadmControlPlane carries the version and is not paused by the plan', async () => {
    const r = await alignCp(deepFreeze(kcp('cluster1-cp', 3, 'v1.30.1')));
    expect(r).to.deep.equal({ patches: [], outcome: [['align', undefined, undefined]], events: 0 });
  });

  it('lifts its pause when it carries the version but is still paused by the plan', async () => {
    const r = await alignCp(deepFreeze(paused(kcp('cluster1-cp', 3, 'v1.30.1'))));
    expect(r.patches).to.have.length(1);
    expect((r.patches[0]!['metadata'] as { annotations: Record<string, unknown> }).annotations).to.deep.equal({
      [Annotations.paused]: null,
      [PAUSED_BY_PLAN]: null,
    });
    expect(r.patches[0]!['spec']).to.equal(undefined);
  });

  it('sets the version (and lifts the pause) when it does not carry it', async () => {
    const r = await alignCp(deepFreeze(paused(kcp('cluster1-cp', 3, 'v1.30.0'))));
    expect(r.patches).to.have.length(1);
    expect(r.patches[0]!['spec']).to.deep.equal({ version: 'v1.30.1' });
    expect(r.events).to.equal(1);
  });
});

describe('plan controller: a finished MachineDeployment aligned on every reconcile', () => {
  const machineSet = (name: string, version: string): KubeObject =>
    deepFreeze({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachineSet',
      metadata: { name, namespace: NS, resourceVersion: '4' },
      spec: { clusterName: CLUSTER, template: { spec: { clusterName: CLUSTER, version } } },
    });
  /** cluster1-md-0 done (version only), its MD carrying v1.30.1 and unpaused; its machines in MachineSets ms-a and ms-b. */
  async function alignMd(sets: Record<string, KubeObject>): Promise<string[]> {
    const patched: string[] = [];
    const client = {
      patch: async (res: { kind: string }, _ns: string, name: string, body: KubeObject) => (patched.push(`${res.kind} ${name}`), body),
    } as unknown as KubeClient;
    const ms = ['ms-a', 'ms-b'].map((set, i) => {
      const m = machine(`cluster1-md-0-${i}`, { md: 'cluster1-md-0', version: 'v1.30.1' });
      m.metadata.labels![Labels.setName] = set;
      return deepFreeze(m);
    });
    const snap = snapshot({
      plan: plan({ ...started, cp: null, mds: [target('cluster1-md-0', 1)] }),
      kcp: null,
      mds: [md('cluster1-md-0', { version: 'v1.30.1' })],
      machines: ms,
      mus: [mu('cluster1-md-0-0', 'updated'), mu('cluster1-md-0-1', 'updated')],
    });
    const d = {
      create: [],
      status: { targets: [{ kind: 'MachineDeployment' as const, name: 'cluster1-md-0', sequence: 1, updateStatus: 'updated' as const }] },
      events: [],
    } as unknown as PlanDecision;
    const dp: OwnerDeps = {
      ...deps(client),
      reads: { ref: () => Promise.reject(new Error('no template read')), machineSet: (_ns, n) => sets[n] },
    };
    const outcomes = await actOwners(dp, snap, d, silent);
    expect(outcomes.map((o) => [o.op, o.pending, o.problems])).to.deep.equal([['align', undefined, undefined]]);
    return patched;
  }

  it('writes nothing when it and the MachineSets of its machines carry the version', async () => {
    expect(await alignMd({ 'ms-a': machineSet('ms-a', 'v1.30.1'), 'ms-b': machineSet('ms-b', 'v1.30.1') })).to.deep.equal([]);
  });

  it('aligns a MachineSet that does not carry it (pausing the MachineDeployment for the write, as ever)', async () => {
    expect(await alignMd({ 'ms-a': machineSet('ms-a', 'v1.30.1'), 'ms-b': machineSet('ms-b', 'v1.30.0') })).to.deep.equal([
      'MachineDeployment cluster1-md-0',
      'MachineSet ms-b',
    ]);
  });
});
