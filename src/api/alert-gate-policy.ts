// The alert-gate policy (docs/operations.md "Alert gate", threat model in docs/design.md): the OPERATOR, never a plan
// or campaign author, decides which alerts endpoints the plan controller may call and which Secrets it may send there.
// One home for the plan's validation, the effect that calls out (alerts.ts checks again before any read or request),
// the campaign's validation and the synthesized RBAC, so that they can never disagree. Pure: no I/O.

/** One endpoint the operator allows: a URL (scheme, host, port, optional path prefix) and the Secrets usable with it. */
export interface AlertGateEndpoint {
  /** http(s)://host[:port][/path]: a gate's url matches when its origin is this origin and its path is at or below this path. */
  url: string;
  /** `namespace/name` of the Secrets a plan may name in spec.alertGate.secretRef for this endpoint (default none). */
  secrets?: string[];
}

/** The operator's alert-gate policy (`--alert-gate-policy FILE`): with none, no alert gate may call anything. */
export interface AlertGatePolicy {
  /** The allowed endpoints. */
  endpoints: AlertGateEndpoint[];
}

/**
 * Label a Secret must carry, with value "true", before the plan controller uses it as alert-gate credentials: its
 * owner opts it in (defense in depth, on top of the policy's list and the RBAC's resourceNames).
 */
export const ALERT_GATE_CREDENTIALS_LABEL = 'inplace.cluster.x-k8s.io/alert-gate-credentials';

/** The path the plan controller appends to a gate's url: the Prometheus alerts API. */
export const ALERTS_API_PATH = '/api/v1/alerts';

// Encoded separators and dots a proxy may decode after the prefix check ("/prom/..%2fadmin"); backslashes some servers
// read as slashes. Refused outright: a gate URL has no reason to carry them.
const AMBIGUOUS_PATH = /%2f|%5c|%2e|\\/i;
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** A URL's text for a message: bounded, JSON-quoted (no control characters reach a condition). */
const shown = (url: string): string => JSON.stringify(url.length > 200 ? `${url.slice(0, 200)}…` : url);

/** The path without trailing slashes ("" for the root). */
const trimPath = (p: string): string => p.replace(/\/+$/, '');

/**
 * The exact URL the plan controller GETs for a gate `url` (`<url>/api/v1/alerts`), or why the url can never be called:
 * not http(s), user info, a query or fragment, an encoded separator. The policy check and the request both use it, so
 * what is checked is what is called.
 */
export function alertsTarget(url: string): URL | string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${shown(url)} is not a URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `${shown(url)} is not an http(s) URL`;
  if (u.username !== '' || u.password !== '' || /^[a-z]+:\/\/[^/?#]*@/i.test(url.trim()))
    return `${shown(url)} carries user info (user@host): never allowed, credentials come from secretRef`;
  if (u.search !== '' || u.hash !== '' || /[?#]/.test(url)) return `${shown(url)} has a query or fragment: not allowed`;
  if (AMBIGUOUS_PATH.test(u.pathname) || url.includes('\\')) return `${shown(url)} has an encoded or ambiguous path separator: not allowed`;
  return new URL(`${u.origin}${trimPath(u.pathname)}${ALERTS_API_PATH}`);
}

/** A policy file's problems (empty = usable): shape, URLs, Secret names. */
export function alertGatePolicyProblems(raw: unknown): string[] {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return ['an alert-gate policy is a map with key endpoints: a list of {url, secrets}'];
  const problems: string[] = [];
  for (const k of Object.keys(raw)) if (k !== 'endpoints') problems.push(`${k}: unknown key (endpoints)`);
  const eps = (raw as { endpoints?: unknown }).endpoints;
  if (eps === undefined) return problems;
  if (!Array.isArray(eps)) return [...problems, 'endpoints: must be a list of {url, secrets}'];
  eps.forEach((e: unknown, i) => {
    const at = `endpoints[${i}]`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) {
      problems.push(`${at}: must be a map {url, secrets}`);
      return;
    }
    for (const k of Object.keys(e)) if (k !== 'url' && k !== 'secrets') problems.push(`${at}.${k}: unknown key (url, secrets)`);
    const { url, secrets } = e as { url?: unknown; secrets?: unknown };
    if (typeof url !== 'string') problems.push(`${at}.url: required, a string such as https://prometheus.monitoring:9090`);
    else {
      const t = alertsTarget(url);
      if (typeof t === 'string') problems.push(`${at}.url: ${t}`);
    }
    if (secrets === undefined) return;
    if (!Array.isArray(secrets) || secrets.some((s) => typeof s !== 'string')) {
      problems.push(`${at}.secrets: must be a list of namespace/name`);
      return;
    }
    for (const s of secrets as string[]) {
      const [ns, name, ...rest] = s.split('/');
      if (rest.length > 0 || !ns || !name || !NAME.test(ns) || !NAME.test(name) || ns.length > 63 || name.length > 253)
        problems.push(`${at}.secrets: ${shown(s)} is not namespace/name`);
    }
  });
  return problems;
}

/** Parses a policy (the YAML/JSON document already decoded); throws an Error listing every problem. */
export function parseAlertGatePolicy(raw: unknown): AlertGatePolicy {
  const problems = alertGatePolicyProblems(raw);
  if (problems.length > 0) throw new Error(`invalid alert-gate policy: ${problems.join('; ')}`);
  const eps = ((raw as { endpoints?: AlertGateEndpoint[] }).endpoints ?? []).map((e) => ({
    url: e.url,
    ...(e.secrets ? { secrets: [...new Set(e.secrets)] } : {}),
  }));
  return { endpoints: eps };
}

/** The allowed endpoint a gate's url falls under (same origin; path at or below the endpoint's), if any. */
function endpointFor(policy: AlertGatePolicy, target: URL): AlertGateEndpoint | undefined {
  const path = trimPath(target.pathname.slice(0, -ALERTS_API_PATH.length));
  return policy.endpoints.find((e) => {
    const allowed = alertsTarget(e.url);
    if (typeof allowed === 'string' || allowed.origin !== target.origin) return false;
    const prefix = trimPath(allowed.pathname.slice(0, -ALERTS_API_PATH.length));
    return path === prefix || path.startsWith(`${prefix}/`);
  });
}

/** At most three allowed endpoints, for a message. */
const allowedList = (policy: AlertGatePolicy): string => {
  const urls = policy.endpoints.map((e) => e.url);
  return urls.length === 0 ? 'none' : `${urls.slice(0, 3).join(', ')}${urls.length > 3 ? ` and ${urls.length - 3} more` : ''}`;
};

/** A gate as a plan or campaign spells it (the campaign's carry no secretRef). */
export interface GateReference {
  url: string;
  secretRef?: { name: string };
}

/**
 * Why the policy refuses `gate` (in `namespace`, at spec path `path` such as "spec.alertGate"), every problem listed;
 * empty when the plan controller may call its url with its Secret. `policy` undefined: the operator configured none,
 * so every gate is refused (fail closed).
 */
export function alertGateRefusals(policy: AlertGatePolicy | undefined, gate: GateReference, namespace: string, path: string): string[] {
  const target = alertsTarget(gate.url);
  if (typeof target === 'string') return [`${path}.url: ${target}`];
  if (!policy)
    return [
      `${path}.url: ${shown(gate.url)} refused: the operator allows no alert endpoint (the plan controller runs without --alert-gate-policy; docs/operations.md "Alert gate")`,
    ];
  const endpoint = endpointFor(policy, target);
  if (!endpoint)
    return [
      `${path}.url: ${shown(gate.url)} refused by the alert-gate policy: no allowed endpoint has its scheme, host, port and path (allowed: ${allowedList(policy)})`,
    ];
  if (!gate.secretRef) return [];
  const ref = `${namespace}/${gate.secretRef.name}`;
  if ((endpoint.secrets ?? []).includes(ref)) return [];
  return [
    `${path}.secretRef: Secret ${ref} refused by the alert-gate policy: not listed for endpoint ${endpoint.url} (its secrets: ${(endpoint.secrets ?? []).slice(0, 3).join(', ') || 'none'})`,
  ];
}

/** Why a Secret the policy lists may still not be used: it does not carry the opt-in label. */
export function credentialsLabelRefusal(
  ref: string,
  labels: Readonly<Record<string, string>> | undefined,
  path: string,
): string | undefined {
  if (labels?.[ALERT_GATE_CREDENTIALS_LABEL] === 'true') return undefined;
  return `${path}.secretRef: Secret ${ref} refused: it lacks the label ${ALERT_GATE_CREDENTIALS_LABEL}: "true" (its owner opts it in as alert-gate credentials)`;
}

/** The Secrets the policy names, by namespace (what the synthesized Roles grant `get` on, by resourceNames). */
export function alertGateSecretsByNamespace(policy: AlertGatePolicy | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of policy?.endpoints ?? [])
    for (const s of e.secrets ?? []) {
      const [ns, name] = s.split('/') as [string, string];
      const names = out.get(ns) ?? [];
      if (!names.includes(name)) names.push(name);
      out.set(ns, names);
    }
  for (const names of out.values()) names.sort();
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}
