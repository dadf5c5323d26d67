import { expect } from 'chai';
import { mdConcurrency, targetDisruptive } from './concurrency.js';
import { previewPlan } from './preview.js';
import { decidePlan } from './decide.js';
import { md, machine, mdMachines, mdOnly, mu, plan, snapshot, started, target, versionUpdater } from './testkit.js';

describe('plan-controller concurrency: one rule for decide, preview and owner alignment', () => {
  it('resolves maxUnavailable like CAPI: percentages round down, 0 with maxSurge 0 is 1, 0 with a surge surges', () => {
    expect(mdConcurrency(md('m', { replicas: 50, maxUnavailable: '10%' }))).to.deep.include({ ok: true, max: 5, surge: false });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: '10%', maxSurge: 0 }))).to.deep.include({ ok: true, max: 1, surge: false });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 0, maxSurge: 1 }))).to.deep.include({ ok: true, max: 1, surge: true });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 'x' }))).to.include({ ok: false });
  });
  it('decide starts as many machines as preview announces', () => {
    for (const maxUnavailable of [1, 2, '50%'] as const) {
      const snap = snapshot(mdOnly({ mdOpts: { replicas: 4, maxUnavailable }, machines: mdMachines(4) }));
      const want = mdConcurrency(snap.machineDeployments[0]!);
      const d = decidePlan(snap);
      const p = previewPlan(snap.plan, snap);
      const t = p.groups.flatMap((g) => g.targets).find((x) => x.kind === 'MachineDeployment')!;
      expect(want.ok && want.max, String(maxUnavailable)).to.equal(d.create.length);
      expect(t.concurrency.max, String(maxUnavailable)).to.equal(d.create.length);
    }
  });

  describe('non-disruptive updaters (affectsAvailability false, Cluster API v1.15 rule)', () => {
    const calm = (over: object = {}) => versionUpdater({ affectsAvailability: false, ...over });
    /** A MachineDeployment-only snapshot whose target has these updaters. */
    const snap = (updaters: ReturnType<typeof versionUpdater>[], o: Parameters<typeof mdOnly>[0] = {}) => {
      const s = mdOnly(o);
      s.plan = plan({ ...started, mds: [target('cluster1-md-0', 2, updaters)] });
      return snapshot(s);
    };
    const decideAndPreview = (s: ReturnType<typeof snapshot>) => {
      const d = decidePlan(s);
      const t = previewPlan(s.plan, s)
        .groups.flatMap((g) => g.targets)
        .find((x) => x.kind === 'MachineDeployment')!;
      return { d, t };
    };

    it('a target is non-disruptive only when it has updaters and every one declares false', () => {
      expect(targetDisruptive([])).to.equal(true);
      expect(targetDisruptive(undefined)).to.equal(true);
      expect(targetDisruptive([{ affectsAvailability: false }, {}])).to.equal(true);
      expect(targetDisruptive([{ affectsAvailability: false }, { affectsAvailability: true }])).to.equal(true);
      expect(targetDisruptive([{ affectsAvailability: false }, { affectsAvailability: false }])).to.equal(false);
    });

    it('resolves to no surge and a pace of max(1, maxSurge + maxUnavailable)', () => {
      expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 0, maxSurge: 1 }), undefined, false)).to.deep.include({
        ok: true,
        max: 1,
        surge: false,
        disruptive: false,
      });
      expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 1, maxSurge: 1 }), undefined, false)).to.deep.include({ max: 2 });
      expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 0, maxSurge: 0 }), undefined, false)).to.deep.include({ max: 1 });
    });

    it('maxUnavailable 0: a disruptive target surges first, a non-disruptive one starts a machine at once; preview agrees', () => {
      const mdOpts = { replicas: 3, maxUnavailable: 0, maxSurge: 1 };
      const disruptive = decideAndPreview(snap([versionUpdater()], { mdOpts }));
      expect(disruptive.d.create).to.have.length(0);
      expect(disruptive.d.scale.map((x) => x.kind)).to.deep.equal(['surge']);
      expect(disruptive.t.concurrency).to.deep.include({ max: 1, surge: true });
      const calmRun = decideAndPreview(snap([calm()], { mdOpts }));
      expect(calmRun.d.scale).to.deep.equal([]);
      expect(calmRun.d.create).to.have.length(1);
      expect(calmRun.t.concurrency).to.deep.include({ max: 1, surge: false });
      expect(calmRun.t.concurrency.why).to.include('not counted against maxUnavailable');
    });

    it('machines unavailable for other reasons do not hold a non-disruptive target; its own machines in update do', () => {
      const mdOpts = { replicas: 3, maxUnavailable: 1, maxSurge: 0 };
      const machines = [machine('cluster1-md-0-0', { md: 'cluster1-md-0', ready: false }), ...mdMachines(3).slice(1)];
      expect(decideAndPreview(snap([versionUpdater()], { mdOpts, machines })).d.create, 'disruptive: the budget is used').to.have.length(0);
      const calmRun = decideAndPreview(snap([calm()], { mdOpts, machines }));
      expect(calmRun.d.create.map((c) => c.machine)).to.deep.equal(['cluster1-md-0-1']);
      expect(calmRun.t.concurrency.max).to.equal(calmRun.d.create.length);
      const busy = decideAndPreview(snap([calm()], { mdOpts, mus: [mu('cluster1-md-0-1', 'updating')] }));
      expect(busy.d.create, 'pace 1, one in update').to.have.length(0);
    });
  });
});
