// Table tests for decidePlan's phases on their own (decide.test.ts covers the whole decision): each phase is fed a
// snapshot and checked for the one thing it decides.
import { expect } from 'chai';
import { Annotations, Reasons } from '../../api/index.js';
import type { SnapOpts } from '../testkit.js';
import { cpUpdated, mdMachines, mdOnly, mu, plan, snapshot, started } from '../testkit.js';
import { decideStance } from './mode.js';
import { planUpdateStatus } from './plan-status.js';
import { supersededPlans } from './supersede.js';
import { countTarget, evaluateTargets, isHalted, sizeTarget, targetScope, targetVerdict } from './targets.js';
import type { Mode } from './types.js';

const older = plan({ name: 'p0', created: '2025-12-31T00:00:00Z', status: { updateStatus: 'updating' } });
const invalid = plan({ cp: null, mds: [] });

describe('plan-controller decide/ phases', () => {
  describe('mode: validation and gates give rollout, hold or stop', () => {
    const table: { name: string; snap: SnapOpts; mode: Mode; valid: boolean; waiting?: boolean }[] = [
      { name: 'a fresh valid plan rolls out', snap: {}, mode: 'rollout', valid: true },
      { name: 'a paused plan holds', snap: { plan: plan({ paused: true }) }, mode: 'hold', valid: true },
      { name: 'an aborting plan stops', snap: { plan: plan({ phase: 'aborting' }) }, mode: 'stop', valid: true },
      { name: 'a deleted plan stops', snap: { plan: plan({ deleting: true }) }, mode: 'stop', valid: true },
      { name: 'an ended plan stops', snap: { plan: plan({ status: { updateStatus: 'updated' } }) }, mode: 'stop', valid: true },
      { name: 'an invalid plan holds', snap: { plan: invalid, plans: [invalid] }, mode: 'hold', valid: false },
      {
        name: 'a newer plan holds while an older one is active',
        snap: { plan: plan(), plans: [plan(), older] },
        mode: 'hold',
        valid: true,
        waiting: true,
      },
    ];
    for (const c of table)
      it(c.name, () => {
        const s = decideStance(snapshot(c.snap));
        expect(s.mode).to.equal(c.mode);
        expect(s.valid).to.equal(c.valid);
        expect(s.waiting).to.equal(c.waiting ?? false);
      });
  });

  describe('supersede: a plan that wants to start aborts the older active plans of its cluster', () => {
    const table: { name: string; snap: SnapOpts; supersede: string[] }[] = [
      { name: 'a valid newer plan supersedes the older one', snap: { plans: [plan(), older] }, supersede: ['p0'] },
      { name: 'a paused plan supersedes nothing', snap: { plan: plan({ paused: true }), plans: [plan(), older] }, supersede: [] },
      {
        name: 'an older plan already aborting is not asked again',
        snap: { plans: [plan(), plan({ name: 'p0', created: '2025-12-31T00:00:00Z', phase: 'aborting' })] },
        supersede: [],
      },
      { name: 'a stopping plan supersedes nothing', snap: { plan: plan({ phase: 'aborting' }), plans: [older] }, supersede: [] },
    ];
    for (const c of table) it(c.name, () => expect(supersededPlans(decideStance(snapshot(c.snap)))).to.deep.equal(c.supersede));
  });

  describe('targets: count, halt and verdict of one target', () => {
    const mdTarget = (snapOpts: SnapOpts, mode: Mode = 'rollout') => {
      const snap = snapshot(snapOpts);
      const stance = decideStance(snap);
      const scope = targetScope(snap, stance);
      const t = { kind: 'MachineDeployment' as const, target: snap.plan.spec.machineDeployments![0]! };
      const c = countTarget(scope, t);
      const size = sizeTarget(scope, t, c.current.length);
      const halted = isHalted(scope, c, size);
      return { c, size, halted, verdict: targetVerdict(scope, { t, c, size, halted }, mode, true) };
    };
    const failed = (n: number) => Array.from({ length: n }, (_, i) => mu(`cluster1-md-0-${i}`, 'failed'));
    const table: { name: string; snap: SnapOpts; mode?: Mode; halted: boolean; status: string; reason: string }[] = [
      { name: 'nothing started: pending', snap: mdOnly(), halted: false, status: 'pending', reason: Reasons.pending },
      {
        name: 'one in flight: updating',
        snap: mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }),
        halted: false,
        status: 'updating',
        reason: Reasons.updating,
      },
      {
        name: 'Halt: one failure halts and fails',
        snap: mdOnly({ mus: failed(1) }),
        halted: true,
        status: 'failed',
        reason: Reasons.failed,
      },
      {
        name: 'Continue: one failure of three goes on',
        snap: mdOnly({ mus: failed(1), failurePolicy: 'Continue' }),
        halted: false,
        status: 'updating',
        reason: Reasons.updating,
      },
      {
        name: 'Continue: as many failures as machines halts',
        snap: mdOnly({ mus: failed(3), failurePolicy: 'Continue' }),
        halted: true,
        status: 'failed',
        reason: Reasons.failed,
      },
      {
        name: 'stop with one in flight: aborting',
        snap: mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }),
        mode: 'stop',
        halted: false,
        status: 'aborting',
        reason: Reasons.aborting,
      },
      {
        name: 'all updated: updated',
        snap: mdOnly({ mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) }),
        halted: false,
        status: 'updated',
        reason: Reasons.updated,
      },
    ];
    for (const c of table)
      it(c.name, () => {
        const r = mdTarget(c.snap, c.mode);
        expect(r.halted, 'halted').to.equal(c.halted);
        expect(r.verdict.status).to.equal(c.status);
        expect(r.verdict.reason).to.equal(c.reason);
      });

    it('a surged deployment with nothing left to start restores its size (surge.ts, inside the evaluation)', () => {
      const surgeAnn = { [Annotations.surgeOriginalReplicas]: '3', [Annotations.surgePlan]: 'p1' };
      const snap = snapshot(
        mdOnly({
          mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn },
          machines: mdMachines(4),
          mus: [0, 1, 2, 3].map((i) => mu(`cluster1-md-0-${i}`, 'updated')),
        }),
      );
      const stance = decideStance(snap);
      const md = evaluateTargets(targetScope(snap, stance), stance).find(({ t }) => t.kind === 'MachineDeployment')!.e;
      expect(md.scale).to.include({ kind: 'restore', replicas: 3 });
      expect(md.row.updateStatus, 'not updated until the surge is gone').to.equal('updating');
    });
  });

  describe("plan-status: the plan's updateStatus from its rows", () => {
    const table: { name: string; snap: SnapOpts; status: string }[] = [
      { name: 'a fresh plan that may start is updating once it starts', snap: {}, status: 'updating' },
      { name: 'a paused plan that never started is pending', snap: { plan: plan({ paused: true }) }, status: 'pending' },
      {
        name: 'a plan aborted with nothing in flight is aborted',
        snap: { plan: plan({ ...started, phase: 'aborting' }) },
        status: 'aborted',
      },
      {
        name: 'an abort after the last machine finished keeps updated',
        snap: {
          ...mdOnly({ mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) }),
          plan: plan({ ...started, phase: 'aborting' }),
        },
        status: 'updated',
      },
      {
        name: 'a halted target with nothing in flight fails the plan',
        snap: mdOnly({ mus: [mu('cluster1-md-0-0', 'failed')] }),
        status: 'failed',
      },
      {
        name: 'an ended plan keeps its status',
        snap: { plan: plan({ status: { updateStatus: 'failed' } }), mus: cpUpdated() },
        status: 'failed',
      },
    ];
    for (const c of table)
      it(c.name, () => {
        const snap = snapshot(c.snap);
        const stance = decideStance(snap);
        const ordered = evaluateTargets(targetScope(snap, stance), stance);
        const startedNow = stance.startedBefore || ordered.some(({ e }) => e.skipped.length > 0);
        expect(planUpdateStatus(stance, ordered, startedNow)).to.equal(c.status);
      });
  });
});
