import { expect } from 'chai';
import { Annotations, Reasons } from '../api/index.js';
import type { Task } from '../contract/index.js';
import { commitEnding, decide, formatDuration, refusalRecheckMs, REFUSAL_RECHECK_MS, type Ending, type Step } from './decide.js';
import type { CommitResult } from './commit.js';
import type { MachinePresence, MachineUpdateObject, Scope, UpdaterView } from './scope.js';

type St = NonNullable<Task['status']>['updateStatus'];
interface TaskSketch {
  status?: St;
  phase?: 'updating' | 'aborting';
  /** observedGeneration lag: the status answers generation - lag. */
  lag?: number;
  message?: string;
  /** The abort-requested-at annotation of an aborting task (default ASKED; null: none, as before the stamp existed). */
  askedAt?: string | null;
}

/** When the tasks of these cases were asked to abort. */
const ASKED = '2026-01-01T00:00:00.000Z';

const mkTask = (name: string, s: TaskSketch): Task => {
  const generation = s.phase === 'aborting' ? 2 : 1;
  const askedAt = s.askedAt === undefined ? (s.phase === 'aborting' ? ASKED : null) : s.askedAt;
  return {
    metadata: {
      name,
      generation,
      uid: `uid-${name}`,
      ...(askedAt !== null ? { annotations: { [Annotations.abortRequestedAt]: askedAt } } : {}),
    },
    spec: { machineRef: { name: 'm1' }, updatePhase: s.phase ?? 'updating' },
    ...(s.status
      ? {
          status: {
            updateStatus: s.status,
            observedGeneration: generation - (s.lag ?? 0),
            conditions: [
              {
                type: 'Ready',
                status: s.status === 'updated' ? 'True' : 'False',
                reason: 'R',
                message: s.message ?? '',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          },
        }
      : {}),
  };
};

function scope(opts: {
  phase?: 'updating' | 'aborting';
  muStatus?: string;
  machine?: MachinePresence;
  tasks: (TaskSketch | null | { foreign: TaskSketch })[];
}): Scope {
  const mu: MachineUpdateObject = {
    metadata: { name: 'mu', namespace: 'ns', uid: 'mu-uid', generation: 1 },
    spec: {
      planName: 'p',
      clusterName: 'c',
      target: { kind: 'MachineDeployment', name: 'md' },
      machineRef: { name: 'm1' },
      updatePhase: opts.phase ?? 'updating',
      updaters: opts.tasks.map((_, i) => ({ name: `u${i + 1}`, sequence: i + 1, responsibilities: [] })),
    },
    ...(opts.muStatus ? { status: { updateStatus: opts.muStatus as 'updating' } } : {}),
  };
  const views: UpdaterView[] = opts.tasks.map((t, i) => {
    const v: UpdaterView = {
      updater: mu.spec.updaters[i]!,
      taskName: `m1.u${i + 1}`,
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'UpdaterUpdateTask',
    };
    if (t && 'foreign' in t) v.foreign = mkTask(v.taskName, t.foreign);
    else if (t) v.task = mkTask(v.taskName, t);
    return v;
  });
  return { mu, machine: opts.machine ?? 'present', views };
}

describe('machine task controller decisions', () => {
  const cases: { name: string; scope: Scope; step: Step; status: string; message?: RegExp }[] = [
    {
      name: 'creates the first task when nothing exists',
      scope: scope({ tasks: [null, null] }),
      step: { kind: 'createTask', index: 0 },
      status: 'updating',
    },
    {
      name: 'waits while the first task is updating',
      scope: scope({ tasks: [{ status: 'updating', message: 'step 2/4' }, null] }),
      step: { kind: 'wait', index: 0 },
      status: 'updating',
      message: /u1 \(1\/2\) updating: step 2\/4/,
    },
    {
      name: 'waits while the task has not reported yet',
      scope: scope({ tasks: [{}, null] }),
      step: { kind: 'wait', index: 0 },
      status: 'updating',
      message: /waiting for the updater to report/,
    },
    {
      name: 'creates the next task once the previous is updated',
      scope: scope({ tasks: [{ status: 'updated' }, null] }),
      step: { kind: 'createTask', index: 1 },
      status: 'updating',
    },
    {
      name: 'ignores an updated status that answers an older generation',
      scope: scope({ tasks: [{ status: 'updated', phase: 'aborting', lag: 1 }, null] }),
      step: { kind: 'wait', index: 0 },
      status: 'updating',
    },
    {
      name: 'commits when every updater is updated',
      scope: scope({ tasks: [{ status: 'updated' }, { status: 'updated' }] }),
      step: { kind: 'commit' },
      status: 'updating',
    },
    {
      name: "fails with the updater's own message",
      scope: scope({ tasks: [{ status: 'updated' }, { status: 'failed', message: 'kubelet did not start' }] }),
      step: { kind: 'finish', updateStatus: 'failed' },
      status: 'failed',
      message: /updater u2 failed: kubelet did not start/,
    },
    {
      name: 'fails when an updater reports aborted without being asked',
      scope: scope({ tasks: [{ status: 'aborted' }] }),
      step: { kind: 'finish', updateStatus: 'failed' },
      status: 'failed',
      message: /never asked to abort/,
    },
    {
      name: 'asks the current task to abort when aborting',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'updating' }, null] }),
      step: { kind: 'abortTask', index: 0 },
      status: 'aborting',
    },
    {
      name: 'waits for an aborting task to finish',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'updating', phase: 'aborting' }, null] }),
      step: { kind: 'wait', index: 0 },
      status: 'aborting',
    },
    {
      name: 'ends aborted when the aborting task is aborted',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'aborted', phase: 'aborting' }, null] }),
      step: { kind: 'finish', updateStatus: 'aborted' },
      status: 'aborted',
    },
    {
      name: 'ends aborted at once when no task exists yet',
      scope: scope({ phase: 'aborting', tasks: [null, null] }),
      step: { kind: 'finish', updateStatus: 'aborted' },
      status: 'aborted',
      message: /before any updater started/,
    },
    {
      name: 'starts nothing new after the current task finished updated while aborting',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'updated', phase: 'aborting' }, null] }),
      step: { kind: 'finish', updateStatus: 'aborted' },
      status: 'aborted',
      message: /before updater u2 started/,
    },
    {
      name: 'commits when the last task finished updated before the abort took effect',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'updated' }, { status: 'updated', phase: 'aborting' }] }),
      step: { kind: 'commit' },
      status: 'aborting',
    },
    {
      name: 'fails when the aborting task fails',
      scope: scope({ phase: 'aborting', tasks: [{ status: 'failed', phase: 'aborting', message: 'boom' }] }),
      step: { kind: 'finish', updateStatus: 'failed' },
      status: 'failed',
      message: /boom/,
    },
    {
      name: 'aborts the current task when the machine is gone',
      scope: scope({ machine: 'missing', tasks: [{ status: 'updating' }] }),
      step: { kind: 'abortTask', index: 0 },
      status: 'aborting',
      message: /no longer exists/,
    },
    {
      name: 'ends aborted when the machine is being deleted before any task',
      scope: scope({ machine: 'deleting', tasks: [null] }),
      step: { kind: 'finish', updateStatus: 'aborted' },
      status: 'aborted',
      message: /being deleted/,
    },
    {
      name: 'does nothing once terminal',
      scope: scope({ muStatus: 'failed', tasks: [{ status: 'updating' }] }),
      step: { kind: 'none' },
      status: 'failed',
    },
    {
      name: 'does nothing once updated even if aborting arrives',
      scope: scope({ muStatus: 'updated', phase: 'aborting', tasks: [{ status: 'updated' }] }),
      step: { kind: 'none' },
      status: 'updated',
    },
    {
      name: "replaces a finished task of an earlier update holding the task's name",
      scope: scope({ tasks: [{ foreign: { status: 'updated' } }] }),
      step: { kind: 'deleteForeignTask', index: 0 },
      status: 'updating',
    },
    {
      name: 'waits while an in-flight task of another update holds the name',
      scope: scope({ tasks: [{ foreign: { status: 'updating' } }] }),
      step: { kind: 'wait', index: 0, foreign: true },
      status: 'updating',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decide(c.scope);
      expect(d.step).to.deep.equal(c.step);
      expect(d.updateStatus).to.equal(c.status);
      if (c.message) expect(d.message).to.match(c.message);
    });
  }

  it('runs updaters in ascending sequence whatever their order in the spec', async () => {
    const { orderedSpecUpdaters } = await import('./scope.js');
    const spec = scope({ tasks: [null, null, null] }).mu.spec;
    spec.updaters = [
      { name: 'c', sequence: 3, responsibilities: [] },
      { name: 'a', sequence: 1, responsibilities: [] },
      { name: 'b', sequence: 2, responsibilities: [] },
    ];
    expect(orderedSpecUpdaters(spec).map((u) => u.name)).to.deep.equal(['a', 'b', 'c']);
  });
});

describe('machine task controller: the abort grace period (an abort ends whatever the updater does)', () => {
  const grace = 60_000;
  const at = (msAfterAsk: number) => ({ now: new Date(Date.parse(ASKED) + msAfterAsk), unreportedTaskMs: 120_000, abortGraceMs: grace });

  it('waits for the updater within the period, and looks again when it ends', () => {
    const d = decide(scope({ phase: 'aborting', tasks: [{ phase: 'aborting' }] }), at(20_000));
    expect(d.step).to.deep.equal({ kind: 'wait', index: 0 });
    expect(d).to.include({ updateStatus: 'aborting', reason: Reasons.aborting, recheckAfterMs: 40_000 });
    expect(d.message).to.contain('given up on at 2026-01-01T00:01:00.000Z');
  });

  it('gives up on a task no updater ever reported on: aborted, nothing started on the machine', () => {
    const d = decide(scope({ phase: 'aborting', tasks: [{ phase: 'aborting' }, null] }), at(grace));
    expect(d.step).to.deep.equal({ kind: 'finish', updateStatus: 'aborted' });
    expect(d.reason).to.equal(Reasons.abortTimedOut);
    expect(d.message).to.match(/gave up on updater u1: .* within the abort grace period \(1m\); no updater ever reported/);
  });

  it('gives up on an updater that reported and ignores the abort: the machine is in an unknown state', () => {
    const task: TaskSketch = { status: 'updating', phase: 'aborting', lag: 1, message: 'rewriting the disk' };
    const d = decide(scope({ phase: 'aborting', tasks: [task] }), at(grace + 1));
    expect(d).to.include({ updateStatus: 'aborted', reason: Reasons.abortTimedOut });
    expect(d.message).to.match(/last reported updating \(rewriting the disk\), so the machine's state is unknown/);
  });

  it('gives up on an updater that answered the abort but never ends it', () => {
    const d = decide(scope({ phase: 'aborting', tasks: [{ status: 'updating', phase: 'aborting' }] }), at(grace));
    expect(d).to.include({ updateStatus: 'aborted', reason: Reasons.abortTimedOut });
  });

  it('an updater that ends the task in time is followed as before', () => {
    const d = decide(scope({ phase: 'aborting', tasks: [{ status: 'aborted', phase: 'aborting' }] }), at(grace * 10));
    expect(d).to.include({ updateStatus: 'aborted', reason: Reasons.aborted });
  });

  it('is decided from the time on the task (a restarted controller keeps the bound)', () => {
    const late = scope({ phase: 'aborting', tasks: [{ phase: 'aborting', askedAt: '2025-12-31T23:00:00.000Z' }] });
    expect(decide(late, at(0)).reason).to.equal(Reasons.abortTimedOut);
  });

  for (const [what, askedAt] of [
    ['asked before the stamp existed', null],
    ['an unreadable stamp', 'soon'],
    ['a stamp from the future (it would put the bound off)', '2027-01-01T00:00:00.000Z'],
  ] as const)
    it(`stamps the time of the ask again on a task with ${what}`, () => {
      const d = decide(scope({ phase: 'aborting', tasks: [{ status: 'updating', phase: 'aborting', askedAt }, null] }), at(grace * 10));
      expect(d.step).to.deep.equal({ kind: 'abortTask', index: 0 });
    });

  it('without a grace period (no options) the abort waits for the updater', () => {
    expect(decide(scope({ phase: 'aborting', tasks: [{ phase: 'aborting' }] })).step.kind).to.equal('wait');
  });
});

describe('machine-task-controller commitEnding: the reason says what the commit did', () => {
  const cases: [string, CommitResult, Ending][] = [
    [
      'values written: Updated, naming them',
      { ok: true, written: ['Machine m1 /spec/version'] },
      { updateStatus: 'updated', reason: 'Updated', message: 'updated by 2 updater(s); committed Machine m1 /spec/version' },
    ],
    [
      'every value already in place: AlreadyInPlace, not counted as committed',
      { ok: true, written: [] },
      {
        updateStatus: 'updated',
        reason: 'AlreadyInPlace',
        message: 'updated by 2 updater(s); every value was already in place (verified), nothing written',
      },
    ],
    [
      'machine deleted under the update: aborted',
      { ok: false, outcome: 'machine-gone', message: 'nothing committed: gone' },
      { updateStatus: 'aborted', reason: 'Aborted', message: 'nothing committed: gone' },
    ],
    [
      'refused before any write: CommitFailed',
      { ok: false, outcome: 'nothing-committed', message: 'm' },
      { updateStatus: 'failed', reason: 'CommitFailed', message: 'm' },
    ],
    [
      'rolled back: CommitRolledBack',
      { ok: false, outcome: 'rolled-back', message: 'm' },
      { updateStatus: 'failed', reason: 'CommitRolledBack', message: 'm' },
    ],
    [
      'restore failed: CommitRestoreFailed',
      { ok: false, outcome: 'restore-failed', message: 'm' },
      { updateStatus: 'failed', reason: 'CommitRestoreFailed', message: 'm' },
    ],
  ];
  for (const [name, result, want] of cases) it(name, () => expect(commitEnding(result, 2)).to.deep.equal(want));
});

describe('machine-task-controller refusalRecheckMs: a refused MachineUpdate is polled only while young', () => {
  const created = '2026-01-01T00:00:00Z';
  const mu = (creationTimestamp?: string): MachineUpdateObject => ({
    ...scope({ tasks: [] }).mu,
    metadata: { name: 'mu', ...(creationTimestamp ? { creationTimestamp } : {}) },
  });
  const at = (s: number): Date => new Date(Date.parse(created) + s * 1000);
  const cases: [string, MachineUpdateObject, Date, number | undefined][] = [
    ['just created: re-checked soon (the Machine cache may lag the plan label)', mu(created), at(1), REFUSAL_RECHECK_MS],
    ['59 s old: still re-checked', mu(created), at(59), REFUSAL_RECHECK_MS],
    ['a minute old: only its plan and Machine events wake it', mu(created), at(60), undefined],
    ['a day old: no timer at all', mu(created), at(86_400), undefined],
    ['no creationTimestamp (never from an API server): re-checked', mu(), at(86_400), REFUSAL_RECHECK_MS],
  ];
  for (const [name, m, now, want] of cases) it(name, () => expect(refusalRecheckMs(m, now)).to.equal(want));
});

describe('machine-task-controller decide: a task no updater reports on says so', () => {
  const created = '2026-01-01T00:00:00Z';
  const at = (secs: number): Date => new Date(Date.parse(created) + secs * 1000);
  const silentScope = (sketch: TaskSketch = {}, phase: 'updating' | 'aborting' = 'updating'): Scope => {
    const s = scope({ phase, tasks: [sketch] });
    s.views[0]!.task = { ...s.views[0]!.task!, metadata: { ...s.views[0]!.task!.metadata, creationTimestamp: created } };
    return s;
  };
  const opts = (secs: number) => ({ now: at(secs), unreportedTaskMs: 120_000 });

  it('waits (and asks to be woken at the deadline) while the task is younger than the limit', () => {
    const d = decide(silentScope(), opts(30));
    expect(d.step).to.deep.equal({ kind: 'wait', index: 0 });
    expect(d.reason).to.equal('WaitingForUpdater');
    expect(d.recheckAfterMs).to.equal(90_000);
  });

  it('past the limit: reason UpdaterNotReporting, a message naming task and updater, still waiting (nothing fails or commits)', () => {
    const d = decide(silentScope(), opts(120));
    expect(d.step).to.deep.equal({ kind: 'wait', index: 0 });
    expect(d.updateStatus).to.equal('updating');
    expect(d.reason).to.equal('UpdaterNotReporting');
    expect(d.message).to.equal(
      'no updater has reported on task UpdaterUpdateTask m1.u1 for updater `u1` for 2m — is an updater serving `u1` running?',
    );
    expect(d.recheckAfterMs).to.equal(undefined);
    // Level-based: the same snapshot later gives the same answer (the message names the limit, not the age).
    expect(decide(silentScope(), opts(3600))).to.deep.equal(d);
  });

  it('a custom task kind asks for an updater serving the kind', () => {
    const s = silentScope();
    s.views[0]!.kind = 'OSImageUpdateTask';
    s.views[0]!.updater = {
      ...s.views[0]!.updater,
      updaterUpdateTemplateRef: { apiVersion: 'x/v1', kind: 'OSImageUpdateTaskTemplate', name: 't' },
    };
    expect(decide(s, opts(121)).message).to.match(/is an updater serving OSImageUpdateTask running\?$/);
  });

  it('a task with any status from an updater is not "unreported", however old', () => {
    const d = decide(silentScope({ status: 'updating', message: 'step 1' }), opts(3600));
    expect(d.reason).to.equal('WaitingForUpdater');
    expect(d.recheckAfterMs).to.equal(undefined);
  });

  it('an aborting update keeps its abort message', () => {
    const d = decide(silentScope({ phase: 'aborting' }, 'aborting'), opts(3600));
    expect(d.reason).to.equal('Aborting');
  });

  it('formats the limit as people write it', () => {
    expect([1000, 90_000, 120_000, 3_600_000, 5_400_000].map(formatDuration)).to.deep.equal(['1s', '1m30s', '2m', '1h', '1h30m']);
  });
});
