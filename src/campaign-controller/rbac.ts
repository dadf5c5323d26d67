// RBAC the campaign controller needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac). It never reads Machines: a campaign works on
// Clusters, their control planes and MachineDeployments (to validate the template per cluster) and its plans' status.
import { componentRbac, DEFAULT_PROVIDERS, providerRules, type ProviderVerbs } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

const read = ['get', 'list', 'watch'];

/** The campaign controller's rules that do not depend on the fleet's providers, runtime rules included (no wildcards). */
export const baseRbac: PolicyRule[] = componentRbac([
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdatecampaigns'], verbs: read },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdatecampaigns/status'], verbs: ['get', 'patch', 'update'] },
  // Plans: created per cluster (controller ownerReference to the campaign), paused / resumed / moved to aborting.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: [...read, 'create', 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters', 'machinedeployments'], verbs: read },
]);

/**
 * Provider kinds: the control plane each not-yet-started Cluster's controlPlaneRef names is read (watched) so that the
 * template is validated against it (its version, for the upgrade rules) before any plan exists; never written.
 */
export const PROVIDER_VERBS: ProviderVerbs = { ControlPlane: read };

/** The campaign controller's rules with the default providers (no wildcards). */
export const rbac: PolicyRule[] = [...baseRbac, ...providerRules(DEFAULT_PROVIDERS, PROVIDER_VERBS)];
