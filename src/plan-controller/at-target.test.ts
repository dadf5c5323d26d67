import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { PlanEventReasons, Reasons } from '../api/index.js';
import { MAX_PREVIOUS_BYTES, machinesAtTarget, previousValues, referencedKinds } from '../rules/at-target.js';
import { AtTargetMemo, atTargetThrough } from './cache/at-target.js';
import { decidePlan } from './decide.js';
import { NOW, cpDone, machine, md, mu, plan, snapshot, target, versionUpdater } from './testkit.js';

const mdAt = (n: number, atTarget: number): KubeObject[] =>
  Array.from({ length: n }, (_, i) =>
    machine(`cluster1-md-0-${i}`, { md: 'cluster1-md-0', version: i < atTarget ? 'v1.30.1' : 'v1.30.0' }),
  );
const started = {
  finalizers: ['inplace.cluster.x-k8s.io/plan'],
  status: { updateStatus: 'updating' as const, startTime: '2026-01-01T00:00:30Z' },
};
const infraUpdater = versionUpdater({
  name: 'os',
  responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'v2' }],
});
const withInfra = (m: KubeObject): KubeObject => ({
  ...m,
  spec: {
    ...(m['spec'] as object),
    infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: `${m.metadata.name}-infra` },
  },
});
const infra = (name: string, image: string): KubeObject => ({
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
  kind: 'DevMachine',
  metadata: { name, namespace: 'fleet-a' },
  spec: { image },
});

describe('plan-controller machines at target', () => {
  describe('referencedKinds', () => {
    it("names the kinds of the machines' references only where the plan's values live there", () => {
      const ms = mdAt(3, 0).map(withInfra);
      // One reference per kind (the lookup needs the kind's store, not the object).
      const ref = { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: 'cluster1-md-0-2-infra' };
      expect(referencedKinds(plan({ cp: null, mds: [target('cluster1-md-0', 2, [infraUpdater])] }), ms)).to.deep.equal([ref]);
      expect(referencedKinds(plan({ cp: null, mds: [target('cluster1-md-0', 2, [versionUpdater(), infraUpdater])] }), ms)).to.deep.equal([
        ref,
      ]);
      // Values on the Machine only: nothing else to read.
      expect(referencedKinds(plan({ cp: null, mds: [target('cluster1-md-0', 2)] }), ms)).to.deep.equal([]);
      expect(referencedKinds(plan({ cp: null, mds: [target('cluster1-md-0', 2, [infraUpdater])] }), mdAt(2, 0))).to.deep.equal([]);
    });
  });
  describe('machinesAtTarget', () => {
    it('names the machines whose objects carry every value of their target', () => {
      const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
      expect(machinesAtTarget(p, mdAt(3, 2), () => undefined)).to.deep.equal(['cluster1-md-0-0', 'cluster1-md-0-1']);
    });
    it('leaves out machines that already have a MachineUpdate of the plan, and deleting machines', () => {
      const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
      const ms = [...mdAt(2, 2), machine('cluster1-md-0-2', { md: 'cluster1-md-0', version: 'v1.30.1', deleting: true })];
      expect(machinesAtTarget(p, ms, () => undefined, new Set(['cluster1-md-0-0']))).to.deep.equal(['cluster1-md-0-1']);
    });
    it('never skips a target with an updater that declares no value (its effect cannot be verified)', () => {
      const p = plan({
        cp: null,
        mds: [target('cluster1-md-0', 2, [versionUpdater(), versionUpdater({ name: 'reboot', sequence: 2, responsibilities: [] })])],
      });
      expect(machinesAtTarget(p, mdAt(3, 3), () => undefined)).to.deep.equal([]);
    });
    it('reads InfraMachine values through the lookup; an object it does not know holds nothing', () => {
      const p = plan({ cp: null, mds: [target('cluster1-md-0', 2, [versionUpdater(), infraUpdater])] });
      const ms = mdAt(3, 3).map(withInfra);
      const objs = new Map([
        ['cluster1-md-0-0-infra', infra('cluster1-md-0-0-infra', 'v2')],
        ['cluster1-md-0-1-infra', infra('cluster1-md-0-1-infra', 'v1')],
      ]);
      expect(machinesAtTarget(p, ms, (_ns, ref) => objs.get(ref.name))).to.deep.equal(['cluster1-md-0-0']);
    });
  });

  describe('AtTargetMemo', () => {
    const rv = (o: KubeObject, v: string): KubeObject => ({ ...o, metadata: { ...o.metadata, resourceVersion: v } });
    const fleet = (): { ms: KubeObject[]; objs: Map<string, KubeObject> } => {
      const ms = mdAt(6, 4).map((m, i) => rv(withInfra(m), `m${i}`));
      const objs = new Map(
        ms.map((m, i) => [`${m.metadata.name}-infra`, rv(infra(`${m.metadata.name}-infra`, i % 2 === 0 ? 'v2' : 'v1'), `i${i}`)]),
      );
      return { ms, objs };
    };
    const p = plan({ cp: null, mds: [target('cluster1-md-0', 2, [versionUpdater(), infraUpdater])] });

    it('gives the same answers as without the memo, and answers unchanged machines from it', () => {
      const { ms, objs } = fleet();
      const lookup = (_ns: string, ref: { name: string }) => objs.get(ref.name);
      const memo = new AtTargetMemo();
      const plain = machinesAtTarget(p, ms, lookup);
      expect(plain).to.deep.equal(['cluster1-md-0-0', 'cluster1-md-0-2']);
      expect(atTargetThrough(p, ms, lookup, new Set(), { memo })).to.deep.equal(plain);
      expect({ hits: memo.hits, misses: memo.misses }).to.deep.equal({ hits: 0, misses: 6 });
      expect(atTargetThrough(p, ms, lookup, new Set(), { memo })).to.deep.equal(plain);
      expect({ hits: memo.hits, misses: memo.misses }).to.deep.equal({ hits: 6, misses: 6 });
    });

    it('recomputes a machine whose Machine or InfraMachine changed, and everything when the plan generation changed', () => {
      const { ms, objs } = fleet();
      const lookup = (_ns: string, ref: { name: string }) => objs.get(ref.name);
      const memo = new AtTargetMemo();
      atTargetThrough(p, ms, lookup, new Set(), { memo });
      // Machine 1 gets the image (its InfraMachine changes), machine 0 loses its version (its Machine changes).
      objs.set('cluster1-md-0-1-infra', rv(infra('cluster1-md-0-1-infra', 'v2'), 'i1b'));
      const m0 = machine('cluster1-md-0-0', { md: 'cluster1-md-0', version: 'v1.30.0' });
      const changed = [rv(withInfra(m0), 'm0b'), ...ms.slice(1)];
      const misses = memo.misses;
      expect(atTargetThrough(p, changed, lookup, new Set(), { memo })).to.deep.equal(['cluster1-md-0-1', 'cluster1-md-0-2']);
      expect(memo.misses - misses, 'the two changed machines').to.equal(2);
      expect(machinesAtTarget(p, changed, lookup)).to.deep.equal(['cluster1-md-0-1', 'cluster1-md-0-2']);
      const p2 = { ...p, metadata: { ...p.metadata, generation: 2 } };
      const before = memo.misses;
      atTargetThrough(p2, changed, lookup, new Set(), { memo });
      expect(memo.misses - before, 'new generation: all recomputed').to.equal(6);
    });

    it('an InfraMachine that appears later is read (not the remembered "not found")', () => {
      const { ms, objs } = fleet();
      const missing = new Map(objs);
      missing.delete('cluster1-md-0-0-infra');
      const memo = new AtTargetMemo();
      expect(atTargetThrough(p, ms, (_ns, ref) => missing.get(ref.name), new Set(), { memo })).to.deep.equal(['cluster1-md-0-2']);
      expect(atTargetThrough(p, ms, (_ns, ref) => objs.get(ref.name), new Set(), { memo })).to.deep.equal([
        'cluster1-md-0-0',
        'cluster1-md-0-2',
      ]);
    });

    it('answers a Machine object at the same position again without a lookup while the referenced stores are unchanged (stamp)', () => {
      const { ms, objs } = fleet();
      let lookups = 0;
      const lookup = (_ns: string, ref: { name: string }) => (lookups++, objs.get(ref.name));
      const memo = new AtTargetMemo();
      const plain = machinesAtTarget(p, ms, (_ns, ref) => objs.get(ref.name));
      expect(atTargetThrough(p, ms, lookup, new Set(), { memo, stamp: 'infra=1' })).to.deep.equal(plain);
      lookups = 0;
      expect(atTargetThrough(p, [...ms], lookup, new Set(), { memo, stamp: 'infra=1' })).to.deep.equal(plain);
      expect(lookups, 'same objects, same stamp').to.equal(0);
      // An InfraMachine changed (a new stamp): every machine whose answer read one is looked at again.
      objs.set('cluster1-md-0-1-infra', rv(infra('cluster1-md-0-1-infra', 'v2'), 'i1b'));
      expect(atTargetThrough(p, ms, lookup, new Set(), { memo, stamp: 'infra=2' })).to.deep.equal([
        'cluster1-md-0-0',
        'cluster1-md-0-1',
        'cluster1-md-0-2',
      ]);
      expect(lookups).to.be.greaterThan(0);
      // A machine with a MachineUpdate now is left out, whatever was remembered; a changed Machine object is re-read.
      const m2 = rv(withInfra(machine('cluster1-md-0-2', { md: 'cluster1-md-0', version: 'v1.30.0' })), 'm2b');
      const next = [...ms.slice(0, 2), m2, ...ms.slice(3)];
      expect(atTargetThrough(p, next, lookup, new Set(['cluster1-md-0-0']), { memo, stamp: 'infra=2' })).to.deep.equal(['cluster1-md-0-1']);
      expect(atTargetThrough(p, next, lookup, new Set(), { memo, stamp: 'infra=2' })).to.deep.equal(
        machinesAtTarget(p, next, (_ns, ref) => objs.get(ref.name)),
      );
      // Values on the Machine only: no stamp needed, the same object answers the same.
      const pm = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
      const onlyMachine = new AtTargetMemo();
      const fleetM = mdAt(6, 4);
      expect(atTargetThrough(pm, fleetM, lookup, new Set(), { memo: onlyMachine })).to.deep.equal(machinesAtTarget(pm, fleetM, lookup));
      const misses = onlyMachine.misses;
      const bumped = [machine('cluster1-md-0-0', { md: 'cluster1-md-0', version: 'v1.30.0' }), ...fleetM.slice(1)];
      expect(atTargetThrough(pm, bumped, lookup, new Set(), { memo: onlyMachine })).to.deep.equal([
        'cluster1-md-0-1',
        'cluster1-md-0-2',
        'cluster1-md-0-3',
      ]);
      expect(onlyMachine.misses - misses, 'only the changed machine').to.equal(1);
    });

    it('leaves out the machines that got a MachineUpdate since, found by position, also after machines moved or repeat', () => {
      const pm = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
      const memo = new AtTargetMemo();
      const lookup = (): undefined => undefined;
      let ms = mdAt(8, 6);
      let mus = [mu('cluster1-md-0-7', 'updating')];
      const step = (name: string): string[] => {
        const got = atTargetThrough(pm, ms, lookup, memo.excluded(mus), { memo });
        const want = machinesAtTarget(pm, ms, lookup, new Set(mus.map((m) => m.spec.machineRef.name)));
        expect(got, name).to.deep.equal(want);
        return got;
      };
      expect(step('first')).to.deep.equal([
        'cluster1-md-0-0',
        'cluster1-md-0-1',
        'cluster1-md-0-2',
        'cluster1-md-0-3',
        'cluster1-md-0-4',
        'cluster1-md-0-5',
      ]);
      // Updates created for machines at target (the memo's name index is built here), then one more, then two at once.
      mus = [...mus, mu('cluster1-md-0-1', 'updating')];
      expect(step('one added')).to.not.include('cluster1-md-0-1');
      mus = [...mus, mu('cluster1-md-0-4', 'updating')];
      expect(step('another')).to.deep.equal(['cluster1-md-0-0', 'cluster1-md-0-2', 'cluster1-md-0-3', 'cluster1-md-0-5']);
      mus = [...mus, mu('cluster1-md-0-5', 'updating'), mu('cluster1-md-0-0', 'updating')];
      expect(step('two')).to.deep.equal(['cluster1-md-0-2', 'cluster1-md-0-3']);
      // A machine goes away (the others move up a position), and an update is created for a machine after it.
      ms = ms.filter((m) => m.metadata.name !== 'cluster1-md-0-1');
      step('moved');
      mus = [...mus, mu('cluster1-md-0-3', 'updating')];
      expect(step('moved, then added')).to.deep.equal(['cluster1-md-0-2']);
      // A name twice in the list (not what a store holds, never trusted): both copies are left out by name.
      const dup = machine('cluster1-md-0-2', { md: 'cluster1-md-0', version: 'v1.30.1' });
      ms = [...ms, machine('cluster1-md-0-9', { md: 'cluster1-md-0', version: 'v1.30.1' }), dup];
      step('a name twice');
      mus = [...mus, mu('cluster1-md-0-2', 'updating')];
      expect(step('the twice name excluded')).to.deep.equal(['cluster1-md-0-9']);
      // An update for a machine that does not exist.
      mus = [...mus, mu('cluster1-md-0-42', 'updating')];
      expect(step('no such machine')).to.deep.equal(['cluster1-md-0-9']);
    });

    it('stays bounded: machines gone or excluded are forgotten, and it never exceeds its maximum', () => {
      const { ms, objs } = fleet();
      const lookup = (_ns: string, ref: { name: string }) => objs.get(ref.name);
      // No slack: entries past the candidates are swept at once (the default keeps 1,024 before sweeping).
      const memo = new AtTargetMemo(200_000, 0);
      atTargetThrough(p, ms, lookup, new Set(), { memo });
      expect(memo.size).to.equal(6);
      atTargetThrough(p, ms.slice(0, 3), lookup, new Set(['cluster1-md-0-0']), { memo });
      expect(memo.size).to.equal(2);
      const small = new AtTargetMemo(3);
      atTargetThrough(p, ms, lookup, new Set(), { memo: small });
      expect(small.size).to.be.at.most(3);
      expect(atTargetThrough(p, ms, lookup, new Set(), { memo: small })).to.deep.equal(machinesAtTarget(p, ms, lookup));
    });
  });

  describe('decidePlan', () => {
    const snap = (o: { paused?: boolean; rerun?: boolean; status?: typeof started.status; at?: string[] } = {}) => {
      const p = plan({
        cp: null,
        mds: [target('cluster1-md-0', 2)],
        ...(o.paused ? { paused: true } : {}),
        ...(o.status ? { finalizers: started.finalizers, status: o.status } : {}),
      });
      if (o.rerun) p.spec.rerunMachinesAtTarget = true;
      return {
        ...snapshot({ plan: p, mds: [md('cluster1-md-0', { maxUnavailable: 1 })], machines: [...cpDone(), ...mdAt(3, 2)] }),
        atTarget: o.at ?? ['cluster1-md-0-0', 'cluster1-md-0-1'],
      };
    };

    it('counts machines at target as updated without starting them, and says so', () => {
      const d = decidePlan(snap());
      expect(d.create.map((c) => c.machine)).to.deep.equal(['cluster1-md-0-2']);
      expect(d.status.targets?.[0]).to.include({ updated: 2, skipped: 2, updating: 1, machines: 3 });
      expect(d.status).to.include({ skippedMachines: 2, progress: '2/3', startTime: NOW });
      const ev = d.events.find((e) => e.reason === PlanEventReasons.alreadyAtTarget);
      expect(ev?.message).to.match(/^2 machine\(s\) already carry every value .*cluster1-md-0-0, cluster1-md-0-1$/);
    });

    it('a target whose machines are all at target is updated at once, with no MachineUpdate', () => {
      const d = decidePlan(snap({ at: ['cluster1-md-0-0', 'cluster1-md-0-1', 'cluster1-md-0-2'] }));
      expect(d.create).to.deep.equal([]);
      expect(d.label).to.deep.equal([]);
      expect(d.status.updateStatus).to.equal('updated');
      expect(d.status.conditions?.find((c) => c.type === 'Ready')).to.include({
        status: 'True',
        reason: Reasons.updated,
        message: '3/3 machines updated (3 already at target: no updater ran)',
      });
      expect(d.status.conditions?.find((c) => c.type === 'MachineDeploymentUpdate')?.message).to.equal(
        'cluster1-md-0: 3/3 updated (3 already at target)',
      );
    });

    it('the event is recorded once: a later reconcile with the same count adds none', () => {
      const first = decidePlan(snap());
      const again = decidePlan({
        ...snap({ status: { ...first.status, updateStatus: 'updating' } as typeof started.status }),
        machineUpdates: [mu('cluster1-md-0-2', 'updating')],
      });
      expect(again.events.filter((e) => e.reason === PlanEventReasons.alreadyAtTarget)).to.deep.equal([]);
      expect(again.status.targets?.[0]).to.include({ updated: 2, skipped: 2 });
    });

    it('a machine with a MachineUpdate of the plan is counted by its record, not its objects', () => {
      const d = decidePlan({ ...snap({ status: started.status }), machineUpdates: [mu('cluster1-md-0-0', 'failed')] });
      expect(d.status.targets?.[0]).to.include({ updated: 1, skipped: 1, failed: 1 });
    });

    it('a paused plan that has not started reports nothing as done', () => {
      const d = decidePlan(snap({ paused: true }));
      expect(d.status.targets?.[0]).to.include({ updated: 0 });
      expect(d.status.skippedMachines).to.equal(0);
      expect(d.status.updateStatus).to.equal('pending');
    });

    it('spec.rerunMachinesAtTarget starts machines at target like the others', () => {
      const d = decidePlan(snap({ rerun: true }));
      expect(d.create.map((c) => c.machine)).to.deep.equal(['cluster1-md-0-0']);
      expect(d.status.skippedMachines).to.equal(0);
    });
  });
});

describe('plan-controller previous values (MachineUpdate spec.previous)', () => {
  const updaters = (...resps: { selectResource: 'Machine' | 'InfraMachine' | 'BootstrapConfig'; path: string; value: unknown }[]) => [
    { name: 'u', sequence: 1, responsibilities: resps },
  ];

  it("records each responsibility's value in the cached Machine, JSON-encoded, absent for a path that does not exist", () => {
    const m = machine('m-0', { md: 'md-0', version: 'v1.29.3' });
    const got = previousValues(
      m,
      updaters(
        { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' },
        { selectResource: 'Machine', path: '/metadata/annotations/x', value: 'y' },
        // The same path twice (two updaters): one entry.
        { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' },
      ),
    );
    expect(got).to.deep.equal([
      { selectResource: 'Machine', path: '/spec/version', value: '"v1.29.3"' },
      { selectResource: 'Machine', path: '/metadata/annotations/x' },
    ]);
  });

  it('records an InfraMachine value only when its object can be looked up; nothing without a Machine or past the size bound', () => {
    const m = machine('m-0', { md: 'md-0' });
    (m.spec as Record<string, unknown>)['infrastructureRef'] = {
      apiGroup: 'infrastructure.cluster.x-k8s.io',
      kind: 'DevMachine',
      name: 'm-0',
    };
    const infra = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'DevMachine',
      metadata: { name: 'm-0', namespace: m.metadata.namespace },
      spec: { image: 'a' },
    };
    const u = updaters({ selectResource: 'InfraMachine', path: '/spec/image', value: 'b' });
    expect(previousValues(m, u)).to.equal(undefined);
    expect(previousValues(m, u, () => infra as KubeObject)).to.deep.equal([
      { selectResource: 'InfraMachine', path: '/spec/image', value: '"a"' },
    ]);
    expect(previousValues(undefined, updaters({ selectResource: 'Machine', path: '/spec/version', value: 'v1' }))).to.equal(undefined);
    const big = machine('m-1', { md: 'md-0', annotations: { big: 'x'.repeat(MAX_PREVIOUS_BYTES) } });
    expect(previousValues(big, updaters({ selectResource: 'Machine', path: '/metadata/annotations/big', value: 'y' }))).to.equal(undefined);
  });
});
