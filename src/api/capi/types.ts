// The slices of Cluster API v1beta2 objects this project reads and writes (every field exists in the real CRDs).
import type { Condition, KubeObject } from '../meta.js';

/** A v1beta2 contract-versioned object reference (same namespace as the referrer). */
export interface ObjectRef {
  apiGroup: string;
  kind: string;
  name: string;
}

/** The Machine spec fields used here. */
export interface MachineSpec {
  clusterName: string;
  version?: string;
  failureDomain?: string;
  providerID?: string;
  bootstrap: { configRef?: ObjectRef; dataSecretName?: string };
  infrastructureRef: ObjectRef;
}

/** Node system info as CAPI mirrors it into Machine.status.nodeInfo (every required field). */
export interface NodeSystemInfo {
  architecture: string;
  bootID: string;
  containerRuntimeVersion: string;
  kernelVersion: string;
  kubeProxyVersion: string;
  kubeletVersion: string;
  machineID: string;
  operatingSystem: string;
  osImage: string;
  systemUUID: string;
}

/** cluster.x-k8s.io/v1beta2 Machine. */
export interface Machine extends KubeObject {
  spec: MachineSpec;
  status?: {
    observedGeneration?: number;
    phase?: string;
    initialization?: { infrastructureProvisioned?: boolean; bootstrapDataSecretCreated?: boolean };
    nodeRef?: { name: string };
    nodeInfo?: NodeSystemInfo;
    conditions?: Condition[];
  };
}

/** A metav1.LabelSelector. */
export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Template of the Machines of a MachineSet / MachineDeployment. */
export interface MachineTemplateSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: MachineSpec;
}

/** Replica counters shared by MachineDeployment, MachineSet and KubeadmControlPlane status. */
export interface ReplicaStatus {
  observedGeneration?: number;
  selector?: string;
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  upToDateReplicas?: number;
}

/** cluster.x-k8s.io/v1beta2 MachineDeployment. */
export interface MachineDeployment extends KubeObject {
  spec: {
    clusterName: string;
    replicas?: number;
    selector: LabelSelectorSpec;
    rollout?: {
      strategy?: { type: 'RollingUpdate' | 'OnDelete'; rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string } };
    };
    deletion?: { order?: 'Random' | 'Newest' | 'Oldest' };
    template: MachineTemplateSpec;
  };
  status?: ReplicaStatus & { phase?: string };
}

/** cluster.x-k8s.io/v1beta2 MachineSet. */
export interface MachineSet extends KubeObject {
  spec: {
    clusterName: string;
    replicas?: number;
    selector: LabelSelectorSpec;
    deletion?: { order?: 'Random' | 'Newest' | 'Oldest' };
    template: MachineTemplateSpec;
  };
  status?: ReplicaStatus;
}

/** controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane. */
export interface KubeadmControlPlane extends KubeObject {
  spec: {
    replicas?: number;
    version: string;
    rollout?: { strategy?: { type: 'RollingUpdate'; rollingUpdate?: { maxSurge?: number | string } } };
    kubeadmConfigSpec?: Record<string, unknown>;
    machineTemplate: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: { infrastructureRef: ObjectRef };
    };
  };
  status?: ReplicaStatus & { version?: string; initialization?: { controlPlaneInitialized?: boolean } };
}

/** cluster.x-k8s.io/v1beta2 MachineHealthCheck. */
export interface MachineHealthCheck extends KubeObject {
  spec: {
    clusterName: string;
    selector: LabelSelectorSpec;
    checks?: { nodeStartupTimeoutSeconds?: number; unhealthyNodeConditions?: { type: string; status: string; timeoutSeconds: number }[] };
    remediation?: { triggerIf?: { unhealthyLessThanOrEqualTo?: number | string; unhealthyInRange?: string } };
  };
  status?: {
    observedGeneration?: number;
    expectedMachines?: number;
    currentHealthy?: number;
    remediationsAllowed?: number;
    targets?: string[];
    conditions?: Condition[];
  };
}

/** A core v1 Node, as far as the simulator writes it. */
export interface Node extends KubeObject {
  spec?: { providerID?: string };
  status?: {
    nodeInfo?: NodeSystemInfo;
    conditions?: {
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastHeartbeatTime?: string;
      lastTransitionTime?: string;
    }[];
  };
}
