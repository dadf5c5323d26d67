import { expect } from 'chai';
import type { InPlaceUpdater, KubeObject, MachineUpdate } from '../api/index.js';
import {
  changedLeaves,
  coverObject,
  covers,
  decideCanUpdateMachine,
  decideCanUpdateMachineSet,
  decideUpdateMachine,
  desiredHash,
  desiredMismatches,
  machineUpdateName,
  updatersFor,
  type DesiredObjects,
} from './decide.js';
import { decodePatchBytes, type CanUpdateMachineRequest, type CanUpdateMachineSetRequest } from './hooks.js';

const updater = (
  name: string,
  sequence: number,
  coversList: InPlaceUpdater['spec']['covers'],
  extra: Partial<InPlaceUpdater['spec']> = {},
): InPlaceUpdater => ({
  apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
  kind: 'InPlaceUpdater',
  metadata: { name, namespace: 'ns' },
  spec: { sequence, covers: coversList, ...extra },
});
const k8s = updater('k8s', 10, [{ selectResource: 'Machine', path: '/spec/version' }]);
const os = updater('os', 20, [{ selectResource: 'InfraMachine', path: '/spec/image' }], { parameters: { durationSeconds: 1 } });

const machine = (version: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm1', namespace: 'ns' },
  spec: {
    clusterName: 'c1',
    version,
    bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'm1' } },
    ...extra,
  },
});
const infra = (image: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
  kind: 'DockerMachine',
  metadata: { name: 'm1', namespace: 'ns' },
  spec: { image, ...extra },
});

describe('runtime-extension decide: changes and coverage', () => {
  it('changed leaves: scalars, added and removed keys, arrays whole; metadata and status ignored', () => {
    const a = { metadata: { labels: { a: '1' } }, spec: { a: 1, b: { c: 2, d: [1, 2] }, gone: true }, status: { x: 1 } };
    const b = { metadata: { labels: { a: '2' } }, spec: { a: 2, b: { c: 2, d: [1, 3] }, added: 'x' }, status: { x: 2 } };
    expect(changedLeaves(a, b, '/spec')).to.deep.equal(['/spec/a', '/spec/added', '/spec/b/d', '/spec/gone']);
    expect(changedLeaves(a, a, '/spec')).to.deep.equal([]);
    expect(changedLeaves(undefined, { spec: { a: 1 } }, '/spec')).to.deep.equal(['/spec']);
  });

  it('a cover path covers itself and what is under it, token-wise', () => {
    const cases: [string, string, boolean][] = [
      ['/spec/version', '/spec/version', true],
      ['/spec/a', '/spec/a/b', true],
      ['/spec/a', '/spec/ab', false],
      ['/spec/a/b', '/spec/a', false],
    ];
    for (const [p, q, want] of cases) expect(covers(p, q), `${p} covers ${q}`).to.equal(want);
  });

  it('only covered changes get patch operations (add, replace, remove)', () => {
    const u = updater('u', 1, [{ selectResource: 'InfraMachine', path: '/spec/x' }]);
    const c = coverObject({ spec: { x: { a: 1, gone: 1 }, y: 1 } }, { spec: { x: { a: 2, b: 3 }, y: 2 } }, 'InfraMachine', '/spec', [u]);
    expect(c.uncovered).to.deep.equal(['/spec/y']);
    expect(c.patch).to.deep.equal([
      { op: 'replace', path: '/spec/x/a', value: 2 },
      { op: 'add', path: '/spec/x/b', value: 3 },
      { op: 'remove', path: '/spec/x/gone' },
    ]);
  });
});

describe('runtime-extension decide: CanUpdateMachine / CanUpdateMachineSet', () => {
  const req = (cur: [string, string], want: [string, string], extraMachine: Record<string, unknown> = {}): CanUpdateMachineRequest => ({
    current: { machine: machine(cur[0]), infrastructureMachine: infra(cur[1]) },
    desired: { machine: machine(want[0], extraMachine), infrastructureMachine: infra(want[1]) },
  });

  const cases: {
    name: string;
    req: CanUpdateMachineRequest;
    updaters: InPlaceUpdater[];
    machinePatch?: unknown;
    infraPatch?: unknown;
    message: RegExp;
  }[] = [
    {
      name: 'version change, covered by the k8s updater',
      req: req(['v1.30.0', 'img-a'], ['v1.31.0', 'img-a']),
      updaters: [k8s, os],
      machinePatch: [{ op: 'replace', path: '/spec/version', value: 'v1.31.0' }],
      message: /covered in place: Machine \/spec\/version \(k8s\)$/,
    },
    {
      name: 'two updaters covering two fields compose',
      req: req(['v1.30.0', 'img-a'], ['v1.31.0', 'img-b']),
      updaters: [k8s, os],
      machinePatch: [{ op: 'replace', path: '/spec/version', value: 'v1.31.0' }],
      infraPatch: [{ op: 'replace', path: '/spec/image', value: 'img-b' }],
      message: /Machine \/spec\/version \(k8s\); InfraMachine \/spec\/image \(os\)$/,
    },
    {
      name: 'a field nobody covers is left to the rollout (no patch for it)',
      req: req(['v1.30.0', 'img-a'], ['v1.31.0', 'img-a'], { minReadySeconds: 5 }),
      updaters: [k8s],
      machinePatch: [{ op: 'replace', path: '/spec/version', value: 'v1.31.0' }],
      message: /not covered: Machine \/spec\/minReadySeconds/,
    },
    {
      name: 'no updater registered: no patch at all',
      req: req(['v1.30.0', 'img-a'], ['v1.31.0', 'img-a']),
      updaters: [],
      message: /^no change covered in place; not covered: Machine \/spec\/version$/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const res = decideCanUpdateMachine(c.req, c.updaters);
      expect(res.status).to.equal('Success');
      expect(res.kind).to.equal('CanUpdateMachineResponse');
      expect(res.machinePatch && decodePatchBytes(res.machinePatch.patch)).to.deep.equal(c.machinePatch);
      expect(res.infrastructureMachinePatch && decodePatchBytes(res.infrastructureMachinePatch.patch)).to.deep.equal(c.infraPatch);
      expect(res.bootstrapConfigPatch).to.equal(undefined);
      if (res.machinePatch) expect(res.machinePatch.patchType).to.equal('JSONPatch');
      expect(res.message).to.match(c.message);
    });
  }

  it('MachineSet: covers written against /spec apply to spec.template.spec of the MachineSet and the templates', () => {
    const ms = (version: string) => ({
      kind: 'MachineSet',
      metadata: { name: 'ms', namespace: 'ns' },
      spec: { replicas: 3, template: { spec: { version } } },
    });
    const tpl = (image: string) => ({
      kind: 'DockerMachineTemplate',
      metadata: { name: 't', namespace: 'ns' },
      spec: { template: { spec: { image } } },
    });
    const r: CanUpdateMachineSetRequest = {
      current: { machineSet: ms('v1.30.0'), infrastructureMachineTemplate: tpl('a') },
      desired: {
        machineSet: { ...ms('v1.31.0'), spec: { replicas: 5, template: { spec: { version: 'v1.31.0' } } } },
        infrastructureMachineTemplate: tpl('b'),
      },
    };
    const res = decideCanUpdateMachineSet(r, [k8s, os]);
    expect(decodePatchBytes(res.machineSetPatch!.patch)).to.deep.equal([
      { op: 'replace', path: '/spec/template/spec/version', value: 'v1.31.0' },
    ]);
    expect(decodePatchBytes(res.infrastructureMachineTemplatePatch!.patch)).to.deep.equal([
      { op: 'replace', path: '/spec/template/spec/image', value: 'b' },
    ]);
    // replicas is outside spec.template.spec: not the hook's business.
    expect(res.message).not.to.match(/replicas/);
  });
});

describe('runtime-extension decide: UpdateMachine', () => {
  const desired: DesiredObjects = { Machine: machine('v1.31.0'), InfraMachine: infra('img-b') };
  const live: KubeObject = {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name: 'm1',
      namespace: 'ns',
      uid: 'uid-m1',
      labels: { 'cluster.x-k8s.io/deployment-name': 'md0' },
      annotations: { 'in-place-updates.internal.cluster.x-k8s.io/update-in-progress': '' },
    },
    spec: { clusterName: 'c1' },
  } as KubeObject;
  const name = machineUpdateName('m1', desiredHash(desired));
  const mu = (status: MachineUpdate['status'], n = name, created = '2026-01-01T00:00:00Z'): MachineUpdate => ({
    metadata: { name: n, namespace: 'ns', creationTimestamp: created, uid: `uid-${n}` },
    spec: { planName: n, clusterName: 'c1', target: { kind: 'MachineDeployment', name: 'md0' }, machineRef: { name: 'm1' }, updaters: [] },
    ...(status ? { status } : {}),
  });
  const inputs = (updates: MachineUpdate[], over: Partial<Parameters<typeof decideUpdateMachine>[0]> = {}) => ({
    desired,
    machine: live,
    updaters: [os, k8s],
    updates,
    retryAfterSeconds: 5,
    ...over,
  });

  it('the first call creates the MachineUpdate: owned by the Machine, labelled, updaters in run order with the desired values', () => {
    const d = decideUpdateMachine(inputs([]));
    expect(d.step.kind).to.equal('create');
    if (d.step.kind !== 'create') return;
    const m = d.step.mu;
    expect(m.metadata?.name).to.equal(name);
    expect(m.metadata?.ownerReferences).to.deep.equal([
      { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Machine', name: 'm1', uid: 'uid-m1', controller: true, blockOwnerDeletion: true },
    ]);
    expect(m.metadata?.labels?.['inplace.cluster.x-k8s.io/requested-by']).to.equal('runtime-extension');
    expect(m.metadata?.labels?.['inplace.cluster.x-k8s.io/machine-name']).to.equal('m1');
    expect(m.spec.target).to.deep.equal({ kind: 'MachineDeployment', name: 'md0' });
    expect(m.spec.planName).to.equal(name);
    expect(m.spec.updaters).to.deep.equal([
      { name: 'k8s', sequence: 10, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] },
      {
        name: 'os',
        sequence: 20,
        parameters: { durationSeconds: 1 },
        responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img-b' }],
      },
    ]);
    expect(d.response).to.include({ status: 'Success', retryAfterSeconds: 5 });
  });

  const answers: { name: string; status: MachineUpdate['status']; want: { status: string; retryAfterSeconds: number }; message: RegExp }[] =
    [
      {
        name: 'not started yet: InProgress',
        status: undefined,
        want: { status: 'Success', retryAfterSeconds: 5 },
        message: /waiting for the machine task controller/,
      },
      {
        name: 'running: InProgress',
        status: { updateStatus: 'updating', currentUpdater: 'os' },
        want: { status: 'Success', retryAfterSeconds: 5 },
        message: /updater os running/,
      },
      {
        name: 'updated: Done',
        status: { updateStatus: 'updated' },
        want: { status: 'Success', retryAfterSeconds: 0 },
        message: /updated in place/,
      },
      {
        name: 'failed: Failure with the updater message',
        status: { updateStatus: 'failed', message: 'os: image pull failed' },
        want: { status: 'Failure', retryAfterSeconds: 0 },
        message: /^os: image pull failed$/,
      },
      {
        name: 'aborted: Failure',
        status: { updateStatus: 'aborted' },
        want: { status: 'Failure', retryAfterSeconds: 0 },
        message: /aborted/,
      },
    ];
  for (const a of answers) {
    it(`later calls answer from the MachineUpdate status — ${a.name}`, () => {
      const d = decideUpdateMachine(inputs([mu(a.status)]));
      expect(d.step.kind).to.equal('answer');
      expect(d.response).to.include(a.want);
      expect(d.response.message).to.match(a.message);
    });
  }

  it('an earlier MachineUpdate of the same state, superseded by a newer one (A → B → A), is replaced', () => {
    const d = decideUpdateMachine(
      inputs([mu({ updateStatus: 'updated' }), mu({ updateStatus: 'updated' }, 'm1-other', '2026-01-02T00:00:00Z')]),
    );
    expect(d.step).to.deep.equal({ kind: 'delete', namespace: 'ns', name, uid: `uid-${name}` });
    expect(d.response).to.include({ status: 'Success', retryAfterSeconds: 1 });
  });

  it('a running MachineUpdate of another state is waited for', () => {
    const d = decideUpdateMachine(inputs([mu({ updateStatus: 'updating' }, 'm1-other')]));
    expect(d.step.kind).to.equal('wait');
    expect(d.response.message).to.match(/waiting for MachineUpdate m1-other/);
  });

  it('refuses: no covering updater, a missing Machine, a Machine not in a Cluster API in-place update', () => {
    expect(decideUpdateMachine(inputs([], { updaters: [] })).response).to.include({ status: 'Failure' });
    expect(decideUpdateMachine(inputs([], { machine: undefined })).response.message).to.match(/not found/);
    const calm = { ...live, metadata: { ...live.metadata, annotations: {} } };
    expect(decideUpdateMachine(inputs([], { machine: calm })).response.message).to.match(/not in an in-place update/);
  });

  it('the name is stable across calls and differs with the desired spec', () => {
    expect(desiredHash(desired)).to.equal(desiredHash(structuredClone(desired)));
    expect(desiredHash({ ...desired, InfraMachine: infra('img-c') })).not.to.equal(desiredHash(desired));
    expect(updatersFor([k8s], { InfraMachine: infra('x') })).to.deep.equal([]);
  });

  it('desired values are checked against the cluster objects: any difference or missing object is listed', () => {
    const d = decideUpdateMachine(inputs([]));
    if (d.step.kind !== 'create') throw new Error('expected create');
    const m = d.step.mu;
    const liveInfra = infra('img-b') as unknown as KubeObject;
    const liveMachine = machine('v1.31.0') as unknown as KubeObject;
    expect(desiredMismatches(m, { Machine: liveMachine, InfraMachine: liveInfra })).to.deep.equal([]);
    expect(desiredMismatches(m, { Machine: machine('v1.99.0') as unknown as KubeObject, InfraMachine: liveInfra })).to.deep.equal([
      'Machine m1 /spec/version',
    ]);
    expect(desiredMismatches(m, { Machine: liveMachine })).to.deep.equal(['InfraMachine not found']);
  });
});
