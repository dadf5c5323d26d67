// The one source of the runtime's RBAC: what the manager itself calls (Events, the leader-election Lease) and how a
// component's own rules are combined with it. Every component's rbac.ts derives its rules with componentRbac, so the
// Events and Lease rules are the same everywhere; the manifests (cdk8s) take them from here too.
import type { PolicyRule } from './pure/types.js';

/** The leader-election Lease, in the component's own namespace: exactly what leader.ts calls (get, create, update). */
export const LEADER_ELECTION_RULES: readonly PolicyRule[] = Object.freeze([
  Object.freeze({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }),
]);

/** Events (events.k8s.io/v1, as events.ts writes them) in the namespace of the object they are about: create, and patch for series. */
export const EVENT_RULES: readonly PolicyRule[] = Object.freeze([
  Object.freeze({ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }),
]);

/**
 * What serving /metrics securely (`inplace run --metrics-secure`, metrics-auth.ts) calls: TokenReviews to authenticate
 * the scraper's token and SubjectAccessReviews to authorize it. Cluster-wide by nature; create is their only verb.
 */
export const METRICS_AUTH_RULES: readonly PolicyRule[] = Object.freeze([
  Object.freeze({ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }),
  Object.freeze({ apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] }),
]);

/** A deep copy, so that a component adding to its rules never changes the shared constants. */
const copy = (r: PolicyRule): PolicyRule => ({
  apiGroups: [...r.apiGroups],
  resources: [...r.resources],
  verbs: [...r.verbs],
  ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}),
});

/** RBAC the runtime needs besides the component's own kinds: Events always, the Lease with leader election (default on). */
export function runtimeRbac(opts: { leaderElection?: boolean } = {}): PolicyRule[] {
  return [...EVENT_RULES, ...((opts.leaderElection ?? true) ? LEADER_ELECTION_RULES : [])].map(copy);
}

/**
 * A component's rules: its own kinds and verbs (never Events or Leases: those come from the runtime, once) followed
 * by runtimeRbac. Throws when `own` grants Events or Leases itself, so no component drifts from the shared rules.
 */
export function componentRbac(own: readonly PolicyRule[], opts: { leaderElection?: boolean } = {}): PolicyRule[] {
  const runtimeOwned = own.filter((r) => r.resources.some((res) => res === 'events' || res === 'leases'));
  if (runtimeOwned.length > 0)
    throw new Error(`Events and Leases come from runtimeRbac; a component does not declare them (${JSON.stringify(runtimeOwned)})`);
  return [...own.map(copy), ...runtimeRbac(opts)];
}

/**
 * What a provider kind is to the platform: the object a Machine's infrastructureRef / bootstrap.configRef names, the
 * templates their owners clone them from, or the control plane a Cluster's controlPlaneRef names.
 */
export type ProviderRole = 'InfraMachine' | 'InfraMachineTemplate' | 'BootstrapConfig' | 'BootstrapConfigTemplate' | 'ControlPlane';

/** Every provider role, in the order rules are generated. */
export const PROVIDER_ROLES: readonly ProviderRole[] = [
  'InfraMachine',
  'InfraMachineTemplate',
  'BootstrapConfig',
  'BootstrapConfigTemplate',
  'ControlPlane',
];

/** One provider resource the platform may be granted access to (RBAC speaks resources: group + plural). */
export interface ProviderResource {
  role: ProviderRole;
  /** API group, e.g. `infrastructure.cluster.x-k8s.io`. */
  apiGroup: string;
  /** Plural resource name, e.g. `metal3machines`. */
  resource: string;
}

/** The provider kinds the manifests grant by default: CAPI's dev provider (DevMachine, shipped with CAPD) and kubeadm. */
export const DEFAULT_PROVIDERS: readonly ProviderResource[] = [
  { role: 'InfraMachine', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'devmachines' },
  { role: 'InfraMachineTemplate', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'devmachinetemplates' },
  { role: 'BootstrapConfig', apiGroup: 'bootstrap.cluster.x-k8s.io', resource: 'kubeadmconfigs' },
  { role: 'BootstrapConfigTemplate', apiGroup: 'bootstrap.cluster.x-k8s.io', resource: 'kubeadmconfigtemplates' },
  { role: 'ControlPlane', apiGroup: 'controlplane.cluster.x-k8s.io', resource: 'kubeadmcontrolplanes' },
];

/** The verbs one component needs per provider role (a role it never touches is absent). */
export type ProviderVerbs = Partial<Record<ProviderRole, readonly string[]>>;

/**
 * The template role of each machine-level role: a Machine's InfraMachine / BootstrapConfig is cloned from a template
 * its owner names, and the plan controller clones that template when a target is done. Naming one grants the other.
 */
export const TEMPLATE_ROLE_OF: Readonly<Partial<Record<ProviderRole, ProviderRole>>> = Object.freeze({
  InfraMachine: 'InfraMachineTemplate',
  BootstrapConfig: 'BootstrapConfigTemplate',
});

/**
 * The template resource of a machine-level provider resource by Cluster API's naming convention (kind `Metal3Machine`
 * -> `Metal3MachineTemplate`, so plural `metal3machines` -> `metal3machinetemplates`, `kubeadmconfigs` ->
 * `kubeadmconfigtemplates`); undefined when the plural does not end in `s` (no convention to follow).
 */
export function templateResourceOf(resource: string): string | undefined {
  return resource.length > 1 && resource.endsWith('s') ? `${resource.slice(0, -1)}templates` : undefined;
}

/**
 * The provider list completed with the template kind of every InfraMachine / BootstrapConfig it names, so that a
 * deployment granting a machine kind can also clone its templates (a missing template grant left plans stuck with
 * the owner paused, AlignFailed). A template already listed for that role in the same API group is kept as given
 * (a provider whose template plural breaks the convention names it with its own entry). Throws, naming the entry to
 * add, when the template's name cannot be derived.
 */
export function withTemplateKinds(providers: readonly ProviderResource[]): ProviderResource[] {
  const out = [...providers];
  for (const p of providers) {
    const templateRole = TEMPLATE_ROLE_OF[p.role];
    if (!templateRole) continue;
    if (out.some((t) => t.role === templateRole && t.apiGroup === p.apiGroup)) continue;
    const resource = templateResourceOf(p.resource);
    if (!resource)
      throw new Error(
        `provider ${p.role}=${p.resource}.${p.apiGroup}: the plan controller clones its template kind, whose plural cannot be derived from "${p.resource}"; add it: ${templateRole}=<plural>.${p.apiGroup}`,
      );
    out.push({ role: templateRole, apiGroup: p.apiGroup, resource });
  }
  return out;
}

/**
 * The rules a component needs on the given provider resources: one rule per role and API group, listing the
 * resources of that role in that group. The template kinds of the machine kinds are included (withTemplateKinds).
 * Pure, so the manifests (cdk8s) and the components derive the same rules.
 */
export function providerRules(providers: readonly ProviderResource[], verbs: ProviderVerbs): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const complete = withTemplateKinds(providers);
  for (const role of PROVIDER_ROLES) {
    const v = verbs[role];
    if (!v || v.length === 0) continue;
    const groups = new Map<string, string[]>();
    for (const p of complete) {
      if (p.role !== role) continue;
      const list = groups.get(p.apiGroup) ?? [];
      if (!list.includes(p.resource)) list.push(p.resource);
      groups.set(p.apiGroup, list);
    }
    for (const [group, resources] of groups) rules.push({ apiGroups: [group], resources, verbs: [...v] });
  }
  return rules;
}

/**
 * Problems of a provider list (unknown role, empty or wildcard group/resource, a subresource, a machine kind whose
 * template kind can be neither derived nor found in the list); empty when fine.
 */
export function providerProblems(providers: readonly ProviderResource[]): string[] {
  const out: string[] = [];
  providers.forEach((p, i) => {
    const at = `provider ${i} (${p.resource || '?'}.${p.apiGroup || '?'})`;
    if (!PROVIDER_ROLES.includes(p.role)) out.push(`${at}: role "${String(p.role)}" is not one of ${PROVIDER_ROLES.join(', ')}`);
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(p.apiGroup ?? ''))
      out.push(`${at}: apiGroup must be a DNS subdomain (no wildcard, not the core group)`);
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.resource ?? ''))
      out.push(`${at}: resource must be a lowercase plural without '/' or '*'`);
  });
  if (out.length === 0) {
    try {
      withTemplateKinds(providers);
    } catch (e) {
      out.push((e as Error).message);
    }
  }
  return out;
}

/**
 * Cluster-scoped resources the components and updaters call: a namespace-scoped deployment grants these with a
 * ClusterRole (a Role cannot), everything else with Roles in the watched namespace. Provider, task and template
 * kinds are namespaced by Cluster API's contract, so an unknown resource counts as namespaced.
 */
export const CLUSTER_SCOPED_RESOURCES: readonly { readonly apiGroup: string; readonly resource: string }[] = Object.freeze([
  { apiGroup: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
  { apiGroup: 'authentication.k8s.io', resource: 'tokenreviews' },
  { apiGroup: 'authorization.k8s.io', resource: 'subjectaccessreviews' },
  { apiGroup: '', resource: 'nodes' },
  { apiGroup: '', resource: 'namespaces' },
]);

/** True when `resource` (maybe `plural/subresource`) of `apiGroup` is cluster-scoped (CLUSTER_SCOPED_RESOURCES). */
export const isClusterScoped = (apiGroup: string, resource: string): boolean =>
  CLUSTER_SCOPED_RESOURCES.some((c) => c.apiGroup === apiGroup && c.resource === resource.split('/')[0]);

/**
 * Parses `ROLE=plural.group` (e.g. `InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io`), the form the
 * synth command line and documentation use. Throws with the expected form on anything else.
 */
export function parseProvider(text: string): ProviderResource {
  const m = /^([A-Za-z]+)=([a-z0-9-]+)\.([a-z0-9.-]+)$/.exec(text.trim());
  const role = m?.[1] as ProviderRole | undefined;
  if (!m || !role || !PROVIDER_ROLES.includes(role)) {
    throw new Error(
      `provider "${text}" is not ROLE=plural.group with ROLE one of ${PROVIDER_ROLES.join(', ')} (e.g. InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io)`,
    );
  }
  return { role, resource: m[2]!, apiGroup: m[3]! };
}
