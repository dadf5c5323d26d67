// RBAC the runtime extension needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac), the same for every component.
import { componentRbac, DEFAULT_PROVIDERS, providerRules, type ProviderResource, type ProviderVerbs } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

const read = ['get', 'list', 'watch'];

/** The runtime extension's rules that do not depend on the providers, runtime rules included (no wildcards). */
export const baseRbac: PolicyRule[] = componentRbac([
  // Updater registrations: read.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdaters'], verbs: read },
  // MachineUpdates: read; create one per in-place update; delete one left from an earlier update to the same state.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: [...read, 'create', 'delete'] },
  // CAPI: read the Machine an UpdateMachine call is about (its uid owns the MachineUpdate). No write.
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get'] },
  // CAPI: read the Cluster of a request when an InPlaceUpdater scopes itself with a clusterSelector. No write.
  { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters'], verbs: ['get'] },
]);

/** Provider kinds: read the InfraMachine and BootstrapConfig, to check a request's desired values against them. */
export const PROVIDER_VERBS: ProviderVerbs = { InfraMachine: ['get'], BootstrapConfig: ['get'] };

/** The extension's rules for a fleet of these provider kinds. */
export const rbacFor = (providers: readonly ProviderResource[] = DEFAULT_PROVIDERS): PolicyRule[] => [
  ...baseRbac,
  ...providerRules(providers, PROVIDER_VERBS),
];

/** The extension's rules with the default providers. */
export const rbac: PolicyRule[] = rbacFor();
