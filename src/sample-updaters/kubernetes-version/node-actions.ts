// The node-level work of a Kubernetes version upgrade, behind an interface: the local implementation edits the
// simulated workload-cluster Node; a real one fills the same four methods against the workload cluster.
import { Nodes, type KubeObject } from '../../api/index.js';
import type { KubeClient } from '../../contract/sdk/index.js';

/** What an upgrade needs to know about a node. */
export interface NodeState {
  ready: boolean;
  unschedulable: boolean;
  kubeletVersion?: string;
}

/** Thrown when the node does not exist (the update fails rather than retrying forever). */
export class NodeNotFoundError extends Error {
  constructor(readonly node: string) {
    super(`Node ${node} not found in the workload cluster`);
    this.name = 'NodeNotFoundError';
  }
}

/**
 * Node operations of the upgrade. Every method is idempotent (the updater may repeat a step after a restart).
 *
 * A real implementation works against the workload cluster: it reads the kubeconfig from the management
 * cluster's Secret `<cluster>-kubeconfig` (key `value`) in the Machine's namespace, then
 * - `cordon` sets `spec.unschedulable` and evicts the node's pods (bounded by spec.drainTimeoutSeconds);
 * - `upgradeKubelet` runs a privileged Job pinned to the node (`spec.nodeName`, `hostPID: true`, the host root
 *   mounted) that installs the kubelet/kubeadm packages of the version and restarts kubelet, named after the
 *   task so a repeated call finds the existing Job instead of starting a second one;
 * - `state` reads the Node's Ready condition and `status.nodeInfo.kubeletVersion`;
 * - `uncordon` clears `spec.unschedulable`.
 */
export interface NodeActions {
  cordon(node: string): Promise<void>;
  upgradeKubelet(node: string, version: string): Promise<void>;
  state(node: string): Promise<NodeState>;
  uncordon(node: string): Promise<void>;
}

interface NodeObject extends KubeObject {
  spec?: { unschedulable?: boolean };
  status?: { nodeInfo?: { kubeletVersion?: string }; conditions?: { type: string; status: string }[] };
}

/**
 * Local mode: the workload cluster's Nodes are simulated in the management API server (same client).
 * The kubelet "upgrade" sets status.nodeInfo.kubeletVersion, as a kubelet restarted on the new version would.
 */
export class LocalNodeActions implements NodeActions {
  constructor(private readonly client: KubeClient) {}

  private async get(node: string): Promise<NodeObject> {
    const n = await this.client.get<NodeObject>(Nodes, undefined, node);
    if (!n) throw new NodeNotFoundError(node);
    return n;
  }

  async cordon(node: string): Promise<void> {
    const n = await this.get(node);
    if (n.spec?.unschedulable === true) return;
    await this.client.patch(Nodes, undefined, node, { spec: { unschedulable: true } }, { type: 'merge' });
  }

  async upgradeKubelet(node: string, version: string): Promise<void> {
    const n = await this.get(node);
    if (n.status?.nodeInfo?.kubeletVersion === version) return;
    await this.client.patch(
      Nodes,
      undefined,
      node,
      { status: { nodeInfo: { kubeletVersion: version } } },
      { type: 'merge', subresource: 'status' },
    );
  }

  async state(node: string): Promise<NodeState> {
    const n = await this.get(node);
    const kubeletVersion = n.status?.nodeInfo?.kubeletVersion;
    return {
      ready: n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
      unschedulable: n.spec?.unschedulable === true,
      ...(kubeletVersion ? { kubeletVersion } : {}),
    };
  }

  async uncordon(node: string): Promise<void> {
    const n = await this.get(node);
    if (n.spec?.unschedulable !== true) return;
    await this.client.patch(Nodes, undefined, node, { spec: { unschedulable: null } }, { type: 'merge' });
  }
}
