// The incremental pass (scope.ts MhcIndex + memo.ts DecisionMemo, fed change by change as the informers feed them)
// must decide exactly what a full pass over every selected machine decides (planMachineHealthCheck), whatever changed
// since the memo last saw a machine: the machine, its update ending, the clock passing a deadline, the MHC's timeout or
// selector. A memo or index returning a stale result fails these tests; so does a restart (fresh index and memo) that
// decides differently.
import { expect } from 'chai';
import { Annotations, Labels } from '../api/index.js';
import { MemoryStore } from '../runtime/index.js';
import { currentUpdateOf, machineNeedsPass, planMachineHealthCheck, planPass, putsInUpdate, type MhcPlan } from './decide.js';
import { DecisionMemo } from './memo.js';
import { MhcIndex, selects, type Machine, type MachineHealthCheck, type MachineUpdate, type MhcStores } from './scope.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const NS = 'ns';

type MachineOpts = { annotations?: Record<string, string>; hcFalse?: boolean; deleting?: boolean; plan?: string; md?: string };
const machine = (name: string, o: MachineOpts = {}): Machine => ({
  metadata: {
    name,
    namespace: NS,
    resourceVersion: String(Math.random()),
    labels: {
      [Labels.clusterName]: 'c1',
      [Labels.deploymentName]: o.md ?? 'md-a',
      ...(o.plan ? { [Labels.planName]: o.plan } : {}),
    },
    ...(o.annotations ? { annotations: o.annotations } : {}),
    ...(o.deleting ? { deletionTimestamp: iso(T0) } : {}),
  },
  spec: { clusterName: 'c1', bootstrap: {}, infrastructureRef: { apiGroup: 'x', kind: 'DockerMachine', name } },
  status: {
    nodeRef: { name: `n-${name}` },
    initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
    conditions: o.hcFalse
      ? [{ type: 'HealthCheckSucceeded', status: 'False', reason: 'UnhealthyNode', message: '', lastTransitionTime: iso(T0) }]
      : [],
  },
});

const update = (
  m: string,
  o: { status?: string; startMs?: number; plan?: string; name?: string; created?: number } = {},
): MachineUpdate => ({
  metadata: {
    name: o.name ?? `${o.plan ?? 'p'}-${m}`,
    namespace: NS,
    resourceVersion: String(Math.random()),
    labels: { [Labels.machineName]: m, [Labels.planName]: o.plan ?? 'p' },
    creationTimestamp: iso(o.created ?? T0),
  },
  spec: {
    planName: o.plan ?? 'p',
    clusterName: 'c1',
    target: { kind: 'MachineDeployment', name: 'md' },
    machineRef: { name: m },
    updatePhase: 'updating',
    updaters: [],
  },
  status: { updateStatus: (o.status ?? 'updating') as 'updating', ...(o.startMs !== undefined ? { startTime: iso(o.startMs) } : {}) },
});

const mhc = (o: { timeout?: string; max?: number | string; md?: string } = {}): MachineHealthCheck => ({
  metadata: { name: 'mhc', namespace: NS, annotations: { [Annotations.inPlaceUpdateTimeout]: o.timeout ?? '10s' } },
  spec: {
    clusterName: 'c1',
    selector: { matchLabels: { [Labels.clusterName]: 'c1', ...(o.md ? { [Labels.deploymentName]: o.md } : {}) } },
    ...(o.max !== undefined ? { remediation: { triggerIf: { unhealthyLessThanOrEqualTo: o.max } } } : {}),
  },
});

/** Caches with an index and a memo fed as the informers feed them (each change after the store took it). */
class Fixture {
  readonly stores: MhcStores = { mhcs: new MemoryStore(), machines: new MemoryStore(), updates: new MemoryStore() };
  index = new MhcIndex(this.stores);
  memo = new DecisionMemo();

  putMachine(m: Machine): void {
    (this.stores.machines as MemoryStore<Machine>).upsert(m);
    this.index.machineChanged(m);
  }
  deleteMachine(name: string): void {
    const old = (this.stores.machines as MemoryStore<Machine>).remove(NS, name);
    if (old) this.index.machineChanged(old);
  }
  putUpdate(u: MachineUpdate): void {
    const old = (this.stores.updates as MemoryStore<MachineUpdate>).upsert(u);
    this.index.updateChanged(u, old, old ? 'update' : 'add');
  }
  deleteUpdate(name: string): void {
    const old = (this.stores.updates as MemoryStore<MachineUpdate>).remove(NS, name);
    if (old) this.index.updateChanged(old, old, 'delete');
  }
  putMhc(h: MachineHealthCheck): void {
    (this.stores.mhcs as MemoryStore<MachineHealthCheck>).upsert(h);
  }
  /** A restart: the index rebuilt from the caches, nothing remembered. */
  restart(): void {
    this.index = new MhcIndex(this.stores);
    this.memo = new DecisionMemo();
  }

  /** The incremental pass, as the controller takes it. */
  incremental(nowMs: number): MhcPlan | undefined {
    const scope = this.index.scope({ namespace: NS, name: 'mhc' }, nowMs);
    return scope && planPass(scope.mhc, scope.expected, scope.machines, nowMs, this.memo);
  }
  /** The full pass over every selected machine and every MachineUpdate of the namespace. */
  full(nowMs: number): MhcPlan | undefined {
    const h = this.stores.mhcs.peek(NS, 'mhc');
    if (!h) return undefined;
    const selected = this.stores.machines.list(NS).filter((m) => selects(h, m));
    return planMachineHealthCheck(h, selected, this.stores.updates.list(NS), nowMs);
  }
  /** Both passes agree; returns the plan. */
  agreed(nowMs: number): MhcPlan | undefined {
    const inc = this.incremental(nowMs);
    expect(inc).to.deep.equal(this.full(nowMs));
    return inc;
  }
}

/** machineNeedsPass as it was decided before the memo: a whole plan over the machine alone (the reference). */
function needsPassByPlan(h: MachineHealthCheck, m: Machine, mine: readonly MachineUpdate[], nowMs: number): boolean {
  if (m.metadata.deletionTimestamp || m.metadata.annotations?.[Annotations.remediateMachine] !== undefined) return true;
  if ((m.status?.conditions ?? []).some((c) => c.type === 'HealthCheckSucceeded' && c.status === 'False')) return true;
  const u = currentUpdateOf(
    m,
    mine.filter((x) => !x.metadata.deletionTimestamp),
  );
  if (!u || !putsInUpdate(u)) return false;
  const p = planMachineHealthCheck(h, [m], [u], nowMs);
  const a = p.actions[0];
  if (p.ignored || !a) return false;
  if (a.annotations) return true;
  if (!a.update) return false;
  if (a.update.condition.status !== 'True') return true;
  const want = a.update.condition;
  const cur = u.status?.conditions?.find((c) => c.type === want.type);
  return !(cur && cur.status === want.status && cur.reason === want.reason && (cur.message ?? '') === want.message);
}

const patchOf = (p: MhcPlan | undefined, name: string): Record<string, string | null> | undefined =>
  p?.actions.find((a) => a.machine === name)?.annotations;

describe('mhc-extension incremental pass: index and memo', () => {
  it('a machine protected since the memo saw it: no patch any more (the memo keys on the Machine object)', () => {
    const f = new Fixture();
    f.putMhc(mhc());
    f.putMachine(machine('a'));
    f.putMachine(machine('b'));
    f.putUpdate(update('a', { startMs: T0 }));
    const p1 = f.agreed(T0 + 1000);
    const patch = patchOf(p1, 'a');
    expect(patch).to.include({ [Annotations.skipRemediationPrior]: 'false' });
    f.putMachine(machine('a', { annotations: patch as Record<string, string> }));
    const p2 = f.agreed(T0 + 1000);
    expect(p2?.actions).to.have.length(1);
    expect(patchOf(p2, 'a')).to.equal(undefined);
  });

  it('an update ending since: the machine leaves the pass (the index keys on its MachineUpdates)', () => {
    const f = new Fixture();
    f.putMhc(mhc());
    f.putMachine(machine('a', { annotations: { [Annotations.skipRemediation]: 'x', [Annotations.skipRemediationPrior]: 'false' } }));
    f.putUpdate(update('a', { startMs: T0 }));
    expect(f.agreed(T0 + 1000)?.actions).to.have.length(1);
    f.putUpdate(update('a', { startMs: T0, status: 'updated' }));
    expect(f.agreed(T0 + 1000)?.actions).to.deep.equal([]);
  });

  it('the clock passing the deadline: the same objects are judged timed out (the clock is never remembered)', () => {
    const f = new Fixture();
    f.putMhc(mhc({ timeout: '10s' }));
    f.putMachine(machine('a', { annotations: { [Annotations.skipRemediation]: 'x', [Annotations.skipRemediationPrior]: 'false' } }));
    f.putMachine(machine('b'));
    f.putUpdate(update('a', { startMs: T0 }));
    const within = f.agreed(T0 + 9_999);
    expect(within?.requeueAfterMs).to.equal(1);
    expect(patchOf(within, 'a')).to.equal(undefined);
    const late = f.agreed(T0 + 10_000);
    expect(patchOf(late, 'a')).to.deep.equal({ [Annotations.skipRemediation]: null, [Annotations.remediateMachine]: '' });
    expect(late?.actions[0]?.update?.condition.status).to.equal('False');
  });

  it("the MHC's timeout raised, then its selector narrowed: new deadline, then a new budget base and set of machines", () => {
    const f = new Fixture();
    f.putMhc(mhc({ timeout: '10s', max: '50%' }));
    for (const n of ['a', 'b', 'c', 'd']) f.putMachine(machine(n, { md: n < 'c' ? 'md-a' : 'md-b' }));
    f.putUpdate(update('a', { startMs: T0 }));
    f.putUpdate(update('c', { startMs: T0 }));
    f.putUpdate(update('d', { startMs: T0 }));
    // 4 machines, 50 %: 2 allowed; 3 timed out: each sees 2 others, blocked.
    const p1 = f.agreed(T0 + 20_000);
    expect(p1?.actions.map((a) => a.annotations?.[Annotations.remediateMachine])).to.deep.equal([undefined, undefined, undefined]);
    f.putMhc(mhc({ timeout: '1m', max: '50%' }));
    const p2 = f.agreed(T0 + 20_000);
    expect(p2?.requeueAfterMs).to.equal(40_000);
    f.putMhc(mhc({ timeout: '10s', max: '50%', md: 'md-b' }));
    // 2 machines (c, d), 50 %: 1 allowed; each sees 1 other: still blocked, but only c and d are in the pass.
    const p3 = f.agreed(T0 + 20_000);
    expect(p3?.actions.map((a) => a.machine)).to.deep.equal(['c', 'd']);
    f.putMhc(mhc({ timeout: '10s', max: 2, md: 'md-b' }));
    const p4 = f.agreed(T0 + 20_000);
    expect(p4?.actions.map((a) => a.annotations?.[Annotations.remediateMachine])).to.deep.equal(['', '']);
  });

  it('a restart (fresh index from the caches, empty memo) decides the same', () => {
    const f = new Fixture();
    f.putMhc(mhc());
    f.putMachine(machine('a', { annotations: { [Annotations.skipRemediation]: 'x', [Annotations.skipRemediationPrior]: 'false' } }));
    f.putMachine(machine('b', { hcFalse: true }));
    f.putUpdate(update('a', { startMs: T0 }));
    const before = f.agreed(T0 + 5_000);
    f.restart();
    expect(f.agreed(T0 + 5_000)).to.deep.equal(before);
  });

  it('a random history of changes: after every change the incremental pass equals the full pass (and after a restart)', () => {
    // A small deterministic generator: the test is the same on every run.
    let seed = 42;
    const rnd = (n: number): number => {
      // mulberry32: the low bits of a plain LCG cycle too fast to reach every case.
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const seen = { actions: 0, remediations: 0, failed: 0, needsPass: 0 };
    const f = new Fixture();
    const names = Array.from({ length: 12 }, (_, i) => `m${i}`);
    f.putMhc(mhc({ max: 3 }));
    for (const n of names) f.putMachine(machine(n, { md: rnd(2) ? 'md-a' : 'md-b' }));
    let now = T0;
    const S = Annotations.skipRemediation;
    const P = Annotations.skipRemediationPrior;
    for (let step = 0; step < 400; step++) {
      const n = names[rnd(names.length)]!;
      const cur = f.stores.machines.peek(NS, n);
      switch (rnd(12)) {
        case 0:
          f.putUpdate(update(n, { startMs: now, plan: `p${rnd(3)}`, created: now }));
          break;
        case 1: {
          const mine = f.stores.updates.list(NS).filter((u) => u.spec.machineRef?.name === n);
          const u = mine[rnd(mine.length + 1)];
          if (u) f.putUpdate({ ...u, status: { ...u.status, updateStatus: ['updated', 'failed', 'updating'][rnd(3)] as 'updated' } });
          break;
        }
        case 2: {
          const mine = f.stores.updates.list(NS).filter((u) => u.spec.machineRef?.name === n);
          const u = mine[rnd(mine.length + 1)];
          if (u) f.deleteUpdate(u.metadata.name ?? '');
          break;
        }
        case 3:
          f.putMachine(machine(n, { annotations: rnd(2) ? { [S]: 'x', [P]: 'false' } : { [S]: '' }, md: rnd(2) ? 'md-a' : 'md-b' }));
          break;
        case 4:
          f.putMachine(machine(n, { hcFalse: rnd(2) === 0, plan: rnd(2) ? `p${rnd(3)}` : undefined }));
          break;
        case 5:
          f.putMachine(machine(n, { annotations: { [Annotations.remediateMachine]: '' } }));
          break;
        case 6:
          if (cur) f.putMachine({ ...cur, metadata: { ...cur.metadata, deletionTimestamp: iso(now) } });
          break;
        case 7:
          f.deleteMachine(n);
          break;
        case 8:
          f.putMhc(mhc({ timeout: ['10s', '30s', '1m'][rnd(3)], max: [1, 3, '50%'][rnd(3)], md: ['md-a', 'md-b', undefined][rnd(3)] }));
          break;
        case 9:
          if (!cur) f.putMachine(machine(n));
          break;
        default:
          now += rnd(15_000);
      }
      const p = f.agreed(now);
      // The event mapper's question, with the memo, agrees with the whole-plan reference for every machine.
      const h = f.stores.mhcs.peek(NS, 'mhc')!;
      for (const m of f.stores.machines.list(NS)) {
        const mine = f.index.updatesOf(NS, m.metadata.name ?? '');
        const want = needsPassByPlan(h, m, mine, now);
        expect(machineNeedsPass(h, m, mine, now, f.memo), `${m.metadata.name} at step ${step}`).to.equal(want);
        seen.needsPass += want ? 1 : 0;
      }
      seen.actions += p?.actions.length ?? 0;
      seen.remediations += p?.actions.filter((a) => a.annotations?.[Annotations.remediateMachine] !== undefined).length ?? 0;
      seen.failed += p?.actions.filter((a) => a.update?.condition.reason === 'InPlaceUpdateFailed').length ?? 0;
      if (step % 50 === 49) {
        f.restart();
        f.agreed(now);
      }
    }
    // The history reached the interesting states (so the comparisons above compared something).
    expect(seen.actions).to.be.greaterThan(100);
    expect(seen.remediations).to.be.greaterThan(5);
    expect(seen.failed).to.be.greaterThan(5);
    expect(seen.needsPass).to.be.greaterThan(100);
  });

  it('an update failing under the same Machine object: judged failed (the memo keys on the MachineUpdate too)', () => {
    const f = new Fixture();
    f.putMhc(mhc());
    f.putMachine(machine('a', { annotations: { [Annotations.skipRemediation]: 'x', [Annotations.skipRemediationPrior]: 'false' } }));
    f.putUpdate(update('a', { startMs: T0 }));
    expect(patchOf(f.agreed(T0 + 1000), 'a')).to.equal(undefined);
    f.putUpdate(update('a', { startMs: T0, status: 'failed' }));
    expect(f.agreed(T0 + 1000)?.actions[0]?.update?.condition.reason).to.equal('InPlaceUpdateFailed');
  });

  it('control: an index that missed a change is caught (the comparison can fail)', () => {
    const f = new Fixture();
    f.putMhc(mhc());
    f.putMachine(machine('a'));
    f.agreed(T0);
    // The MachineUpdate reaches the cache but not the index (a handler not registered): the passes disagree.
    (f.stores.updates as MemoryStore<MachineUpdate>).upsert(update('a', { startMs: T0 }));
    expect(() => f.agreed(T0 + 1000)).to.throw();
  });
});
