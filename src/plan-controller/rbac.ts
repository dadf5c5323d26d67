// RBAC the plan controller needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac), the same for every component.
import { componentRbac, DEFAULT_PROVIDERS, providerRules, type ProviderResource, type ProviderVerbs } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

const read = ['get', 'list', 'watch'];

/** The plan controller's rules that do not depend on the fleet's providers, runtime rules included (no wildcards). */
export const baseRbac: PolicyRule[] = componentRbac([
  // Plans: read, add/remove the finalizer, move older plans to aborting (supersede), write status, delete finished
  // plans beyond the history limit (history.ts).
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: [...read, 'patch', 'update', 'delete'] },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans/status'], verbs: ['get', 'patch', 'update'] },
  // Owner references with blockOwnerDeletion on MachineUpdates need update on the owner's finalizers subresource.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans/finalizers'], verbs: ['update'] },
  // MachineUpdates: created per machine, moved to aborting.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: [...read, 'create', 'patch', 'delete'] },
  // CAPI: read the cluster; label machines in update; surge/restore MachineDeployments. Owner alignment (owners.ts):
  // pause / align / unpause the MachineDeployments and align the MachineSets owning the machines (the control plane,
  // templates and InfraMachines are provider kinds: PROVIDER_VERBS).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters'], verbs: read },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: [...read, 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinedeployments'], verbs: [...read, 'patch'] },
  // MachineSets: watched (owner alignment reads the ones owning a target's machines from the cache) and listed when a
  // deleted plan's template clones are collected (an old MachineSet may still refer to one).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinesets'], verbs: [...read, 'patch'] },
  // MachineHealthChecks: read (watched) so that the label patch starting a machine's update carries the MHC extension's
  // protection from remediation when one it acts on selects the machine (decide/label.ts).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinehealthchecks'], verbs: read },
  // Template kinds named by plans must be readable to validate that they exist: an updater's kinds are granted by the
  // chart that deploys the updater (aggregated ClusterRole), so leaving the samples out leaves their rules out too.
  // A template's task kind is accepted only when its CRD declares the updater contract (label).
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
  // No Secrets here: spec.alertGate.secretRef's Secret is read (get, by name) only through the Roles the manifests
  // generate from the operator's alert-gate policy (cdk8s alertGateSecretRules), one per namespace it names.
]);

/**
 * The rules that let the plan controller read the Secrets the alert-gate policy names in one namespace: get only, by
 * resourceNames (no list or watch: the controller never holds or enumerates the namespace's other Secrets).
 */
export const alertGateSecretRules = (names: readonly string[]): PolicyRule[] =>
  names.length === 0 ? [] : [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [...names] }];

/**
 * What the plan controller does with provider kinds: read the control plane its Cluster's controlPlaneRef names and
 * pause / align it (owners.ts); watch the InfraMachines / BootstrapConfigs (machines already at target, at-target.ts); for the pre-start check (C8) list the InfraMachines / BootstrapConfigs and the owners'
 * templates and dry-run the commit patch on one object per target (a dry-run needs the patch verb; nothing is
 * persisted); when a target is done, read the owners' templates from a watch (informer cache), clone the owners' templates with the new values and move the InfraMachines'
 * cloned-from annotation; once a deleted plan's clones are referenced by nothing, delete them (clones.ts).
 */
export const PROVIDER_VERBS: ProviderVerbs = {
  ControlPlane: [...read, 'patch'],
  InfraMachine: [...read, 'patch'],
  InfraMachineTemplate: [...read, 'create', 'delete'],
  BootstrapConfig: [...read, 'patch'],
  BootstrapConfigTemplate: [...read, 'create', 'delete'],
};

/** The plan controller's rules for a fleet of these provider kinds. */
export const rbacFor = (providers: readonly ProviderResource[] = DEFAULT_PROVIDERS): PolicyRule[] => [
  ...baseRbac,
  ...providerRules(providers, PROVIDER_VERBS),
];

/** The plan controller's RBAC rules with the default providers (no wildcards). */
export const rbac: PolicyRule[] = rbacFor();
