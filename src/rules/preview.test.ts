import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import type { OpenApiSchema, PreviewSnapshot } from './preview.js';
import { impossiblePathReason, previewPlan } from './preview.js';
import { NS, machine, machines, md, mu, plan, snapshot, target, versionUpdater } from '../plan-controller/testkit.js';

const osRef = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-task' };
const base = (): PreviewSnapshot => {
  const s = snapshot();
  return { ...s, templates: [{ ref: osRef, found: true, bytes: 100 }] };
};
const devMachine = (name: string, image: string): KubeObject => ({
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
  kind: 'DevMachine',
  metadata: { name, namespace: NS },
  spec: { backend: { docker: { customImage: image } } },
});
const devTemplate = (name: string, image: string): KubeObject => ({
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
  kind: 'DevMachineTemplate',
  metadata: { name, namespace: NS },
  spec: { template: { spec: { backend: { docker: { customImage: image } } } } },
});
const withInfra = (m: KubeObject, infra: string): KubeObject => ({
  ...m,
  spec: { ...(m.spec as object), infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: infra } },
});

describe('plan-controller previewPlan', () => {
  it('groups targets by sequence with machines in update order and the updaters in run order', () => {
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({ name: 'k8s', sequence: 2 }),
        versionUpdater({
          name: 'os',
          sequence: 1,
          updaterUpdateTemplateRef: osRef,
          responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'img-2' }],
        }),
      ]),
      mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)],
    });
    const s = {
      ...base(),
      plan: p,
      mds: [md('cluster1-md-0'), md('cluster1-md-1', { maxUnavailable: 0 })],
      machineDeployments: [md('cluster1-md-0'), md('cluster1-md-1', { maxUnavailable: 0 })],
      machines: [
        ...machines('cluster1-cp', 3, { cp: 'cluster1-cp', version: 'v1.30.1' }),
        ...machines('cluster1-md-0', 2, { md: 'cluster1-md-0' }),
        ...machines('cluster1-md-1', 2, { md: 'cluster1-md-1' }),
      ],
    };
    const r = previewPlan(p, s);
    expect(r.valid).to.equal(true);
    expect(r.groups.map((g) => [g.sequence, g.targets.map((t) => t.name)])).to.deep.equal([
      [1, ['cluster1-cp']],
      [2, ['cluster1-md-0', 'cluster1-md-1']],
    ]);
    const cp = r.groups[0]!.targets[0]!;
    expect(cp.machines.map((m) => m.name)).to.deep.equal(['cluster1-cp-0', 'cluster1-cp-1', 'cluster1-cp-2']);
    expect(cp.concurrency).to.include({ max: 1, surge: false });
    expect(cp.updaters.map((u) => [u.name, u.taskKind])).to.deep.equal([
      ['os', 'OSImageUpdateTask'],
      ['k8s', 'UpdaterUpdateTask'],
    ]);
    const [md0, md1] = r.groups[1]!.targets;
    expect(md0!.concurrency).to.include({ max: 1, surge: false });
    expect(md0!.concurrency.why).to.match(/maxUnavailable=1/);
    expect(md1!.concurrency).to.include({ max: 1, surge: true });
    expect(md1!.concurrency.why).to.match(/surge/);
  });

  const concurrency: { name: string; mdOpts: Parameters<typeof md>[1]; max: number; why: RegExp }[] = [
    { name: 'an int maxUnavailable', mdOpts: { maxUnavailable: 2 }, max: 2, why: /maxUnavailable=2/ },
    { name: 'a percentage rounded down', mdOpts: { maxUnavailable: '50%', replicas: 5 }, max: 2, why: /50% of 5 replicas, rounded down/ },
    { name: 'the fencepost rule when both round to 0', mdOpts: { maxUnavailable: '10%', maxSurge: 0 }, max: 1, why: /fencepost/ },
  ];
  for (const c of concurrency) {
    it(`explains the MachineDeployment concurrency for ${c.name}`, () => {
      const s = { ...base(), machineDeployments: [md('cluster1-md-0', c.mdOpts)] };
      const t = previewPlan(s.plan, s).groups[1]!.targets[0]!;
      expect(t.concurrency.max).to.equal(c.max);
      expect(t.concurrency.why).to.match(c.why);
    });
  }

  it('lists which updater covers each responsibility', () => {
    const s = base();
    expect(previewPlan(s.plan, s).coverage).to.deep.include({
      target: 'cluster1-cp',
      selectResource: 'Machine',
      path: '/spec/version',
      value: 'v1.30.1',
      updater: 'version',
    });
  });

  it('flags machines whose owner wants another Kubernetes version when no updater covers Machine /spec/version (fail-closed)', () => {
    // /spec/readinessGates: a Machine field the KCP's machine template carries, so only the version is uncovered.
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({
          responsibilities: [{ selectResource: 'Machine', path: '/spec/readinessGates', value: [{ conditionType: 'Ready' }] }],
        }),
      ]),
      mds: [],
    });
    const s = { ...base(), plan: p, machines: [machine('cluster1-cp-0', { cp: 'cluster1-cp', version: 'v1.29.0' })] };
    const r = previewPlan(p, s);
    expect(r.valid).to.equal(false);
    expect(r.problems.join('\n')).to.match(
      /cluster1-cp: Machine \/spec\/version is uncovered on 1 machine\(s\) \(cluster1-cp-0 has v1\.29\.0, its owner wants v1\.30\.0\)/,
    );
    p.spec.acceptUncoveredChanges = true;
    expect(previewPlan(p, { ...s, plan: p }).valid).to.equal(true);
    expect(r.uncovered).to.deep.equal([
      {
        target: 'cluster1-cp',
        machine: 'cluster1-cp-0',
        selectResource: 'Machine',
        path: '/spec/version',
        current: 'v1.29.0',
        desired: 'v1.30.0',
        why: 'the owner wants another Kubernetes version and no updater declares Machine /spec/version',
      },
    ]);
  });

  it("does not flag a version difference an updater covers, but warns when the plan value differs from the owner's", () => {
    const s = base();
    const r = previewPlan(s.plan, s);
    expect(r.uncovered).to.deep.equal([]);
    expect(r.warnings.join('\n')).to.match(/sets Machine \/spec\/version to v1.30.1 but the control plane spec.version is v1.30.0/);
  });

  it('flags InfraMachine fields that differ from the owner template and no updater covers', () => {
    const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
    const owner = md('cluster1-md-0');
    (owner.spec as { template: { spec: Record<string, unknown> } }).template.spec.infrastructureRef = {
      apiGroup: 'infrastructure.cluster.x-k8s.io',
      kind: 'DevMachineTemplate',
      name: 'md-tpl',
    };
    const s: PreviewSnapshot = {
      ...base(),
      plan: p,
      machineDeployments: [owner],
      machines: [withInfra(machine('cluster1-md-0-0', { md: 'cluster1-md-0' }), 'dm-0')],
      infraMachines: [devMachine('dm-0', 'old')],
      ownerTemplates: [devTemplate('md-tpl', 'new')],
    };
    const r = previewPlan(p, s);
    expect(r.uncovered.map((u) => [u.selectResource, u.path, u.current, u.desired])).to.deep.equal([
      ['InfraMachine', '/spec/backend/docker/customImage', 'old', 'new'],
    ]);
    const covered = plan({
      cp: null,
      mds: [
        target('cluster1-md-0', 2, [
          versionUpdater(),
          versionUpdater({
            name: 'os',
            sequence: 2,
            responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker', value: { customImage: 'new' } }],
          }),
        ]),
      ],
    });
    expect(previewPlan(covered, { ...s, plan: covered }).uncovered).to.deep.equal([]);
  });

  it('shows machines already done when the plan exists in the cluster', () => {
    const s = { ...base(), machineUpdates: [mu('cluster1-cp-0', 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })] };
    expect(previewPlan(s.plan, s).groups[0]!.targets[0]!.machines.map((m) => m.state)).to.deep.equal([
      'updated',
      'notStarted',
      'notStarted',
    ]);
  });

  it('warns that applying the plan supersedes an active plan of the same cluster', () => {
    const running = plan({ name: 'running', created: '2025-01-01T00:00:00Z', status: { updateStatus: 'updating' } });
    const draft = plan({ name: 'draft' });
    delete draft.metadata!.creationTimestamp;
    const s = { ...base(), plans: [running, plan({ name: 'old-done', status: { updateStatus: 'updated' } })] };
    expect(previewPlan(draft, s).warnings.join('\n')).to.match(
      /plan running of cluster cluster1 is updating: this plan waits until it is terminal, and aborts it \(supersede\)/,
    );
    expect(previewPlan(draft, s).warnings.join('\n')).to.not.match(/old-done/);
  });

  it('reports the validation problems of an invalid plan', () => {
    const s = { ...base(), machineDeployments: [] };
    const r = previewPlan(s.plan, s);
    expect(r.valid).to.equal(false);
    expect(r.problems.join('\n')).to.match(/cluster1-md-0 not found/);
  });

  describe('impossible paths', () => {
    const schema: OpenApiSchema = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            image: { type: 'string' },
            ntp: { type: 'object', properties: { servers: { type: 'array', items: { type: 'string' } } } },
            extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            labels: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
      },
    };
    const table: { path: string; impossible: boolean }[] = [
      { path: '/spec/image', impossible: false },
      { path: '/spec/imagee', impossible: true },
      { path: '/spec/image/x', impossible: true },
      { path: '/spec/ntp/servers/0', impossible: false },
      { path: '/spec/ntp/servers/first', impossible: true },
      { path: '/spec/extra/anything/deep', impossible: false },
      { path: '/spec/labels/any', impossible: false },
      { path: '/metadata/labels/x', impossible: false },
    ];
    for (const c of table) {
      it(`${c.impossible ? 'flags' : 'accepts'} ${c.path}`, () => {
        expect(impossiblePathReason(schema, c.path) !== undefined).to.equal(c.impossible);
      });
    }
    it('flags a Machine spec field Cluster API does not have, without a schema', () => {
      const p = plan({
        cp: target('cluster1-cp', 1, [
          versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/image', value: 'x' }] }),
        ]),
        mds: [],
      });
      const s = { ...base(), plan: p };
      expect(previewPlan(p, s).impossiblePaths.map((i) => i.path)).to.deep.equal(['/spec/image']);
    });
  });
});
