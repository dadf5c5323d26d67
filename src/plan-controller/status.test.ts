import { expect } from 'chai';
import type { InPlaceUpdatePlan, TargetStatus } from '../api/index.js';
import { ConditionTypes, PlanEventReasons, Reasons } from '../api/index.js';
import type { PlanDecision } from './decide.js';
import { decidePlan } from './decide.js';
import type { ReadyInput } from './status.js';
import { ALIGNING_OWNERS, givenUpNote, givenUpOf, readyCondition, settledOwnersStatus, startGate } from './status.js';
import { mdMachines, mdOnly, mu, plan, snapshot, started } from './testkit.js';

const cond = (d: Pick<PlanDecision, 'status'>, type: string) => d.status.conditions?.find((c) => c.type === type);

describe('plan-controller status', () => {
  describe('machines given up on after the abort grace period (issue 42)', () => {
    const gaveUp = (machine: string, reported: boolean) => {
      const m = mu(machine, 'aborted', { phase: 'aborting' });
      m.status = {
        ...m.status,
        tasks: [
          { updater: 'ok', apiVersion: 'v', kind: 'UpdaterUpdateTask', name: `${machine}.ok`, updateStatus: 'updated' },
          {
            updater: 'deaf',
            apiVersion: 'v',
            kind: 'UpdaterUpdateTask',
            name: `${machine}.deaf`,
            ...(reported ? { updateStatus: 'updating' as const } : {}),
          },
        ],
        conditions: [
          {
            type: ConditionTypes.inPlaceUpdate,
            status: 'False',
            reason: Reasons.abortTimedOut,
            message: `gave up on updater deaf (${machine})`,
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
      };
      return m;
    };

    it('lists each machine with the updater and task given up on, NotStarted or Unknown; other machines are not listed', () => {
      const list = givenUpOf([gaveUp('m2', true), mu('m3', 'aborted'), gaveUp('m1', false)]);
      expect(list).to.deep.equal([
        { machine: 'm1', updater: 'deaf', task: 'UpdaterUpdateTask/m1.deaf', state: 'NotStarted', message: 'gave up on updater deaf (m1)' },
        { machine: 'm2', updater: 'deaf', task: 'UpdaterUpdateTask/m2.deaf', state: 'Unknown', message: 'gave up on updater deaf (m2)' },
      ]);
      expect(givenUpNote(list)).to.equal(
        'gave up on 2 machines whose updater did not end the abort in time (1 in an unknown state): machine m1: gave up on updater deaf (m1); machine m2: gave up on updater deaf (m2)',
      );
      expect(givenUpNote([])).to.equal(undefined);
    });
  });

  describe('Ready reason matches the state (issue 17)', () => {
    const older = { metadata: { name: 'old' }, spec: { clusterName: 'cluster1' } } as InPlaceUpdatePlan;
    const base: ReadyInput = {
      updateStatus: 'pending',
      valid: true,
      started: false,
      waiting: false,
      paused: false,
      deleting: false,
      supersededBy: undefined,
      olderActive: [],
      problems: [],
      progress: '0/3',
      rows: [] as TargetStatus[],
      stoppedByAbort: false,
      terminal: false,
      prevReady: undefined,
    };
    const table: { name: string; over: Partial<ReadyInput>; reason: string; message?: RegExp; gate?: string }[] = [
      { name: 'pending, nothing holding it', over: {}, reason: Reasons.pending },
      {
        name: 'pending behind an older plan',
        over: { waiting: true, olderActive: [older] },
        reason: Reasons.waitingForPreviousPlan,
        message: /waiting for plan old/,
        gate: Reasons.waitingForPreviousPlan,
      },
      { name: 'paused', over: { paused: true }, reason: Reasons.paused, gate: Reasons.paused },
      {
        name: 'a paused staged plan (behind an older plan) says Paused',
        over: { paused: true, waiting: true, olderActive: [older] },
        reason: Reasons.paused,
        message: /paused; once resumed it waits for plan old/,
        gate: Reasons.paused,
      },
      {
        name: 'invalid wins over paused and waiting',
        over: { valid: false, problems: ['x'], paused: true, waiting: true, olderActive: [older] },
        reason: Reasons.invalid,
        gate: Reasons.invalid,
      },
      { name: 'updating and paused', over: { updateStatus: 'updating', started: true, paused: true }, reason: Reasons.paused },
      { name: 'updating', over: { updateStatus: 'updating', started: true }, reason: Reasons.updating },
      {
        name: 'updating with a task no updater reports on (issue 42: visible in the REASON column)',
        over: { updateStatus: 'updating', started: true, unreported: ['machine m1: no updater has reported on task … `motd`'] },
        reason: Reasons.updaterNotReporting,
        message: /no updater has reported on task/,
      },
      {
        name: 'aborted, machines given up on: said in the message',
        over: {
          updateStatus: 'aborted',
          stoppedByAbort: true,
          givenUp: 'gave up on 1 machine whose updater did not end the abort in time',
        },
        reason: Reasons.aborted,
        message: /the plan was aborted; 0\/3 machines updated; gave up on 1 machine/,
      },
      { name: 'updated', over: { updateStatus: 'updated', started: true }, reason: Reasons.updated },
      {
        name: 'aborting because superseded',
        over: { updateStatus: 'aborting', started: true, supersededBy: 'p2' },
        reason: Reasons.superseded,
      },
      { name: 'aborted', over: { updateStatus: 'aborted', stoppedByAbort: true }, reason: Reasons.aborted },
      { name: 'deleting', over: { updateStatus: 'aborting', deleting: true }, reason: Reasons.deleting },
    ];
    for (const c of table) {
      it(`${c.name}: Ready reason ${c.reason}`, () => {
        const i = { ...base, ...c.over };
        const r = readyCondition(i);
        expect(r.reason).to.equal(c.reason);
        if (c.message) expect(r.message).to.match(c.message);
        expect(startGate(i)?.reason).to.equal(c.gate);
      });
    }
    it('a paused staged plan end to end: Ready and the target conditions say Paused, no WaitingForPreviousPlan event', () => {
      const old = plan({ name: 'old', created: '2025-12-31T00:00:00Z', ...started });
      const p = plan({ paused: true });
      const d = decidePlan(snapshot({ plan: p, plans: [old, p] }));
      expect(cond(d, 'Ready')).to.include({ reason: 'Paused' });
      expect(cond(d, 'ControlPlaneUpdate')).to.include({ reason: 'Paused' });
      expect(d.events.map((e) => e.reason)).to.not.include('WaitingForPreviousPlan');
    });
  });

  describe('conditions', () => {
    it('sets Paused=True and Ready reason Paused while paused', () => {
      const d = decidePlan(snapshot(mdOnly({ paused: true })));
      expect(cond(d, 'Paused')).to.include({ status: 'True', reason: 'Paused' });
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Paused' });
      expect(d.status.updateStatus).to.equal('updating');
    });
    it('a plan paused before it started stays pending and touches nothing', () => {
      const d = decidePlan(snapshot({ plan: plan({ paused: true }) }));
      expect(d.status.updateStatus).to.equal('pending');
      expect(d.create).to.deep.equal([]);
      expect(d.finalizer).to.equal(undefined);
    });
    it('keeps lastTransitionTime of a condition whose status did not flip', () => {
      const first = decidePlan(snapshot(mdOnly()));
      const snap = snapshot(mdOnly());
      snap.plan.status = {
        ...first.status,
        conditions: first.status.conditions!.map((c) => ({ ...c, lastTransitionTime: '2020-01-01T00:00:00Z' })),
      };
      snap.now = '2026-01-01T01:00:00Z';
      expect(cond(decidePlan(snap), 'Ready')!.lastTransitionTime).to.equal('2020-01-01T00:00:00Z');
    });
  });

  describe('events and metrics', () => {
    it('records plan and target transitions and one event per started machine', () => {
      const d = decidePlan(snapshot());
      expect(d.events.map((e) => e.reason)).to.include.members(['PlanStarted', 'TargetStarted', 'MachineUpdateStarted']);
      expect(d.metrics.started).to.equal(1);
    });
    it('counts newly updated and failed machines from the status change', () => {
      const snap = snapshot(
        mdOnly({ failurePolicy: 'Continue', mus: [mu('cluster1-md-0-0', 'updated'), mu('cluster1-md-0-1', 'failed')] }),
      );
      snap.plan.status = {
        ...snap.plan.status,
        targets: [
          { kind: 'ControlPlane', name: 'cluster1-cp', sequence: 1, updateStatus: 'updated', machines: 3, updated: 3 },
          { kind: 'MachineDeployment', name: 'cluster1-md-0', sequence: 2, updateStatus: 'updating', machines: 3, updated: 0, failed: 0 },
        ],
      };
      expect(decidePlan(snap).metrics).to.deep.equal({ started: 1, updated: 1, failed: 1 });
    });
  });
});

describe('plan-controller status: owner outcomes (settledOwnersStatus)', () => {
  const allDone = (): PlanDecision =>
    decidePlan(snapshot(mdOnly({ machines: mdMachines(3), mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) })));
  const NOW_DATE = new Date('2026-01-01T00:01:00Z');

  it('holds an otherwise finished plan at updating while a target is still aligning, with its counts written', () => {
    const decided = allDone();
    expect(decided.status.updateStatus).to.equal('updated');
    const before = structuredClone(decided);
    const d = settledOwnersStatus(
      { updateStatus: 'updating' },
      decided,
      [{ owner: 'MachineDeployment cluster1-md-0', op: 'align', pending: '503 injected (retrying)' }],
      1,
      NOW_DATE,
    );
    expect(d.status.updateStatus).to.equal('updating');
    expect(d.status.progress).to.equal('6/6');
    expect(d.status.completionTime).to.equal(undefined);
    expect(cond(d, 'Ready')).to.include({ status: 'False', reason: ALIGNING_OWNERS });
    expect(cond(d, 'OwnersAligned')).to.include({ status: 'False', reason: 'Aligning' });
    expect(cond(d, 'OwnersAligned')?.message).to.match(/503 injected/);
    expect(d.events.map((e) => e.reason)).to.not.include(PlanEventReasons.completed);
    // The decision itself is not edited: the settled status is a new one.
    expect(decided).to.deep.equal(before);
  });

  it('lets the plan end once every alignment finished, OwnersAligned True', () => {
    const d = settledOwnersStatus(
      { updateStatus: 'updating' },
      allDone(),
      [{ owner: 'MachineDeployment cluster1-md-0', op: 'align' }],
      1,
      NOW_DATE,
    );
    expect(d.status.updateStatus).to.equal('updated');
    expect(cond(d, 'Ready')).to.include({ status: 'True' });
    expect(cond(d, 'OwnersAligned')).to.include({ status: 'True', reason: 'Aligned' });
    expect(d.events.map((e) => e.reason)).to.include(PlanEventReasons.completed);
  });
});
