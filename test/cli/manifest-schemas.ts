// Validates synthesized manifests the way `kubectl apply --dry-run=server` would, without a cluster:
// * built-in kinds against the Kubernetes API schemas, from the devDependency kubernetes-models 4.5.1 (validators
//   generated from the upstream OpenAPI spec — its PodSpec has pod-level resources, so Kubernetes 1.32; every kind
//   the manifests use is a long-GA version; 5.x needs Node >= 22, which machines here do not have): types, required fields, enums, int-or-string;
// * custom kinds against their CRD's openAPIV3Schema (the project's crds/ and the real CAPI CRDs, $CAPI_CRDS_DIR),
//   through the same ajv helper the fixture tests use (test/capi-sim/schema-check.ts);
// * plus the checks the API server makes in code rather than in the schema and that a typo here would trip:
//   object names (DNS-1123), label keys and values, a Deployment's selector matching its pod template.
// Why a validator from npm and not the embedded API server: the local API server serves CRDs and a handful of core
// kinds only; teaching it apps/v1, rbac, policy and networking from their OpenAPI schemas would mean shipping and
// maintaining those schemas in the product for a test's sake. kubernetes-models is a maintained, pinned package of
// exactly those schemas, and against a real cluster (INPLACE_TEST_KUBECONFIG) `kubectl apply --dry-run=server`
// remains the final word. Limit: its schemas allow unknown fields (the server's strict field validation would
// reject a misspelt field name); the snapshot test is what catches those.
import { join } from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as core from 'kubernetes-models/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as apiextensions from 'kubernetes-models/apiextensions.k8s.io/v1';
import type { KubeObject } from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { PROJECT_ROOT } from '../../cdk8s/synth.js';
import { loadCrdsByKind, schemaProblems } from '../capi-sim/schema-check.js';

/** A kubernetes-models class: construct from a plain object, `.validate()` throws with the schema errors. */
type ModelClass = new (data: never) => { validate(): void };

/** The built-in kinds the manifests may contain, by `apiVersion/kind`; anything else must be a custom kind. */
export const BUILTIN: Readonly<Record<string, ModelClass>> = {
  'v1/Namespace': core.Namespace,
  'v1/ServiceAccount': core.ServiceAccount,
  'v1/Service': core.Service,
  'v1/ConfigMap': core.ConfigMap,
  'apps/v1/Deployment': apps.Deployment,
  'rbac.authorization.k8s.io/v1/ClusterRole': rbac.ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': rbac.ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': rbac.Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
  'policy/v1/PodDisruptionBudget': policy.PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': networking.NetworkPolicy,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': apiextensions.CustomResourceDefinition,
} as unknown as Record<string, ModelClass>;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Problems of a label map as the API server checks it (metadata.labels, selectors). */
function labelProblems(where: string, labels: Record<string, unknown> | undefined): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    const slash = k.lastIndexOf('/');
    const prefix = slash >= 0 ? k.slice(0, slash) : undefined;
    const name = slash >= 0 ? k.slice(slash + 1) : k;
    if ((prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) || name.length > 63 || !LABEL_NAME.test(name))
      out.push(`${where}: invalid label key "${k}"`);
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
      out.push(`${where}: invalid value for label ${k}: ${JSON.stringify(v)}`);
  }
  return out;
}

/** The checks the API server makes in code: names, labels, a Deployment's selector against its template. */
function semanticProblems(obj: KubeObject, at: string): string[] {
  const out: string[] = [];
  const name = obj.metadata?.name ?? '';
  // RBAC object names are path segments, not DNS names (e.g. system:aggregate-to-view); the others are subdomains.
  if (!obj.apiVersion?.startsWith('rbac.') && (name.length > 253 || !DNS_SUBDOMAIN.test(name)))
    out.push(`${at}: metadata.name "${name}" is not a DNS-1123 subdomain`);
  out.push(...labelProblems(`${at} metadata.labels`, obj.metadata?.labels));
  if (obj.kind === 'Deployment') {
    const spec = (
      obj as {
        spec?: { selector?: { matchLabels?: Record<string, string> }; template?: { metadata?: { labels?: Record<string, string> } } };
      }
    ).spec;
    const sel = spec?.selector?.matchLabels ?? {};
    const podLabels = spec?.template?.metadata?.labels ?? {};
    out.push(...labelProblems(`${at} spec.selector`, sel), ...labelProblems(`${at} spec.template.metadata.labels`, podLabels));
    if (Object.keys(sel).length === 0) out.push(`${at}: spec.selector is empty`);
    if (Object.entries(sel).some(([k, v]) => podLabels[k] !== v))
      out.push(`${at}: spec.template.metadata.labels: Invalid value: selector does not match template labels`);
  }
  return out;
}

/** CRDs of the project (incl. the samples) and of Cluster API, by `<group>/<kind>`. */
function customKinds(): Map<string, ReturnType<typeof loadCrdsByKind> extends Map<string, infer C> ? C : never> {
  const all = new Map();
  for (const dir of [join(PROJECT_ROOT, 'crds'), join(PROJECT_ROOT, 'crds', 'samples'), ...capiCrdDirs()])
    for (const [k, v] of loadCrdsByKind(dir)) all.set(k, v);
  return all;
}

/**
 * cert-manager's kinds: their CRDs are not vendored here, so a shape check of the fields the manifests use (the
 * cert-manager.io/v1 API: Issuer spec.selfSigned, Certificate spec.secretName/dnsNames/issuerRef).
 */
export const CERT_MANAGER: Readonly<Record<string, (spec: Record<string, unknown>) => string[]>> = {
  'cert-manager.io/v1/Issuer': (spec) => {
    const kinds = ['selfSigned', 'ca', 'acme', 'vault', 'venafi'].filter((k) => k in spec);
    return kinds.length === 1 ? [] : [`spec must set exactly one issuer type, has ${JSON.stringify(kinds)}`];
  },
  'cert-manager.io/v1/Certificate': (spec) => {
    const out: string[] = [];
    if (typeof spec['secretName'] !== 'string' || !DNS_SUBDOMAIN.test(spec['secretName'])) out.push('spec.secretName must be a DNS name');
    const dns = spec['dnsNames'];
    if (!Array.isArray(dns) || dns.length === 0 || dns.some((n) => typeof n !== 'string' || !DNS_SUBDOMAIN.test(n)))
      out.push('spec.dnsNames must be a non-empty list of DNS names');
    const ref = spec['issuerRef'] as { name?: unknown; kind?: unknown } | undefined;
    if (typeof ref?.name !== 'string' || !['Issuer', 'ClusterIssuer'].includes(String(ref.kind)))
      out.push('spec.issuerRef must name an Issuer or ClusterIssuer');
    return out;
  },
};

/** Every schema problem of `docs` (empty when all validate); each names the object, e.g. `Deployment inplace-x: ...`. */
export function manifestProblems(docs: readonly KubeObject[]): string[] {
  let crds: ReturnType<typeof customKinds> | undefined;
  const out: string[] = [];
  for (const obj of docs) {
    const at = `${obj.kind} ${obj.metadata?.name ?? '?'}`;
    const model = BUILTIN[`${obj.apiVersion}/${obj.kind}`];
    const certManager = CERT_MANAGER[`${obj.apiVersion}/${obj.kind}`];
    if (certManager) {
      const spec = (obj as { spec?: unknown }).spec;
      if (typeof spec !== 'object' || spec === null) out.push(`${at}: spec is missing`);
      else out.push(...certManager(spec as Record<string, unknown>).map((p) => `${at}: ${p}`));
    } else if (model) {
      try {
        new model(structuredClone(obj) as never).validate();
      } catch (e) {
        out.push(`${at}: ${(e as Error).message}`);
      }
    } else if (obj.apiVersion?.includes('.')) {
      out.push(...schemaProblems(obj, (crds ??= customKinds())));
    } else {
      out.push(`${at}: no schema for ${obj.apiVersion} ${obj.kind} (add its kubernetes-models class to BUILTIN)`);
    }
    out.push(...semanticProblems(obj, at));
  }
  return out;
}
