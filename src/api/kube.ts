// Generic Kubernetes: object metadata and conditions, resource descriptors and the built-in kinds, bounded messages.
// Nothing here is about this product, so src/runtime may import this module (and only this one) of src/api. Pure.
export * from './meta.js';
export * from './message.js';

/** Identifies a served resource: what a client needs to build a URL. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** The descriptor of a namespaced resource (the common case; cluster-scoped kinds spell `namespaced: false` out). */
export const namespacedResource = (group: string, version: string, plural: string, kind: string): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
});

/** Core and other built-in kinds. */
export const Namespaces: ResourceType = { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false };
export const Nodes: ResourceType = { group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false };
export const Secrets = namespacedResource('', 'v1', 'secrets', 'Secret');
export const ConfigMaps = namespacedResource('', 'v1', 'configmaps', 'ConfigMap');
/** core/v1 Events: what kubectl describe and kubectl events read (the same objects as EventsV1 on a real server). */
export const Events = namespacedResource('', 'v1', 'events', 'Event');
/** events.k8s.io/v1 Events: what the platform's recorders write. */
export const EventsV1 = namespacedResource('events.k8s.io', 'v1', 'events', 'Event');
export const Leases = namespacedResource('coordination.k8s.io', 'v1', 'leases', 'Lease');
export const CustomResourceDefinitions: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};

/** apiVersion string (group/version, or version for the core group) of a resource. */
export const apiVersionOf = (r: Pick<ResourceType, 'group' | 'version'>): string => (r.group ? `${r.group}/${r.version}` : r.version);
/** Splits an apiVersion string into group and version. */
export const parseApiVersion = (apiVersion: string): { group: string; version: string } => {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
};
/** Stable string key of a resource type, e.g. for maps of informers. */
export const resourceKey = (r: ResourceType): string => `${r.plural}.${r.group}/${r.version}`;
/** `plural.group` (or `plural` for the core group) naming a resource in errors and metrics. */
export const resourceName = (res: Pick<ResourceType, 'plural' | 'group'>): string =>
  res.group ? `${res.plural}.${res.group}` : res.plural;

/**
 * Annotation the CAPI simulator (tools/capi-sim) puts on the Nodes it makes: no kubelet runs behind them, so a sample
 * updater plays what the kubelet would report after its update (the reference updater: the new kubeletVersion).
 */
export const SIMULATED_NODE_ANNOTATION = 'capi-sim.inplace.cluster.x-k8s.io/simulated';
