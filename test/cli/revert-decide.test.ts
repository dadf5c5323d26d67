// The revert decision on its own (src/cli/revert-decide.ts): the refusals that create nothing (a plan still running, a
// journal the platform did not keep, machines changed or gone, machines of a target that held different values), and
// the values it leaves (a field the plan added, a Kubernetes version) next to those it reverts.
import { expect } from 'chai';
import { API_VERSION, type InPlaceUpdatePlan, type KubeObject, type MachineUpdate } from '../../src/api/index.js';
import { decideRevert, type LiveMachine, type RevertInput } from '../../src/cli/revert-decide.js';
import { renderRevert } from '../../src/cli/revert.js';

const NS = 'ns1';
const IMG = '/spec/image';
const updaters = [
  { name: 'os', sequence: 1, responsibilities: [{ selectResource: 'InfraMachine' as const, path: IMG, value: 'new' }] },
  { name: 'k8s', sequence: 2, responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }] },
];

function plan(status: string, updated = 2): InPlaceUpdatePlan & KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name: 'up', namespace: NS, uid: 'u1' },
    spec: { clusterName: 'c1', failurePolicy: 'Continue', machineDeployments: [{ name: 'md', sequence: 2, updaters }] },
    status: { updateStatus: status as 'updated', updatedMachines: updated, skippedMachines: 0 },
  } as InPlaceUpdatePlan & KubeObject;
}

const journal = (machine: string, image: { before?: string; after: string }, version?: { before: string; after: string }) => ({
  objects: [
    {
      apiGroup: 'infrastructure.cluster.x-k8s.io',
      kind: 'DevMachine',
      name: machine,
      entries: [
        { path: IMG, ...(image.before !== undefined ? { before: JSON.stringify(image.before) } : {}), after: JSON.stringify(image.after) },
      ],
    },
    ...(version
      ? [
          {
            apiGroup: 'cluster.x-k8s.io',
            kind: 'Machine',
            name: machine,
            entries: [{ path: '/spec/version', before: JSON.stringify(version.before), after: JSON.stringify(version.after) }],
          },
        ]
      : []),
  ],
});

function mu(machine: string, committed?: ReturnType<typeof journal>): MachineUpdate {
  return {
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    metadata: { name: `up-${machine}`, namespace: NS },
    spec: { planName: 'up', clusterName: 'c1', target: { kind: 'MachineDeployment', name: 'md' }, machineRef: { name: machine }, updaters },
    status: { updateStatus: 'updated', ...(committed ? { committed } : {}) },
  } as MachineUpdate;
}

function live(machine: string, image: string, version = 'v1.30.1', infraName = machine): LiveMachine {
  return {
    Machine: {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: {
        name: machine,
        namespace: NS,
        labels: { 'cluster.x-k8s.io/cluster-name': 'c1', 'cluster.x-k8s.io/deployment-name': 'md' },
      },
      spec: {
        clusterName: 'c1',
        version,
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: infraName },
      },
    } as KubeObject,
    InfraMachine: { metadata: { name: infraName, namespace: NS }, spec: { image } } as KubeObject,
  };
}

const input = (p: InPlaceUpdatePlan & KubeObject, mus: MachineUpdate[], machines: [string, LiveMachine][]): RevertInput => ({
  plan: p,
  machineUpdates: mus,
  live: new Map(machines),
  machines: machines.flatMap(([, l]) => (l.Machine ? [l.Machine] : [])),
});

describe('revert decision', () => {
  it('reverts the image on every machine with the plan’s shape, and keeps the version with the reason', () => {
    const d = decideRevert(
      input(
        plan('updated'),
        [
          mu('m1', journal('m1', { before: 'old', after: 'new' }, { before: 'v1.30.0', after: 'v1.30.1' })),
          mu('m2', journal('m2', { before: 'old', after: 'new' }, { before: 'v1.30.0', after: 'v1.30.1' })),
        ],
        [
          ['m1', live('m1', 'new')],
          ['m2', live('m2', 'new')],
        ],
      ),
    );
    expect(d.problems).to.deep.equal([]);
    expect(d.plan?.metadata.name).to.equal('up-revert');
    expect(d.plan?.spec.failurePolicy).to.equal('Continue');
    expect(d.plan?.spec.machineDeployments).to.deep.equal([
      {
        name: 'md',
        sequence: 2,
        updaters: [{ name: 'os', sequence: 1, responsibilities: [{ selectResource: 'InfraMachine', path: IMG, value: 'old' }] }],
      },
    ]);
    expect(d.refused.map((r) => [r.machine, r.path])).to.deep.equal([
      ['m1', '/spec/version'],
      ['m2', '/spec/version'],
    ]);
    expect(d.refused[0]!.why).to.match(/downgrade, which kubeadm does not support/);
  });

  it('says once per target what stays, for which machines, and warns that the values put back were chosen for the old version', () => {
    const d = decideRevert(
      input(
        plan('updated', 3),
        ['m1', 'm2', 'm3'].map((m) =>
          mu(m, journal(m, { before: 'img-1.29', after: 'img-1.30' }, { before: 'v1.29.5', after: 'v1.30.1' })),
        ),
        ['m1', 'm2', 'm3'].map((m) => [m, live(m, 'img-1.30')] as [string, LiveMachine]),
      ),
    );
    expect(d.problems).to.deep.equal([]);
    expect(d.warnings).to.have.length(1);
    expect(d.warnings[0]).to.match(
      /^machineDeployment md: the Kubernetes version stays at "v1\.30\.1" \("v1\.29\.5" before the plan\) while InfraMachine \/spec\/image goes back to "img-1\.29" on 3 machines: .*check that they work with "v1\.30\.1"/,
    );
    const text = renderRevert('InPlaceUpdatePlan ns1/up', d);
    const notReverted = text.split('Not reverted:\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(notReverted).to.have.length(1);
    expect(notReverted[0]).to.match(/^ {2}✖ machineDeployment md: Machine \/spec\/version stays: .* \(3 machines: m1, m2, m3\)$/);
    expect(text).to.contain('Warnings:\n  ! machineDeployment md: the Kubernetes version stays at "v1.30.1"');
    // Nothing else goes back: no warning.
    const versionOnly = decideRevert(
      input(
        plan('updated', 1),
        [mu('m1', journal('m1', { before: 'img-1.30', after: 'img-1.30' }, { before: 'v1.29.5', after: 'v1.30.1' }))],
        [['m1', live('m1', 'img-1.30')]],
      ),
    );
    expect(versionOnly.warnings).to.deep.equal([]);
  });

  it('refuses a plan still running, naming what to do', () => {
    const d = decideRevert(input(plan('updating'), [], []));
    expect(d.plan).to.equal(undefined);
    expect(d.problems[0]).to.match(/InPlaceUpdatePlan up is updating: only a finished .* or aborted plan can be reverted; abort it first/);
  });

  it('refuses a pruned journal: fewer MachineUpdates than the status counts', () => {
    const d = decideRevert(
      input(plan('updated', 2), [mu('m1', journal('m1', { before: 'old', after: 'new' }))], [['m1', live('m1', 'new')]]),
    );
    expect(d.plan).to.equal(undefined);
    expect(d.problems).to.have.length(1);
    expect(d.problems[0]).to.match(
      /the journal of InPlaceUpdatePlan up was pruned: its status counts 2 machines .* 1 MachineUpdate is left/,
    );
  });

  it('refuses machines changed since the plan: another value, another InfraMachine, gone; and a MachineUpdate without a record', () => {
    const d = decideRevert(
      input(
        plan('updated', 4),
        [
          mu('m1', journal('m1', { before: 'old', after: 'new' })),
          mu('m2', journal('m2', { before: 'old', after: 'new' })),
          mu('m3', journal('m3', { before: 'old', after: 'new' })),
          mu('m4'),
        ],
        [
          ['m1', live('m1', 'hand-made')],
          ['m2', live('m2', 'new', 'v1.30.1', 'm2-replacement')],
          ['m3', {}],
          ['m4', live('m4', 'new')],
        ],
      ),
    );
    expect(d.plan).to.equal(undefined);
    expect(d.problems).to.deep.equal([
      'machine m1 (machineDeployment md) changed since the plan: InfraMachine /spec/image is "hand-made", the plan wrote "new"',
      'machine m2 (machineDeployment md) changed since the plan: it no longer references DevMachine m2',
      'machine m3 (machineDeployment md) changed since the plan: it no longer exists',
      'MachineUpdate up-m4 (machine m4) has no record of the values before its commit (status.committed: it finished before the platform kept one)',
    ]);
  });

  it('refuses machines of one target that held different values before (a plan sets one value per target)', () => {
    const d = decideRevert(
      input(
        plan('updated'),
        [mu('m1', journal('m1', { before: 'a', after: 'new' })), mu('m2', journal('m2', { before: 'b', after: 'new' }))],
        [
          ['m1', live('m1', 'new')],
          ['m2', live('m2', 'new')],
        ],
      ),
    );
    expect(d.plan).to.equal(undefined);
    expect(d.problems).to.deep.equal([
      'machineDeployment md: its machines held different values before the plan at InfraMachine /spec/image (m1: "a", m2: "b"); a plan sets one value per target, so revert them with plans of your own',
    ]);
  });

  it('leaves a field the plan added and a machine already back; nothing to revert is no plan', () => {
    const d = decideRevert(
      input(
        plan('aborted'),
        [mu('m1', journal('m1', { after: 'new' })), mu('m2', journal('m2', { before: 'old', after: 'new' }))],
        [
          ['m1', live('m1', 'new')],
          ['m2', live('m2', 'old')],
        ],
      ),
    );
    expect(d.problems).to.deep.equal([]);
    expect(d.plan).to.equal(undefined);
    expect(d.refused.map((r) => [r.machine, r.why])).to.deep.equal([
      ['m1', 'the plan added this field; a plan sets values and cannot remove one'],
    ]);
    expect(d.alreadyReverted).to.deep.equal(['m2']);
  });
});
