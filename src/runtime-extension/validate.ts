// What the runtime extension checks before it decides (docs/hooks.md), pure: that a hook request is one it can read
// (its type, the API versions of the objects it carries), which InPlaceUpdaters serve the machine a request is about
// (their scope), and whether the caller reads `affectsAvailability` (Cluster API v1.15 and later).
import type { InPlaceUpdater } from '../api/index.js';
import { matchesRequirement, type LabelRequirement, type LabelSelector } from '../runtime/pure/labels.js';
import { HOOKS_API_VERSION, type HookName } from './hooks.js';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const MAX_PROBLEMS = 8;

/**
 * The groups whose objects the extension reads by path (covers are written against their v1beta2 shape). Objects of
 * other groups (infrastructure providers) carry whatever version their provider serves.
 */
const V1BETA2_GROUPS = ['cluster.x-k8s.io', 'bootstrap.cluster.x-k8s.io', 'controlplane.cluster.x-k8s.io'];

/** The object fields of each hook's request sides, by hook. */
const REQUEST_OBJECTS: Record<Exclude<HookName, 'Discovery'>, { sides: string[]; objects: string[] }> = {
  CanUpdateMachine: { sides: ['current', 'desired'], objects: ['machine', 'infrastructureMachine', 'bootstrapConfig'] },
  CanUpdateMachineSet: {
    sides: ['current', 'desired'],
    objects: ['machineSet', 'infrastructureMachineTemplate', 'bootstrapConfigTemplate'],
  },
  UpdateMachine: { sides: ['desired'], objects: ['machine', 'infrastructureMachine', 'bootstrapConfig'] },
};

/**
 * The problems of a hook request body (empty when it can be read): a type other than the hook's request, a side or an
 * object that is not a JSON object, an object of a Cluster API group at a version other than v1beta2 (Cluster API
 * v1.12+ sends v1beta2; a v1beta1 object would be read at the wrong paths). Bounded: at most a few, each naming where.
 */
export function requestProblems(hook: HookName, body: unknown): string[] {
  if (!isObject(body)) return ['the request body is not a JSON object'];
  const out: string[] = [];
  const apiVersion = body['apiVersion'];
  const kind = body['kind'];
  if (apiVersion !== undefined && apiVersion !== HOOKS_API_VERSION)
    out.push(`apiVersion ${JSON.stringify(apiVersion)} is not ${HOOKS_API_VERSION}`);
  if (kind !== undefined && kind !== `${hook}Request`) out.push(`kind ${JSON.stringify(kind)} is not ${hook}Request`);
  if (hook === 'Discovery') return out;
  const shape = REQUEST_OBJECTS[hook];
  for (const side of shape.sides) {
    const s = body[side];
    if (s === undefined) continue;
    if (!isObject(s)) {
      out.push(`${side} is not an object`);
      continue;
    }
    for (const name of shape.objects) {
      const o = s[name];
      if (o === undefined || o === null) continue;
      if (!isObject(o)) {
        out.push(`${side}.${name} is not an object`);
        continue;
      }
      const av = o['apiVersion'];
      if (av === undefined) continue;
      if (typeof av !== 'string') {
        out.push(`${side}.${name}.apiVersion is not a string`);
        continue;
      }
      const [group, version] = av.includes('/') ? av.split('/', 2) : ['', av];
      if (V1BETA2_GROUPS.includes(group ?? '') && version !== 'v1beta2')
        out.push(`${side}.${name} is ${av} (${String(o['kind'] ?? 'object')}); the extension reads ${group}/v1beta2 objects`);
    }
  }
  return out.slice(0, MAX_PROBLEMS);
}

/** The message of a request that cannot be read: names the hook and every problem found. */
export const badRequestMessage = (hook: HookName, problems: readonly string[]): string =>
  `bad ${hook} request, nothing done: ${problems.join('; ')}`;

/** What an updater's scope is matched against: the machine's cluster and provider kinds. */
export interface ScopeSubject {
  /** The labels of the machine's Cluster; undefined when the Cluster could not be read (or was not looked up). */
  clusterLabels: Record<string, string> | undefined;
  /** The InfraMachine kind (a template's without its Template suffix); undefined when the request names none. */
  infrastructureKind: string | undefined;
  /** The BootstrapConfig kind (likewise); undefined when the machine has none. */
  bootstrapKind: string | undefined;
}

/** An updater's scope, as declared on its InPlaceUpdater. */
export type UpdaterScope = NonNullable<InPlaceUpdater['spec']['scope']>;

const requirementsOf = (sel: LabelSelector): LabelRequirement[] => [
  ...Object.entries(sel.matchLabels ?? {}).map(([key, v]) => ({ key, op: '=' as const, values: [v] })),
  ...(sel.matchExpressions ?? []).map((e) => ({
    key: e.key,
    op: ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!exists' } as const)[e.operator],
    values: e.values ?? [],
  })),
];

/** True when the updater declares a cluster selector (the caller then reads the machine's Cluster). */
export const needsClusterLabels = (updaters: readonly InPlaceUpdater[]): boolean => updaters.some((u) => !!u.spec.scope?.clusterSelector);

/**
 * True when the updater serves the subject: every part of its scope that is set matches. A cluster selector needs the
 * Cluster's labels (an unreadable Cluster is not served: a selector is a promise not to touch other clusters).
 */
export function serves(u: InPlaceUpdater, s: ScopeSubject): boolean {
  const scope = u.spec.scope;
  if (!scope) return true;
  if (scope.clusterSelector) {
    if (!s.clusterLabels) return false;
    const labels = s.clusterLabels;
    if (!requirementsOf(scope.clusterSelector as LabelSelector).every((r) => matchesRequirement(r, labels))) return false;
  }
  const infra = scope.infrastructureKinds ?? [];
  if (infra.length > 0 && !(s.infrastructureKind && infra.includes(s.infrastructureKind))) return false;
  const boot = scope.bootstrapKinds ?? [];
  if (boot.length > 0 && !(s.bootstrapKind && boot.includes(s.bootstrapKind))) return false;
  return true;
}

/** The updaters serving the subject (the others are as if not registered for this request). */
export const updatersServing = (updaters: readonly InPlaceUpdater[], s: ScopeSubject): InPlaceUpdater[] =>
  updaters.filter((u) => serves(u, s));

const kindOf = (o: unknown): string | undefined => {
  const k = isObject(o) ? o['kind'] : undefined;
  return typeof k === 'string' && k ? k.replace(/Template$/, '') : undefined;
};
const refKind = (o: unknown, ...path: string[]): string | undefined => {
  let v: unknown = o;
  for (const p of path) v = isObject(v) ? v[p] : undefined;
  return kindOf(v);
};

/** The scope subject of a Machine-level request side (CanUpdateMachine, UpdateMachine), without the Cluster's labels. */
export function machineSubject(objs: {
  machine?: unknown;
  infrastructureMachine?: unknown;
  bootstrapConfig?: unknown;
}): Omit<ScopeSubject, 'clusterLabels'> {
  return {
    infrastructureKind: kindOf(objs.infrastructureMachine) ?? refKind(objs.machine, 'spec', 'infrastructureRef'),
    bootstrapKind: kindOf(objs.bootstrapConfig) ?? refKind(objs.machine, 'spec', 'bootstrap', 'configRef'),
  };
}

/** The scope subject of a MachineSet request side (template kinds without their Template suffix). */
export function machineSetSubject(objs: {
  machineSet?: unknown;
  infrastructureMachineTemplate?: unknown;
  bootstrapConfigTemplate?: unknown;
}): Omit<ScopeSubject, 'clusterLabels'> {
  return {
    infrastructureKind:
      kindOf(objs.infrastructureMachineTemplate) ?? refKind(objs.machineSet, 'spec', 'template', 'spec', 'infrastructureRef'),
    bootstrapKind: kindOf(objs.bootstrapConfigTemplate) ?? refKind(objs.machineSet, 'spec', 'template', 'spec', 'bootstrap', 'configRef'),
  };
}

/** The cluster a Machine or MachineSet belongs to: spec.clusterName, else its cluster-name label. */
export function clusterNameOf(o: unknown): string | undefined {
  if (!isObject(o)) return undefined;
  const spec = o['spec'];
  const fromSpec = isObject(spec) ? spec['clusterName'] : undefined;
  if (typeof fromSpec === 'string' && fromSpec) return fromSpec;
  const meta = o['metadata'];
  const labels = isObject(meta) && isObject(meta['labels']) ? meta['labels'] : undefined;
  const l = labels?.['cluster.x-k8s.io/cluster-name'];
  return typeof l === 'string' && l ? l : undefined;
}

/**
 * The ExtensionConfig setting that tells the extension the Cluster API version calling it. The hook API stays
 * hooks.runtime.cluster.x-k8s.io/v1alpha1 and the request shape is the same from v1.12 to v1.15, so a request alone
 * does not say whether its caller reads `affectsAvailability`; the ExtensionConfig's spec.settings, sent in every
 * request, does.
 */
export const CAPI_VERSION_SETTING = 'clusterAPIVersion';
/** The first Cluster API minor version that reads `affectsAvailability` (capi#14160). */
export const AFFECTS_AVAILABILITY_SINCE = { major: 1, minor: 15 } as const;

/** The caller's Cluster API version from the request settings, undefined when absent or not a version. */
export function callerVersion(settings: Record<string, string> | undefined): { major: number; minor: number } | undefined {
  const m = /^v?(\d+)\.(\d+)(\.\d+)?([-+].*)?$/.exec(settings?.[CAPI_VERSION_SETTING]?.trim() ?? '');
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** True when the caller reads `affectsAvailability` (declared v1.15 or later); older or undeclared callers get none. */
export function callerReadsAffectsAvailability(settings: Record<string, string> | undefined): boolean {
  const v = callerVersion(settings);
  if (!v) return false;
  const since = AFFECTS_AVAILABILITY_SINCE;
  return v.major > since.major || (v.major === since.major && v.minor >= since.minor);
}
