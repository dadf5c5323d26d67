// RBAC the campaign controller needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac). A campaign works on Clusters, their control planes
// and MachineDeployments (to validate the template per cluster) and its plans' status; it never watches Machines: the
// pre-start check of a cluster not started yet lists ONE machine per target (limit 1) and dry-runs the commit on it.
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
  // The pre-start check (prestart.ts): one machine per target by label (list, limit 1), a dry-run of the commit patch
  // on it (the patch verb; nothing is persisted).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['list', 'patch'] },
]);

/**
 * Provider kinds: the control plane each not-yet-started Cluster's controlPlaneRef names is read (watched) so that the
 * template is validated against it (its version, for the upgrade rules) before any plan exists; never written. The
 * pre-start check reads the sampled machine's InfraMachine / BootstrapConfig and the owners' templates by name and
 * dry-runs the commit patch on the first two (patch verb, nothing persisted).
 */
export const PROVIDER_VERBS: ProviderVerbs = {
  ControlPlane: read,
  InfraMachine: ['get', 'patch'],
  InfraMachineTemplate: ['get'],
  BootstrapConfig: ['get', 'patch'],
  BootstrapConfigTemplate: ['get'],
};

/** The campaign controller's rules with the default providers (no wildcards). */
export const rbac: PolicyRule[] = [...baseRbac, ...providerRules(DEFAULT_PROVIDERS, PROVIDER_VERBS)];
