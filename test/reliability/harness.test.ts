// The reliability suites are only as good as their invariant checker and the bench's lower bound: both can fail.
import { expect } from 'chai';
import {
  API_VERSION,
  Annotations,
  InPlaceUpdatePlans,
  Labels,
  MachineUpdates,
  Machines,
  UpdaterUpdateTasks,
  type KubeObject,
} from '../../src/api/index.js';
import { buildFleet, fleetPlan } from '../../bench/lib/fleet.js';
import { summarize } from '../../bench/lib/observe.js';
import { FakeClient } from '../support/fake-client.js';
import { checkInvariants, type MachineBefore } from './harness.js';

const NS = 'ns1';
const machine = (name: string, version: string, generation: number, meta: Partial<KubeObject['metadata']> = {}): KubeObject =>
  ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: { name, namespace: NS, generation, ...meta },
    spec: { clusterName: 'c1', version },
  }) as KubeObject;
const mu = (machineName: string, status: string): KubeObject =>
  ({
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    metadata: { name: `p1-${machineName}`, namespace: NS, labels: { [Labels.planName]: 'p1' } },
    spec: {
      planName: 'p1',
      clusterName: 'c1',
      target: { kind: 'MachineDeployment', name: 'md' },
      machineRef: { name: machineName },
      updatePhase: 'updating',
      updaters: [],
    },
    status: { updateStatus: status },
  }) as KubeObject;
const task = (name: string, machineName: string): KubeObject =>
  ({
    apiVersion: API_VERSION,
    kind: 'UpdaterUpdateTask',
    metadata: { name, namespace: NS, labels: { [Labels.planName]: 'p1', [Labels.machineName]: machineName, [Labels.updaterName]: 'ref' } },
    spec: { updaterName: 'ref', machineRef: { name: machineName } },
  }) as KubeObject;

async function world(objs: [typeof Machines, KubeObject][]): Promise<FakeClient> {
  const c = new FakeClient();
  await c.create(InPlaceUpdatePlans, {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name: 'p1', namespace: NS },
    spec: { clusterName: 'c1' },
    status: { updateStatus: 'updated' },
  } as KubeObject);
  for (const [res, o] of objs) await c.create(res, o);
  return c;
}
const before = new Map<string, MachineBefore>([
  ['m1', { generation: 1, version: 'v1' }],
  ['m2', { generation: 1, version: 'v1' }],
]);
const expectAll = { plan: 'p1', planStatuses: ['updated'], allUpdated: true, toVersion: 'v2', before };

describe('reliability harness: invariant checker', () => {
  it('passes a clean run', async () => {
    const c = await world([
      [Machines, machine('m1', 'v2', 2)],
      [Machines, machine('m2', 'v2', 2)],
      [MachineUpdates, mu('m1', 'updated')],
      [MachineUpdates, mu('m2', 'updated')],
      [UpdaterUpdateTasks, task('t1', 'm1')],
      [UpdaterUpdateTasks, task('t2', 'm2')],
    ]);
    expect(await checkInvariants(c, NS, expectAll)).to.deep.equal([]);
  });

  const broken: [string, [typeof Machines, KubeObject][], RegExp][] = [
    [
      'a machine committed twice (generation +2)',
      [
        [Machines, machine('m1', 'v2', 3)],
        [Machines, machine('m2', 'v2', 2)],
        [MachineUpdates, mu('m1', 'updated')],
        [MachineUpdates, mu('m2', 'updated')],
      ],
      /m1: generation 1 -> 3/,
    ],
    [
      'an aborted machine that was committed',
      [
        [Machines, machine('m1', 'v2', 2)],
        [Machines, machine('m2', 'v2', 2)],
        [MachineUpdates, mu('m1', 'aborted')],
        [MachineUpdates, mu('m2', 'updated')],
      ],
      /m1 ended "aborted"|m1 is aborted but spec.version changed/,
    ],
    [
      'a stuck MachineUpdate',
      [
        [Machines, machine('m1', 'v1', 1)],
        [Machines, machine('m2', 'v2', 2)],
        [MachineUpdates, mu('m1', 'updating')],
        [MachineUpdates, mu('m2', 'updated')],
      ],
      /stuck in "updating"/,
    ],
    [
      'two tasks for one machine and updater',
      [
        [Machines, machine('m1', 'v2', 2)],
        [Machines, machine('m2', 'v2', 2)],
        [MachineUpdates, mu('m1', 'updated')],
        [MachineUpdates, mu('m2', 'updated')],
        [UpdaterUpdateTasks, task('t1', 'm1')],
        [UpdaterUpdateTasks, task('t1b', 'm1')],
      ],
      /2 tasks for m1\/ref/,
    ],
    [
      'a machine left labelled and skip-remediated',
      [
        [Machines, machine('m1', 'v2', 2, { labels: { [Labels.planName]: 'p1' }, annotations: { [Annotations.skipRemediation]: '' } })],
        [Machines, machine('m2', 'v2', 2)],
        [MachineUpdates, mu('m1', 'updated')],
        [MachineUpdates, mu('m2', 'updated')],
      ],
      /still labelled[\s\S]*skip-remediation|still has cluster.x-k8s.io\/skip-remediation/,
    ],
    [
      'a machine without a MachineUpdate',
      [
        [Machines, machine('m1', 'v2', 2)],
        [Machines, machine('m2', 'v1', 1)],
        [MachineUpdates, mu('m1', 'updated')],
      ],
      /m2 has no MachineUpdate/,
    ],
  ];
  for (const [what, objs, mention] of broken) {
    it(`reports ${what}`, async () => {
      const v = await checkInvariants(await world(objs), NS, expectAll);
      expect(v.join('\n')).to.match(mention);
    });
  }
});

describe('bench: fleet and statistics', () => {
  it('gives every machine of a large fleet a distinct name (the inventory builder repeats some)', () => {
    const f = buildFleet({ namespace: 'x', clusterName: 'c1', version: 'v1.30.0', workers: 3000, mdSize: 100 });
    const names = f.objects.filter((o) => o.kind === 'Machine').map((o) => o.metadata.name);
    expect(names).to.have.length(3003);
    expect(new Set(names).size).to.equal(3003);
    expect(new Set(f.objects.filter((o) => o.kind === 'Node').map((o) => o.metadata.name)).size).to.equal(3003);
  });
  it('builds a plan with the control plane before every MachineDeployment', () => {
    const f = buildFleet({ namespace: 'x', clusterName: 'c1', version: 'v1.30.0', workers: 120, mdSize: 50 });
    const p = fleetPlan(f, { name: 'p', toVersion: 'v1.30.1', durationSeconds: 2 });
    expect(f.mdReplicas).to.deep.equal({ 'c1-md-0': 50, 'c1-md-1': 50, 'c1-md-2': 20 });
    expect(p.spec.controlPlane?.sequence).to.equal(1);
    expect(p.spec.machineDeployments?.every((m) => m.sequence === 2)).to.equal(true);
  });
  it('summarizes with nearest-rank quantiles', () => {
    const s = summarize(Array.from({ length: 100 }, (_, i) => i + 1));
    expect([s.n, s.median, s.p99, s.max]).to.deep.equal([100, 50, 99, 100]);
    expect(summarize([]).n).to.equal(0);
  });
});
