import { expect } from 'chai';
import type { Scope } from './scope.js';
import { buildStatus, statusEvent } from './status.js';

describe('machine-task-controller buildStatus', () => {
  const scope = (status?: Scope['mu']['status']): Scope => ({
    mu: {
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineUpdate',
      metadata: { name: 'mu-a', namespace: 'ns', generation: 1 },
      spec: {
        planName: 'p1',
        machineRef: { name: 'a' },
        target: { kind: 'MachineDeployment', name: 'md' },
        updaters: [{ name: 'ntp-config', sequence: 1, responsibilities: [] }],
        updatePhase: 'updating',
      } as unknown as Scope['mu']['spec'],
      ...(status ? { status } : {}),
    },
    machine: 'present',
    views: [
      { updater: { name: 'ntp-config', sequence: 1, responsibilities: [] }, taskName: 't', apiVersion: 'v', kind: 'UpdaterUpdateTask' },
    ],
  });
  const NOW = new Date('2026-01-01T00:00:00Z');

  const current: [string, Parameters<typeof buildStatus>[1], string | undefined][] = [
    ['names the updater in flight', { updateStatus: 'updating', current: 0, reason: 'WaitingForUpdater', message: 'm' }, 'ntp-config'],
    ['names none while committing', { updateStatus: 'updating', reason: 'Committing', message: 'm' }, undefined],
    ['names none once updated', { updateStatus: 'updated', reason: 'Updated', message: 'm' }, undefined],
    [
      'names none once failed, even with the failing updater as current',
      { updateStatus: 'failed', current: 0, reason: 'Failed', message: 'm' },
      undefined,
    ],
    ['names none once aborted', { updateStatus: 'aborted', reason: 'Aborted', message: 'm' }, undefined],
  ];
  for (const [name, input, want] of current) {
    it(`currentUpdater ${name}`, () => {
      const s = buildStatus(scope({ updateStatus: 'updating', currentUpdater: 'ntp-config' }), input, NOW);
      expect(s.currentUpdater).to.equal(want);
      expect(Object.keys(s).includes('currentUpdater')).to.equal(want !== undefined);
    });
  }

  const ready: [string, Parameters<typeof buildStatus>[1], { status: string; reason: string }][] = [
    [
      'Updated when values were committed',
      { updateStatus: 'updated', reason: 'Updated', message: 'm' },
      { status: 'True', reason: 'Updated' },
    ],
    [
      'AlreadyInPlace when nothing had to be written',
      { updateStatus: 'updated', reason: 'AlreadyInPlace', message: 'm' },
      { status: 'True', reason: 'AlreadyInPlace' },
    ],
    [
      'False with the reason while in progress',
      { updateStatus: 'updating', current: 0, reason: 'WaitingForUpdater', message: 'm' },
      { status: 'False', reason: 'WaitingForUpdater' },
    ],
  ];
  for (const [name, input, want] of ready) {
    it(`Ready and InPlaceUpdate agree with the ending: ${name}`, () => {
      const s = buildStatus(scope(), input, NOW);
      expect(s.conditions?.find((c) => c.type === 'Ready')).to.include(want);
      expect(s.conditions?.find((c) => c.type === 'InPlaceUpdate')?.reason).to.equal(input.reason);
    });
  }

  it('records an Event when the update starts and when it ends, none in between', () => {
    expect(statusEvent(undefined, { updateStatus: 'updating', reason: 'Updating', message: 'started' })).to.deep.equal({
      type: 'Normal',
      reason: 'Updating',
      message: 'started',
    });
    expect(statusEvent('updating', { updateStatus: 'updating', reason: 'WaitingForUpdater', message: 'm' })).to.equal(undefined);
    const stuck = { updateStatus: 'updating' as const, reason: 'UpdaterNotReporting', message: 'no updater has reported on task T' };
    expect(statusEvent('updating', stuck, 'WaitingForUpdater')).to.deep.equal({
      type: 'Warning',
      reason: 'UpdaterNotReporting',
      message: 'no updater has reported on task T',
    });
    expect(statusEvent('updating', stuck, 'UpdaterNotReporting')).to.equal(undefined);
    expect(statusEvent('updating', { updateStatus: 'updated', reason: 'AlreadyInPlace', message: 'ok' })).to.deep.equal({
      type: 'Normal',
      reason: 'Updated',
      message: 'ok',
    });
    expect(statusEvent('updating', { updateStatus: 'failed', reason: 'CommitFailed', message: 'no' })).to.deep.equal({
      type: 'Warning',
      reason: 'Failed',
      message: 'no',
    });
  });

  it("bounds an updater's failure message once: status.message and both conditions carry the same cut text", () => {
    const s = buildStatus(
      scope(),
      { updateStatus: 'failed', reason: 'Failed', message: `updater x failed: ${'\u00e9'.repeat(50_000)}` },
      new Date('2026-01-01T00:00:00Z'),
    );
    expect(Buffer.byteLength(s.message!)).to.be.at.most(4096);
    expect(s.message).to.match(/^updater x failed: é+\.\.\. \(\d+ more bytes\)$/);
    expect(s.conditions!.map((c) => c.message)).to.deep.equal([s.message, s.message]);
  });

  it('keeps a short message as it is', () => {
    const s = buildStatus(
      scope(),
      { updateStatus: 'updating', reason: 'Updating', message: 'updater x (1/1) updating' },
      new Date('2026-01-01T00:00:00Z'),
    );
    expect(s.message).to.equal('updater x (1/1) updating');
  });
});
