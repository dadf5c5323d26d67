// RBAC the machine task controller needs: exactly the calls it makes (no wildcards). A third-party task kind
// needs one more rule for its group — pass it to createMachineTaskController({ extraRbac }) / the cdk8s option. Events
// and the leader-election Lease come from the runtime (componentRbac), the same for every component.
import { componentRbac, DEFAULT_PROVIDERS, providerRules, type ProviderResource, type ProviderVerbs } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

/** Verbs to run tasks of a kind: create them, watch them, set updatePhase, replace an earlier update's task. */
const TASK_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
/** Verbs to read templates (copied into tasks). */
const READ = ['get', 'list', 'watch'];

/** The rules for the task and template kinds of one API group (for third-party updaters). */
export function taskKindRules(apiGroup: string, taskPlurals: string[], templatePlurals: string[]): PolicyRule[] {
  return [
    { apiGroups: [apiGroup], resources: taskPlurals, verbs: TASK_VERBS },
    ...(templatePlurals.length ? [{ apiGroups: [apiGroup], resources: templatePlurals, verbs: READ }] : []),
  ];
}

/**
 * The controller's rules that do not depend on the fleet's providers: the generic task kind, runtime rules included.
 * An updater's task and template kinds are granted by the chart that deploys the updater (aggregated ClusterRole).
 */
export const baseRbac: PolicyRule[] = componentRbac([
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: READ },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates/status'], verbs: ['get', 'patch', 'update'] },
  // Task kinds must declare the updater contract on their CRD.
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
  // Only plans drive machines: a MachineUpdate is acted on only when the plan that controls it exists.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: READ },
  ...taskKindRules('inplace.cluster.x-k8s.io', ['updaterupdatetasks'], []),
  // Commit (C8): the Machine (the InfraMachine / BootstrapConfig kinds come from the provider list, below).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get', 'list', 'watch', 'patch'] },
]);

/** What the controller does with provider kinds: read and JSON-patch the objects a Machine references (commit, C8). */
export const PROVIDER_VERBS: ProviderVerbs = { InfraMachine: ['get', 'patch'], BootstrapConfig: ['get', 'patch'] };

/** The controller's rules for a fleet of these provider kinds. */
export const rbacFor = (providers: readonly ProviderResource[] = DEFAULT_PROVIDERS): PolicyRule[] => [
  ...baseRbac,
  ...providerRules(providers, PROVIDER_VERBS),
];

/** The controller's rules with the default providers and the generic task kind. */
export const rbac: PolicyRule[] = rbacFor();
