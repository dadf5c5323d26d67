import { expect } from 'chai';
import { ConditionTypes, Labels, Reasons } from '../api/index.js';
import type { MachineUpdate } from './scope.js';
import { conditionRecorded, fmtDuration, setHealthCheckSucceededCondition, type ConditionWish } from './status.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const mu = (): MachineUpdate => ({
  metadata: { name: 'mu', namespace: 'ns', generation: 3, labels: { [Labels.machineName]: 'a' } },
  spec: {
    planName: 'p',
    clusterName: 'c1',
    target: { kind: 'MachineDeployment', name: 'md' },
    machineRef: { name: 'a' },
    updatePhase: 'updating',
    updaters: [],
  },
  status: {
    updateStatus: 'updating',
    conditions: [
      { type: ConditionTypes.inPlaceUpdate, status: 'True', reason: 'Updating', message: '', lastTransitionTime: '2025-12-31T00:00:00Z' },
    ],
  },
});
const within: ConditionWish = {
  type: ConditionTypes.healthCheckSucceeded,
  status: 'True',
  reason: Reasons.withinInPlaceUpdateTimeout,
  message: 'within',
};

describe('mhc-extension status', () => {
  const durations: Array<[number, string]> = [
    [500, '500ms'],
    [2000, '2s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [3_600_000_000, '1000h0m0s'],
  ];
  for (const [ms, want] of durations) it(`writes ${ms} ms as ${want}`, () => expect(fmtDuration(ms)).to.equal(want));

  it("sets HealthCheckSucceeded and keeps the task controller's conditions", () => {
    const u = mu();
    setHealthCheckSucceededCondition(u, within, T0);
    expect(u.status?.conditions?.map((c) => c.type)).to.deep.equal([ConditionTypes.inPlaceUpdate, ConditionTypes.healthCheckSucceeded]);
    expect(u.status?.conditions?.[1]).to.include({
      status: 'True',
      reason: Reasons.withinInPlaceUpdateTimeout,
      lastTransitionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 3,
    });
    expect(u.status?.updateStatus).to.equal('updating');
  });

  it('a condition already recorded is not written again; a changed message is', () => {
    const u = mu();
    expect(conditionRecorded(u, within)).to.equal(false);
    setHealthCheckSucceededCondition(u, within, T0);
    expect(conditionRecorded(u, within)).to.equal(true);
    expect(conditionRecorded(u, { ...within, message: 'other' })).to.equal(false);
  });

  it('refuses to set any other condition type (the task controller owns them)', () => {
    expect(() => setHealthCheckSucceededCondition(mu(), { ...within, type: ConditionTypes.ready }, T0)).to.throw(/HealthCheckSucceeded/);
  });
});
