// Resource descriptors (group, version, plural, kind) of the platform's own kinds and Cluster API's. Pure data.
// The built-in Kubernetes kinds and the ResourceType helpers are generic and live in kube.ts.
import { GROUP, VERSION, SAMPLES_GROUP } from './constants.js';
import type { ResourceType } from './kube.js';

const ns = (group: string, version: string, plural: string, kind: string): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
});

/** The platform's own kinds. */
export const InPlaceUpdatePlans = ns(GROUP, VERSION, 'inplaceupdateplans', 'InPlaceUpdatePlan');
/** Fleet campaigns: one plan template rolled over many Clusters (canary, waves, failure budget). */
export const InPlaceUpdateCampaigns = ns(GROUP, VERSION, 'inplaceupdatecampaigns', 'InPlaceUpdateCampaign');
/** Per-machine update records. */
export const MachineUpdates = ns(GROUP, VERSION, 'machineupdates', 'MachineUpdate');
/** Updater registrations: what each updater covers when the platform serves Cluster API's in-place update hooks. */
export const InPlaceUpdaters = ns(GROUP, VERSION, 'inplaceupdaters', 'InPlaceUpdater');
/** The generic task kind of the updater contract. */
export const UpdaterUpdateTasks = ns(GROUP, VERSION, 'updaterupdatetasks', 'UpdaterUpdateTask');
/** Sample Kubernetes-version updater task and template kinds. */
export const KubernetesVersionUpdateTasks = ns(SAMPLES_GROUP, VERSION, 'kubernetesversionupdatetasks', 'KubernetesVersionUpdateTask');
export const KubernetesVersionUpdateTaskTemplates = ns(
  SAMPLES_GROUP,
  VERSION,
  'kubernetesversionupdatetasktemplates',
  'KubernetesVersionUpdateTaskTemplate',
);
/** Sample OS-image updater task and template kinds. */
export const OSImageUpdateTasks = ns(SAMPLES_GROUP, VERSION, 'osimageupdatetasks', 'OSImageUpdateTask');
export const OSImageUpdateTaskTemplates = ns(SAMPLES_GROUP, VERSION, 'osimageupdatetasktemplates', 'OSImageUpdateTaskTemplate');

/** Cluster API v1beta2 kinds (storage version; docs/design.md §9). */
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
