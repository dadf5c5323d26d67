// Which status changes may wait for the next write (live progress) and which are written at once.
import { expect } from 'chai';
import type { InPlaceUpdatePlanStatus } from '../../api/index.js';
import { PlanEventReasons } from '../../api/index.js';
import { metricDeltas } from '../status.js';
import { PROGRESS_WRITE_MS, countedBaseline, countedRows, isActionEvent, progressOnly, statusWriteDelay } from './status-write.js';

const base: InPlaceUpdatePlanStatus = {
  updateStatus: 'updating',
  observedGeneration: 1,
  startTime: '2026-01-01T00:00:00Z',
  machines: 10,
  updatedMachines: 3,
  skippedMachines: 0,
  progress: '3/10',
  targets: [
    {
      kind: 'MachineDeployment',
      name: 'md-0',
      sequence: 0,
      updateStatus: 'updating',
      machines: 10,
      updated: 3,
      updating: 1,
      failed: 0,
      aborted: 0,
      message: '1 machine(s) in update: md-0-3',
    },
  ],
  conditions: [
    { type: 'Ready', status: 'False', reason: 'Updating', message: '3/10 machines updated', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ],
};

/** `base` with one more machine updated: counters and messages only. */
const progressed: InPlaceUpdatePlanStatus = {
  ...base,
  updatedMachines: 4,
  progress: '4/10',
  targets: [{ ...base.targets![0]!, updated: 4, message: '1 machine(s) in update: md-0-4' }],
  conditions: [{ ...base.conditions![0]!, message: '4/10 machines updated' }],
};

const input = (
  next: InPlaceUpdatePlanStatus,
  over: Partial<Parameters<typeof statusWriteDelay>[0]> = {},
): Parameters<typeof statusWriteDelay>[0] => ({
  prev: base,
  next,
  events: 0,
  finalizer: false,
  failed: false,
  lastWriteAt: 10_000,
  nowMs: 10_200,
  ...over,
});

describe('plan-controller decide/status-write', () => {
  it('lets live progress wait until PROGRESS_WRITE_MS after the last write, never longer', () => {
    expect(progressOnly(base, progressed)).to.equal(true);
    expect(statusWriteDelay(input(progressed))).to.equal(PROGRESS_WRITE_MS - 200);
    expect(statusWriteDelay(input(progressed, { nowMs: 10_000 + PROGRESS_WRITE_MS }))).to.equal(0);
    expect(statusWriteDelay(input(progressed, { nowMs: 20_000 }))).to.equal(0);
  });

  it('writes at once after a restart, with events, a finalizer change or a failed effect', () => {
    expect(statusWriteDelay(input(progressed, { lastWriteAt: undefined }))).to.equal(0);
    expect(statusWriteDelay(input(progressed, { events: 1 }))).to.equal(0);
    expect(statusWriteDelay(input(progressed, { finalizer: true }))).to.equal(0);
    expect(statusWriteDelay(input(progressed, { failed: true }))).to.equal(0);
    expect(statusWriteDelay(input(progressed, { prev: undefined }))).to.equal(0);
  });

  it("counts a machine start or a surge as the reconcile's own action, not a status change", () => {
    expect(
      [PlanEventReasons.machineUpdateStarted, PlanEventReasons.surged, PlanEventReasons.surgeRestored].map(isActionEvent),
    ).to.deep.equal([true, true, true]);
    expect([PlanEventReasons.targetUpdated, PlanEventReasons.targetFailed, PlanEventReasons.aborting].map(isActionEvent)).to.deep.equal([
      false,
      false,
      false,
    ]);
  });

  it('counts the metrics from what was counted since the last write: a rise counted once, a fall and rise again counted', () => {
    const row = (updated: number) => [{ ...base.targets![0]!, updated }];
    const none = { create: [] };
    // Written 3; a reconcile whose write waited saw 4 and counted it.
    let counted = countedRows(row(4));
    expect(metricDeltas(countedBaseline(base, undefined), row(4), none).updated).to.equal(1);
    // The surge's machine goes (3), then another finishes (4): each rise counted once, as when every reconcile wrote.
    expect(metricDeltas(countedBaseline(base, counted), row(3), none).updated).to.equal(0);
    counted = countedRows(row(3));
    expect(metricDeltas(countedBaseline(base, counted), row(4), none).updated).to.equal(1);
    // After a restart (nothing counted) the written status is the baseline.
    expect(metricDeltas(countedBaseline(progressed, new Map()), row(5), none).updated).to.equal(1);
  });

  const significant: [string, InPlaceUpdatePlanStatus][] = [
    ['the plan updateStatus', { ...progressed, updateStatus: 'updated' }],
    ['a condition reason', { ...progressed, conditions: [{ ...progressed.conditions![0]!, reason: 'WaitingForMaintenanceWindow' }] }],
    ['a condition status', { ...progressed, conditions: [{ ...progressed.conditions![0]!, status: 'True' }] }],
    [
      'a new condition',
      {
        ...progressed,
        conditions: [...progressed.conditions!, { type: 'Valid', status: 'True', reason: 'Valid', message: '', lastTransitionTime: 'x' }],
      },
    ],
    ['a target verdict', { ...progressed, targets: [{ ...progressed.targets![0]!, updateStatus: 'failed' }] }],
    ['a target failure', { ...progressed, targets: [{ ...progressed.targets![0]!, failed: 1 }] }],
    ['the machine count', { ...progressed, machines: 11 }],
    ['gate failures', { ...progressed, gateFailures: [{ machine: 'm', gate: 'soak', message: 'x', time: 't' }] as never }],
    ['the observed generation', { ...progressed, observedGeneration: 2 }],
    ['a field it does not know', { ...progressed, somethingNew: 'x' } as InPlaceUpdatePlanStatus],
  ];
  for (const [what, next] of significant)
    it(`writes ${what} at once`, () => {
      expect(progressOnly(base, next)).to.equal(false);
      expect(statusWriteDelay(input(next))).to.equal(0);
    });
});
