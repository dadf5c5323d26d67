import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../api/index.js';
import { bar, buildProgress, diffProgress, renderProgress, renderSummary, updaterTimings } from './progress.js';

// Any control character but \n (what a terminal could interpret).
// eslint-disable-next-line no-control-regex -- the point of the check
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

const updater = { name: 'os', sequence: 1, responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v2' }] };
const plan = (status?: InPlaceUpdatePlan['status']): InPlaceUpdatePlan & KubeObject => ({
  metadata: { name: 'p', namespace: 'ns' },
  spec: {
    clusterName: 'c',
    controlPlane: { name: 'cp', sequence: 1, updaters: [updater] },
    machineDeployments: [{ name: 'md', sequence: 2, updaters: [updater] }],
  },
  ...(status ? { status } : {}),
});
const mu = (machine: string, target: string, status?: MachineUpdate['status'], planName = 'p'): MachineUpdate & KubeObject => ({
  metadata: { name: `p-${machine}` },
  spec: {
    planName,
    clusterName: 'c',
    target: { kind: target === 'cp' ? 'ControlPlane' : 'MachineDeployment', name: target },
    machineRef: { name: machine },
    updaters: [updater],
  },
  ...(status ? { status } : {}),
});
const task = (updater: string, start: string, end?: string) => ({
  updater,
  apiVersion: 'v',
  kind: 'K',
  name: `t-${updater}`,
  startTime: start,
  ...(end ? { completionTime: end } : {}),
});

describe('cli demo progress', () => {
  it('counts machines per target and shows the updater of machines in flight only', () => {
    const v = buildProgress(
      plan({ updateStatus: 'updating' }),
      [
        mu('cp-1', 'cp', { updateStatus: 'updated', currentUpdater: 'os' }),
        mu('cp-2', 'cp', { updateStatus: 'updating', currentUpdater: 'os' }),
        mu('other', 'cp', { updateStatus: 'updating' }, 'another-plan'),
      ],
      { cp: 3, md: 3 },
    );
    const cp = v.targets[0]!;
    expect(cp).to.include({ kind: 'ControlPlane', total: 3, updated: 1, updating: 1, failed: 0 });
    expect(cp.machines).to.deep.equal([
      { name: 'cp-1', status: 'updated', updater: '', message: '' },
      { name: 'cp-2', status: 'updating', updater: 'os', message: '' },
    ]);
    expect(v.targets[1]).to.include({ name: 'md', total: 3, updated: 0, status: 'pending' });
  });

  it('counts a MachineUpdate without a status yet as updating (its first status may wait while its task runs)', () => {
    const v = buildProgress(plan({ updateStatus: 'updating' }), [mu('md-1', 'md')], { cp: 3, md: 3 });
    expect(v.targets[1]).to.include({ updating: 1 });
    expect(v.targets[1]!.machines).to.deep.equal([{ name: 'md-1', status: 'updating', updater: '', message: '' }]);
  });

  it('prefers the plan status totals when they are larger than what is seen', () => {
    const v = buildProgress(
      plan({ targets: [{ kind: 'MachineDeployment', name: 'md', sequence: 2, updateStatus: 'updating', machines: 4, updated: 2 }] }),
      [],
    );
    expect(v.targets[1]).to.include({ total: 4, updated: 2, status: 'updating' });
  });

  it('draws bars proportionally', () => {
    expect(bar(0, 3, 6)).to.equal('░░░░░░');
    expect(bar(1, 3, 6)).to.equal('██░░░░');
    expect(bar(3, 3, 6)).to.equal('██████');
    expect(bar(0, 0, 4)).to.equal('░░░░');
  });

  it('renders one bar line per target and one line per machine', () => {
    const out = renderProgress(
      buildProgress(plan({ updateStatus: 'updating' }), [mu('cp-1', 'cp', { updateStatus: 'updating', currentUpdater: 'os' })], {
        cp: 3,
        md: 3,
      }),
      1500,
    );
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).to.equal('InPlaceUpdatePlan ns/p  updating  1.5s');
    expect(lines[1]).to.match(/ControlPlane cp .*\[░+\] 0\/3 pending {2}1 updating$/);
    expect(lines[2]).to.match(/▶ cp-1 +updating +\(os\)$/);
    expect(lines[3]).to.match(/MachineDeployment md .*0\/3 pending$/);
  });

  it('lists only machines in flight or failed when one line per machine does not fit', () => {
    const mus = [
      mu('cp-1', 'cp', { updateStatus: 'updated' }),
      mu('cp-2', 'cp', { updateStatus: 'updating', currentUpdater: 'os' }),
      mu('cp-3', 'cp', { updateStatus: 'failed', message: 'boom' }),
      mu('cp-4', 'cp', { updateStatus: 'updated' }),
    ];
    const v = buildProgress(plan({ updateStatus: 'updating' }), mus);
    expect(renderProgress(v, 0, 80).trimEnd().split('\n')).to.have.length(7);
    const compact = renderProgress(v, 0, 80, 5).trimEnd().split('\n');
    expect(compact.slice(2, 5)).to.deep.equal([
      '    ▶ cp-2                         updating  (os)',
      '    ✖ cp-3                         failed  boom',
      '    … 2 more (2 updated)',
    ]);
  });

  it('reports only changes between two views as plain lines', () => {
    const a = buildProgress(plan({ updateStatus: 'updating' }), [mu('cp-1', 'cp', { updateStatus: 'updating', currentUpdater: 'os' })]);
    const b = buildProgress(plan({ updateStatus: 'updating' }), [
      mu('cp-1', 'cp', { updateStatus: 'updated' }),
      mu('cp-2', 'cp', { updateStatus: 'failed', message: 'disk full' }),
    ]);
    expect(diffProgress(undefined, a)).to.deep.equal([
      'plan ns/p: updating',
      'ControlPlane cp: pending (0/1 updated)',
      '  machine cp-1: updating (updater os)',
      'MachineDeployment md: pending (0/0 updated)',
    ]);
    expect(diffProgress(a, b)).to.deep.equal(['  machine cp-1: updated', '  machine cp-2: failed — disk full']);
    expect(diffProgress(b, b)).to.deep.equal([]);
  });

  it('aggregates finished task times per updater and skips unfinished ones', () => {
    const t = updaterTimings([
      mu('a', 'cp', {
        tasks: [task('os', '2026-01-01T00:00:00Z', '2026-01-01T00:00:02Z'), task('k8s', '2026-01-01T00:00:02Z', '2026-01-01T00:00:03Z')],
      }),
      mu('b', 'cp', { tasks: [task('os', '2026-01-01T00:00:00Z', '2026-01-01T00:00:04Z'), task('k8s', '2026-01-01T00:00:04Z')] }),
    ]);
    expect(t).to.deep.equal([
      { updater: 'k8s', tasks: 1, totalMs: 1000, maxMs: 1000 },
      { updater: 'os', tasks: 2, totalMs: 6000, maxMs: 4000 },
    ]);
  });

  it('summarises outcome, commits, leftovers and timings', () => {
    const p = plan({ updateStatus: 'updated', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:10Z' });
    const mus = [mu('cp-1', 'cp', { updateStatus: 'updated', tasks: [task('os', '2026-01-01T00:00:00Z', '2026-01-01T00:00:02Z')] })];
    const out = renderSummary({
      view: buildProgress(p, mus),
      plan: p,
      mus,
      wallMs: 12000,
      stillLabelled: [],
      committed: { ok: 1, total: 1, wrong: [] },
    });
    expect(out).to.contain('ended updated');
    expect(out).to.contain('12.0s wall clock, 10.0s plan start -> completion');
    expect(out).to.contain('1/1 updated, 0 failed, 0 aborted');
    expect(out).to.contain('changes committed: 1/1');
    expect(out).to.contain('still labelled with the plan: none');
    expect(out).to.match(/os +1 tasks +avg 2\.0s +max 2\.0s +total 2\.0s/);
  });

  it('counts values a MachineUpdate found already in place apart from the committed ones', () => {
    const p = plan({ updateStatus: 'updated' });
    const mus = [mu('cp-1', 'cp', { updateStatus: 'updated' })];
    const line = (committed: { ok: number; total: number; wrong: string[]; inPlace?: number }): string | undefined =>
      renderSummary({ view: buildProgress(p, mus), plan: p, mus, wallMs: 1000, stillLabelled: [], committed })
        .split('\n')
        .find((l) => l.includes('changes committed'));
    expect(line({ ok: 2, total: 2, wrong: [] })).to.equal('  changes committed: 2/2');
    expect(line({ ok: 2, total: 2, wrong: [], inPlace: 0 })).to.equal('  changes committed: 2/2');
    expect(line({ ok: 0, total: 0, wrong: [], inPlace: 3 })).to.equal('  changes committed: 0/0, 3 already in place (nothing written)');
  });

  it('renders hostile updater messages terminal-safe in the live view, the change log and the summary', () => {
    const bad = `disk full\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x1b\\\nMachine/fake  updated\r\x9b31m`;
    const p = plan({ updateStatus: 'failed' });
    const v = buildProgress(p, [mu('md-1', 'md', { updateStatus: 'failed', message: bad })], { cp: 0, md: 1 });
    const texts = [
      renderProgress(v, 1000),
      diffProgress(undefined, v).join('\n'),
      renderSummary({ view: v, plan: p, mus: [], wallMs: 1000, stillLabelled: [], committed: { ok: 0, total: 0, wrong: [] } }),
    ];
    for (const t of texts) {
      expect(t).to.not.match(CONTROL);
      expect(t).to.contain('disk full');
    }
  });
});

describe('cli demo progress: an update no updater reports on', () => {
  it('shows the MachineUpdate message beside the updater, live and as a plain line', () => {
    const message =
      'no updater has reported on task UpdaterUpdateTask m1.os.0123abcd for updater `os` for 2m — is an updater serving `os` running?';
    const stuck = mu('m1', 'md', {
      updateStatus: 'updating',
      currentUpdater: 'os',
      message,
      conditions: [
        { type: 'InPlaceUpdate', status: 'True', reason: 'UpdaterNotReporting', message, lastTransitionTime: '2026-01-01T00:00:00Z' },
      ],
    });
    const waiting = mu('m2', 'md', { updateStatus: 'updating', currentUpdater: 'os', message: 'updater os (1/1) updating: step 1' });
    const v = buildProgress(plan({ updateStatus: 'updating' }), [stuck, waiting]);
    const machines = v.targets.find((t) => t.name === 'md')!.machines;
    expect(machines.map((m) => [m.name, m.updater, m.message])).to.deep.equal([
      ['m1', 'os', message],
      ['m2', 'os', ''],
    ]);
    expect(renderProgress(v, 1000, 400, 40)).to.contain(`m1                           updating  (os)  ${message}`);
    expect(diffProgress(undefined, v).join('\n')).to.contain(`machine m1: updating (updater os) — ${message}`);
  });

  it('prints the diagnosis as a plain line when it arrives, and the plan reason UpdaterNotReporting (issue 42)', () => {
    const message =
      'no updater has reported on task UpdaterUpdateTask m1.motd.0 for updater `motd` for 2m — is an updater serving `motd` running?';
    const before = buildProgress(plan({ updateStatus: 'updating' }), [
      mu('m1', 'md', { updateStatus: 'updating', currentUpdater: 'motd' }),
    ]);
    const cond = {
      type: 'InPlaceUpdate',
      status: 'True' as const,
      reason: 'UpdaterNotReporting',
      message,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    };
    const p = plan({ updateStatus: 'updating' });
    p.status!.conditions = [
      {
        type: 'Ready',
        status: 'False',
        reason: 'UpdaterNotReporting',
        message: `0/1 machines updated; machine m1: ${message}`,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ];
    const after = buildProgress(p, [mu('m1', 'md', { updateStatus: 'updating', currentUpdater: 'motd', message, conditions: [cond] })]);
    const lines = diffProgress(before, after).join('\n');
    expect(lines).to.contain(`machine m1: updating (updater motd) — ${message}`);
    expect(lines).to.contain('UpdaterNotReporting: 0/1 machines updated');
  });
});
