import { expect } from 'chai';
import type { KubeObject } from '../../api/index.js';
import { Labels } from '../../api/index.js';
import { clonesToDelete, referencedTemplates, templateKey } from './clones.js';
import { CLONED_BY_PLAN, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME } from '../../rules/owners.js';
import { CLUSTER, NS, md } from '../testkit.js';

const INFRA = 'DevMachineTemplate';
const BOOT = 'KubeadmConfigTemplate';

const template = (kind: string, name: string, by?: string, cluster: 'owner' | 'label' | 'none' = 'owner'): KubeObject => ({
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
  kind,
  metadata: {
    name,
    namespace: NS,
    uid: `uid-${name}`,
    ...(by ? { annotations: { [CLONED_BY_PLAN]: by } } : {}),
    ...(cluster === 'label' ? { labels: { [Labels.clusterName]: CLUSTER } } : {}),
    ...(cluster === 'owner'
      ? { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: CLUSTER, uid: 'c' }] }
      : {}),
  },
});

const owner = (infra: string, boot: string): KubeObject => {
  const o = md();
  (o['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['infrastructureRef'] = {
    apiGroup: 'infrastructure.cluster.x-k8s.io',
    kind: INFRA,
    name: infra,
  };
  (o['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['bootstrap'] = {
    configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: BOOT, name: boot },
  };
  return o;
};

const kcp = (infra: string): KubeObject => ({
  apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
  kind: 'KubeadmControlPlane',
  metadata: { name: 'cp', namespace: NS },
  spec: { machineTemplate: { spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: INFRA, name: infra } } } },
});

const infraMachine = (clonedFrom: string): KubeObject => ({
  kind: 'DevMachine',
  metadata: {
    name: `m-${clonedFrom}`,
    namespace: NS,
    annotations: { [CLONED_FROM_NAME]: clonedFrom, [CLONED_FROM_GROUPKIND]: `${INFRA}.infrastructure.cluster.x-k8s.io` },
  },
});

const names = (l: KubeObject[]): string[] => l.map((o) => `${o.kind}/${o.metadata.name}`).sort();

describe('plan-controller template clone collection (clones.ts)', () => {
  it('collects what owners, MachineSets (their template) and InfraMachines (cloned-from) refer to', () => {
    const ref = referencedTemplates([owner('a-md', 'a-md'), kcp('a-cp')], [infraMachine('old-cp')]);
    expect([...ref].sort()).to.deep.equal(
      [templateKey(BOOT, 'a-md'), templateKey(INFRA, 'a-cp'), templateKey(INFRA, 'a-md'), templateKey(INFRA, 'old-cp')].sort(),
    );
  });

  it('deletes the clones of gone or deleted plans that nothing refers to; keeps referenced ones, live plans’ ones and originals', () => {
    const templates = [
      template(INFRA, 'md-0'), // the original: no cloned-by-plan
      template(INFRA, 'old-md-0', 'old'), // gone plan, unreferenced -> deleted
      template(BOOT, 'old-md-0', 'old'), // same name, other kind, unreferenced -> deleted
      template(INFRA, 'gone-md-0', 'gone'), // gone plan but the MachineDeployment refers to it -> kept
      template(BOOT, 'gone-md-0', 'gone'), // referenced by the MachineDeployment's bootstrap ref -> kept
      template(INFRA, 'gone-cp', 'gone'), // referenced by an InfraMachine's cloned-from -> kept
      template(INFRA, 'live-md-0', 'live'), // its plan is still there -> kept even unreferenced
      template(INFRA, 'label-md-0', 'old', 'label'), // of the cluster by label -> deleted
      template(INFRA, 'other-md-0', 'old', 'none'), // cannot tell it is of this cluster -> kept
    ];
    const referenced = referencedTemplates([owner('gone-md-0', 'gone-md-0')], [infraMachine('gone-cp')]);
    const out = clonesToDelete({ templates, clusterName: CLUSTER, livePlans: new Set(['live']), referenced });
    expect(names(out)).to.deep.equal([`${INFRA}/label-md-0`, `${INFRA}/old-md-0`, `${BOOT}/old-md-0`]);
  });

  it('never deletes a clone of another cluster', () => {
    const other = template(INFRA, 'old-md-0', 'old', 'none');
    other.metadata.ownerReferences = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: 'cluster2', uid: 'c2' }];
    expect(clonesToDelete({ templates: [other], clusterName: CLUSTER, livePlans: new Set(), referenced: new Set() })).to.deep.equal([]);
  });

  it('leaves a clone already being deleted alone', () => {
    const t = template(INFRA, 'old-md-0', 'old');
    t.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    expect(clonesToDelete({ templates: [t], clusterName: CLUSTER, livePlans: new Set(), referenced: new Set() })).to.deep.equal([]);
  });
});
