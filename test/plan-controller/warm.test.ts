// The plan controller watches the provider kinds its machines and MachineDeployments reference once it has listed
// them, before any plan: a plan's first reconcile no longer waits for lists of every InfraMachine and BootstrapConfig.
import { expect } from 'chai';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';

describe('plan controller: provider kinds watched ahead of plans', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('lists the InfraMachine, BootstrapConfig and template kinds the fleet references with no plan applied', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2 }] });
    await p.startPlanControllerOnly();
    const kinds = [
      'devmachines.infrastructure.cluster.x-k8s.io',
      'kubeadmconfigs.bootstrap.cluster.x-k8s.io',
      'devmachinetemplates.infrastructure.cluster.x-k8s.io',
      'kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io',
    ];
    await waitFor(
      async () => {
        const n = await Promise.all(kinds.map((k) => p.apiRequests('plan-controller', 'list', k)));
        return n.every((x) => x > 0);
      },
      { timeoutMs: 30_000, message: 'the plan controller lists the provider kinds' },
    );
    expect(await p.plan('none')).to.equal(undefined);
  });
});
