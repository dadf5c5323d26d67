import { expect } from 'chai';
import { Annotations } from '../api/index.js';
import type { KubeObject } from '../api/index.js';
import { mdConcurrency, mdRuleReplicas, mdSurge, resolveConcurrency, targetDisruptive } from '../rules/concurrency.js';
import { ownerSteps } from './owners/owners-act.js';
import { previewPlan } from '../rules/preview.js';
import { decidePlan } from './decide.js';
import { md, machine, mdMachines, mdOnly, mu, plan, snapshot, started, target, versionUpdater } from './testkit.js';

describe('plan-controller concurrency: one rule for decide, preview and owner alignment', () => {
  /** The rule for a MachineDeployment asked by plan p1 (no surge annotations: spec.replicas is the count). */
  const rule = (o: Parameters<typeof md>[1], updaters?: { affectsAvailability?: boolean }[]) =>
    mdConcurrency({ md: md('m', o), planName: 'p1', updaters });

  it('resolves maxUnavailable like CAPI: percentages round down, 0 with maxSurge 0 is 1, 0 with a surge surges', () => {
    expect(rule({ replicas: 50, maxUnavailable: '10%' })).to.deep.include({ ok: true, max: 5, surge: false });
    expect(rule({ replicas: 5, maxUnavailable: '10%', maxSurge: 0 })).to.deep.include({ ok: true, max: 1, surge: false });
    expect(rule({ replicas: 5, maxUnavailable: 0, maxSurge: 1 })).to.deep.include({ ok: true, max: 1, surge: true });
    expect(rule({ replicas: 5, maxUnavailable: 'x' })).to.include({ ok: false });
  });

  it('at its boundaries: maxUnavailable rounds down, maxSurge rounds up, both zero is one at a time without a surge', () => {
    const d = (maxSurge: number | string, maxUnavailable: number | string, replicas: number) =>
      resolveConcurrency({ maxSurge, maxUnavailable }, replicas, true);
    // 10 % of 9 is 0.9: down to 0, so the MachineDeployment surges; of 10 it is exactly 1; of 19, 1.9 down to 1.
    expect(d(1, '10%', 9)).to.deep.include({ ok: true, max: 1, surge: true, replicas: 9 });
    expect(d(1, '10%', 10)).to.deep.include({ ok: true, max: 1, surge: false, replicas: 10 });
    expect(d(1, '10%', 19)).to.deep.include({ max: 1, surge: false });
    expect(d(1, '10%', 20)).to.deep.include({ max: 2, surge: false });
    // Both resolve to 0 (maxSurge 0, or a percentage of maxSurge that rounds up from 0 only at 0 replicas): CAPI's
    // fencepost rule makes maxUnavailable 1 so the rollout progresses; nothing to surge with.
    expect(d(0, 0, 5)).to.deep.include({ ok: true, max: 1, surge: false });
    expect(d(0, '10%', 9)).to.deep.include({ ok: true, max: 1, surge: false });
    expect(d('0%', '0%', 3)).to.deep.include({ ok: true, max: 1, surge: false });
    // maxSurge rounds up: 1 % of 9 is 1, so maxUnavailable 10 % (0) surges rather than taking the fencepost.
    expect(d('1%', '10%', 9)).to.deep.include({ max: 1, surge: true });
    // Zero replicas: nothing rounds above 0 but an integer maxSurge.
    expect(d(1, '50%', 0)).to.deep.include({ surge: true });
    expect(d(0, '50%', 0)).to.deep.include({ max: 1, surge: false });
    // All of them (100 %) and more than there are machines.
    expect(d(0, '100%', 4)).to.deep.include({ max: 4, surge: false });
    expect(d(0, 7, 4)).to.deep.include({ max: 7, surge: false });
    // Malformed values are refused with the field named.
    expect(d(1, '-10%', 9)).to.include({ ok: false });
    expect(d('x', 1, 9)).to.deep.include({ ok: false });
  });

  describe('one input: the replicas before this plan’s surge (issue 42, item 11)', () => {
    const surgedMd = (annotations: Record<string, string>, replicas = 10): KubeObject =>
      md('cluster1-md-0', { replicas, maxUnavailable: '10%', maxSurge: 1, annotations });
    const ours = { [Annotations.surgeOriginalReplicas]: '9', [Annotations.surgePlan]: 'p1' };

    it('reads the count before the surge from the annotation written with it, for the plan that surged', () => {
      expect(mdSurge(surgedMd(ours), 'p1')).to.deep.equal({ surged: true, recorded: '9', original: 9 });
      expect(mdRuleReplicas(surgedMd(ours), 'p1')).to.equal(9);
      // Annotated by a platform version that did not name the plan: it counts as this plan's (the plan restores it).
      expect(mdRuleReplicas(surgedMd({ [Annotations.surgeOriginalReplicas]: '9' }), 'p1')).to.equal(9);
      // Another plan's surge is not this plan's to look through; a malformed count is no count.
      expect(mdSurge(surgedMd({ ...ours, [Annotations.surgePlan]: 'p0' }), 'p1')).to.deep.equal({ surged: false, recorded: '9' });
      expect(mdRuleReplicas(surgedMd({ ...ours, [Annotations.surgePlan]: 'p0' }), 'p1')).to.equal(10);
      for (const bad of ['', 'nine', '-1', '9.5'])
        expect(mdRuleReplicas(surgedMd({ ...ours, [Annotations.surgeOriginalReplicas]: bad }), 'p1'), bad).to.equal(10);
      expect(mdRuleReplicas(md('m', { replicas: 9 }), 'p1')).to.equal(9);
    });

    it('9 replicas at 10 % surge, and the surged deployment (10 replicas) still does: same answer before and after', () => {
      const before = mdConcurrency({
        md: md('cluster1-md-0', { replicas: 9, maxUnavailable: '10%', maxSurge: 1 }),
        planName: 'p1',
        updaters: [],
      });
      const after = mdConcurrency({ md: surgedMd(ours), planName: 'p1', updaters: [] });
      expect(before).to.deep.include({ ok: true, surge: true, max: 1, replicas: 9 });
      expect(after).to.deep.equal(before);
    });

    it('mid-surge (as a restarted controller finds it): decide starts one machine, preview says surge, the owner is not paused', () => {
      const snap = snapshot({
        ...mdOnly({ machines: mdMachines(10) }),
        mds: [surgedMd(ours)],
      });
      const d = decidePlan(snap);
      expect(d.scale, 'no second surge').to.deep.equal([]);
      expect(d.create.map((c) => c.machine)).to.have.length(1);
      const t = previewPlan(snap.plan, snap)
        .groups.flatMap((g) => g.targets)
        .find((x) => x.kind === 'MachineDeployment')!;
      expect(t.concurrency).to.deep.include({ max: 1, surge: true });
      expect(t.concurrency.why).to.include('scale to 10 replicas').and.include('restore 9');
      const md0 = ownerSteps(snap, d).find((o) => o.name === 'cluster1-md-0');
      expect(md0?.step.op, 'a surging MachineDeployment is not paused').to.equal('none');
    });
  });

  it('decide starts as many machines as preview announces', () => {
    for (const maxUnavailable of [1, 2, '50%'] as const) {
      const snap = snapshot(mdOnly({ mdOpts: { replicas: 4, maxUnavailable }, machines: mdMachines(4) }));
      const want = mdConcurrency({ md: snap.machineDeployments[0]!, planName: snap.plan.metadata?.name ?? '', updaters: [] });
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
      expect(rule({ replicas: 5, maxUnavailable: 0, maxSurge: 1 }, [{ affectsAvailability: false }])).to.deep.include({
        ok: true,
        max: 1,
        surge: false,
        disruptive: false,
      });
      expect(rule({ replicas: 5, maxUnavailable: 1, maxSurge: 1 }, [{ affectsAvailability: false }])).to.deep.include({ max: 2 });
      expect(rule({ replicas: 5, maxUnavailable: 0, maxSurge: 0 }, [{ affectsAvailability: false }])).to.deep.include({ max: 1 });
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
