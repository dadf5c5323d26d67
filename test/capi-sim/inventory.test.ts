import { expect } from 'chai';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, Labels, type KubeObject } from '../../src/api/index.js';
import {
  CAPI_FIXTURE_CRDS_DIR,
  buildInventory,
  inventoryMachineSetName,
  nodeNameFor,
  type Machine,
  type MachineDeployment,
  type MachineHealthCheck,
} from '../../tools/capi-sim/index.js';
import { loadCrdsByKind, schemaProblems } from './schema-check.js';
import { requireRealCapiCrds } from '../support/real-capi-crds.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const realDir = process.env['CAPI_CRDS_DIR'] ?? resolve(repoRoot, '../shared/reference/capi-crds');

const opts = {
  namespace: 'fleet-a',
  clusterName: 'cluster1',
  version: 'v1.29.5',
  controlPlane: { name: 'cluster1-cp', replicas: 3 },
  machineDeployments: [
    { name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 },
    { name: 'cluster1-md-1', replicas: 1, maxUnavailable: '0%', maxSurge: '50%', strategy: 'RollingUpdate' as const },
    { name: 'cluster1-md-2', replicas: 1, strategy: 'OnDelete' as const },
  ],
  mhc: { name: 'cluster1-mhc', inPlaceUpdateTimeout: '30m', unhealthyLessThanOrEqualTo: '40%', nodeStartupTimeoutSeconds: 300 },
  now: new Date('2026-01-01T00:00:00Z'),
};

const ofKind = (objs: KubeObject[], kind: string): KubeObject[] => objs.filter((o) => o.kind === kind);

describe('capi-sim inventory', () => {
  const objs = buildInventory(opts);

  it('is deterministic: the same options build the same objects and names', () => {
    expect(buildInventory(opts)).to.deep.equal(objs);
  });
  it('never gives two machines one name, however large a MachineSet (names are a permutation of the index)', () => {
    const big = buildInventory({
      namespace: 'n',
      clusterName: 'c1',
      version: 'v1.30.0',
      machineDeployments: [
        { name: 'c1-md-0', replicas: 5000 },
        { name: 'c1-md-1', replicas: 5000 },
      ],
    });
    const names = ofKind(big, 'Machine').map((m) => m.metadata.name);
    expect(names).to.have.length(10_000);
    expect(new Set(names).size).to.equal(10_000);
    for (const n of names) expect(n).to.match(/^c1-md-[01]-[a-z0-9]{5}-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('builds a cluster with its control plane, deployments, machine sets, machines, infrastructure, bootstrap configs, nodes and MHC', () => {
    const counts = Object.fromEntries(
      [
        'Cluster',
        'KubeadmControlPlane',
        'MachineDeployment',
        'MachineSet',
        'Machine',
        'DevMachine',
        'KubeadmConfig',
        'Node',
        'MachineHealthCheck',
        'DevMachineTemplate',
        'KubeadmConfigTemplate',
      ].map((k) => [k, ofKind(objs, k).length]),
    );
    expect(counts).to.deep.equal({
      Cluster: 1,
      KubeadmControlPlane: 1,
      MachineDeployment: 3,
      MachineSet: 3,
      Machine: 7,
      DevMachine: 7,
      KubeadmConfig: 7,
      Node: 7,
      MachineHealthCheck: 1,
      DevMachineTemplate: 4,
      KubeadmConfigTemplate: 3,
    });
  });

  it('labels control-plane machines with cluster-name, control-plane and control-plane-name', () => {
    const cp = ofKind(objs, 'Machine').filter((m) => m.metadata.labels?.[Labels.controlPlaneName] === 'cluster1-cp');
    expect(cp).to.have.length(3);
    for (const m of cp) {
      expect(m.metadata.labels).to.deep.equal({
        [Labels.clusterName]: 'cluster1',
        [Labels.controlPlane]: '',
        [Labels.controlPlaneName]: 'cluster1-cp',
      });
      expect(m.metadata.ownerReferences?.[0]).to.include({ kind: 'KubeadmControlPlane', name: 'cluster1-cp', controller: true });
    }
  });

  it('labels worker machines with cluster-name, deployment-name and set-name, owned by their MachineSet', () => {
    const ms = inventoryMachineSetName('cluster1-md-0');
    const workers = ofKind(objs, 'Machine').filter((m) => m.metadata.labels?.[Labels.deploymentName] === 'cluster1-md-0');
    expect(workers).to.have.length(2);
    for (const m of workers) {
      expect(m.metadata.labels).to.deep.equal({
        [Labels.clusterName]: 'cluster1',
        [Labels.deploymentName]: 'cluster1-md-0',
        [Labels.setName]: ms,
      });
      expect(m.metadata.ownerReferences?.[0]).to.include({ kind: 'MachineSet', name: ms, controller: true });
    }
    const set = ofKind(objs, 'MachineSet').find((s) => s.metadata.name === ms);
    expect(set?.metadata.ownerReferences?.[0]).to.include({ kind: 'MachineDeployment', name: 'cluster1-md-0' });
  });

  it('makes every machine Running with its node, kubelet version and initialization', () => {
    for (const m of ofKind(objs, 'Machine')) {
      const status = (m as Machine).status!;
      expect(status.phase).to.equal('Running');
      expect(status.nodeRef).to.deep.equal({ name: nodeNameFor('fleet-a', m.metadata.name!) });
      expect(status.nodeInfo?.kubeletVersion).to.equal('v1.29.5');
      expect(status.initialization).to.deep.equal({ infrastructureProvisioned: true, bootstrapDataSecretCreated: true });
      const types = (status.conditions ?? []).filter((c) => c.status === 'True').map((c) => c.type);
      expect(types).to.include.members(['Ready', 'NodeHealthy', 'Available']);
      expect(ofKind(objs, 'Node').some((n) => n.metadata.name === status.nodeRef?.name)).to.equal(true);
    }
  });

  it('writes the rollout strategy, including int-or-string budgets and OnDelete without rollingUpdate', () => {
    const mds = Object.fromEntries(
      ofKind(objs, 'MachineDeployment').map((md) => [md.metadata.name, (md as MachineDeployment).spec.rollout?.strategy]),
    );
    expect(mds).to.deep.equal({
      'cluster1-md-0': { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
      'cluster1-md-1': { type: 'RollingUpdate', rollingUpdate: { maxSurge: '50%', maxUnavailable: '0%' } },
      'cluster1-md-2': { type: 'OnDelete' },
    });
  });

  it('configures the MHC through the in-place timeout annotation and triggerIf', () => {
    const mhc = ofKind(objs, 'MachineHealthCheck')[0]!;
    expect(mhc.metadata.annotations).to.deep.equal({ [Annotations.inPlaceUpdateTimeout]: '30m' });
    const spec = (mhc as MachineHealthCheck).spec;
    expect(spec.remediation).to.deep.equal({ triggerIf: { unhealthyLessThanOrEqualTo: '40%' } });
    expect(spec.checks?.nodeStartupTimeoutSeconds).to.equal(300);
  });

  for (const [label, dir] of [
    ['the fixture CRDs', CAPI_FIXTURE_CRDS_DIR],
    ['the real CAPI CRDs', realDir],
  ] as const) {
    it(`writes only fields ${label} keep, with values they accept`, function () {
      requireRealCapiCrds(this, dir);
      const crds = loadCrdsByKind(dir);
      const problems = objs.filter((o) => o.kind !== 'Node').flatMap((o) => schemaProblems(o, crds));
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });
  }

  it('the schema check catches a field the CRD would prune and a value it would reject', () => {
    const crds = loadCrdsByKind(CAPI_FIXTURE_CRDS_DIR);
    const machine = structuredClone(ofKind(objs, 'Machine')[0]!) as KubeObject & {
      spec: Record<string, unknown>;
      status: Record<string, unknown>;
    };
    machine.spec['image'] = 'x';
    machine.status['phase'] = 'Upgrading';
    const problems = schemaProblems(machine, crds);
    expect(problems.some((p) => p.includes('/spec/image would be pruned'))).to.equal(true);
    expect(problems.some((p) => p.includes('/status/phase'))).to.equal(true);
  });
});
