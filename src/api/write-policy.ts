// The write policy (docs/design.md §11, contract C8): which JSON pointers a plan's responsibilities may write on a Machine,
// InfraMachine or BootstrapConfig. One home for plan validation, `inplace preview` and the commit's patch builder, so
// the three can never disagree. Pure: no I/O, imports nothing of ours.

/** The kinds a responsibility may select. */
export type PolicyResource = 'Machine' | 'InfraMachine' | 'BootstrapConfig';

/** Allowed and denied JSON-pointer prefixes for one selectResource. */
export interface WritePolicyRules {
  /** Prefixes that may be written (a prefix covers itself and everything below it). Default: ['/spec']. */
  allow?: string[];
  /** Prefixes that may not be written, even when an allow prefix covers them. */
  deny?: string[];
}

/** Per-selectResource rules; a kind without rules gets the default (everything below /spec outside the never-list). */
export type WritePolicy = Partial<Record<PolicyResource, WritePolicyRules>>;

/** The policy when none is configured: specs writable outside the never-list; labels and annotations not writable. */
export const DEFAULT_WRITE_POLICY: WritePolicy = Object.freeze({});

/** What a kind without rules may write. */
const DEFAULT_ALLOW: readonly string[] = ['/spec'];

/**
 * Label and annotation key prefixes no policy can open: CAPI and Kubernetes act on them (remediate-machine, paused,
 * skip-remediation, the platform's own plan-name label, ...).
 */
export const RESERVED_KEY_PREFIXES: readonly RegExp[] = [
  /^cluster\.x-k8s\.io\//,
  /^[^/]*\.cluster\.x-k8s\.io\//,
  /^kubernetes\.io\//,
  /^[^/]*\.kubernetes\.io\//,
  /^k8s\.io\//,
  /^[^/]*\.k8s\.io\//,
];

/** Wiring and identity fields per kind that no policy can open. */
const NEVER: Readonly<Record<PolicyResource, readonly string[]>> = {
  Machine: ['/spec/clusterName', '/spec/providerID', '/spec/infrastructureRef', '/spec/bootstrap'],
  InfraMachine: ['/spec/providerID'],
  BootstrapConfig: [],
};

/** Fields per kind that are refused unless an allow prefix names them (or a field inside them) explicitly. */
const EXPLICIT_ONLY: Readonly<Record<PolicyResource, readonly string[]>> = {
  Machine: ['/spec/failureDomain'],
  InfraMachine: [],
  BootstrapConfig: [],
};

const POINTER = /^(\/([^/~]|~[01])*)*$/;
const unescape = (t: string): string => t.replace(/~1/g, '/').replace(/~0/g, '~');
const tokensOf = (p: string): string[] => (p === '' ? [] : p.slice(1).split('/').map(unescape));
/** True when `prefix` is `path` or one of its ancestors. */
const covers = (prefix: string, path: string): boolean => path === prefix || path.startsWith(`${prefix}/`);
const isResource = (s: string): s is PolicyResource => s === 'Machine' || s === 'InfraMachine' || s === 'BootstrapConfig';

/**
 * Why `policy` refuses a responsibility writing `path` on `selectResource`, or undefined when it may. The never-list
 * (root, apiVersion, kind, /status, /metadata other than one label or annotation, the whole /spec, the kind's
 * wiring fields) is checked first and no policy widens it.
 */
export function writeRefusal(policy: WritePolicy, selectResource: string, path: string): string | undefined {
  if (!POINTER.test(path)) return `${path} is not a JSON pointer`;
  const t = tokensOf(path);
  const head = t[0];
  if (head === undefined) return 'the whole object is never writable';
  if (head === 'apiVersion' || head === 'kind') return `${head} is never writable`;
  if (head === 'status') return "status is written by the object's own controller, never by a plan";
  if (head === 'spec' && t.length === 1) return 'the whole spec is never writable (name the fields the updater changes)';
  const res = isResource(selectResource) ? selectResource : undefined;
  if (!res) return `selectResource ${selectResource} is not one of Machine, InfraMachine, BootstrapConfig`;
  if (head === 'metadata') {
    const map = t[1];
    if ((map !== 'labels' && map !== 'annotations') || t.length !== 3)
      return 'metadata is never writable, except single labels and annotations the write policy allows';
    const key = t[2]!;
    if (RESERVED_KEY_PREFIXES.some((r) => r.test(key)))
      return `${map === 'labels' ? 'label' : 'annotation'} ${key} has a reserved prefix (cluster.x-k8s.io/, kubernetes.io/, k8s.io/ and their subdomains belong to Cluster API and Kubernetes)`;
  }
  const never = NEVER[res].find((n) => covers(n, path));
  if (never) return `${res} ${never} is identity or wiring, never writable by a plan`;
  const rules = policy[res];
  const allow = rules?.allow ?? DEFAULT_ALLOW;
  const allowedBy = allow.filter((a) => covers(a, path));
  if (allowedBy.length === 0) {
    if (head === 'metadata')
      return `${t[1] === 'labels' ? 'labels' : 'annotations'} are not writable unless the write policy allows the key (allow ${path} for ${res})`;
    return `the write policy allows only ${allow.length ? allow.join(', ') : 'nothing'} on ${res}`;
  }
  const explicit = EXPLICIT_ONLY[res].find((e) => covers(e, path));
  if (explicit && !allowedBy.some((a) => covers(explicit, a)))
    return `${res} ${explicit} is writable only when the write policy allows it by name`;
  const denied = (rules?.deny ?? []).find((d) => covers(d, path) || covers(path, d));
  if (denied) return `the write policy denies ${denied} on ${res}`;
  return undefined;
}

/** A policy file's problems (empty = usable): unknown kinds, malformed pointers, allow prefixes inside the never-list. */
export function writePolicyProblems(raw: unknown): string[] {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return ['a write policy is a map from selectResource (Machine, InfraMachine, BootstrapConfig) to {allow, deny}'];
  const problems: string[] = [];
  for (const [kind, rules] of Object.entries(raw as Record<string, unknown>)) {
    if (!isResource(kind)) {
      problems.push(`${kind}: not a selectResource (Machine, InfraMachine, BootstrapConfig)`);
      continue;
    }
    if (rules === null || typeof rules !== 'object' || Array.isArray(rules)) {
      problems.push(`${kind}: must be a map with allow and/or deny lists`);
      continue;
    }
    for (const [k, list] of Object.entries(rules as Record<string, unknown>)) {
      if (k !== 'allow' && k !== 'deny') {
        problems.push(`${kind}.${k}: unknown key (allow, deny)`);
        continue;
      }
      if (!Array.isArray(list) || list.some((p) => typeof p !== 'string')) {
        problems.push(`${kind}.${k}: must be a list of JSON pointers`);
        continue;
      }
      for (const p of list as string[]) {
        if (!POINTER.test(p) || p === '') problems.push(`${kind}.${k}: ${JSON.stringify(p)} is not a JSON pointer such as /spec/image`);
        // An allow prefix must be a writable path itself: a policy cannot open the never-list.
        else if (
          k === 'allow' &&
          !/^\/metadata\/(labels|annotations)$/.test(p) &&
          writeRefusal({ [kind]: { allow: [p] } }, kind, p) !== undefined
        ) {
          problems.push(`${kind}.allow: ${p} cannot be allowed: ${writeRefusal({ [kind]: { allow: [p] } }, kind, p)}`);
        }
      }
    }
  }
  return problems;
}

/** Parses a policy (the YAML/JSON document already decoded); throws an Error listing every problem. */
export function parseWritePolicy(raw: unknown): WritePolicy {
  const problems = writePolicyProblems(raw);
  if (problems.length > 0) throw new Error(`invalid write policy: ${problems.join('; ')}`);
  const out: WritePolicy = {};
  for (const [kind, rules] of Object.entries(raw as Record<string, WritePolicyRules>)) {
    if (!isResource(kind)) continue;
    out[kind] = { ...(rules.allow ? { allow: [...rules.allow] } : {}), ...(rules.deny ? { deny: [...rules.deny] } : {}) };
  }
  return out;
}
