import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { Annotations, Labels, PlanAnnotations } from '../api/index.js';
import type { PlanDecision } from './decide.js';
import { decidePlan } from './decide.js';
import { INVALID_SETTLE_MS } from './status.js';
import { orderedUpdaters } from '../api/index.js';
import { labelValue, machineUpdateName } from './decide/names.js';
import type { SnapOpts } from './testkit.js';
import {
  NOW,
  cpDone,
  cpUpdated,
  kcp,
  machine,
  machines,
  md,
  mdMachines,
  mdOnly,
  mu,
  plan,
  snapshot,
  started,
  target,
  versionUpdater,
} from './testkit.js';

const cpMachines = (o: { ready?: boolean } = {}): KubeObject[] => machines('cluster1-cp', 3, { cp: 'cluster1-cp', ...o });
const cond = (d: PlanDecision, type: string) => d.status.conditions?.find((c) => c.type === type);
const row = (d: PlanDecision, name: string) => d.status.targets?.find((t) => t.name === name);
const starts = (d: PlanDecision): string[] => d.create.map((c) => c.machine);

describe('plan-controller decidePlan', () => {
  describe('next machines to start', () => {
    const table: { name: string; snap: SnapOpts; starts: string[]; message?: RegExp }[] = [
      { name: 'a fresh plan starts the first control-plane machine only', snap: {}, starts: ['cluster1-cp-0'] },
      {
        name: 'the control plane goes one machine at a time',
        snap: { mus: [mu('cluster1-cp-0', 'updating', { kind: 'ControlPlane', target: 'cluster1-cp' })] },
        starts: [],
        message: /machine cluster1-cp-0 is in update/,
      },
      {
        name: 'the next control-plane machine follows name order',
        snap: { mus: [mu('cluster1-cp-0', 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })] },
        starts: ['cluster1-cp-1'],
      },
      {
        name: 'control-plane preflight waits for every CP machine Ready',
        snap: {
          machines: [...machines('cluster1-cp', 2, { cp: 'cluster1-cp' }), machine('cluster1-cp-2', { cp: 'cluster1-cp', ready: false })],
        },
        starts: [],
        message: /preflight: machine cluster1-cp-2 is not Ready/,
      },
      {
        name: 'control-plane preflight waits while a CP machine is deleting',
        snap: { machines: [...cpMachines(), machine('cluster1-cp-9', { cp: 'cluster1-cp', deleting: true })] },
        starts: [],
        message: /cluster1-cp-9 is being deleted/,
      },
      {
        name: 'control-plane preflight waits until every replica exists',
        snap: { machines: machines('cluster1-cp', 2, { cp: 'cluster1-cp' }) },
        starts: [],
        message: /2 of 3 control-plane machines exist/,
      },
      {
        name: 'control-plane preflight waits for a machine in update by another plan',
        snap: {
          machines: [
            machine('cluster1-cp-0', { cp: 'cluster1-cp', labels: { [Labels.planName]: 'other' } }),
            ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }).slice(1),
          ],
        },
        starts: [],
        message: /in update by plan other/,
      },
      {
        name: 'MachineDeployments wait for the control plane (sequence groups)',
        snap: { mus: [mu('cluster1-cp-0', 'updating', { kind: 'ControlPlane', target: 'cluster1-cp' })] },
        starts: [],
      },
      { name: 'a MachineDeployment with maxUnavailable 1 starts one machine', snap: mdOnly(), starts: ['cluster1-md-0-0'] },
      {
        name: 'a MachineDeployment with maxUnavailable 2 starts two machines',
        snap: mdOnly({ mdOpts: { maxUnavailable: 2 } }),
        starts: ['cluster1-md-0-0', 'cluster1-md-0-1'],
      },
      {
        name: 'machines in update count as unavailable',
        snap: mdOnly({ mdOpts: { maxUnavailable: 2 }, mus: [mu('cluster1-md-0-0', 'updating')] }),
        starts: ['cluster1-md-0-1'],
      },
      {
        name: 'machines not Ready count as unavailable and are not started',
        snap: mdOnly({
          mdOpts: { maxUnavailable: 2 },
          machines: [machine('cluster1-md-0-0', { md: 'cluster1-md-0', ready: false }), ...mdMachines().slice(1)],
        }),
        starts: ['cluster1-md-0-1'],
      },
      {
        name: 'no budget left waits and says why',
        snap: mdOnly({ machines: [machine('cluster1-md-0-0', { md: 'cluster1-md-0', ready: false }), ...mdMachines().slice(1)] }),
        starts: [],
        message: /maxUnavailable=1; 1 machine\(s\) unavailable \(cluster1-md-0-0\)/,
      },
      {
        name: 'a percentage maxUnavailable rounds down (50% of 4 = 2)',
        snap: mdOnly({ mdOpts: { maxUnavailable: '50%', replicas: 4 }, machines: mdMachines(4) }),
        starts: ['cluster1-md-0-0', 'cluster1-md-0-1'],
      },
      {
        name: 'a percentage maxUnavailable rounds down (34% of 3 = 1)',
        snap: mdOnly({ mdOpts: { maxUnavailable: '34%' } }),
        starts: ['cluster1-md-0-0'],
      },
      {
        name: 'maxUnavailable and maxSurge both rounding to 0 allow one (k8s fenceposts)',
        snap: mdOnly({ mdOpts: { maxUnavailable: '10%', maxSurge: 0 } }),
        starts: ['cluster1-md-0-0'],
      },
      {
        name: 'updated, failed and aborted machines are not restarted',
        snap: mdOnly({
          failurePolicy: 'Continue',
          mdOpts: { maxUnavailable: 3 },
          mus: [mu('cluster1-md-0-0', 'updated'), mu('cluster1-md-0-1', 'failed')],
        }),
        starts: ['cluster1-md-0-2'],
      },
      {
        name: 'a machine added by a scale-up is updated too',
        snap: mdOnly({ mdOpts: { replicas: 4 }, machines: mdMachines(4), mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) }),
        starts: ['cluster1-md-0-3'],
      },
      {
        name: 'deleting machines are skipped',
        snap: mdOnly({ machines: [machine('cluster1-md-0-0', { md: 'cluster1-md-0', deleting: true }), ...mdMachines().slice(1)] }),
        starts: ['cluster1-md-0-1'],
      },
      {
        name: 'Halt: a failure stops new starts in the target',
        snap: mdOnly({ mdOpts: { maxUnavailable: 3 }, mus: [mu('cluster1-md-0-0', 'failed')] }),
        starts: [],
      },
      {
        name: 'Continue: other machines go on after a failure',
        snap: mdOnly({ failurePolicy: 'Continue', mus: [mu('cluster1-md-0-0', 'failed')] }),
        starts: ['cluster1-md-0-1'],
      },
      {
        name: 'Halt: a failed machine replaced since (MHC remediation) still halts the target',
        snap: mdOnly({ mus: [mu('cluster1-md-0-gone', 'failed')] }),
        starts: [],
        message: /halted/,
      },
      {
        name: 'Continue: a failed machine replaced since does not stop the others',
        snap: mdOnly({ failurePolicy: 'Continue', mus: [mu('cluster1-md-0-gone', 'failed')] }),
        starts: ['cluster1-md-0-0'],
      },
      {
        name: 'Continue: as many failures as machines halt the target (no endless remediation loop)',
        snap: mdOnly({ failurePolicy: 'Continue', mus: ['a', 'b', 'c'].map((x) => mu(`cluster1-md-0-gone-${x}`, 'failed')) }),
        starts: [],
        message: /as many as the target has machines|halted/,
      },
      {
        name: 'Halt: the failed update of a machine we aborted because it went away does not halt',
        snap: mdOnly({ mus: [mu('cluster1-md-0-gone', 'failed', { phase: 'aborting' })] }),
        starts: ['cluster1-md-0-0'],
      },
      { name: 'paused: no new starts', snap: mdOnly({ paused: true }), starts: [] },
      {
        name: 'equal sequences run in parallel',
        snap: {
          ...mdOnly(),
          plan: plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] }),
          mds: [md('cluster1-md-0'), md('cluster1-md-1')],
          machines: [...cpDone(), ...mdMachines(), ...mdMachines(3, 'cluster1-md-1')],
        },
        starts: ['cluster1-md-0-0', 'cluster1-md-1-0'],
      },
      {
        name: 'a higher sequence waits for the lower one to be updated',
        snap: {
          ...mdOnly(),
          plan: plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 3)] }),
          mds: [md('cluster1-md-0'), md('cluster1-md-1')],
          machines: [...cpDone(), ...mdMachines(), ...mdMachines(3, 'cluster1-md-1')],
        },
        starts: ['cluster1-md-0-0'],
      },
    ];
    for (const c of table) {
      it(c.name, () => {
        const d = decidePlan(snapshot(c.snap));
        expect(starts(d)).to.deep.equal(c.starts);
        if (c.message) expect((d.status.targets ?? []).map((t) => t.message ?? '').join('\n')).to.match(c.message);
      });
    }
  });

  describe('MachineUpdates and machine labels', () => {
    it('creates a MachineUpdate named <plan>-<machine>-<hash> with the ordered updaters, and labels the machine', () => {
      const p = plan({
        cp: target('cluster1-cp', 1, [
          versionUpdater({ name: 'b', sequence: 2 }),
          versionUpdater({
            name: 'a',
            sequence: 1,
            responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'x' }],
          }),
        ]),
      });
      const d = decidePlan(snapshot({ plan: p }));
      expect(d.create).to.have.length(1);
      expect(d.create[0]!.name).to.equal(machineUpdateName('p1', 'cluster1-cp-0'));
      expect(d.create[0]!.target).to.deep.equal({ kind: 'ControlPlane', name: 'cluster1-cp' });
      expect(d.create[0]!.updaters.map((u) => u.name)).to.deep.equal(['a', 'b']);
      expect(d.label).to.deep.equal([{ machine: 'cluster1-cp-0', startedAt: NOW }]);
      expect(d.finalizer).to.equal('add');
    });

    it('orders updaters by sequence, then name', () => {
      expect(
        orderedUpdaters([
          versionUpdater({ name: 'z', sequence: 1 }),
          versionUpdater({ name: 'a', sequence: 2 }),
          versionUpdater({ name: 'b', sequence: 1 }),
        ]).map((u) => u.name),
      ).to.deep.equal(['b', 'z', 'a']);
    });

    it('labels a machine whose update is in flight but which lost its label (restart-safe)', () => {
      const d = decidePlan(
        snapshot({ plan: plan(started), mus: [mu('cluster1-cp-0', 'updating', { kind: 'ControlPlane', target: 'cluster1-cp' })] }),
      );
      expect(d.label.map((l) => l.machine)).to.deep.equal(['cluster1-cp-0']);
      expect(d.create).to.deep.equal([]);
    });

    it('unlabels a machine once its MachineUpdate is terminal', () => {
      const labelled = { labels: { [Labels.planName]: 'p1' }, annotations: { [Annotations.updateStartedAt]: NOW } };
      const d = decidePlan(
        snapshot({
          plan: plan(started),
          machines: [machine('cluster1-cp-0', { cp: 'cluster1-cp', ...labelled }), ...cpMachines().slice(1), ...mdMachines()],
          mus: [mu('cluster1-cp-0', 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })],
        }),
      );
      expect(d.unlabel).to.deep.equal(['cluster1-cp-0']);
      expect(starts(d)).to.deep.equal(['cluster1-cp-1']);
    });

    it('aborts the in-flight update of a machine that is being deleted', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            machines: [machine('cluster1-md-0-0', { md: 'cluster1-md-0', deleting: true }), ...mdMachines().slice(1)],
            mus: [mu('cluster1-md-0-0', 'updating')],
          }),
        ),
      );
      expect(d.abort).to.deep.equal([machineUpdateName('p1', 'cluster1-md-0-0')]);
      expect(starts(d)).to.deep.equal(['cluster1-md-0-1']);
    });

    it('uses a hashed label value for plan names longer than 63 characters', () => {
      const long = 'p'.repeat(80);
      expect(labelValue(long)).to.have.length.at.most(63);
      expect(labelValue(long)).to.not.equal(labelValue(`${long}x`));
    });
  });

  describe('surge for maxUnavailable 0', () => {
    const surgeAnn = { [Annotations.surgeOriginalReplicas]: '3', [Annotations.surgePlan]: 'p1' };
    it('scales the MachineDeployment up by one and remembers the original replicas', () => {
      const d = decidePlan(snapshot(mdOnly({ mdOpts: { maxUnavailable: 0 } })));
      expect(starts(d)).to.deep.equal([]);
      expect(d.scale).to.deep.equal([{ name: 'cluster1-md-0', replicas: 4, annotations: surgeAnn, kind: 'surge', resourceVersion: '7' }]);
    });
    it('waits for the extra machine to be Ready', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn },
            machines: [...mdMachines(), machine('cluster1-md-0-3', { md: 'cluster1-md-0', ready: false })],
          }),
        ),
      );
      expect(starts(d)).to.deep.equal([]);
      expect(d.scale).to.deep.equal([]);
    });
    it('updates one machine at a time once the extra machine is Ready', () => {
      const d = decidePlan(
        snapshot(mdOnly({ mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn }, machines: mdMachines(4) })),
      );
      expect(starts(d)).to.deep.equal(['cluster1-md-0-0']);
      const d2 = decidePlan(
        snapshot(
          mdOnly({
            mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn },
            machines: mdMachines(4),
            mus: [mu('cluster1-md-0-0', 'updating')],
          }),
        ),
      );
      expect(starts(d2)).to.deep.equal([]);
    });
    it('restores the replica count when every machine is updated, and only then reports the target updated', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn },
            machines: mdMachines(4),
            mus: [0, 1, 2, 3].map((i) => mu(`cluster1-md-0-${i}`, 'updated')),
          }),
        ),
      );
      expect(d.scale).to.deep.equal([
        {
          name: 'cluster1-md-0',
          replicas: 3,
          annotations: { [Annotations.surgeOriginalReplicas]: null, [Annotations.surgePlan]: null },
          kind: 'restore',
          resourceVersion: '7',
        },
      ]);
      expect(row(d, 'cluster1-md-0')!.updateStatus).to.equal('updating');
      expect(d.status.updateStatus).to.equal('updating');
      const after = decidePlan(
        snapshot(
          mdOnly({
            mdOpts: { maxUnavailable: 0, replicas: 3 },
            machines: [...mdMachines(3), machine('cluster1-md-0-3', { md: 'cluster1-md-0', deleting: true })],
            mus: [0, 1, 2, 3].map((i) => mu(`cluster1-md-0-${i}`, 'updated')),
          }),
        ),
      );
      expect(after.scale).to.deep.equal([]);
      expect(after.status.updateStatus).to.equal('updated');
    });
    it('reports the target updated only once the scale-down after the restore has settled', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            mdOpts: { maxUnavailable: 0, replicas: 3 },
            machines: mdMachines(4),
            mus: [0, 1, 2, 3].map((i) => mu(`cluster1-md-0-${i}`, 'updated')),
          }),
        ),
      );
      expect(row(d, 'cluster1-md-0')).to.include({ updateStatus: 'updating' });
      expect(row(d, 'cluster1-md-0')!.message).to.match(/waiting for 1 machine\(s\) to be removed/);
      expect(d.status.updateStatus).to.equal('updating');
    });
    it('restores the surge when the plan aborts', () => {
      const snap = snapshot(mdOnly({ mdOpts: { maxUnavailable: 0, replicas: 4, annotations: surgeAnn }, machines: mdMachines(4) }));
      snap.plan.spec.updatePhase = 'aborting';
      expect(decidePlan(snap).scale.map((s) => [s.kind, s.replicas])).to.deep.equal([['restore', 3]]);
    });
  });

  describe('status aggregation', () => {
    it('counts machines per target and reports progress U/N', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            failurePolicy: 'Continue',
            mus: [
              mu('cluster1-md-0-0', 'updated'),
              mu('cluster1-md-0-1', 'failed', { message: 'disk full' }),
              mu('cluster1-md-0-2', 'updating'),
            ],
          }),
        ),
      );
      expect(row(d, 'cluster1-cp')).to.include({ updateStatus: 'updated', machines: 3, updated: 3 });
      expect(row(d, 'cluster1-md-0')).to.include({ updateStatus: 'updating', machines: 3, updated: 1, failed: 1, updating: 1, aborted: 0 });
      expect(d.status).to.include({ progress: '4/6', machines: 6, updatedMachines: 4, updateStatus: 'updating' });
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Updating' });
    });
    it('is updated with Ready=True when every current machine is updated', () => {
      const d = decidePlan(snapshot(mdOnly({ mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) })));
      expect(d.status.updateStatus).to.equal('updated');
      expect(d.status.completionTime).to.equal(NOW);
      expect(cond(d, 'Ready')).to.include({ status: 'True', reason: 'Updated' });
      expect(cond(d, 'Failed')).to.include({ status: 'False', reason: 'Updated' });
      expect(cond(d, 'ControlPlaneUpdate')).to.include({ status: 'True' });
      expect(cond(d, 'MachineDeploymentUpdate')).to.include({ status: 'True' });
      expect(d.events.map((e) => e.reason)).to.include('PlanCompleted');
    });
    it('Halt: the plan fails once nothing is in flight, with the updater message', () => {
      const d = decidePlan(snapshot(mdOnly({ mus: [mu('cluster1-md-0-0', 'failed', { message: 'kubelet did not start' })] })));
      expect(row(d, 'cluster1-md-0')!.updateStatus).to.equal('failed');
      expect(d.status.updateStatus).to.equal('failed');
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Failed' });
      expect(cond(d, 'Ready')!.message).to.match(/kubelet did not start/);
      expect(cond(d, 'MachineDeploymentUpdate')).to.include({ status: 'False', reason: 'Failed' });
      // kubectl wait --for=condition=Failed returns.
      expect(cond(d, 'Failed')).to.include({ status: 'True', reason: 'Failed' });
      expect(cond(d, 'Failed')!.message).to.match(/kubelet did not start/);
    });
    it('Halt: the plan keeps updating while another machine is still in flight', () => {
      const d = decidePlan(
        snapshot(mdOnly({ mdOpts: { maxUnavailable: 2 }, mus: [mu('cluster1-md-0-0', 'failed'), mu('cluster1-md-0-1', 'updating')] })),
      );
      expect(d.status.updateStatus).to.equal('updating');
      expect(row(d, 'cluster1-md-0')!.message).to.match(/halted/);
    });
    it('Continue: the plan fails only once every machine is done', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            failurePolicy: 'Continue',
            mus: [mu('cluster1-md-0-0', 'failed'), mu('cluster1-md-0-1', 'updated'), mu('cluster1-md-0-2', 'updated')],
          }),
        ),
      );
      expect(d.status.updateStatus).to.equal('failed');
    });
    it('Continue: a target whose current machines are all updated is updated despite an earlier failure of a replaced machine', () => {
      const d = decidePlan(
        snapshot(
          mdOnly({
            failurePolicy: 'Continue',
            mus: [mu('cluster1-md-0-gone', 'failed'), ...[0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated'))],
          }),
        ),
      );
      expect(row(d, 'cluster1-md-0')).to.include({ updateStatus: 'updated', failed: 1 });
      expect(d.status.updateStatus).to.equal('updated');
    });
    it('a failed control plane blocks the MachineDeployments and fails the plan', () => {
      const d = decidePlan(
        snapshot({ plan: plan(started), mus: [mu('cluster1-cp-0', 'failed', { kind: 'ControlPlane', target: 'cluster1-cp' })] }),
      );
      expect(d.status.updateStatus).to.equal('failed');
      expect(row(d, 'cluster1-md-0')!.updateStatus).to.equal('pending');
    });
    it('keeps a terminal status and starts nothing when machines appear later', () => {
      const done = { ...started, status: { updateStatus: 'updated' as const, startTime: 'x', completionTime: 'y', progress: '6/6' } };
      const d = decidePlan(snapshot({ ...mdOnly(), plan: plan(done), mus: cpUpdated() }));
      expect(d.create).to.deep.equal([]);
      expect(d.status).to.include({ updateStatus: 'updated', progress: '6/6', completionTime: 'y' });
    });
  });

  describe('validation', () => {
    it('an invalid plan gets Valid=False with every problem and touches nothing', () => {
      const d = decidePlan(snapshot({ kcp: null, mds: [] }));
      expect(d.status.updateStatus).to.equal('pending');
      expect(cond(d, 'Valid')).to.include({ status: 'False', reason: 'Invalid' });
      expect(cond(d, 'Valid')!.message)
        .to.match(/KubeadmControlPlane fleet-a\/cluster1-cp not found/)
        .and.match(/cluster1-md-0 not found/);
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Invalid' });
      expect([d.create, d.label, d.scale, d.supersede, d.abort]).to.deep.equal([[], [], [], [], []]);
      expect(d.finalizer).to.equal(undefined);
      expect(d.events.map((e) => e.reason)).to.deep.equal(['PlanInvalid']);
    });
    it('a target whose object does not exist is pending and says so, never "updated 0/0"', () => {
      const d = decidePlan(snapshot({ kcp: null, mds: [] }));
      for (const name of ['cluster1-cp', 'cluster1-md-0']) {
        expect(row(d, name)).to.include({ updateStatus: 'pending' });
        expect(row(d, name)!.message).to.match(/not found/);
      }
    });
    it('starts once the missing objects appear (re-validated every reconcile)', () => {
      const invalid = decidePlan(snapshot({ kcp: null }));
      const snap = snapshot({ kcp: kcp() });
      snap.plan.status = invalid.status;
      const d = decidePlan(snap);
      expect(cond(d, 'Valid')).to.include({ status: 'True' });
      expect(starts(d)).to.deep.equal(['cluster1-cp-0']);
    });
    it('a started plan that becomes invalid starts nothing new, keeps its in-flight machines and says why', () => {
      const d = decidePlan(snapshot({ ...mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }), kcp: null }));
      expect(d.create).to.deep.equal([]);
      expect(d.abort).to.deep.equal([]);
      expect(d.status.updateStatus).to.equal('updating');
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Invalid' });
      expect(cond(d, 'Ready')!.message).to.match(/no new machines start until the plan is valid again/);
    });
    describe('an invalid plan ends (Failed=True reason Invalid), final for its generation', () => {
      const later = (ms: number): string => new Date(Date.parse(NOW) + ms).toISOString().replace('.000', '');
      /** Reconciles `snap` again at `now` on top of the status `prev` left (a later reconcile of the same plan). */
      const again = (prev: PlanDecision, now: string, o: SnapOpts = {}, generation = 1): PlanDecision => {
        const snap = { ...snapshot(o), now };
        snap.plan.status = prev.status;
        snap.plan.metadata!.generation = generation;
        return decidePlan(snap);
      };
      it('stays open while objects applied with it may still appear, then ends having touched nothing', () => {
        const first = decidePlan(snapshot({ kcp: null }));
        expect(cond(first, 'Failed')).to.include({ status: 'False' });
        const soon = again(first, later(INVALID_SETTLE_MS - 1000), { kcp: null });
        expect(cond(soon, 'Failed')).to.include({ status: 'False' });
        const d = again(soon, later(INVALID_SETTLE_MS), { kcp: null });
        expect(cond(d, 'Failed')).to.include({ status: 'True', reason: 'Invalid', observedGeneration: 1 });
        expect(cond(d, 'Failed')!.message).to.match(
          /ended invalid and touched nothing: .*cluster1-cp not found.*apply a corrected plan under a new name/,
        );
        expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Invalid' });
        expect(d.status.updateStatus).to.equal('pending');
        expect([d.create, d.label, d.scale, d.supersede, d.abort]).to.deep.equal([[], [], [], [], []]);
        expect(d.finalizer).to.equal(undefined);
      });
      it('an object appearing later does not start a plan that ended; a new generation is validated again', () => {
        const first = decidePlan(snapshot({ kcp: null }));
        const ended = again(first, later(INVALID_SETTLE_MS), { kcp: null });
        const appeared = again(ended, later(INVALID_SETTLE_MS + 5000), { kcp: kcp() });
        expect(cond(appeared, 'Failed')).to.include({ status: 'True', reason: 'Invalid' });
        expect(cond(appeared, 'Valid')).to.include({ status: 'False' });
        expect(cond(appeared, 'Valid')!.message).to.match(/cluster1-cp not found/);
        expect(appeared.create).to.deep.equal([]);
        const edited = again(appeared, later(INVALID_SETTLE_MS + 6000), { kcp: kcp() }, 2);
        expect(cond(edited, 'Valid')).to.include({ status: 'True' });
        expect(cond(edited, 'Failed')).to.include({ status: 'False', observedGeneration: 2 });
        expect(starts(edited)).to.deep.equal(['cluster1-cp-0']);
      });
      it('an edit that leaves the plan invalid ends it again at once (it already had its time)', () => {
        const ended = again(decidePlan(snapshot({ kcp: null })), later(INVALID_SETTLE_MS), { kcp: null });
        const edited = again(ended, later(INVALID_SETTLE_MS + 1000), { kcp: null }, 2);
        expect(cond(edited, 'Failed')).to.include({ status: 'True', reason: 'Invalid', observedGeneration: 2 });
      });
      it('stays Failed=True reason Invalid when a newer plan supersedes it afterwards (it never started)', () => {
        const ended = again(decidePlan(snapshot({ kcp: null })), later(INVALID_SETTLE_MS), { kcp: null });
        const snap = {
          ...snapshot({ kcp: null, plan: plan({ phase: 'aborting', annotations: { [PlanAnnotations.supersededBy]: 'p2' } }) }),
          now: later(INVALID_SETTLE_MS + 1000),
        };
        snap.plan.status = ended.status;
        snap.plan.metadata!.generation = 2;
        const d = decidePlan(snap);
        expect(d.status.updateStatus).to.equal('aborted');
        expect(cond(d, 'Ready')).to.include({ reason: 'Superseded' });
        expect(cond(d, 'Failed')).to.include({ status: 'True', reason: 'Invalid' });
      });
      it('a started plan that becomes invalid holds and never ends here (it may be fixed or aborted)', () => {
        const o = { ...mdOnly({ mus: [mu('cluster1-md-0-0', 'updated')] }), kcp: null };
        const first = decidePlan(snapshot(o));
        const d = again(first, later(INVALID_SETTLE_MS * 10), o);
        expect(cond(d, 'Failed')).to.include({ status: 'False' });
        expect(d.status.updateStatus).to.equal('updating');
      });
    });
    it('an OnDelete MachineDeployment makes the plan invalid before anything is touched', () => {
      const d = decidePlan(snapshot({ mds: [md('cluster1-md-0', { strategy: 'OnDelete' })] }));
      expect(cond(d, 'Valid')!.message).to.match(/OnDelete/);
      expect(d.create).to.deep.equal([]);
    });
  });

  describe('one active plan per cluster', () => {
    const older = plan({ name: 'old', created: '2025-12-31T00:00:00Z', ...started });
    it('a newer plan supersedes an updating older one and waits', () => {
      const p = plan();
      const d = decidePlan(snapshot({ plan: p, plans: [older, p] }));
      expect(d.supersede).to.deep.equal(['old']);
      expect(d.create).to.deep.equal([]);
      expect(d.status.updateStatus).to.equal('pending');
      expect(cond(d, 'Ready')).to.include({ reason: 'WaitingForPreviousPlan' });
      expect(d.events.filter((e) => e.plan === 'old').map((e) => e.reason)).to.deep.equal(['Superseded']);
    });
    it('the newer plan keeps waiting while the older one is aborting, without superseding it again', () => {
      const p = plan();
      const aborting = plan({ name: 'old', created: '2025-12-31T00:00:00Z', phase: 'aborting', status: { updateStatus: 'aborting' } });
      const d = decidePlan(snapshot({ plan: p, plans: [aborting, p] }));
      expect(d.supersede).to.deep.equal([]);
      expect(d.create).to.deep.equal([]);
    });
    it('the newer plan starts once the older one is terminal', () => {
      const p = plan();
      const done = plan({ name: 'old', created: '2025-12-31T00:00:00Z', status: { updateStatus: 'aborted' } });
      expect(starts(decidePlan(snapshot({ plan: p, plans: [done, p] })))).to.deep.equal(['cluster1-cp-0']);
    });
    it('an invalid newer plan does not supersede anything', () => {
      const p = plan();
      expect(decidePlan(snapshot({ plan: p, plans: [older, p], kcp: null })).supersede).to.deep.equal([]);
    });
    it('plans created in the same second are ordered by name', () => {
      const a = plan({ name: 'a' });
      const b = plan({ name: 'b' });
      expect(decidePlan(snapshot({ plan: b, plans: [a, b] })).supersede).to.deep.equal(['a']);
      expect(decidePlan(snapshot({ plan: a, plans: [a, b] })).supersede).to.deep.equal([]);
    });
    it('a superseded plan reports reason Superseded while it aborts', () => {
      const p = plan({ ...started, phase: 'aborting', annotations: { [PlanAnnotations.supersededBy]: 'p2' } });
      const d = decidePlan(snapshot({ plan: p, mus: [mu('cluster1-cp-0', 'updating', { kind: 'ControlPlane', target: 'cluster1-cp' })] }));
      expect(cond(d, 'Ready')).to.include({ reason: 'Superseded' });
      expect(cond(d, 'Ready')!.message).to.match(/superseded by plan p2/);
    });
  });

  describe('abort and deletion', () => {
    const aborting = (o: { deleting?: boolean } = {}) => plan({ ...started, phase: 'aborting', ...o });
    it('aborting moves every in-flight MachineUpdate to aborting and starts nothing', () => {
      const d = decidePlan(
        snapshot({
          ...mdOnly({
            mdOpts: { maxUnavailable: 3 },
            mus: [mu('cluster1-md-0-0', 'updating'), mu('cluster1-md-0-1', ''), mu('cluster1-md-0-2', 'updated')],
          }),
          plan: aborting(),
        }),
      );
      expect(d.abort).to.deep.equal([machineUpdateName('p1', 'cluster1-md-0-0'), machineUpdateName('p1', 'cluster1-md-0-1')]);
      expect(d.create).to.deep.equal([]);
      expect(d.status.updateStatus).to.equal('aborting');
    });
    it('does not re-send aborting to a MachineUpdate that already has it', () => {
      const d = decidePlan(snapshot({ ...mdOnly({ mus: [mu('cluster1-md-0-0', 'aborting', { phase: 'aborting' })] }), plan: aborting() }));
      expect(d.abort).to.deep.equal([]);
    });
    it('is aborted once every MachineUpdate is terminal', () => {
      const d = decidePlan(
        snapshot({ ...mdOnly({ mus: [mu('cluster1-md-0-0', 'aborted'), mu('cluster1-md-0-1', 'updated')] }), plan: aborting() }),
      );
      expect(d.status.updateStatus).to.equal('aborted');
      expect(row(d, 'cluster1-md-0')!.updateStatus).to.equal('aborted');
      expect(cond(d, 'Ready')).to.include({ status: 'False', reason: 'Aborted' });
    });
    it('is aborted at once when nothing had started', () => {
      const d = decidePlan(snapshot({ plan: plan({ phase: 'aborting' }) }));
      expect(d.status.updateStatus).to.equal('aborted');
      expect(d.create).to.deep.equal([]);
    });
    it('ends updated when the abort arrives after the last machine finished', () => {
      const d = decidePlan(snapshot({ ...mdOnly({ mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) }), plan: aborting() }));
      expect(d.status.updateStatus).to.equal('updated');
    });
    it('deleting an in-progress plan aborts first and keeps the finalizer', () => {
      const d = decidePlan(
        snapshot({ ...mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }), plan: plan({ ...started, deleting: true }) }),
      );
      expect(d.abort).to.deep.equal([machineUpdateName('p1', 'cluster1-md-0-0')]);
      expect(d.finalizer).to.equal(undefined);
      expect(cond(d, 'Ready')).to.include({ reason: 'Deleting' });
    });
    it('deleting releases the finalizer once everything is terminal and unlabelled', () => {
      const labelled = machine('cluster1-md-0-0', { md: 'cluster1-md-0', labels: { [Labels.planName]: 'p1' } });
      const withLabel = decidePlan(
        snapshot({
          ...mdOnly({ machines: [labelled, ...mdMachines().slice(1)], mus: [mu('cluster1-md-0-0', 'aborted')] }),
          plan: plan({ ...started, deleting: true }),
        }),
      );
      expect(withLabel.unlabel).to.deep.equal(['cluster1-md-0-0']);
      expect(withLabel.finalizer).to.equal(undefined);
      const clean = decidePlan(
        snapshot({ ...mdOnly({ mus: [mu('cluster1-md-0-0', 'aborted')] }), plan: plan({ ...started, deleting: true }) }),
      );
      expect(clean.finalizer).to.equal('remove');
    });
  });

  describe('bounded messages (unbounded input never breaks the status write)', () => {
    const bytes = (s: string | undefined): number => Buffer.byteLength(s ?? '');
    const allMessages = (d: PlanDecision): string[] => [
      ...(d.status.conditions ?? []).map((c) => c.message ?? ''),
      ...(d.status.targets ?? []).map((t) => t.message ?? ''),
    ];

    it('200 missing MachineDeployments with long names: Valid=False names the first ones and counts the rest', () => {
      const names = Array.from({ length: 200 }, (_, i) => `md-${String(i).padStart(3, '0')}-${'x'.repeat(240)}`);
      const d = decidePlan(snapshot({ plan: plan({ mds: names.map((n) => target(n, 2)) }) }));
      const valid = cond(d, 'Valid')!;
      expect(valid.status).to.equal('False');
      expect(bytes(valid.message)).to.be.below(32768);
      expect(valid.message)
        .to.contain(names[0])
        .and.to.match(/\.\.\. and \d+ more$/);
      for (const m of allMessages(d)) expect(bytes(m)).to.be.below(32768);
      expect(d.create).to.deep.equal([]);
      // The Invalid Event carries the same text: repeats compare equal to the stored condition.
      const again = decidePlan(snapshot({ plan: plan({ mds: names.map((n) => target(n, 2)), status: d.status }) }));
      expect(again.events.filter((e) => e.reason === 'Invalid')).to.deep.equal([]);
    });

    it('Continue: 2,000 machines failing with 2 KB messages still report, bounded, with the counts', () => {
      const n = 2000;
      const ms = mdMachines(n);
      const failures = ms.map((m) => mu(m.metadata.name!, 'failed', { message: `updater version failed: ${'e'.repeat(2048)}` }));
      const d = decidePlan(snapshot(mdOnly({ failurePolicy: 'Continue', mdOpts: { replicas: n }, machines: ms, mus: failures })));
      expect(d.status.updateStatus).to.equal('failed');
      expect(row(d, 'cluster1-md-0')).to.include({ updateStatus: 'failed', failed: n, machines: n });
      for (const m of allMessages(d)) expect(bytes(m)).to.be.at.most(8192);
      expect(row(d, 'cluster1-md-0')!.message)
        .to.contain('cluster1-md-0-0: updater version failed')
        .and.to.match(/and \d+ more$/);
      expect(cond(d, 'Ready')!.message).to.contain('cluster1-md-0');
      for (const e of d.events) expect(bytes(e.message)).to.be.at.most(8192);
    });

    it('updater parameters nested deeper than 64 levels make the plan invalid: nothing is copied into a MachineUpdate', () => {
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 5000; i++) deep = { a: deep };
      const d = decidePlan(snapshot({ plan: plan({ mds: [target('cluster1-md-0', 2, [versionUpdater({ parameters: deep })])] }) }));
      expect(cond(d, 'Valid')).to.include({ status: 'False' });
      expect(cond(d, 'Valid')!.message).to.match(/updater version of cluster1-md-0: parameters are nested deeper than 64 levels/);
      expect(d.create).to.deep.equal([]);
      const ok = decidePlan(
        snapshot({ plan: plan({ mds: [target('cluster1-md-0', 2, [versionUpdater({ parameters: { a: { b: [1, { c: 2 }] } } })])] }) }),
      );
      expect(cond(ok, 'Valid')).to.include({ status: 'True' });
    });

    it('a MachineDeployment with thousands of machines in update names the first ones', () => {
      const n = 3000;
      const ms = mdMachines(n);
      const d = decidePlan(
        snapshot(
          mdOnly({ mdOpts: { replicas: n, maxUnavailable: n }, machines: ms, mus: ms.map((m) => mu(m.metadata.name!, 'updating')) }),
        ),
      );
      expect(row(d, 'cluster1-md-0')!.message).to.match(
        /^3000 machine\(s\) in update: cluster1-md-0-0, cluster1-md-0-1, .*\.\.\. and \d+ more$/,
      );
      for (const m of allMessages(d)) expect(bytes(m)).to.be.at.most(8192);
    });
  });
});
