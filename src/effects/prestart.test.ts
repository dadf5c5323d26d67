import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { readCoverageObjects } from './prestart.js';

const machine = (name: string, infra: string, boot: string): KubeObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name, namespace: 'ns' },
  spec: {
    infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name: infra },
    bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: boot } },
  },
});
const of = (kind: string, name: string): KubeObject => ({ kind, metadata: { name, namespace: 'ns' } });

describe('readCoverageObjects', () => {
  it("keeps only the machines' own InfraMachines and BootstrapConfigs of a cached list of the namespace (the owners' templates whole)", async () => {
    // A plan controller's cache holds the fleet's objects of each kind: the check of one cluster must not carry them all.
    const fleet: Record<string, KubeObject[]> = {
      DevMachine: ['a-infra', 'b-infra', 'other-1', 'other-2'].map((n) => of('DevMachine', n)),
      KubeadmConfig: ['a-boot', 'other-3'].map((n) => of('KubeadmConfig', n)),
      DevMachineTemplate: ['t1', 't2'].map((n) => of('DevMachineTemplate', n)),
    };
    const listed: string[] = [];
    const reads = {
      list: (_ns: string, ref: ContractRef): Promise<KubeObject[] | undefined> => {
        listed.push(ref.kind);
        return Promise.resolve(fleet[ref.kind]);
      },
    };
    const owner: KubeObject = {
      kind: 'MachineDeployment',
      metadata: { name: 'md', namespace: 'ns' },
      spec: {
        template: {
          spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 't1' } },
        },
      },
    };
    const got = await readCoverageObjects(
      new FakeClient(),
      'ns',
      [machine('a', 'a-infra', 'a-boot'), machine('b', 'b-infra', 'b-boot')],
      [owner],
      reads,
    );
    expect(got.infraMachines!.map((o) => o.metadata.name)).to.deep.equal(['a-infra', 'b-infra']);
    expect(got.bootstrapConfigs!.map((o) => o.metadata.name)).to.deep.equal(['a-boot']);
    expect(got.ownerTemplates!.map((o) => o.metadata.name)).to.deep.equal(['t1', 't2']);
    expect(listed.sort()).to.deep.equal(['DevMachine', 'DevMachineTemplate', 'KubeadmConfig']);
  });
});
