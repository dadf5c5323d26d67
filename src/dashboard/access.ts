// Who may see what on the dashboard. Locally (the user's kubeconfig) the viewer is the kubeconfig's user: the page
// shows what the dashboard's informers could list with it. In a cluster the dashboard asks the API server as the
// metrics endpoints do (src/runtime/metrics-auth.ts): a TokenReview for the bearer token, then one
// SubjectAccessReview per namespace and resource the page would show (list on inplaceupdatecampaigns, plans,
// machineupdates), so a viewer sees only what their RBAC lets them list with kubectl. Decisions are cached briefly per
// token, so a page open for an hour costs the API server a few reviews a minute, not one per update.
import { InPlaceUpdateCampaigns, InPlaceUpdatePlans, MachineUpdates, type ResourceType } from '../api/index.js';
import { reviewAccess, reviewToken, type UserInfo } from '../runtime/metrics-auth.js';
import type { KubeClient } from '../runtime/index.js';

/** The resources the page shows, by the name the server uses for them. */
export const VIEWED = { campaigns: InPlaceUpdateCampaigns, plans: InPlaceUpdatePlans, machineupdates: MachineUpdates } as const;
/** A resource the page shows. */
export type Viewed = keyof typeof VIEWED;

/** One authenticated viewer: who they are and what they may list. */
export interface Viewer {
  /** The user name (for the page and the logs). */
  name: string;
  /** Whether the viewer may list `resource` in `namespace` (cached). */
  canList(namespace: string, resource: Viewed): Promise<boolean>;
}

/** The outcome of authenticating a request. */
export type AccessDecision = { ok: true; viewer: Viewer } | { ok: false; status: 401 | 500; reason: string };

/** Authenticates a request by its Authorization header. */
export type Authenticator = (authorization: string | undefined) => Promise<AccessDecision>;

/** Everyone may see everything the dashboard's own credentials can list (local use with the user's kubeconfig). */
export function localAccess(user = 'kubeconfig user'): Authenticator {
  const viewer: Viewer = { name: user, canList: () => Promise.resolve(true) };
  return () => Promise.resolve({ ok: true, viewer });
}

/** Options of kubeAccess. */
export interface KubeAccessOptions {
  /** How long a token's identity and each of its access decisions are reused (default 30 s). */
  cacheTtlMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

/** Viewers authenticated by TokenReview and authorized per namespace and resource by SubjectAccessReview. */
export function kubeAccess(client: KubeClient, opts: KubeAccessOptions = {}): Authenticator {
  const ttl = opts.cacheTtlMs ?? 30_000;
  const now = opts.now ?? Date.now;
  const users = new Map<string, { at: number; user: UserInfo | undefined; error?: string }>();
  const grants = new Map<string, { at: number; allowed: Promise<boolean> }>();
  const prune = <V extends { at: number }>(m: Map<string, V>): void => {
    if (m.size > 5000) for (const [k, v] of m) if (now() - v.at >= ttl) m.delete(k);
  };

  const sar = async (user: UserInfo, namespace: string, res: ResourceType): Promise<boolean> =>
    (await reviewAccess(client, user, { resourceAttributes: { namespace, verb: 'list', group: res.group, resource: res.plural } }))
      .allowed === true;

  return async (authorization) => {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    if (!m) return { ok: false, status: 401, reason: 'Unauthorized: a bearer token is required' };
    const token = m[1]!;
    let known = users.get(token);
    if (!known || now() - known.at >= ttl) {
      try {
        const review = { status: await reviewToken(client, token) };
        const ok = review.status?.authenticated === true && !!review.status.user?.username;
        known = { at: now(), user: ok ? review.status!.user : undefined, ...(review.status?.error ? { error: review.status.error } : {}) };
      } catch (e) {
        // Not cached: the API server being unreachable says nothing about the caller.
        return { ok: false, status: 500, reason: `authentication failed: ${(e as Error).message}` };
      }
      users.set(token, known);
      prune(users);
    }
    const user = known.user;
    if (!user) return { ok: false, status: 401, reason: `Unauthorized${known.error ? `: ${known.error}` : ''}` };
    const canList = (namespace: string, resource: Viewed): Promise<boolean> => {
      // Cluster-wide list ("" namespace) first: one review answers every namespace for a fleet operator.
      const decide = (ns: string): Promise<boolean> => {
        const key = `${token}\n${ns}\n${resource}`;
        const hit = grants.get(key);
        if (hit && now() - hit.at < ttl) return hit.allowed;
        const allowed = sar(user, ns, VIEWED[resource]).catch((e: unknown) => {
          grants.delete(key); // an unreachable API server is not an answer: ask again next time
          throw e;
        });
        grants.set(key, { at: now(), allowed });
        prune(grants);
        return allowed;
      };
      return decide('').then((all) => all || decide(namespace));
    };
    return { ok: true, viewer: { name: user.username!, canList } };
  };
}
