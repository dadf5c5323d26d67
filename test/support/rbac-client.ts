// A client that enforces a set of RBAC rules the way the API server's authorizer would for one ServiceAccount:
// calls the rules do not allow fail with 403 Forbidden (same Status reason and message shape), and are recorded.
// The local API server has no authorizer, so tests that must show "the platform is forbidden without this rule"
// run the components through this client (against a real cluster too: it only narrows what the client may do).
import type { ResourceType } from '../../src/api/index.js';
import { KubeApiError } from '../../src/runtime/pure/errors.js';
import type { KubeClient, PolicyRule } from '../../src/runtime/pure/types.js';
import { allows } from '../../cdk8s/rbac.js';

/** A call the rules did not allow. */
export interface DeniedCall {
  verb: string;
  group: string;
  resource: string;
  namespace: string | undefined;
}

/** A client bound to RBAC rules, with the calls it refused. */
export interface RestrictedClient extends KubeClient {
  readonly denied: DeniedCall[];
}

/**
 * Wraps `client` so that only calls `rules` allow reach the server. `user` names the subject in the Forbidden
 * message (e.g. `system:serviceaccount:inplace-system:inplace-machine-task-controller`).
 */
export function restrictedClient(client: KubeClient, rules: readonly PolicyRule[], user: string): RestrictedClient {
  const denied: DeniedCall[] = [];
  const check = (verb: string, res: ResourceType, namespace: string | undefined, name?: string, sub?: string): void => {
    const resource = sub ? `${res.plural}/${sub}` : res.plural;
    if (allows(rules, verb, res.group, resource)) return;
    denied.push({ verb, group: res.group, resource, namespace });
    const full = `${resource}${res.group ? `.${res.group}` : ''}`;
    const message =
      `${full}${name ? ` "${name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "${res.group}"` +
      (namespace && res.namespaced ? ` in the namespace "${namespace}"` : ' at the cluster scope');
    throw new KubeApiError(`${verb} ${full}${namespace ? ` ${namespace}/` : ' '}${name ?? ''}`.trimEnd(), 403, {
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      message,
      details: { ...(name ? { name } : {}), group: res.group, kind: res.plural },
    });
  };
  // Rejections, not throws: callers see a failed promise as from the real client.
  const guard = <T>(
    f: () => Promise<T>,
    verb: string,
    res: ResourceType,
    ns: string | undefined,
    name?: string,
    sub?: string,
  ): Promise<T> => {
    try {
      check(verb, res, ns, name, sub);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return f();
  };
  return {
    denied,
    get: (res, ns, name) => guard(() => client.get(res, ns, name), 'get', res, ns, name),
    list: (res, ns, o) => guard(() => client.list(res, ns, o), 'list', res, ns),
    create: (res, obj, o) =>
      guard(() => client.create(res, obj, o), 'create', res, obj.metadata.namespace, obj.metadata.name, o?.subresource),
    update: (res, obj, o) =>
      guard(() => client.update(res, obj, o), 'update', res, obj.metadata.namespace, obj.metadata.name, o?.subresource),
    patch: (res, ns, name, body, o) => guard(() => client.patch(res, ns, name, body, o), 'patch', res, ns, name, o.subresource),
    delete: (res, ns, name, o) => guard(() => client.delete(res, ns, name, o), 'delete', res, ns, name),
    watch: (res, ns, o, on) => guard(() => client.watch(res, ns, o, on), 'watch', res, ns),
    // Discovery is open to every authenticated user (system:discovery).
    resolve: (g, k) => client.resolve(g, k),
  };
}
