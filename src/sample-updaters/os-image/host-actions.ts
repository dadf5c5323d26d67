// The host-level work of an OS image update, behind an interface: the local implementation records the running
// image on the simulated workload-cluster Node; a real one talks to the host (or its BMC / provisioning agent).
import { randomUUID } from 'node:crypto';
import { Nodes, type KubeObject } from '../../api/index.js';
import type { KubeClient } from '../../contract/sdk/index.js';

/** Annotation on the (simulated) Node naming the OS image the host runs. */
export const RUNNING_IMAGE_ANNOTATION = 'samples.inplace.cluster.x-k8s.io/os-image';

/**
 * Host operations of an OS image update; each is idempotent. A real implementation would, through the
 * workload cluster (Secret `<cluster>-kubeconfig`): `stage` the image on the host's inactive A/B partition with a
 * privileged Job, `reboot` into it (kexec or a BMC power cycle), and read the booted image back in `runningImage`
 * (e.g. from /etc/os-release via a node label set by a node agent).
 */
export interface HostActions {
  stage(node: string, image: string): Promise<void>;
  reboot(node: string, image: string): Promise<void>;
  runningImage(node: string): Promise<string | undefined>;
}

/**
 * Local mode: staging is simulated time; the "reboot" records the image on the Node and makes the Node report what a
 * host booted into it reports (status.nodeInfo: osImage the image's name, a new bootID), which Cluster API mirrors into
 * Machine.status.nodeInfo for the plan's verification.
 */
export class LocalHostActions implements HostActions {
  constructor(private readonly client: KubeClient) {}

  async stage(node: string): Promise<void> {
    if (!(await this.client.get(Nodes, undefined, node))) throw new Error(`Node ${node} not found in the workload cluster`);
  }

  async reboot(node: string, image: string): Promise<void> {
    if ((await this.runningImage(node)) === image) return;
    await this.client.patch(
      Nodes,
      undefined,
      node,
      { metadata: { annotations: { [RUNNING_IMAGE_ANNOTATION]: image } } },
      { type: 'merge' },
    );
    await this.client.patch(
      Nodes,
      undefined,
      node,
      // A host reports the OS it runs, not the registry it came from: the image's last path segment.
      { status: { nodeInfo: { osImage: image.split('/').pop() ?? image, bootID: `boot-${randomUUID()}` } } },
      { type: 'merge', subresource: 'status' },
    );
  }

  async runningImage(node: string): Promise<string | undefined> {
    const n = await this.client.get<KubeObject>(Nodes, undefined, node);
    return n?.metadata.annotations?.[RUNNING_IMAGE_ANNOTATION];
  }
}
