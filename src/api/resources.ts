// Resource descriptors (group, version, plural, kind) of the platform's own kinds and Cluster API's. Pure data.
// The built-in Kubernetes kinds and the ResourceType helpers are generic and live in kube.ts.
import { GROUP, VERSION, SAMPLES_GROUP } from './constants.js';
import { namespacedResource } from './kube.js';

/** The platform's own kinds. */
export const InPlaceUpdatePlans = namespacedResource(GROUP, VERSION, 'inplaceupdateplans', 'InPlaceUpdatePlan');
/** Fleet campaigns: one plan template rolled over many Clusters (canary, waves, failure budget). */
export const InPlaceUpdateCampaigns = namespacedResource(GROUP, VERSION, 'inplaceupdatecampaigns', 'InPlaceUpdateCampaign');
/** Per-machine update records. */
export const MachineUpdates = namespacedResource(GROUP, VERSION, 'machineupdates', 'MachineUpdate');
/** Updater registrations: what each updater covers when the platform serves Cluster API's in-place update hooks. */
export const InPlaceUpdaters = namespacedResource(GROUP, VERSION, 'inplaceupdaters', 'InPlaceUpdater');
/** The generic task kind of the updater contract. */
export const UpdaterUpdateTasks = namespacedResource(GROUP, VERSION, 'updaterupdatetasks', 'UpdaterUpdateTask');
/** Sample Kubernetes-version updater task and template kinds. */
export const KubernetesVersionUpdateTasks = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  'kubernetesversionupdatetasks',
  'KubernetesVersionUpdateTask',
);
export const KubernetesVersionUpdateTaskTemplates = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  'kubernetesversionupdatetasktemplates',
  'KubernetesVersionUpdateTaskTemplate',
);
/** Sample OS-image updater task and template kinds. */
export const OSImageUpdateTasks = namespacedResource(SAMPLES_GROUP, VERSION, 'osimageupdatetasks', 'OSImageUpdateTask');
export const OSImageUpdateTaskTemplates = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  'osimageupdatetasktemplates',
  'OSImageUpdateTaskTemplate',
);

/** Cluster API v1beta2 kinds (storage version; docs/design.md §9). */
export const CAPI_GROUP = 'cluster.x-k8s.io';
export const CAPI_VERSION = 'v1beta2';
export const Clusters = namespacedResource(CAPI_GROUP, CAPI_VERSION, 'clusters', 'Cluster');
export const Machines = namespacedResource(CAPI_GROUP, CAPI_VERSION, 'machines', 'Machine');
export const MachineSets = namespacedResource(CAPI_GROUP, CAPI_VERSION, 'machinesets', 'MachineSet');
export const MachineDeployments = namespacedResource(CAPI_GROUP, CAPI_VERSION, 'machinedeployments', 'MachineDeployment');
export const MachineHealthChecks = namespacedResource(CAPI_GROUP, CAPI_VERSION, 'machinehealthchecks', 'MachineHealthCheck');
export const KubeadmControlPlanes = namespacedResource(
  'controlplane.cluster.x-k8s.io',
  CAPI_VERSION,
  'kubeadmcontrolplanes',
  'KubeadmControlPlane',
);
export const KubeadmConfigs = namespacedResource('bootstrap.cluster.x-k8s.io', CAPI_VERSION, 'kubeadmconfigs', 'KubeadmConfig');
export const DevMachines = namespacedResource('infrastructure.cluster.x-k8s.io', CAPI_VERSION, 'devmachines', 'DevMachine');
