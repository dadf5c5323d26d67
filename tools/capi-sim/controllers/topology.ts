// The simulated topology controller (upstream: internal/controllers/topology/cluster).
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import { Clusters, KubeadmControlPlanes, MachineDeployments } from '../builders.js';
import { decideTopology, type ClusterView } from '../rollout.js';
import type { KubeadmControlPlane, MachineDeployment, ObjectRef } from '../../../src/api/capi/index.js';
import { type SimWorld, merge } from './world.js';

/** The topology controller: Cluster.spec.topology.version onto the control plane, then the MachineDeployments. */
export class TopologyController {
  constructor(private readonly world: SimWorld) {}

  /** The topology controller: Cluster.spec.topology.version onto the KCP, then onto managed MachineDeployments. */
  async reconcile(key: ObjectKey): Promise<Action> {
    const cluster = this.world.mgr.informer<ClusterView>(Clusters).store.get(key.namespace, key.name);
    if (!cluster?.spec?.topology || cluster.metadata.deletionTimestamp) return Action.awaitChange();
    const cpRef: ObjectRef | undefined = cluster.spec.controlPlaneRef;
    const kcp =
      cpRef?.kind === KubeadmControlPlanes.kind
        ? this.world.mgr.informer<KubeadmControlPlane>(KubeadmControlPlanes).store.peek(key.namespace, cpRef.name)
        : undefined;
    const mds = this.world.mgr
      .informer<MachineDeployment>(MachineDeployments)
      .store.list(key.namespace)
      .filter((m) => m.spec.clusterName === key.name);
    const patches = decideTopology(cluster, kcp, mds);
    if (patches.controlPlaneVersion && kcp)
      await this.world.client.patch(
        KubeadmControlPlanes,
        key.namespace,
        kcp.metadata.name ?? '',
        { spec: { version: patches.controlPlaneVersion } },
        merge,
      );
    for (const [name, version] of Object.entries(patches.machineDeploymentVersions)) {
      await this.world.client.patch(MachineDeployments, key.namespace, name, { spec: { template: { spec: { version } } } }, merge);
    }
    return Action.awaitChange();
  }
}
