// Samples that simulate a node write the Node objects of the API server they talk to: right for the embedded API
// server (where the CAPI simulator's Nodes live), wrong on a real management cluster. They check where they are first.
import { KubeConfig, VersionApi } from '@kubernetes/client-node';

/**
 * What the embedded API server (tools/local-apiserver) reports as /version gitVersion ends with; a real kube-apiserver
 * reports a release (`v1.32.1`, `v1.31.4+k3s1`, `v1.30.2-eks-…`), never this suffix. A test pins it to the server.
 */
export const EMBEDDED_SERVER_VERSION_SUFFIX = '-inplace-local';

/** The server's /version gitVersion (through the kubeconfig's credentials). */
export async function serverGitVersion(kubeconfigPath?: string): Promise<string> {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  const info = await kc.makeApiClient(VersionApi).getCode();
  return info.gitVersion;
}

/** Whether a /version gitVersion is the embedded API server's. */
export function isEmbeddedServer(gitVersion: string): boolean {
  return gitVersion.endsWith(EMBEDDED_SERVER_VERSION_SUFFIX);
}

/** Why a node-simulating sample must not start against a server of this gitVersion; undefined when it may. */
export function simulationProblem(sample: string, gitVersion: string, allowRealCluster: boolean): string | undefined {
  if (allowRealCluster || isEmbeddedServer(gitVersion)) return undefined;
  return (
    `the ${sample} sample updater SIMULATES the node (it writes the Node objects of the API server it talks to), ` +
    `and this API server (${gitVersion}) is not the embedded one (inplace local-apiserver / npm start): it would mark ` +
    `machines updated without touching them. Run a real updater here, or pass --allow-real-cluster if you really mean it`
  );
}
