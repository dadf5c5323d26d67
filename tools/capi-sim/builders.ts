// Pure builders of the CAPI objects the inventory and the simulator create. Every field written here exists in the
// real v1beta2 CRDs (the fixture test proves the fixtures declare them with the same schema), so nothing is pruned.
import {
  Annotations,
  Labels,
  apiVersionOf,
  type Condition,
  type KubeObject,
  type OwnerReference,
  type ResourceType,
} from '../../src/api/index.js';
import {
  Clusters,
  DevMachines,
  KubeadmConfigs,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
  Machines,
  SIMULATED_NODE_ANNOTATION,
} from '../../src/api/index.js';
import type { Machine, MachineSpec, Node, NodeSystemInfo } from '../../src/api/capi/index.js';

/** DevMachineTemplate (not in src/api: only the simulator and the inventory use it). */
export const DevMachineTemplates: ResourceType = {
  group: 'infrastructure.cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'devmachinetemplates',
  kind: 'DevMachineTemplate',
  namespaced: true,
};
/** KubeadmConfigTemplate (not in src/api: only the simulator and the inventory use it). */
export const KubeadmConfigTemplates: ResourceType = {
  group: 'bootstrap.cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'kubeadmconfigtemplates',
  kind: 'KubeadmConfigTemplate',
  namespaced: true,
};

/** CAPI annotation on workload Nodes naming their Machine. */
export const NODE_MACHINE_ANNOTATION = 'cluster.x-k8s.io/machine';
/** CAPI annotation on workload Nodes naming their Cluster's namespace. */
export const NODE_CLUSTER_NAMESPACE_ANNOTATION = 'cluster.x-k8s.io/cluster-namespace';
/** CAPI annotation on workload Nodes naming their Cluster. */
export const NODE_CLUSTER_NAME_ANNOTATION = 'cluster.x-k8s.io/cluster-name';

// k8s.io/apimachinery's random-string alphabet (no vowels, no confusable characters).
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** A deterministic 5-character suffix in Kubernetes' generated-name alphabet (FNV-1a of the seed). */
export function stableSuffix(seed: string): string {
  let out = '';
  for (let i = 0; i < 5; i++) out += ALPHABET[fnv1a(`${seed}:${i}`) % ALPHABET.length];
  return out;
}

const SUFFIX_SPACE = ALPHABET.length ** 5;
// Not divisible by 3 (27^5's only prime factor), so i -> (i * STRIDE + offset) mod 27^5 is a bijection.
const STRIDE = 1_000_003;

/**
 * The i-th member suffix of an owner: looks random like a generated name, and distinct for every i below 27^5 by
 * construction (a permutation of the index, offset per owner), so a MachineSet never gets two machines of one name.
 */
export function memberSuffix(owner: string, i: number): string {
  let n = (((i * STRIDE) % SUFFIX_SPACE) + (fnv1a(owner) % SUFFIX_SPACE)) % SUFFIX_SPACE;
  let out = '';
  for (let k = 0; k < 5; k++) {
    out += ALPHABET[n % ALPHABET.length];
    n = Math.floor(n / ALPHABET.length);
  }
  return out;
}

const fnv1a = (s: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
};

/** Name of the workload Node of a Machine: namespaced so that several test clusters share one API server. */
export const nodeNameFor = (namespace: string, machineName: string): string =>
  `${namespace}-${machineName}`.slice(0, 253).replace(/[-.]+$/, '');

/** The OS image a cluster boots when the caller names none (the plan's OS-image updater moves machines off it). */
export const defaultImage = (version: string): string => `ubuntu-22.04-k8s-${version.replace(/^v/, '')}`;

/** A controller ownerReference; `uid` may be '' and is then resolved by applyInventory. */
export const controllerRef = (res: ResourceType, name: string, uid = ''): OwnerReference => ({
  apiVersion: apiVersionOf(res),
  kind: res.kind,
  name,
  uid,
  controller: true,
  blockOwnerDeletion: true,
});

/** A v1beta2 condition (message is required by the CAPI schemas, so it is always written). */
export const condition = (type: string, status: Condition['status'], reason: string, now: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: now,
});

/** metav1.Time of a Date (second precision). */
export const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** What the simulator needs to know to create one Machine and its infrastructure, bootstrap config and Node. */
export interface MachineBlueprint {
  namespace: string;
  clusterName: string;
  name: string;
  version: string;
  /** KubeadmControlPlane or MachineSet that owns the machine. */
  owner: { res: ResourceType; name: string; uid?: string };
  /** Labels of the machine (CAPI labels plus the owner template's labels). */
  labels: Record<string, string>;
  /** DevMachine spec (from the infrastructure template). */
  infraSpec: Record<string, unknown>;
  /** KubeadmConfig spec (from the bootstrap template or the KCP's kubeadmConfigSpec). */
  bootstrapSpec: Record<string, unknown>;
  failureDomain?: string;
  /** Annotations of the DevMachine (upstream: the cloned-from annotations of the template it was cloned from). */
  infraAnnotations?: Record<string, string>;
  /** Annotations of the KubeadmConfig (cloned-from annotations when cloned from a KubeadmConfigTemplate). */
  bootstrapAnnotations?: Record<string, string>;
  /** Annotations of the Machine (from its owner's machine template). */
  annotations?: Record<string, string>;
}

/** The CAPI labels of a control-plane machine. */
export const controlPlaneMachineLabels = (clusterName: string, cpName: string): Record<string, string> => ({
  [Labels.clusterName]: clusterName,
  [Labels.controlPlane]: '',
  [Labels.controlPlaneName]: cpName,
});

/** The CAPI labels of a MachineDeployment machine. */
export const deploymentMachineLabels = (clusterName: string, mdName: string, msName: string): Record<string, string> => ({
  [Labels.clusterName]: clusterName,
  [Labels.deploymentName]: mdName,
  [Labels.setName]: msName,
});

/** The Machine of a blueprint (status is written separately through /status). */
export function buildMachine(bp: MachineBlueprint): Machine {
  const spec: MachineSpec = {
    clusterName: bp.clusterName,
    version: bp.version,
    providerID: `dev://${bp.namespace}/${bp.name}`,
    bootstrap: { configRef: { apiGroup: KubeadmConfigs.group, kind: KubeadmConfigs.kind, name: bp.name } },
    infrastructureRef: { apiGroup: DevMachines.group, kind: DevMachines.kind, name: bp.name },
  };
  if (bp.failureDomain) spec.failureDomain = bp.failureDomain;
  return {
    apiVersion: apiVersionOf(Machines),
    kind: Machines.kind,
    metadata: {
      name: bp.name,
      namespace: bp.namespace,
      labels: { ...bp.labels },
      ...(bp.annotations && Object.keys(bp.annotations).length > 0 ? { annotations: { ...bp.annotations } } : {}),
      ownerReferences: [controllerRef(bp.owner.res, bp.owner.name, bp.owner.uid)],
    },
    spec,
  };
}

const annotated = (a: Record<string, string> | undefined): { annotations?: Record<string, string> } =>
  a && Object.keys(a).length > 0 ? { annotations: { ...a } } : {};

/** A clone a Machine owns (its DevMachine or KubeadmConfig): the machine's name, cluster label and controller. */
function machineClone(
  res: ResourceType,
  bp: MachineBlueprint,
  machineUid: string,
  annotations: Record<string, string> | undefined,
  spec: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: apiVersionOf(res),
    kind: res.kind,
    metadata: {
      name: bp.name,
      namespace: bp.namespace,
      labels: { [Labels.clusterName]: bp.clusterName },
      ...annotated(annotations),
      ownerReferences: [controllerRef(Machines, bp.name, machineUid)],
    },
    spec,
  };
}

/** The DevMachine of a blueprint, owned by its Machine. */
export function buildDevMachine(bp: MachineBlueprint, machineUid = ''): KubeObject {
  return machineClone(DevMachines, bp, machineUid, bp.infraAnnotations, {
    ...structuredClone(bp.infraSpec),
    providerID: `dev://${bp.namespace}/${bp.name}`,
  });
}

/** The KubeadmConfig of a blueprint, owned by its Machine. */
export function buildKubeadmConfig(bp: MachineBlueprint, machineUid = ''): KubeObject {
  const spec = structuredClone(bp.bootstrapSpec);
  // The real schema requires at least one property in spec.
  if (Object.keys(spec).length === 0) spec['format'] = 'cloud-config';
  return machineClone(KubeadmConfigs, bp, machineUid, bp.bootstrapAnnotations, spec);
}

/** Status of a provisioned DevMachine. */
export const devMachineReadyStatus = (now: string): Record<string, unknown> => ({
  initialization: { provisioned: true },
  conditions: [condition('Ready', 'True', 'Ready', now)],
});

/** Status of a KubeadmConfig whose bootstrap data exists. */
export const kubeadmConfigReadyStatus = (now: string): Record<string, unknown> => ({
  observedGeneration: 1,
  initialization: { dataSecretCreated: true },
  conditions: [condition('Ready', 'True', 'Ready', now), condition('DataSecretAvailable', 'True', 'Available', now)],
});

/** The node system info a simulated kubelet reports. */
export function nodeInfoFor(nodeName: string, version: string, image: string): NodeSystemInfo {
  const id = `${stableSuffix(nodeName)}${stableSuffix(`${nodeName}#id`)}`;
  return {
    architecture: 'amd64',
    bootID: `boot-${id}`,
    containerRuntimeVersion: 'containerd://1.7.22',
    kernelVersion: '6.8.0-45-generic',
    kubeProxyVersion: version,
    kubeletVersion: version,
    machineID: `machine-${id}`,
    operatingSystem: 'linux',
    osImage: image,
    systemUUID: `uuid-${id}`,
  };
}

/** The workload-cluster Node of a machine (created once the machine is provisioned). */
export function buildNode(namespace: string, clusterName: string, machineName: string, controlPlane: boolean): Node {
  const name = nodeNameFor(namespace, machineName);
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' };
  if (controlPlane) labels['node-role.kubernetes.io/control-plane'] = '';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels,
      annotations: {
        [NODE_MACHINE_ANNOTATION]: machineName,
        [NODE_CLUSTER_NAME_ANNOTATION]: clusterName,
        [NODE_CLUSTER_NAMESPACE_ANNOTATION]: namespace,
        [SIMULATED_NODE_ANNOTATION]: 'true',
      },
    },
    spec: { providerID: `dev://${namespace}/${machineName}` },
  };
}

/** Status of a Ready Node. */
export const nodeReadyStatus = (nodeInfo: NodeSystemInfo, now: string): NonNullable<Node['status']> => ({
  nodeInfo,
  conditions: [
    {
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    },
  ],
});

/** Status of a Machine still provisioning (no node yet). */
export const machineProvisioningStatus = (now: string): NonNullable<Machine['status']> => ({
  observedGeneration: 1,
  phase: 'Provisioning',
  conditions: [
    condition('Ready', 'False', 'NotReady', now, 'Machine is provisioning'),
    condition('Available', 'False', 'NotAvailable', now, 'Machine is provisioning'),
    condition('UpToDate', 'True', 'UpToDate', now),
    condition('NodeHealthy', 'Unknown', 'NodeDoesNotExist', now, 'Waiting for a Node'),
  ],
});

/** Status of a Running machine whose node is healthy. */
export const machineRunningStatus = (
  nodeName: string,
  nodeInfo: NodeSystemInfo,
  generation: number,
  now: string,
): NonNullable<Machine['status']> => ({
  observedGeneration: generation,
  phase: 'Running',
  initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
  nodeRef: { name: nodeName },
  nodeInfo,
  conditions: [
    condition('Ready', 'True', 'Ready', now),
    condition('Available', 'True', 'Available', now),
    condition('UpToDate', 'True', 'UpToDate', now),
    condition('BootstrapConfigReady', 'True', 'Ready', now),
    condition('InfrastructureReady', 'True', 'Ready', now),
    condition('NodeReady', 'True', 'NodeReady', now),
    condition('NodeHealthy', 'True', 'NodeHealthy', now),
  ],
});

/** True for a machine the simulator considers owned by a control plane (by its CAPI labels). */
export const isControlPlaneMachine = (m: KubeObject): boolean => m.metadata.labels?.[Labels.controlPlane] !== undefined;

/** True when a machine asks for manual remediation and does not opt out of it (skip-remediation or paused, as CAPI's MHC checks). */
export const wantsRemediation = (m: KubeObject): boolean =>
  m.metadata.annotations?.[Annotations.remediateMachine] !== undefined &&
  m.metadata.annotations[Annotations.skipRemediation] === undefined &&
  m.metadata.annotations[Annotations.paused] === undefined;

export { Clusters, DevMachines, KubeadmConfigs, KubeadmControlPlanes, MachineDeployments, MachineSets, Machines };
