import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../api/index.js';
import { buildStatusTree, endNotes, humanAge, planEnd, renderPlanList, renderTree } from './tree.js';

// Any control character but \n (what a terminal could interpret).
// eslint-disable-next-line no-control-regex -- the point of the check
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

const now = new Date('2026-01-01T12:00:00Z');
const ago = (s: number): string => new Date(now.getTime() - s * 1000).toISOString();
const updater = {
  name: 'os',
  sequence: 1,
  responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }],
};

const plan = (over: Partial<InPlaceUpdatePlan> = {}): InPlaceUpdatePlan & KubeObject => ({
  metadata: { name: 'p1', namespace: 'fleet-a', creationTimestamp: ago(300) },
  spec: {
    clusterName: 'c1',
    controlPlane: { name: 'c1-cp', sequence: 1, updaters: [updater] },
    machineDeployments: [
      { name: 'c1-md-1', sequence: 2, updaters: [updater] },
      { name: 'c1-md-0', sequence: 2, updaters: [updater] },
    ],
  },
  status: {
    updateStatus: 'updating',
    progress: '4/9',
    targets: [
      { kind: 'ControlPlane', name: 'c1-cp', sequence: 1, updateStatus: 'updated', machines: 3, updated: 3 },
      { kind: 'MachineDeployment', name: 'c1-md-0', sequence: 2, updateStatus: 'updating', machines: 3, updated: 1, updating: 1 },
    ],
    conditions: [{ type: 'Ready', status: 'False', reason: 'Updating', message: 'updating machines', lastTransitionTime: ago(200) }],
  },
  ...over,
});

const mu = (
  machine: string,
  target: string,
  kind: 'ControlPlane' | 'MachineDeployment',
  status: MachineUpdate['status'],
): MachineUpdate & KubeObject => ({
  metadata: { name: `p1-${machine}`, namespace: 'fleet-a', creationTimestamp: ago(100) },
  spec: { planName: 'p1', clusterName: 'c1', target: { kind, name: target }, machineRef: { name: machine }, updaters: [updater] },
  ...(status ? { status } : {}),
});

describe('cli status tree', () => {
  describe('humanAge', () => {
    const cases: [number | undefined, string][] = [
      [undefined, ''],
      [5, '5s'],
      [119, '119s'],
      [125, '2m5s'],
      [600, '10m'],
      [3 * 3600 + 120, '3h2m'],
      [10 * 3600, '10h'],
      [3 * 86400 + 3600, '3d1h'],
      [30 * 86400, '30d'],
    ];
    for (const [s, want] of cases) {
      it(`renders ${s ?? 'no timestamp'} seconds as "${want}"`, () => {
        expect(humanAge(s === undefined ? undefined : ago(s), now)).to.equal(want);
      });
    }
    it('renders an invalid timestamp as empty', () => expect(humanAge('yesterday', now)).to.equal(''));
  });

  it('orders targets by sequence, control plane first, then by name', () => {
    const t = buildStatusTree(plan(), [], now);
    expect(t.children.map((c) => c.name)).to.deep.equal(['ControlPlane/c1-cp', 'MachineDeployment/c1-md-0', 'MachineDeployment/c1-md-1']);
  });

  it('shows target counts from the plan status and pending for targets not started', () => {
    const t = buildStatusTree(plan(), [], now);
    expect(t.children[1]).to.include({ status: 'updating', message: '1/3 updated, 1 updating' });
    expect(t.children[2]).to.include({ status: 'pending', message: '' });
  });

  it('puts machines under their target with the current updater and tasks under the machine', () => {
    const t = buildStatusTree(
      plan(),
      [
        mu('m1', 'c1-md-0', 'MachineDeployment', {
          updateStatus: 'updating',
          currentUpdater: 'os',
          startTime: ago(30),
          tasks: [
            { updater: 'os', apiVersion: 'v', kind: 'OSImageUpdateTask', name: 'm1-os', updateStatus: 'updating', startTime: ago(20) },
          ],
          conditions: [{ type: 'InPlaceUpdate', status: 'False', reason: 'WaitingForUpdater', lastTransitionTime: ago(20) }],
        }),
        mu('m0', 'c1-cp', 'ControlPlane', { updateStatus: 'updated' }),
      ],
      now,
    );
    const md0 = t.children[1]!;
    expect(md0.children).to.have.length(1);
    expect(md0.children[0]).to.include({
      name: 'Machine/m1',
      status: 'updating',
      reason: 'WaitingForUpdater',
      age: '30s',
      message: 'updater os',
    });
    expect(md0.children[0]!.children[0]).to.include({
      name: 'OSImageUpdateTask/m1-os',
      status: 'updating',
      reason: 'updater os',
      age: '20s',
    });
    expect(t.children[0]!.children.map((c) => c.name)).to.deep.equal(['Machine/m0']);
  });

  it('says which gate judges an updated machine: soaking, verifying, or failed by a gate with its message', () => {
    const p = plan();
    p.status!.targets![1]!.message =
      'maxUnavailable=1; machine c1-md-0-0 soaking 3m/10m; machine c1-md-0-1 verifying: kubelet v1.30.0, want v1.30.1 (1m/10m)';
    p.status!.gateFailures = [
      {
        machine: 'c1-md-0-2',
        gate: 'verification',
        message: 'machine c1-md-0-2 failed verification: Machine.status.nodeInfo.osImage is img-a, not img-b, 10m after its update',
      },
    ];
    const updated = { updateStatus: 'updated' as const, startTime: ago(100), completionTime: ago(90) };
    const tree = buildStatusTree(
      p,
      ['c1-md-0-0', 'c1-md-0-1', 'c1-md-0-2'].map((m) => mu(m, 'c1-md-0', 'MachineDeployment', updated)),
      now,
    );
    const rows = tree.children
      .find((c) => c.name === 'MachineDeployment/c1-md-0')!
      .children.map((c) => [c.name, c.status, c.reason, c.message]);
    expect(rows).to.deep.equal([
      ['Machine/c1-md-0-0', 'updating', 'Soaking', 'machine c1-md-0-0 soaking 3m/10m'],
      ['Machine/c1-md-0-1', 'updating', 'Verifying', 'machine c1-md-0-1 verifying: kubelet v1.30.0, want v1.30.1 (1m/10m)'],
      [
        'Machine/c1-md-0-2',
        'failed',
        'VerificationFailed',
        'machine c1-md-0-2 failed verification: Machine.status.nodeInfo.osImage is img-a, not img-b, 10m after its update',
      ],
    ]);
  });

  it('shows an invalid plan with the validation message', () => {
    const p = plan({
      status: {
        updateStatus: 'pending',
        conditions: [
          { type: 'Valid', status: 'False', reason: 'Invalid', message: 'MachineDeployment nope not found', lastTransitionTime: ago(1) },
        ],
      },
    });
    const t = buildStatusTree(p, [], now);
    expect(t).to.include({ status: 'pending', reason: 'Invalid', message: 'MachineDeployment nope not found' });
  });

  it('marks a paused plan', () => {
    const p = plan();
    p.spec.paused = true;
    expect(buildStatusTree(p, [], now).status).to.equal('updating (paused)');
  });

  it('renders aligned columns with tree branches', () => {
    const out = renderTree(buildStatusTree(plan(), [mu('m1', 'c1-md-0', 'MachineDeployment', { updateStatus: 'updated' })], now));
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAME\s+STATUS\s+REASON\s+AGE\s+MESSAGE$/);
    expect(lines[1]).to.match(/^InPlaceUpdatePlan\/p1\s+updating\s+Updating\s+5m\s+updating machines — 4\/9$/);
    expect(lines[2]).to.match(/^├─ControlPlane\/c1-cp\s+updated/);
    expect(lines[3]).to.match(/^├─MachineDeployment\/c1-md-0\s+updating/);
    expect(lines[4]).to.match(/^│ └─Machine\/m1\s+updated/);
    expect(lines[5]).to.match(/^└─MachineDeployment\/c1-md-1\s+pending/);
    const statusCol = lines[0]!.indexOf('STATUS');
    for (const l of lines.slice(1)) expect(l[statusCol - 1]).to.equal(' ');
  });

  it('wraps a long message under its column, within the width, and cuts it only after a few lines', () => {
    const p = plan();
    p.status!.conditions![0]!.message = 'x'.repeat(2000);
    const lines = renderTree(buildStatusTree(p, [], now), 100).split('\n');
    const col = lines[0]!.indexOf('MESSAGE');
    const mine = lines.slice(1).filter((l, i) => i === 0 || (l.startsWith(' '.repeat(col)) && l.trim().startsWith('x')));
    expect(mine.length).to.equal(6);
    for (const l of mine) expect([...l].length).to.be.at.most(100);
    expect(mine[5]!.endsWith('…')).to.equal(true);
  });

  it('at 160 columns gives the reason of a paused plan its full text, with task names shortened to what follows their machine', () => {
    const reason =
      'paused at 0/9 machines updated; c1-md-0: preflight: machine c1-md-0-a is not Ready; machine c1-md-0-b is in update by plan other-plan';
    const p = plan();
    p.status!.conditions![0]!.message = reason;
    // C9: <machine>.<updater>.<hash>
    const task = 'cluster1-md-0-7x9k2-abcde.kubernetes-version.5d8c7f9b';
    const out = renderTree(
      buildStatusTree(
        p,
        [
          mu('cluster1-md-0-7x9k2-abcde', 'c1-md-0', 'MachineDeployment', {
            updateStatus: 'updating',
            tasks: [
              { updater: 'kubernetes-version', apiVersion: 'v', kind: 'KubernetesVersionUpdateTask', name: task, updateStatus: 'updating' },
            ],
          }),
        ],
        now,
      ),
      160,
    );
    const lines = out.split('\n');
    for (const l of lines) expect([...l].length).to.be.at.most(160);
    // The whole reason is on screen (wrapped if it must be), not cut after ~30 characters.
    const col = lines[0]!.indexOf('MESSAGE');
    expect(lines.map((l) => l.slice(col)).join(' ')).to.contain('machine c1-md-0-b is in update by plan other-plan');
    expect(col).to.be.at.most(160 - 40);
    // Under its machine (the row above) and with its updater in REASON, a C9 task name shows its hash.
    expect(out).to.match(/└─KubernetesVersionUpdateTask\/…\.5d8c7f9b\s/);
    expect(out).to.match(/└─Machine\/cluster1-md-0-7x9k2-abcde\s/);
  });

  it('says why a plan ended: the problems of an invalid plan and an owner kept paused with what to do', () => {
    const p = plan({ metadata: { name: 'p1', namespace: 'fleet-a', generation: 2, creationTimestamp: ago(300) } });
    p.status = {
      updateStatus: 'pending',
      conditions: [
        {
          type: 'Valid',
          status: 'False',
          reason: 'Invalid',
          message: 'KubeadmControlPlane fleet-a/x not found; /spec/providerID is not writable',
          lastTransitionTime: ago(60),
        },
        { type: 'Failed', status: 'True', reason: 'Invalid', message: 'ended', observedGeneration: 2, lastTransitionTime: ago(30) },
      ],
    };
    expect(planEnd(p)).to.equal('invalid');
    expect(endNotes(p)).to.include.members(['  - KubeadmControlPlane fleet-a/x not found', '  - /spec/providerID is not writable']);
    // An edited plan (a new generation) is being validated again: it has not ended.
    expect(planEnd({ ...p, metadata: { ...p.metadata, generation: 3 } })).to.equal(undefined);
    const aborted = plan();
    aborted.status = {
      updateStatus: 'aborted',
      conditions: [
        {
          type: 'OwnersAligned',
          status: 'False',
          reason: 'MixedMachines',
          message:
            "KubeadmControlPlane c1-cp kept paused: 1 of 3 machines carry the plan's values; remove cluster.x-k8s.io/paused yourself",
          lastTransitionTime: ago(5),
        },
      ],
    };
    expect(planEnd(aborted)).to.equal('aborted');
    const notes = endNotes(aborted).join('\n');
    expect(notes).to.contain('OwnersAligned=False MixedMachines').and.to.contain('remove cluster.x-k8s.io/paused yourself');
  });

  it('lists the machines an abort gave up on and what each is left as (issue 42)', () => {
    const aborted = plan();
    aborted.status = {
      updateStatus: 'aborted',
      givenUp: [
        { machine: 'm1', updater: 'ntp-config', task: 'UpdaterUpdateTask/m1.ntp-config.1', state: 'NotStarted' },
        { machine: 'm2', updater: 'deaf', state: 'Unknown' },
      ],
    };
    expect(endNotes(aborted)).to.include.members([
      '  - m1: updater ntp-config (UpdaterUpdateTask/m1.ntp-config.1): not started, the machine was not touched',
      '  - m2: updater deaf: UNKNOWN state, it may be partly updated: check or replace the machine',
    ]);
  });

  it('lists plans with namespace, status, reason and the message of a plan that is not ready', () => {
    const a = plan();
    const b = plan({ metadata: { name: 'p0', namespace: 'fleet-b', creationTimestamp: ago(600) } });
    const out = renderPlanList([a, b], now, { allNamespaces: true, width: 160 }).split('\n');
    expect(out[0]).to.match(/^NAMESPACE\s+NAME\s+CLUSTER\s+STATUS\s+PROGRESS\s+REASON\s+AGE\s+MESSAGE$/);
    expect(out[1]).to.match(/^fleet-a\s+p1\s+c1\s+updating\s+4\/9\s+Updating\s+5m\s+updating machines$/);
    expect(out[2]).to.match(/^fleet-b\s+p0\s+/);
    expect(renderPlanList([a], now, { allNamespaces: false }).split('\n')[0]).to.match(/^NAME\s/);
  });

  it('renders hostile messages, reasons and names without any escape sequence or forged row', () => {
    const bad = `disk full\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x1b\\\nMachine/fake  updated\r\x9b31m`;
    const p = plan();
    p.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'Updating', message: bad, lastTransitionTime: ago(200) }];
    const out = renderTree(
      buildStatusTree(
        p,
        [
          mu('c1-md-0-a', 'c1-md-0', 'MachineDeployment', {
            updateStatus: 'failed',
            message: bad,
            tasks: [{ updater: 'os', apiVersion: 'v', kind: 'K\x1b[31m', name: 't', updateStatus: 'failed' }],
          }),
        ],
        now,
      ),
    );
    expect(out).to.not.match(CONTROL);
    expect(out).to.contain('disk full').and.to.contain('\\nMachine/fake  updated\\r');
    // One line per node: the header, the plan, three targets, one machine, one task.
    expect(out.trimEnd().split('\n')).to.have.length(7);
  });

  it('shows the maintenance window: open until when, and a closed window once (it is the Ready message)', () => {
    const open = plan();
    open.status!.maintenanceWindow = { state: 'Open', message: 'window open until Sun 02:00 Europe/Berlin (2026-11-29T01:00:00.000Z)' };
    expect(buildStatusTree(open, [], now).message).to.contain('window open until Sun 02:00 Europe/Berlin');
    const closed = plan();
    const msg = 'window closed until Sat 22:00 Europe/Berlin (2026-11-28T21:00:00.000Z)';
    closed.status!.maintenanceWindow = { state: 'Closed', message: msg };
    closed.status!.conditions = [
      { type: 'Ready', status: 'False', reason: 'WaitingForMaintenanceWindow', message: msg, lastTransitionTime: ago(200) },
    ];
    const node = buildStatusTree(closed, [], now);
    expect(node.reason).to.equal('WaitingForMaintenanceWindow');
    expect(node.message.split(msg)).to.have.length(2);
  });
});
