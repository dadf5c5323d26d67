import { expect } from 'chai';
import type { Scope } from './scope.js';
import type { MachineUpdateStatus } from '../api/index.js';
import { buildStatus, firstStatusOnly, progressHoldMs, statusEvent } from './status.js';

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

  it('startTime is when the first task was created (the first status write may come later), else now; once set it stays', () => {
    const sc = scope();
    const created = '2025-12-31T23:59:50Z';
    sc.views[0]!.task = { apiVersion: 'v', kind: 'UpdaterUpdateTask', metadata: { name: 't', creationTimestamp: created } } as never;
    const input = { updateStatus: 'updating', current: 0, reason: 'WaitingForUpdater', message: 'm' } as const;
    expect(buildStatus(sc, input, NOW).startTime).to.equal(created);
    expect(buildStatus(scope(), input, NOW).startTime).to.equal('2026-01-01T00:00:00Z');
    expect(buildStatus({ ...sc, mu: { ...sc.mu, status: { startTime: '2025-12-31T23:00:00Z' } } }, input, NOW).startTime).to.equal(
      '2025-12-31T23:00:00Z',
    );
  });

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

  it('records a Warning when the update fails or is stuck; no per-machine Event for its start or its successful end', () => {
    expect(statusEvent(undefined, { updateStatus: 'updating', reason: 'Updating', message: 'started' })).to.equal(undefined);
    expect(statusEvent('updating', { updateStatus: 'updating', reason: 'WaitingForUpdater', message: 'm' })).to.equal(undefined);
    const stuck = { updateStatus: 'updating' as const, reason: 'UpdaterNotReporting', message: 'no updater has reported on task T' };
    expect(statusEvent('updating', stuck, 'WaitingForUpdater')).to.deep.equal({
      type: 'Warning',
      reason: 'UpdaterNotReporting',
      message: 'no updater has reported on task T',
    });
    expect(statusEvent('updating', stuck, 'UpdaterNotReporting')).to.equal(undefined);
    expect(statusEvent('updating', { updateStatus: 'updated', reason: 'AlreadyInPlace', message: 'ok' })).to.equal(undefined);
    expect(statusEvent('aborting', { updateStatus: 'aborted', reason: 'Aborted', message: 'stop' })).to.deep.include({
      type: 'Warning',
      reason: 'Aborted',
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

describe('machine-task-controller progressHoldMs', () => {
  const at = '2026-01-01T00:00:00Z';
  const row = (updateStatus?: string): NonNullable<MachineUpdateStatus['tasks']>[number] => ({
    updater: 'u',
    apiVersion: 'v',
    kind: 'UpdaterUpdateTask',
    name: 't',
    ...(updateStatus ? { updateStatus } : {}),
  });
  const st = (o: Partial<MachineUpdateStatus> = {}): MachineUpdateStatus => ({
    updateStatus: 'updating',
    currentUpdater: 'u',
    message: 'updater u (1/1) updating: waiting',
    tasks: [row()],
    conditions: [{ type: 'InPlaceUpdate', status: 'True', reason: 'WaitingForUpdater', message: 'waiting', lastTransitionTime: at }],
    ...o,
  });
  const last = 10_000;
  const cases: [string, MachineUpdateStatus, number | undefined][] = [
    ['a new progress message is held', st({ message: 'step 2/3' }), 4_000],
    ['a task turning in progress is held', st({ message: 'step 1/3', tasks: [row('updating')] }), 4_000],
    ['a task ending is written at once', st({ tasks: [row('updated')] }), undefined],
    [
      'a reason change is written at once',
      st({ conditions: [{ type: 'InPlaceUpdate', status: 'True', reason: 'UpdaterNotReporting', message: 'x', lastTransitionTime: at }] }),
      undefined,
    ],
    ['a phase change is written at once', st({ updateStatus: 'aborting' }), undefined],
    ['the commit journal is written at once', st({ commit: { state: 'Writing', objects: [] } }), undefined],
    ['the end is written at once', st({ updateStatus: 'updated', message: 'done' }), undefined],
    ['nothing changed: nothing to hold', st(), undefined],
  ];
  for (const [name, next, want] of cases) it(name, () => expect(progressHoldMs(st(), next, last, last + 1_000, 5_000)).to.equal(want));

  it('writes progress once the interval passed, and at once after a restart (no last write known)', () => {
    expect(progressHoldMs(st(), st({ message: 'step 2/3' }), last, last + 5_000, 5_000)).to.equal(undefined);
    expect(progressHoldMs(st(), st({ message: 'step 2/3' }), undefined, last, 5_000)).to.equal(undefined);
  });

  // The first status of a just-started update (nothing written on the MachineUpdate yet) waits like progress.
  const first: [string, MachineUpdateStatus | undefined, MachineUpdateStatus, number | undefined][] = [
    ['the first status saying the first updater runs is held', undefined, st(), 4_000],
    ['the first status with the task in progress is held', undefined, st({ tasks: [row('updating')] }), 4_000],
    [
      'a first status on top of a refusal is written at once',
      {
        message: 'not acted on',
        conditions: [{ type: 'InPlaceUpdate', status: 'False', reason: 'NotOwnedByPlan', message: 'x', lastTransitionTime: at }],
      },
      st(),
      undefined,
    ],
    ['a first status that fails is written at once', undefined, st({ updateStatus: 'failed' }), undefined],
    ['a first status that aborts is written at once', undefined, st({ updateStatus: 'aborting' }), undefined],
    [
      'a first status with an updater not reporting is written at once',
      undefined,
      st({ conditions: [{ type: 'InPlaceUpdate', status: 'True', reason: 'UpdaterNotReporting', message: 'x', lastTransitionTime: at }] }),
      undefined,
    ],
    ['a first status with the journal is written at once', undefined, st({ commit: { state: 'Writing', objects: [] } }), undefined],
    ['a first status with the second updater started is written at once', undefined, st({ tasks: [row('updated'), row()] }), undefined],
  ];
  for (const [name, old, next, want] of first) it(name, () => expect(progressHoldMs(old, next, last, last + 1_000, 5_000)).to.equal(want));

  it('writes the first status once the interval passed since the task was created, and at once after a restart', () => {
    expect(progressHoldMs(undefined, st(), last, last + 5_000, 5_000)).to.equal(undefined);
    expect(progressHoldMs(undefined, st(), undefined, last, 5_000)).to.equal(undefined);
  });

  it('firstStatusOnly: a written status is never "first" again', () => {
    expect(firstStatusOnly({ updateStatus: 'updating' }, st())).to.equal(false);
    expect(firstStatusOnly({}, st())).to.equal(true);
  });
});
