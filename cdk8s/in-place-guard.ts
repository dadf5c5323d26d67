// The in-place-only guard (opt-in; docs/operations.md, "In-place-only guard"): a ValidatingAdmissionPolicy per owner
// kind (KubeadmControlPlane, MachineDeployment) refusing, for objects labelled GUARD_LABEL=true, an update that would
// make Cluster API replace machines: a change of a rollout field no InPlaceUpdater of the object's namespace covers.
// Native CEL in the API server, no webhook. Coverage is fixed at synth time from the InPlaceUpdater objects given:
// a policy's params cannot express it (paramRef with a selector evaluates the policy once per matching param and
// denies when any evaluation denies: an AND over updaters, where coverage is the OR of their covers), and CEL on a
// typed object cannot select a field by a path held in data. No I/O: main.ts reads the updaters' files.
import { ApiObject, App, Chart, Yaml } from 'cdk8s';
import type { Construct } from 'constructs';
import { KUBEADM_CONFIG_SPEC_FIELDS, ownerFieldFor } from '../src/rules/owners.js';
import type { TargetKind } from '../src/api/index.js';
import { PART_OF } from './charts.js';
import type { ManifestFile } from './synth.js';

/** The label that opts a KubeadmControlPlane or MachineDeployment in (value "true"). */
export const GUARD_LABEL = 'inplace.cluster.x-k8s.io/in-place-only';

/** The file the guard is written to (after the platform: it needs no CRD of the platform). */
export const GUARD_FILE = '30-in-place-guard.yaml';

/** One cover of an InPlaceUpdater, with the updater's namespace. */
export interface GuardCover {
  /** Namespace of the InPlaceUpdater: it covers changes of owners in this namespace only. */
  readonly namespace: string;
  /** InPlaceUpdater name (for messages). */
  readonly updater: string;
  /** What the cover selects. */
  readonly selectResource: string;
  /** JSON pointer under /spec. */
  readonly path: string;
}

/** A field of an owner whose change makes Cluster API roll its machines out. */
export interface GuardedField {
  /** Field path under the object, e.g. ['spec', 'version']. */
  readonly path: readonly string[];
  /**
   * How a cover reaches it: a Machine or BootstrapConfig field the owner carries (`field`, through ownerFieldFor),
   * the swap of a template (`infraTemplate`, `bootstrapTemplate`: covered when any cover of that template's kind
   * exists, as the guard cannot see the templates' content), or never (`never`: an explicit rollout request).
   */
  readonly via: 'field' | 'infraTemplate' | 'bootstrapTemplate' | 'never';
}

/** An owner kind the guard serves. */
export interface GuardedKind {
  /** The platform's name of it (ownerFieldFor). */
  readonly target: TargetKind;
  /** Kind, API group, version (the policy matches this version; others are converted to it) and resource. */
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  /** The rollout fields, from the v1beta2 CRDs (a test checks each exists in the real schema). */
  readonly fields: readonly GuardedField[];
}

/**
 * The owner kinds and their rollout fields. Left out on purpose, because Cluster API propagates them to the machines
 * in place: template metadata (labels, annotations), `deletion` (drain/detach/delete timeouts), `taints`,
 * `minReadySeconds`; and what is no machine's: replicas, rollout strategy, remediation, naming.
 */
export const GUARDED_KINDS: readonly GuardedKind[] = [
  {
    target: 'ControlPlane',
    kind: 'KubeadmControlPlane',
    group: 'controlplane.cluster.x-k8s.io',
    version: 'v1beta2',
    resource: 'kubeadmcontrolplanes',
    fields: [
      { path: ['spec', 'version'], via: 'field' },
      ...KUBEADM_CONFIG_SPEC_FIELDS.map((f): GuardedField => ({ path: ['spec', 'kubeadmConfigSpec', f], via: 'field' })),
      { path: ['spec', 'machineTemplate', 'spec', 'infrastructureRef'], via: 'infraTemplate' },
      { path: ['spec', 'machineTemplate', 'spec', 'readinessGates'], via: 'field' },
      { path: ['spec', 'rollout', 'after'], via: 'never' },
    ],
  },
  {
    target: 'MachineDeployment',
    kind: 'MachineDeployment',
    group: 'cluster.x-k8s.io',
    version: 'v1beta2',
    resource: 'machinedeployments',
    fields: [
      { path: ['spec', 'template', 'spec', 'version'], via: 'field' },
      { path: ['spec', 'template', 'spec', 'failureDomain'], via: 'field' },
      { path: ['spec', 'template', 'spec', 'readinessGates'], via: 'field' },
      { path: ['spec', 'template', 'spec', 'bootstrap'], via: 'bootstrapTemplate' },
      { path: ['spec', 'template', 'spec', 'infrastructureRef'], via: 'infraTemplate' },
      { path: ['spec', 'rollout', 'after'], via: 'never' },
    ],
  },
];

/** How the covers of one namespace reach a field. */
export type Coverage = 'covered' | 'partly' | 'uncovered';

const isPrefix = (p: readonly string[], q: readonly string[]): boolean => p.length <= q.length && p.every((t, i) => t === q[i]);
const tokensOf = (pointer: string): string[] =>
  pointer
    .split('/')
    .slice(1)
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));

/**
 * How `covers` (one namespace's) reach `field` of `kind`: covered when a cover's owner field is the field or above it
 * (or, for a template swap, when any cover selects that template's kind), partly when a cover is below it (the guard
 * compares whole fields, so a change elsewhere in it cannot be told apart: refused), else uncovered.
 */
export function coverageOf(
  kind: GuardedKind,
  field: GuardedField,
  covers: readonly Pick<GuardCover, 'selectResource' | 'path'>[],
): Coverage {
  if (field.via === 'never') return 'uncovered';
  let partly = false;
  for (const c of covers) {
    const owner = ownerFieldFor(kind.target, c.selectResource, c.path);
    if (field.via !== 'field') {
      if (owner.slot === field.via) return 'covered';
      continue;
    }
    if (owner.slot !== 'owner') continue;
    const p = tokensOf(owner.path);
    if (isPrefix(p, field.path)) return 'covered';
    if (isPrefix(field.path, p)) partly = true;
  }
  return partly ? 'partly' : 'uncovered';
}

const cel = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const select = (root: string, path: readonly string[]): string => [root, ...path].join('.');
/** `has()` of every step, so that a missing parent is "absent", not an error. */
const present = (root: string, path: readonly string[]): string =>
  path.map((_, i) => `has(${select(root, path.slice(0, i + 1))})`).join(' && ');
/** True when the field was added, removed or changed between oldObject and object. */
const changedExpr = (path: readonly string[]): string =>
  `((${present('oldObject', path)}) != (${present('object', path)}) || ((${present('object', path)}) && ${select('oldObject', path)} != ${select('object', path)}))`;

/** The CEL of one guarded field: true when it changed in a namespace none of whose updaters covers it. */
function uncoveredChangeExpr(path: readonly string[], coveredIn: readonly string[]): string {
  const changed = changedExpr(path);
  return coveredIn.length === 0 ? changed : `(${changed} && !(object.metadata.namespace in [${coveredIn.map(cel).join(', ')}]))`;
}

/** Options of inPlaceGuardObjects. */
export interface InPlaceGuardOptions {
  /** The covers of the InPlaceUpdaters the guard judges by (each with its namespace). */
  readonly covers: readonly GuardCover[];
  /** Namespace of the platform: its plan controller's owner alignment (after the machines were updated) is let through. */
  readonly namespace: string;
  /** `app.kubernetes.io/instance` of the objects. */
  readonly instance: string;
}

/** The name of a kind's policy and binding. */
export const guardPolicyName = (k: GuardedKind): string => `inplace-in-place-only-${k.resource}`;

/** The ValidatingAdmissionPolicy and its binding for each guarded kind (plain objects, apply order). */
export function inPlaceGuardObjects(o: InPlaceGuardOptions): Record<string, unknown>[] {
  const namespaces = [...new Set(o.covers.map((c) => c.namespace))].sort();
  const labels = { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance };
  const optedIn = (root: string): string =>
    `(has(${root}.metadata.labels) && ${cel(GUARD_LABEL)} in ${root}.metadata.labels && ${root}.metadata.labels[${cel(GUARD_LABEL)}] == 'true')`;
  const out: Record<string, unknown>[] = [];
  for (const k of GUARDED_KINDS) {
    const checks = k.fields.map((f) => {
      const by = (ns: string): Coverage =>
        coverageOf(
          k,
          f,
          o.covers.filter((c) => c.namespace === ns),
        );
      const partlyIn = namespaces.filter((ns) => by(ns) === 'partly');
      const suffix = partlyIn.length
        ? ` + (object.metadata.namespace in [${partlyIn.map(cel).join(', ')}] ? ${cel(' (only partly covered)')} : '')`
        : '';
      // One variable per field (a CEL identifier from its path): evaluated once, read by the check and the message.
      const variable = f.path.slice(1).join('_');
      return {
        variable,
        expr: uncoveredChangeExpr(
          f.path,
          namespaces.filter((ns) => by(ns) === 'covered'),
        ),
        label: f.path.join('.'),
        suffix,
      };
    });
    const name = guardPolicyName(k);
    const anyUncovered = checks.map((c) => `variables.${c.variable}`).join(' || ');
    const listed = checks.map((c) => `(variables.${c.variable} ? ${cel(` ${c.label}`)}${c.suffix} : '')`).join(' + ');
    out.push({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          // Equivalent: a request in another served version is converted to this one first, so the paths hold.
          matchPolicy: 'Equivalent',
          resourceRules: [{ apiGroups: [k.group], apiVersions: [k.version], resources: [k.resource], operations: ['UPDATE'] }],
        },
        matchConditions: [
          // Old or new labelled, as an objectSelector matches: removing the label with a replacing change is refused.
          { name: 'opted-in', expression: `${optedIn('object')} || ${optedIn('oldObject')}` },
          {
            // The plan controller writes the owners only after the machines carry the values (owner alignment).
            name: 'not-the-plan-controller',
            expression: `request.userInfo.username != ${cel(`system:serviceaccount:${o.namespace}:inplace-plan-controller`)}`,
          },
        ],
        variables: checks.map((c) => ({ name: c.variable, expression: c.expr })),
        validations: [
          {
            expression: `!(${anyUncovered})`,
            messageExpression: `${cel(`${k.kind} `)} + object.metadata.namespace + '/' + object.metadata.name + ${cel(
              ` is in-place-only (label ${GUARD_LABEL}=true): Cluster API would replace its machines, as no InPlaceUpdater of its namespace covers:`,
            )} + ${listed} + ${cel('. Cover the change with an updater and re-synthesize the guard, or remove the label to allow replacement.')}`,
            reason: 'Forbidden',
          },
        ],
      },
    });
    out.push({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels },
      spec: { policyName: name, validationActions: ['Deny'] },
    });
  }
  return out;
}

/** Why an InPlaceUpdater document cannot feed the guard; undefined when it can. */
export function guardUpdaterProblem(doc: unknown): string | undefined {
  const d = doc as { metadata?: { name?: unknown; namespace?: unknown }; spec?: { covers?: unknown } } | null;
  const name = typeof d?.metadata?.name === 'string' ? d.metadata.name : '?';
  if (typeof d?.metadata?.namespace !== 'string' || d.metadata.namespace === '')
    return `InPlaceUpdater ${name} has no metadata.namespace (it covers the owners of its namespace only)`;
  const covers = d.spec?.covers;
  if (!Array.isArray(covers) || covers.length === 0) return `InPlaceUpdater ${name} has no spec.covers`;
  for (const c of covers as { selectResource?: unknown; path?: unknown }[]) {
    if (!['Machine', 'InfraMachine', 'BootstrapConfig'].includes(String(c?.selectResource)))
      return `InPlaceUpdater ${name}: selectResource must be Machine, InfraMachine or BootstrapConfig, got ${JSON.stringify(c?.selectResource)}`;
    if (typeof c.path !== 'string' || !/^\/spec(\/([^/~]|~[01])*)+$/.test(c.path))
      return `InPlaceUpdater ${name}: path must be a JSON pointer under /spec, got ${JSON.stringify(c.path)}`;
  }
  return undefined;
}

/** The covers of InPlaceUpdater documents (other kinds are skipped); throws naming the first bad updater. */
export function guardCoversOf(docs: readonly unknown[]): GuardCover[] {
  const out: GuardCover[] = [];
  for (const doc of docs) {
    const d = doc as { apiVersion?: unknown; kind?: unknown } | null;
    if (d?.kind !== 'InPlaceUpdater' || typeof d.apiVersion !== 'string' || !d.apiVersion.startsWith('inplace.cluster.x-k8s.io/')) continue;
    const problem = guardUpdaterProblem(doc);
    if (problem) throw new Error(problem);
    const u = doc as { metadata: { name: string; namespace: string }; spec: { covers: { selectResource: string; path: string }[] } };
    for (const c of u.spec.covers)
      out.push({ namespace: u.metadata.namespace, updater: u.metadata.name, selectResource: c.selectResource, path: c.path });
  }
  return out;
}

/** Props of InPlaceGuardChart. */
export interface InPlaceGuardChartProps {
  /** What the guard judges by and whom it lets through. */
  readonly guard: InPlaceGuardOptions;
}

/** Chart of the in-place-only guard: a ValidatingAdmissionPolicy and its binding per guarded owner kind. */
export class InPlaceGuardChart extends Chart {
  constructor(scope: Construct, id: string, props: InPlaceGuardChartProps) {
    super(scope, id, { disableResourceNameHashes: true });
    inPlaceGuardObjects(props.guard).forEach((obj, i) => {
      const { apiVersion, kind, metadata, ...rest } = obj as { apiVersion: string; kind: string; metadata: Record<string, unknown> };
      new ApiObject(this, `guard-${i}`, { apiVersion, kind, metadata, ...rest });
    });
  }
}

/** The guard as a manifest file (GUARD_FILE), synthesized by cdk8s. */
export function synthesizeGuard(guard: InPlaceGuardOptions): ManifestFile {
  const chart = new InPlaceGuardChart(new App(), 'in-place-guard', { guard });
  return { name: GUARD_FILE, content: Yaml.stringify(...chart.toJson()) };
}
