// Resource descriptors (group, version, plural, kind) of every kind the platform touches. Pure data.
import { GROUP, VERSION, SAMPLES_GROUP } from './constants.js';

/** Identifies a served resource: what a client needs to build a URL. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

const ns = (group: string, version: string, plural: string, kind: string): ResourceType => ({ group, version, plural, kind, namespaced: true });

/** The platform's own kinds. */
export const InPlaceUpdatePlans = ns(GROUP, VERSION, 'inplaceupdateplans', 'InPlaceUpdatePlan');
/** Per-machine update records. */
export const MachineUpdates = ns(GROUP, VERSION, 'machineupdates', 'MachineUpdate');
/** The generic task kind of the updater contract. */
export const UpdaterUpdateTasks = ns(GROUP, VERSION, 'updaterupdatetasks', 'UpdaterUpdateTask');
/** Sample Kubernetes-version updater task and template kinds. */
export const KubernetesVersionUpdateTasks = ns(SAMPLES_GROUP, VERSION, 'kubernetesversionupdatetasks', 'KubernetesVersionUpdateTask');
export const KubernetesVersionUpdateTaskTemplates = ns(SAMPLES_GROUP, VERSION, 'kubernetesversionupdatetasktemplates', 'KubernetesVersionUpdateTaskTemplate');
/** Sample OS-image updater task and template kinds. */
export const OSImageUpdateTasks = ns(SAMPLES_GROUP, VERSION, 'osimageupdatetasks', 'OSImageUpdateTask');
export const OSImageUpdateTaskTemplates = ns(SAMPLES_GROUP, VERSION, 'osimageupdatetasktemplates', 'OSImageUpdateTaskTemplate');

/** Cluster API v1beta2 kinds (storage version; DESIGN §9). */
export const CAPI_GROUP = 'cluster.x-k8s.io';
export const CAPI_VERSION = 'v1beta2';
export const Clusters = ns(CAPI_GROUP, CAPI_VERSION, 'clusters', 'Cluster');
export const Machines = ns(CAPI_GROUP, CAPI_VERSION, 'machines', 'Machine');
export const MachineSets = ns(CAPI_GROUP, CAPI_VERSION, 'machinesets', 'MachineSet');
export const MachineDeployments = ns(CAPI_GROUP, CAPI_VERSION, 'machinedeployments', 'MachineDeployment');
export const MachineHealthChecks = ns(CAPI_GROUP, CAPI_VERSION, 'machinehealthchecks', 'MachineHealthCheck');
export const KubeadmControlPlanes = ns('controlplane.cluster.x-k8s.io', CAPI_VERSION, 'kubeadmcontrolplanes', 'KubeadmControlPlane');
export const KubeadmConfigs = ns('bootstrap.cluster.x-k8s.io', CAPI_VERSION, 'kubeadmconfigs', 'KubeadmConfig');
export const DevMachines = ns('infrastructure.cluster.x-k8s.io', CAPI_VERSION, 'devmachines', 'DevMachine');

/** Core and other built-in kinds. */
export const Namespaces: ResourceType = { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false };
export const Nodes: ResourceType = { group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false };
export const Secrets = ns('', 'v1', 'secrets', 'Secret');
export const ConfigMaps = ns('', 'v1', 'configmaps', 'ConfigMap');
export const Events = ns('', 'v1', 'events', 'Event');
export const Leases = ns('coordination.k8s.io', 'v1', 'leases', 'Lease');
export const CustomResourceDefinitions: ResourceType = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false };

/** apiVersion string (group/version, or version for the core group) of a resource. */
export const apiVersionOf = (r: Pick<ResourceType, 'group' | 'version'>): string => (r.group ? `${r.group}/${r.version}` : r.version);
/** Splits an apiVersion string into group and version. */
export const parseApiVersion = (apiVersion: string): { group: string; version: string } => {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
};
/** Stable string key of a resource type, e.g. for maps of informers. */
export const resourceKey = (r: ResourceType): string => `${r.plural}.${r.group}/${r.version}`;
