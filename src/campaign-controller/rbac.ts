// RBAC the campaign controller needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac). It never reads Machines or provider kinds: a
// campaign works on Clusters, MachineDeployments (names, labels, strategy) and its plans' status.
import { componentRbac } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

const read = ['get', 'list', 'watch'];

/** The campaign controller's rules, runtime rules included (no wildcards). */
export const rbac: PolicyRule[] = componentRbac([
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdatecampaigns'], verbs: read },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdatecampaigns/status'], verbs: ['get', 'patch', 'update'] },
  // Plans: created per cluster (controller ownerReference to the campaign), paused / resumed / moved to aborting.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: [...read, 'create', 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters', 'machinedeployments'], verbs: read },
]);

/** The rules that do not depend on the fleet's providers (all of them: the campaign touches no provider kind). */
export const baseRbac: PolicyRule[] = rbac;
