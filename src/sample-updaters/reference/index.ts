// The reference sample updater as a runnable unit (see updater.ts).
import { servedNamesProblem, type SampleUpdater } from '../types.js';
import { referenceUpdater } from './updater.js';

export { referenceUpdater, readParameters, DEFAULT_DURATION_SECONDS } from './updater.js';

/** The reference updater: generic UpdaterUpdateTask, only the updater names it is given (or every name with catchAll). */
export const reference: SampleUpdater = {
  name: 'reference',
  description:
    'Generic UpdaterUpdateTask updater: simulated duration (parameters.durationSeconds) and failure injection (parameters.failWith).',
  simulatesNode: false,
  generic: true,
  rbac: [
    { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['updaterupdatetasks'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['updaterupdatetasks/status'], verbs: ['get', 'patch', 'update'] },
    // A Kubernetes version task on a Node of the CAPI simulator: the simulated kubelet reports the new version.
    { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ],
  crds: [],
  start: async (opts) => {
    const problem = servedNamesProblem(opts);
    if (problem) throw new Error(`reference updater: ${problem}`);
    return referenceUpdater(opts.catchAll ? undefined : opts.names).start(opts);
  },
};
