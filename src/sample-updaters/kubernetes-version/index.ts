// The Kubernetes version sample updater as a runnable unit (see updater.ts).
import { projectFile } from '../paths.js';
import type { SampleUpdater } from '../types.js';
import { kubernetesVersionUpdater } from './updater.js';

export { kubernetesVersionUpdater, targetVersion, STEPS } from './updater.js';
export { LocalNodeActions, NodeNotFoundError, type NodeActions, type NodeState } from './node-actions.js';

/** The Kubernetes version updater: KubernetesVersionUpdateTask, responsible for Machine /spec/version. */
export const kubernetesVersion: SampleUpdater = {
  name: 'kubernetes-version',
  description:
    'KubernetesVersionUpdateTask updater: cordons the node, upgrades kubelet, waits for Ready, uncordons (Machine /spec/version).',
  simulatesNode: true,
  generic: false,
  rbac: [
    { apiGroups: ['samples.inplace.cluster.x-k8s.io'], resources: ['kubernetesversionupdatetasks'], verbs: ['get', 'list', 'watch'] },
    {
      apiGroups: ['samples.inplace.cluster.x-k8s.io'],
      resources: ['kubernetesversionupdatetasks/status'],
      verbs: ['get', 'patch', 'update'],
    },
    { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get'] },
    // Local mode: the simulated workload-cluster Nodes live in the management API server.
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  crds: [
    projectFile('crds/samples/samples.inplace.cluster.x-k8s.io_kubernetesversionupdatetasks.yaml'),
    projectFile('crds/samples/samples.inplace.cluster.x-k8s.io_kubernetesversionupdatetasktemplates.yaml'),
  ],
  start: (opts) => kubernetesVersionUpdater().start(opts),
};
