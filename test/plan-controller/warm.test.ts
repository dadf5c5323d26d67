// The plan controller watches the template kinds its MachineDeployments reference before any plan. Machines, and the
// InfraMachines and BootstrapConfigs they reference, are cached per cluster (snapshot/cluster-scopes.ts): nothing of
// them is listed before a plan of their cluster.
import { expect } from 'chai';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';

describe('plan controller: provider kinds watched ahead of plans', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('lists the template kinds the fleet references with no plan applied, and no Machine, InfraMachine or BootstrapConfig', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2 }] });
    await p.startPlanControllerOnly();
    const kinds = ['devmachinetemplates.infrastructure.cluster.x-k8s.io', 'kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io'];
    await waitFor(
      async () => {
        const n = await Promise.all(kinds.map((k) => p.apiRequests('plan-controller', 'list', k)));
        return n.every((x) => x > 0);
      },
      { timeoutMs: 30_000, message: 'the plan controller lists the provider kinds' },
    );
    const perMachine = [
      'machines.cluster.x-k8s.io',
      'devmachines.infrastructure.cluster.x-k8s.io',
      'kubeadmconfigs.bootstrap.cluster.x-k8s.io',
    ];
    expect(await Promise.all(perMachine.map((k) => p.apiRequests('plan-controller', 'list', k)))).to.deep.equal([0, 0, 0]);
    expect(await p.plan('none')).to.equal(undefined);
  });
});
