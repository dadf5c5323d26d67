// Discovery: which resource (version, plural, scope) serves a kind of an API group, asked of the server.
import type { ResourceType } from '../../api/kube.js';
import { KubeApiError } from '../pure/errors.js';
import type { Transport } from './transport.js';

/** The resource serving `kind` in `group`, trying the group's preferred version first. */
export async function discover(t: Transport, group: string, kind: string): Promise<ResourceType> {
  const operation = `resolve ${kind}${group ? `.${group}` : ''}`;
  let versions: string[];
  if (group === '') versions = ['v1'];
  else {
    const g = await t.call<{ preferredVersion?: { version: string }; versions?: { version: string }[] }>({
      verb: 'discovery',
      resource: group,
      operation,
      method: 'GET',
      path: `/apis/${group}`,
    });
    versions = [...new Set([g.preferredVersion?.version, ...(g.versions ?? []).map((v) => v.version)].filter((v): v is string => !!v))];
  }
  for (const version of versions) {
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const list = await t.call<{ resources?: { name: string; kind: string; namespaced: boolean }[] }>({
      verb: 'discovery',
      resource: group || 'core',
      operation,
      method: 'GET',
      path,
    });
    const r = list.resources?.find((x) => x.kind === kind && !x.name.includes('/'));
    if (r) return { group, version, plural: r.name, kind, namespaced: r.namespaced };
  }
  throw new KubeApiError(operation, 404, {
    reason: 'NotFound',
    message: `kind ${kind} is not served by group ${JSON.stringify(group)} (versions ${versions.join(', ')})`,
  });
}
