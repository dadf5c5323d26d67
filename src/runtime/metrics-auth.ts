// Secure /metrics as controller-runtime serves it (WithAuthenticationAndAuthorization): HTTPS with a self-signed
// certificate, the caller's bearer token checked with a TokenReview and its right to `get /metrics` with a
// SubjectAccessReview. Prometheus scrapes with its ServiceAccount token, bound to a ClusterRole that allows the
// non-resource URL /metrics (the manifests' `inplace-metrics-reader`). Decisions are cached briefly, so a scrape
// every few seconds costs the API server two requests a minute per caller, not two per scrape.
import type { KubeObject, ResourceType } from '../api/kube.js';
import type { KubeClient } from './pure/types.js';

/** authentication.k8s.io/v1 TokenReviews (cluster-scoped, create only). */
export const TokenReviews: ResourceType = {
  group: 'authentication.k8s.io',
  version: 'v1',
  plural: 'tokenreviews',
  kind: 'TokenReview',
  namespaced: false,
};
/** authorization.k8s.io/v1 SubjectAccessReviews (cluster-scoped, create only). */
export const SubjectAccessReviews: ResourceType = {
  group: 'authorization.k8s.io',
  version: 'v1',
  plural: 'subjectaccessreviews',
  kind: 'SubjectAccessReview',
  namespaced: false,
};

/** The outcome of one request's check: the HTTP status to answer with when not allowed. */
export type MetricsDecision = { allowed: true } | { allowed: false; status: 401 | 403 | 500; reason: string };

/** Decides whether a request (its Authorization header, its path) may read metrics. */
export type MetricsAuthorizer = (authorization: string | undefined, path: string) => Promise<MetricsDecision>;

/** The user a TokenReview names (authentication.k8s.io/v1 UserInfo). */
export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** What a TokenReview answered for a bearer token. */
export interface TokenReviewStatus {
  authenticated?: boolean;
  user?: UserInfo;
  error?: string;
}

/** Asks the API server who a bearer token belongs to (a TokenReview). */
export async function reviewToken(client: KubeClient, token: string): Promise<TokenReviewStatus> {
  const review = await client.create<KubeObject & { status?: TokenReviewStatus }>(TokenReviews, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    metadata: {},
    spec: { token },
  } as KubeObject);
  return review.status ?? {};
}

/** What a SubjectAccessReview is about: a resource (namespace, verb, group, resource) or a non-resource URL. */
export type AccessAttributes =
  | { resourceAttributes: { namespace: string; verb: string; group: string; resource: string } }
  | { nonResourceAttributes: { path: string; verb: string } };

/** Asks the API server whether `user` may do what `attributes` say (a SubjectAccessReview). */
export async function reviewAccess(
  client: KubeClient,
  user: UserInfo,
  attributes: AccessAttributes,
): Promise<{ allowed?: boolean; reason?: string }> {
  const review = await client.create<KubeObject & { status?: { allowed?: boolean; reason?: string } }>(SubjectAccessReviews, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: {},
    spec: {
      user: user.username,
      ...(user.uid ? { uid: user.uid } : {}),
      groups: user.groups ?? [],
      ...(user.extra ? { extra: user.extra } : {}),
      ...attributes,
    },
  } as KubeObject);
  return review.status ?? {};
}

/** Options of kubeMetricsAuthorizer. */
export interface MetricsAuthorizerOptions {
  /** How long a decision is reused for the same token and path (default 60 s). */
  cacheTtlMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

/** An authorizer asking the API server, as kube-rbac-proxy and controller-runtime do: TokenReview, then SubjectAccessReview. */
export function kubeMetricsAuthorizer(client: KubeClient, opts: MetricsAuthorizerOptions = {}): MetricsAuthorizer {
  const ttl = opts.cacheTtlMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { at: number; decision: MetricsDecision }>();
  return async (authorization, path) => {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    if (!m) return { allowed: false, status: 401, reason: 'Unauthorized: a bearer token is required' };
    const token = m[1]!;
    const key = `${path}\n${token}`;
    const hit = cache.get(key);
    if (hit && now() - hit.at < ttl) return hit.decision;
    let decision: MetricsDecision;
    try {
      const review = { status: await reviewToken(client, token) };
      const user = review.status?.user;
      if (!review.status?.authenticated || !user?.username) {
        decision = { allowed: false, status: 401, reason: `Unauthorized${review.status?.error ? `: ${review.status.error}` : ''}` };
      } else {
        const sar = { status: await reviewAccess(client, user, { nonResourceAttributes: { path, verb: 'get' } }) };
        decision = sar.status?.allowed
          ? { allowed: true }
          : {
              allowed: false,
              status: 403,
              reason: `Forbidden: user "${user.username}" may not get ${path}${sar.status?.reason ? ` (${sar.status.reason})` : ''}`,
            };
      }
    } catch (e) {
      // Not cached: the API server being unreachable says nothing about the caller.
      return { allowed: false, status: 500, reason: `authorization failed: ${(e as Error).message}` };
    }
    cache.set(key, { at: now(), decision });
    if (cache.size > 1000) for (const [k, v] of cache) if (now() - v.at >= ttl) cache.delete(k);
    return decision;
  };
}
