// What a ServiceAccount may do according to a set of manifests: RoleBindings/ClusterRoleBindings resolved to Roles and
// ClusterRoles, ClusterRole aggregation followed, each grant kept with its scope (a namespace or the whole cluster).
// The same matching as the RBAC authorizer, wildcards included, so a '*' anywhere is seen as granting everything.
import { parseAllDocuments } from 'yaml';

/** A parsed manifest object. */
export interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

/** An RBAC rule as written in a Role. */
export interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** A rule and where it applies. */
export interface Grant {
  rule: Rule;
  /** Namespace of a Role binding; undefined = cluster-wide. */
  namespace: string | undefined;
  /** The role it came from. */
  role: string;
}

/** Every object of the YAML texts. */
export function parseDocs(texts: readonly string[]): Doc[] {
  return texts
    .flatMap((t) => parseAllDocuments(t).map((d) => d.toJSON() as Doc | null))
    .filter((d): d is Doc => !!d && typeof d === 'object');
}

const rulesOf = (d: Doc): Rule[] => (d['rules'] as Rule[] | null | undefined) ?? [];

/** The rules of a ClusterRole including those aggregated into it by label selectors. */
export function clusterRoleRules(docs: readonly Doc[], role: Doc): Rule[] {
  const out = [...rulesOf(role)];
  const agg = role['aggregationRule'] as { clusterRoleSelectors?: { matchLabels?: Record<string, string> }[] } | undefined;
  for (const sel of agg?.clusterRoleSelectors ?? []) {
    for (const d of docs) {
      if (d.kind !== 'ClusterRole' || d === role) continue;
      if (Object.entries(sel.matchLabels ?? {}).every(([k, v]) => d.metadata.labels?.[k] === v)) out.push(...rulesOf(d));
    }
  }
  return out;
}

/** Everything granted to ServiceAccount `namespace/name` by the bindings in `docs`. */
export function grantsOf(docs: readonly Doc[], namespace: string, name: string): Grant[] {
  const grants: Grant[] = [];
  for (const b of docs) {
    if (b.kind !== 'RoleBinding' && b.kind !== 'ClusterRoleBinding') continue;
    const subjects = (b['subjects'] as { kind: string; name: string; namespace?: string }[] | undefined) ?? [];
    if (!subjects.some((s) => s.kind === 'ServiceAccount' && s.name === name && (s.namespace ?? b.metadata.namespace) === namespace))
      continue;
    const ref = b['roleRef'] as { kind: string; name: string };
    const scope = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
    const role = docs.find(
      (d) =>
        d.kind === ref.kind &&
        d.metadata.name === ref.name &&
        (ref.kind === 'ClusterRole' || d.metadata.namespace === b.metadata.namespace),
    );
    if (!role) throw new Error(`${b.kind} ${b.metadata.name} refers to missing ${ref.kind} ${ref.name}`);
    const rules = ref.kind === 'ClusterRole' ? clusterRoleRules(docs, role) : rulesOf(role);
    for (const rule of rules) grants.push({ rule, namespace: scope, role: ref.name });
  }
  return grants;
}

const has = (list: string[] | undefined, v: string): boolean => !!list && (list.includes(v) || list.includes('*'));

/** True when a rule allows `verb` on `group`/`resource` (resource may be `plural/subresource`). */
export function ruleAllows(r: Rule, verb: string, group: string, resource: string, name?: string): boolean {
  if (!has(r.verbs, verb) || !has(r.apiGroups, group)) return false;
  const [plural] = resource.split('/');
  const resOk =
    has(r.resources, resource) || (r.resources ?? []).includes(`${plural}/*`) || (!resource.includes('/') && has(r.resources, plural!));
  if (!resOk) return false;
  return !r.resourceNames || r.resourceNames.length === 0 || (name !== undefined && r.resourceNames.includes(name));
}

/** True when any grant allows the call in `namespace` (undefined = a cluster-wide call). */
export function allowed(grants: readonly Grant[], verb: string, group: string, resource: string, namespace?: string): boolean {
  return grants.some((g) => (g.namespace === undefined || g.namespace === namespace) && ruleAllows(g.rule, verb, group, resource));
}

/** Write verbs. */
export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];
/** Verbs that let a subject gain privileges it does not have. */
export const ESCALATION_VERBS = ['escalate', 'bind', 'impersonate'];
