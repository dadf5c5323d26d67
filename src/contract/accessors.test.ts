import { expect } from 'chai';
import { Labels } from '../api/index.js';
import {
  buildGenericTask,
  buildTaskFromTemplate,
  isTaskTerminal,
  machineUpdateOwnerRef,
  owningMachineUpdate,
  taskKindOfTemplate,
  taskLabels,
  taskName,
  taskPhase,
  taskReadyMessage,
  taskStatus,
  toLabelValue,
  type Task,
} from './accessors.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const task = (generation: number | undefined, status?: Task['status'], phase?: 'updating' | 'aborting'): Task => ({
  metadata: { name: 't', ...(generation === undefined ? {} : { generation }) },
  spec: { machineRef: { name: 'm1' }, ...(phase ? { updatePhase: phase } : {}) },
  ...(status ? { status } : {}),
});

describe('contract accessors', () => {
  describe('taskName (C9)', () => {
    it('joins machine and updater with a dot and a hash of plan, machine and updater: readable and deterministic', () => {
      expect(taskName('p', 'cluster1-md-0-abc12', 'os-updater')).to.match(/^cluster1-md-0-abc12\.os-updater\.[0-9a-f]{8}$/);
      expect(taskName('p', 'm1', 'u')).to.equal(taskName('p', 'm1', 'u'));
    });
    it('differs per plan, so that two plans never share a task', () => {
      expect(taskName('p1', 'm1', 'u')).to.not.equal(taskName('p2', 'm1', 'u'));
    });
    it('does not collide when a dash or a dot moves between the parts', () => {
      expect(taskName('p', 'a-b', 'c')).to.not.equal(taskName('p', 'a', 'b-c'));
      expect(taskName('p', 'a.b', 'c')).to.not.equal(taskName('p.a', 'b', 'c'));
    });
    const long = 'm'.repeat(250);
    for (const [machine, updater] of [
      [long, 'os-updater'],
      [`${'a.'.repeat(125)}b`, 'version-updater'],
      ['x'.repeat(253), 'y'.repeat(63)],
    ] as const) {
      it(`stays a DNS-1123 subdomain of at most 253 characters for a ${machine.length}-character machine name`, () => {
        const n = taskName('p'.repeat(253), machine, updater);
        expect(n.length).to.be.at.most(253);
        expect(n).to.match(DNS_SUBDOMAIN);
        expect(n).to.equal(taskName('p'.repeat(253), machine, updater));
      });
    }
    it('gives different names to different long inputs sharing a prefix', () => {
      expect(taskName('p', `${long}a`, 'u')).to.not.equal(taskName('p', `${long}b`, 'u'));
    });
  });

  describe('taskStatus (C5)', () => {
    const cases: [string, Task, boolean][] = [
      ['current when observedGeneration equals generation', task(2, { updateStatus: 'updating', observedGeneration: 2 }), true],
      ['current when observedGeneration is ahead', task(2, { updateStatus: 'updating', observedGeneration: 3 }), true],
      ['ignored when observedGeneration is behind', task(3, { updateStatus: 'updated', observedGeneration: 2 }), false],
      ['ignored when observedGeneration is missing', task(1, { updateStatus: 'updated' }), false],
      ['ignored when there is no status', task(1), false],
      [
        'current against generation 1 when the server reports none',
        task(undefined, { updateStatus: 'failed', observedGeneration: 1 }),
        true,
      ],
    ];
    for (const [name, t, current] of cases) {
      it(`is ${name}`, () => {
        expect(taskStatus(t) !== undefined).to.equal(current);
      });
    }
    it('makes a terminal status behind the generation not terminal', () => {
      expect(isTaskTerminal(task(2, { updateStatus: 'updated', observedGeneration: 1 }))).to.equal(false);
      expect(isTaskTerminal(task(2, { updateStatus: 'updated', observedGeneration: 2 }))).to.equal(true);
      expect(isTaskTerminal(task(2, { updateStatus: 'updating', observedGeneration: 2 }))).to.equal(false);
    });
  });

  it('reads the phase, defaulting to updating (C2)', () => {
    expect(taskPhase(task(1))).to.equal('updating');
    expect(taskPhase(task(1, undefined, 'aborting'))).to.equal('aborting');
  });

  it("reads the Ready condition's message (C6)", () => {
    const t = task(1, {
      updateStatus: 'failed',
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: 'False', reason: 'Failed', message: 'disk full', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    });
    expect(taskReadyMessage(t)).to.equal('disk full');
    expect(taskReadyMessage(task(1))).to.equal(undefined);
  });

  describe('template kinds', () => {
    for (const [tpl, kind] of [
      ['OSImageUpdateTaskTemplate', 'OSImageUpdateTask'],
      ['FooTemplate', 'Foo'],
    ]) {
      it(`maps ${tpl} to ${kind}`, () => expect(taskKindOfTemplate(tpl!)).to.equal(kind));
    }
    for (const bad of ['Foo', 'Template', 'FooTemplates']) {
      it(`rejects ${bad}`, () => expect(() => taskKindOfTemplate(bad)).to.throw(/must end in "Template"/));
    }
  });

  it('keeps short label values and shortens long ones to valid, stable values', () => {
    expect(toLabelValue('m1')).to.equal('m1');
    const v = toLabelValue('a'.repeat(100));
    expect(v.length).to.be.at.most(63);
    expect(v).to.equal(toLabelValue('a'.repeat(100)));
    expect(v).to.not.equal(toLabelValue(`${'a'.repeat(99)}b`));
  });

  describe('building tasks', () => {
    const mu = {
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineUpdate',
      metadata: { name: 'mu1', namespace: 'ns', uid: 'uid-1' },
    };
    const inputs = {
      name: taskName('p1', 'm1', 'os'),
      namespace: 'ns',
      labels: taskLabels({ cluster: 'c1', plan: 'p1', machine: 'm1', updater: 'os' }),
      owner: machineUpdateOwnerRef(mu),
      updatePhase: 'updating' as const,
      machineName: 'm1',
      responsibilities: [{ selectResource: 'InfraMachine' as const, path: '/spec/image', value: 'img-2' }],
    };

    it('builds a generic task with the contract labels, controller owner and spec (C1-C3)', () => {
      const t = buildGenericTask({ ...inputs, updaterName: 'os', parameters: { durationSeconds: 0 } });
      expect(t.kind).to.equal('UpdaterUpdateTask');
      expect(t.metadata.labels).to.deep.equal({
        [Labels.clusterName]: 'c1',
        [Labels.planName]: 'p1',
        [Labels.machineName]: 'm1',
        [Labels.updaterName]: 'os',
      });
      expect(t.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
          kind: 'MachineUpdate',
          name: 'mu1',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(t.spec).to.deep.equal({
        updaterName: 'os',
        updatePhase: 'updating',
        machineRef: { name: 'm1' },
        responsibilities: inputs.responsibilities,
        parameters: { durationSeconds: 0 },
      });
      expect(owningMachineUpdate(t)).to.equal('mu1');
    });

    it('copies spec.template.spec from a template and lets the contract fields win', () => {
      const template = {
        apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1',
        kind: 'OSImageUpdateTaskTemplate',
        metadata: { name: 'tpl' },
        spec: {
          template: {
            metadata: { labels: { team: 'os', [Labels.updaterName]: 'spoofed' } },
            spec: { rebootTimeoutSeconds: 60, machineRef: { name: 'other' } },
          },
        },
      };
      const t = buildTaskFromTemplate(template, inputs);
      expect(t.apiVersion).to.equal('samples.inplace.cluster.x-k8s.io/v1alpha1');
      expect(t.kind).to.equal('OSImageUpdateTask');
      expect(t.spec).to.deep.equal({
        rebootTimeoutSeconds: 60,
        updatePhase: 'updating',
        machineRef: { name: 'm1' },
        responsibilities: inputs.responsibilities,
      });
      expect(t.metadata.labels?.team).to.equal('os');
      expect(t.metadata.labels?.[Labels.updaterName]).to.equal('os');
      expect(template.spec.template.spec.machineRef.name).to.equal('other');
    });
  });
});
