// The plan controller caches Machines, MachineUpdates and the kinds machines reference per cluster
// (snapshot/cluster-scopes.ts): a cluster's objects while a plan of it reconciles or may still act, none of a cluster
// without such a plan, and a cluster's objects are forgotten once it is idle and listed again for its next plan.
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { Labels } from '../../src/api/index.js';
import { CONTROLLER_NAME } from '../../src/plan-controller/index.js';
import { clusterScopesOf } from '../../src/plan-controller/snapshot/cluster-scopes.js';
import type { ScopedInformer } from '../../src/runtime/scoped.js';
import type { Store } from '../../src/runtime/pure/types.js';
import { applyInventory, buildInventory } from '../../tools/capi-sim/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { CLUSTER, FROM_VERSION, planObject, refUpdater } from '../e2e/harness.js';

const clustersIn = (store: Store, ns: string): string[] =>
  [...new Set(store.list(ns).map((o: KubeObject) => o.metadata.labels?.[Labels.clusterName] ?? '(none)'))].sort();

describe('plan controller: per-cluster caches', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('holds only the clusters whose plans act, forgets a cluster once it is idle, and lists it again for its next plan', async () => {
    const p = await env().platform();
    // A second cluster in the same namespace, with no plan (before the simulator starts with provision).
    await applyInventory(
      p.client,
      buildInventory({
        namespace: p.ns,
        clusterName: 'cluster2',
        version: FROM_VERSION,
        controlPlane: { name: 'cluster2-cp', replicas: 1 },
        machineDeployments: [{ name: 'cluster2-md-0', replicas: 2 }],
      }),
    );
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform();
    const scopes = clusterScopesOf(p.manager(CONTROLLER_NAME));
    expect(scopes.machines.store.list(p.ns)).to.deep.equal([]);

    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater()] }] }));
    const done = await p.waitPlan('p', (x) => x.status?.updateStatus === 'updated', 'plan p updated');
    expect(done.status?.progress).to.equal('2/2');
    expect(clustersIn(scopes.machines.store, p.ns)).to.deep.equal([CLUSTER]);
    expect(scopes.machines.store.list(p.ns)).to.have.length(3);
    expect(clustersIn(scopes.machineUpdates.store, p.ns)).to.deep.equal([CLUSTER]);
    expect(scopes.machines.has(p.ns, 'cluster2')).to.equal(false);

    // Done and unlabelled: no reconcile holds the cluster and no plan of it may act, so it goes once idle. A terminal
    // plan may take its label off its last machine in a reconcile after its terminal status; until then it may act.
    const later = Date.now() + 10 * 60_000;
    const sweeps = { machines: 0, machineUpdates: 0 };
    await waitFor(
      () => {
        if (scopes.heldCount !== 0) return false;
        sweeps.machines += (scopes.machines as ScopedInformer).sweep(later);
        sweeps.machineUpdates += (scopes.machineUpdates as unknown as ScopedInformer).sweep(later);
        return sweeps.machines > 0 && sweeps.machineUpdates > 0;
      },
      { message: 'the idle cluster forgotten' },
    );
    expect(sweeps).to.deep.equal({ machines: 1, machineUpdates: 1 });
    expect(scopes.machines.store.list(p.ns)).to.deep.equal([]);
    expect(scopes.machineUpdates.store.list(p.ns)).to.deep.equal([]);

    // The next plan of the cluster lists it again and runs to the end.
    const next = refUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.2' }] });
    await p.apply(planObject(p.ns, 'p2', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [next] }] }));
    const again = await p.waitPlan('p2', (x) => x.status?.updateStatus === 'updated', 'plan p2 updated');
    expect(again.status?.progress).to.equal('2/2');
    expect(clustersIn(scopes.machines.store, p.ns)).to.deep.equal([CLUSTER]);
  });
});
