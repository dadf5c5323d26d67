import { expect } from 'chai';
import type { KubeObject, OwnerReference } from '../api/index.js';
import { ownershipProblem } from './ownership.js';
import type { MachineUpdateObject } from './scope.js';

const planRef = (name: string, uid: string, over: Partial<OwnerReference> = {}): OwnerReference => ({
  apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
  kind: 'InPlaceUpdatePlan',
  name,
  uid,
  controller: true,
  ...over,
});
const mu = (owners: OwnerReference[] | undefined, planName = 'p'): MachineUpdateObject => ({
  apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
  kind: 'MachineUpdate',
  metadata: { name: 'mu', namespace: 'ns', ...(owners ? { ownerReferences: owners } : {}) },
  spec: {
    planName,
    clusterName: 'c',
    target: { kind: 'MachineDeployment', name: 'md' },
    machineRef: { name: 'm' },
    updatePhase: 'updating',
    updaters: [],
  },
});
const plan = (name: string, uid: string): KubeObject => ({
  apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
  kind: 'InPlaceUpdatePlan',
  metadata: { name, namespace: 'ns', uid },
});
const machine = (label?: string): KubeObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm', ...(label ? { labels: { 'inplace.cluster.x-k8s.io/plan-name': label } } : {}) },
});

describe('only plans drive machines (ownership)', () => {
  const cases: { name: string; mu: MachineUpdateObject; plan?: KubeObject; machine?: KubeObject; want: RegExp | undefined }[] = [
    {
      name: 'a plan-owned update of a labelled machine is acted on',
      mu: mu([planRef('p', 'u1')]),
      plan: plan('p', 'u1'),
      machine: machine('p'),
      want: undefined,
    },
    { name: 'a missing machine is left to the abort logic', mu: mu([planRef('p', 'u1')]), plan: plan('p', 'u1'), want: undefined },
    { name: 'no owner', mu: mu(undefined), plan: plan('p', 'u1'), machine: machine('p'), want: /no controller ownerReference/ },
    {
      name: 'owner of another kind',
      mu: mu([planRef('p', 'u1', { kind: 'ConfigMap', apiVersion: 'v1' })]),
      machine: machine('p'),
      want: /its controller is ConfigMap p/,
    },
    {
      name: 'a non-controller plan reference',
      mu: mu([planRef('p', 'u1', { controller: false })]),
      plan: plan('p', 'u1'),
      machine: machine('p'),
      want: /no controller ownerReference/,
    },
    { name: 'owner plan deleted', mu: mu([planRef('p', 'u1')]), machine: machine('p'), want: /InPlaceUpdatePlan p does not exist/ },
    {
      name: 'owner plan recreated under the same name',
      mu: mu([planRef('p', 'u1')]),
      plan: plan('p', 'u2'),
      machine: machine('p'),
      want: /not the plan that owns it/,
    },
    {
      name: 'spec.planName names another plan',
      mu: mu([planRef('p', 'u1')], 'q'),
      plan: plan('p', 'u1'),
      machine: machine('p'),
      want: /spec.planName q/,
    },
    {
      name: 'machine not labelled',
      mu: mu([planRef('p', 'u1')]),
      plan: plan('p', 'u1'),
      machine: machine(),
      want: /does not carry the label/,
    },
    {
      name: 'machine labelled by another plan',
      mu: mu([planRef('p', 'u1')]),
      plan: plan('p', 'u1'),
      machine: machine('other'),
      want: /does not carry the label/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = ownershipProblem(c.mu, c.plan, c.machine);
      if (c.want) expect(got).to.match(c.want);
      else expect(got).to.equal(undefined);
    });
  }
});

describe("Cluster API's in-place updates (MachineUpdates the runtime extension requested)", () => {
  const machineRef = (over: Partial<OwnerReference> = {}): OwnerReference => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    name: 'm',
    uid: 'm-uid',
    controller: true,
    ...over,
  });
  const hookMu = (owner: OwnerReference, labelled = true): MachineUpdateObject => {
    const m = mu([owner], 'm-abc');
    m.metadata.labels = labelled ? { 'inplace.cluster.x-k8s.io/requested-by': 'runtime-extension' } : {};
    return m;
  };
  const capiMachine = (o: { uid?: string; inUpdate?: boolean } = {}): KubeObject => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name: 'm',
      uid: o.uid ?? 'm-uid',
      ...(o.inUpdate === false ? {} : { annotations: { 'in-place-updates.internal.cluster.x-k8s.io/update-in-progress': '' } }),
    },
  });
  const cases: { name: string; mu: MachineUpdateObject; machine?: KubeObject; want: RegExp | undefined }[] = [
    {
      name: 'owned by its Machine, labelled, Machine in update: acted on',
      mu: hookMu(machineRef()),
      machine: capiMachine(),
      want: undefined,
    },
    {
      name: 'not labelled as requested by the runtime extension',
      mu: hookMu(machineRef(), false),
      machine: capiMachine(),
      want: /lacks the label/,
    },
    { name: 'owned by another Machine', mu: hookMu(machineRef({ name: 'other' })), machine: capiMachine(), want: /is not spec.machineRef/ },
    {
      name: 'the Machine was recreated (uid differs)',
      mu: hookMu(machineRef()),
      machine: capiMachine({ uid: 'new' }),
      want: /not the machine that owns it/,
    },
    { name: 'the Machine is missing', mu: hookMu(machineRef()), want: /does not exist/ },
    {
      name: 'Cluster API has the Machine in no in-place update',
      mu: hookMu(machineRef()),
      machine: capiMachine({ inUpdate: false }),
      want: /not in an in-place update/,
    },
    {
      name: 'a Machine-kind owner of another group is no Machine',
      mu: hookMu(machineRef({ apiVersion: 'example.com/v1' })),
      machine: capiMachine(),
      want: /its controller is Machine m/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = ownershipProblem(c.mu, undefined, c.machine);
      if (c.want) expect(got).to.match(c.want);
      else expect(got).to.equal(undefined);
    });
  }
});
