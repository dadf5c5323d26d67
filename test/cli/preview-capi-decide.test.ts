// The Cluster API preview decision on its own (src/cli/preview-capi-decide.ts): the extension's coverage per machine,
// the surge Cluster API adds, what it does not compare, and the objects a preview needs.
import { expect } from 'chai';
import type { InPlaceUpdater, KubeObject } from '../../src/api/index.js';
import type { KubeadmControlPlane, Machine, MachineDeployment, MachineSet, ObjectRef } from '../../src/api/capi/index.js';
import { previewCapiChange, type CapiPreviewInput } from '../../src/cli/preview-capi-decide.js';

const NS = 'ns1';
const INFRA = 'infrastructure.cluster.x-k8s.io';
const BOOT = 'bootstrap.cluster.x-k8s.io';

const updater = (name: string, sequence: number, selectResource: string, path: string): InPlaceUpdater =>
  ({ metadata: { name, namespace: NS }, spec: { sequence, covers: [{ selectResource, path }] } }) as InPlaceUpdater;

const tpl = (kind: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: `${INFRA}/v1beta2`, kind, metadata: { name, namespace: NS }, spec: { template: { spec } } }) as KubeObject;

function machine(name: string, created: string, labels: Record<string, string>, o: { version?: string; config?: boolean } = {}): Machine {
  return {
    metadata: { name, namespace: NS, creationTimestamp: created, labels },
    spec: {
      clusterName: 'c1',
      version: o.version ?? 'v1.30.0',
      infrastructureRef: { apiGroup: INFRA, kind: 'DevMachine', name },
      bootstrap: o.config === false ? {} : { configRef: { apiGroup: BOOT, kind: 'KubeadmConfig', name } },
    },
  } as Machine;
}

/** A lookup over objects by kind and name. */
const lookupOf =
  (objs: KubeObject[]) =>
  (r: ObjectRef): KubeObject | undefined =>
    objs.find((o) => o.kind === r.kind && o.metadata.name === r.name);

function kcpInput(o: {
  replicas: number;
  maxSurge?: number | string;
  ntp?: unknown;
  version?: string;
  updaters: InPlaceUpdater[];
}): CapiPreviewInput {
  const names = Array.from({ length: o.replicas }, (_, i) => `cp-${i}`);
  const machines = names.map((n, i) => machine(n, `2026-01-0${i + 1}T00:00:00Z`, { 'cluster.x-k8s.io/control-plane-name': 'cp' }));
  const objs: KubeObject[] = [
    tpl('DevMachineTemplate', 'cp', { image: 'a' }),
    ...names.map(
      (n) => ({ kind: 'DevMachine', metadata: { name: n, namespace: NS }, spec: { image: 'a', providerID: `dev://${n}` } }) as KubeObject,
    ),
    ...names.map((n) => ({ kind: 'KubeadmConfig', metadata: { name: n, namespace: NS }, spec: { format: 'cloud-config' } }) as KubeObject),
  ];
  const kcp: KubeadmControlPlane = {
    metadata: { name: 'cp', namespace: NS },
    spec: {
      replicas: o.replicas,
      version: o.version ?? 'v1.30.0',
      kubeadmConfigSpec: { format: 'cloud-config', ...(o.ntp ? { ntp: o.ntp } : {}) },
      machineTemplate: { spec: { infrastructureRef: { apiGroup: INFRA, kind: 'DevMachineTemplate', name: 'cp' } } },
      ...(o.maxSurge !== undefined ? { rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: o.maxSurge } } } } : {}),
    },
  } as KubeadmControlPlane;
  return { owner: kcp, kind: 'KubeadmControlPlane', machines, lookup: lookupOf(objs), updaters: o.updaters };
}

describe('Cluster API preview decision', () => {
  it('KCP: a kubeadmConfigSpec change an updater covers is in place; one it does not cover names the KubeadmConfig field', () => {
    const ntp = updater('ntp', 1, 'BootstrapConfig', '/spec/ntp');
    const covered = previewCapiChange(kcpInput({ replicas: 2, maxSurge: 0, ntp: { enabled: true }, updaters: [ntp] })).preview;
    expect(covered.machines.map((m) => [m.name, m.verdict, m.updaters.map((u) => u.fields)])).to.deep.equal([
      ['cp-0', 'in-place', [['KubeadmConfig /spec/ntp']]],
      ['cp-1', 'in-place', [['KubeadmConfig /spec/ntp']]],
    ]);
    expect(covered.replaces).to.equal(false);
    const uncovered = previewCapiChange(kcpInput({ replicas: 2, maxSurge: 0, ntp: { enabled: true }, updaters: [] })).preview;
    expect(uncovered.machines.map((m) => [m.verdict, m.uncovered])).to.deep.equal([
      ['replaced', ['KubeadmConfig /spec/ntp']],
      ['replaced', ['KubeadmConfig /spec/ntp']],
    ]);
    expect(uncovered.notes).to.deep.equal(['no InPlaceUpdater is registered in namespace ns1: every change is a rollout']);
  });

  it('the surge: maxSurge 50% of 4 replaces the 2 newest covered machines; maxSurge 0 none; equal sequences run by name', () => {
    const ups = [updater('b', 1, 'Machine', '/spec/version'), updater('a', 1, 'Machine', '/spec/version')];
    const half = previewCapiChange(kcpInput({ replicas: 4, maxSurge: '50%', version: 'v1.30.1', updaters: ups })).preview;
    expect(half.surgeReplaced).to.equal(2);
    expect(half.machines.map((m) => [m.name, m.verdict])).to.deep.equal([
      ['cp-0', 'in-place'],
      ['cp-1', 'in-place'],
      ['cp-2', 'replaced'],
      ['cp-3', 'replaced'],
    ]);
    expect(half.machines[3]!.reason).to.match(/^maxSurge 2: Cluster API creates 2 new machines first/);
    expect(half.machines[0]!.updaters.map((u) => u.name)).to.deep.equal(['a', 'b']);
    const none = previewCapiChange(kcpInput({ replicas: 4, maxSurge: 0, version: 'v1.30.1', updaters: ups })).preview;
    expect(none.machines.every((m) => m.verdict === 'in-place')).to.equal(true);
    expect(none.surgeReplaced).to.equal(0);
  });

  it("only the updaters serving the request side count (the extension's scope): the others are as if not registered", () => {
    const i = kcpInput({ replicas: 1, maxSurge: 0, version: 'v1.30.1', updaters: [updater('k', 1, 'Machine', '/spec/version')] });
    const sides: unknown[] = [];
    const p = previewCapiChange({ ...i, serving: (side) => (sides.push(side), []) }).preview;
    expect(p.machines[0]).to.deep.include({ verdict: 'replaced', uncovered: ['Machine /spec/version'] });
    expect(sides).to.have.length(1);
    expect(sides[0]).to.have.nested.property('infrastructureMachine.kind', 'DevMachine');
    expect(sides[0]).to.have.nested.property('bootstrapConfig.kind', 'KubeadmConfig');
  });

  it('KCP: an infrastructure template that does not exist is a problem; a machine without its InfraMachine is replaced', () => {
    const i = kcpInput({ replicas: 1, maxSurge: 0, version: 'v1.30.1', updaters: [updater('k', 1, 'Machine', '/spec/version')] });
    const missingTemplate = previewCapiChange({ ...i, lookup: (r) => (r.kind === 'DevMachineTemplate' ? undefined : i.lookup(r)) });
    expect(missingTemplate.problems).to.deep.equal(['DevMachineTemplate cp (spec.machineTemplate.spec.infrastructureRef) not found']);
    const noInfra = previewCapiChange({ ...i, lookup: (r) => (r.kind === 'DevMachine' ? undefined : i.lookup(r)) }).preview;
    expect(noInfra.machines[0]).to.deep.include({
      verdict: 'replaced',
      reason: 'DevMachine cp-0 not found: not eligible for an in-place update',
    });
  });

  describe('MachineDeployment', () => {
    const labels = (set: string) => ({ 'cluster.x-k8s.io/deployment-name': 'md', 'cluster.x-k8s.io/set-name': set });
    const set = (name: string, template: string, extra: Record<string, unknown> = {}): MachineSet =>
      ({
        metadata: { name, namespace: NS },
        spec: {
          clusterName: 'c1',
          replicas: 1,
          selector: {},
          template: {
            spec: {
              clusterName: 'c1',
              version: 'v1.30.0',
              infrastructureRef: { apiGroup: INFRA, kind: 'DevMachineTemplate', name: template },
              bootstrap: { configRef: { apiGroup: BOOT, kind: 'KubeadmConfigTemplate', name: 'boot' } },
              ...extra,
            },
          },
        },
      }) as MachineSet;
    const md = (template: string, o: { onDelete?: boolean; extra?: Record<string, unknown> } = {}): MachineDeployment =>
      ({
        metadata: { name: 'md', namespace: NS },
        spec: {
          clusterName: 'c1',
          replicas: 2,
          selector: {},
          ...(o.onDelete ? { rollout: { strategy: { type: 'OnDelete' } } } : {}),
          template: set('x', template, o.extra).spec.template,
        },
      }) as MachineDeployment;
    const objs = [
      tpl('DevMachineTemplate', 't-a', { image: 'a' }),
      tpl('DevMachineTemplate', 't-b', { image: 'b' }),
      { kind: 'KubeadmConfigTemplate', metadata: { name: 'boot', namespace: NS }, spec: { template: { spec: {} } } } as KubeObject,
    ];
    const machines = [machine('m-old', '2026-01-01T00:00:00Z', labels('ms-a')), machine('m-new', '2026-01-02T00:00:00Z', labels('ms-b'))];
    const input = (owner: MachineDeployment, sets = [set('ms-a', 't-a'), set('ms-b', 't-b')]): CapiPreviewInput => ({
      owner,
      kind: 'MachineDeployment',
      machines,
      machineSets: sets,
      lookup: lookupOf(objs),
      updaters: [updater('os', 1, 'InfraMachine', '/spec/image')],
    });

    it("a machine of the set matching the deployment's template is unchanged; the other set's machine goes in place (default maxSurge 1 replaces it)", () => {
      const withSurge = previewCapiChange(input(md('t-b'))).preview;
      expect(withSurge.machines.map((m) => [m.name, m.verdict])).to.deep.equal([
        ['m-old', 'replaced'],
        ['m-new', 'unchanged'],
      ]);
      expect(withSurge.surgeReplaced).to.equal(1);
      const onDelete = previewCapiChange(input(md('t-b', { onDelete: true }))).preview;
      expect(onDelete.machines.map((m) => [m.name, m.verdict, m.updaters.map((u) => u.fields)])).to.deep.equal([
        ['m-old', 'in-place', [['DevMachineTemplate /spec/template/spec/image']]],
        ['m-new', 'unchanged', []],
      ]);
    });

    it('fields Cluster API changes without a rollout (minReadySeconds) do not count', () => {
      const p = previewCapiChange(input(md('t-a', { extra: { minReadySeconds: 30 } }), [set('ms-a', 't-a')])).preview;
      expect(p.machines.find((m) => m.name === 'm-old')?.verdict).to.equal('unchanged');
    });

    it('a template the deployment points at that does not exist is a problem', () => {
      expect(previewCapiChange(input(md('t-c'))).problems).to.deep.equal([
        'DevMachineTemplate t-c (spec.template.spec.infrastructureRef) not found',
      ]);
    });
  });
});
