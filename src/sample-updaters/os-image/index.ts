// The OS image sample updater as a runnable unit (see updater.ts).
import { projectFile } from '../paths.js';
import type { SampleUpdater } from '../types.js';
import { osImageUpdater } from './updater.js';

export { osImageUpdater, targetImage, STEPS } from './updater.js';
export { LocalHostActions, RUNNING_IMAGE_ANNOTATION, type HostActions } from './host-actions.js';

/** The OS image updater: OSImageUpdateTask, responsible for the InfraMachine image. */
export const osImage: SampleUpdater = {
  name: 'os-image',
  description: 'OSImageUpdateTask updater: stages the image, reboots into it, verifies it (InfraMachine image).',
  simulatesNode: true,
  generic: false,
  rbac: [
    { apiGroups: ['samples.inplace.cluster.x-k8s.io'], resources: ['osimageupdatetasks'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['samples.inplace.cluster.x-k8s.io'], resources: ['osimageupdatetasks/status'], verbs: ['get', 'patch', 'update'] },
    { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get'] },
    // Local mode: the simulated workload-cluster Nodes live in the management API server.
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  crds: [
    projectFile('crds/samples/samples.inplace.cluster.x-k8s.io_osimageupdatetasks.yaml'),
    projectFile('crds/samples/samples.inplace.cluster.x-k8s.io_osimageupdatetasktemplates.yaml'),
  ],
  start: (opts) => osImageUpdater().start(opts),
};
