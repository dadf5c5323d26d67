/** Discovery documents: legacy (/api, /apis, resource lists) and aggregated (apidiscovery.k8s.io/v2). */
import type { Core } from './core.js';
import { apiVersionOf, type ResourceDef } from './resources.js';

type Obj = Record<string, unknown>;

const VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

/** Version priority as kube-apiserver sorts CRD versions (GA > beta > alpha, higher numbers first). */
export function versionPriority(a: string, b: string): number {
  const parse = (v: string): [number, number, number, string] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [0, 0, 0, v];
    const rank = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return [rank, Number(m[1]), Number(m[3] ?? 0), v];
  };
  const [ra, ma, na, sa] = parse(a);
  const [rb, mb, nb, sb] = parse(b);
  if (ra === 0 && rb === 0) return sa < sb ? -1 : sa > sb ? 1 : 0;
  if (ra !== rb) return rb - ra;
  if (ma !== mb) return mb - ma;
  if (na !== nb) return nb - na;
  return 0;
}

/** Groups (excluding core) with their served versions in preference order. */
export function groups(core: Core): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const av of core.servedVersions().keys()) {
    if (!av.includes('/')) continue;
    const [g, v] = av.split('/') as [string, string];
    const list = out.get(g) ?? [];
    list.push(v);
    out.set(g, list);
  }
  for (const [g, list] of out) {
    // Preferred version: the storage version of a CRD group when there is one, else by priority.
    list.sort(versionPriority);
    const defs = [...(core.servedVersions().get(`${g}/${list[0]}`)?.values() ?? [])];
    const storage = defs.find((d) => !d.builtin)?.storageVersion;
    if (storage && list.includes(storage)) {
      list.splice(list.indexOf(storage), 1);
      list.unshift(storage);
      const rest = list.slice(1).sort(versionPriority);
      out.set(g, [storage, ...rest]);
    }
  }
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** GET /api (legacy). */
export function apiVersions(host: string): Obj {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: host }] };
}

/** GET /apis (legacy). */
export function apiGroupList(core: Core): Obj {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups(core)].map(([name, versions]) => groupObj(name, versions)),
  };
}

function groupObj(name: string, versions: string[]): Obj {
  return {
    name,
    versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
    preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
  };
}

/** GET /apis/<group>. */
export function apiGroup(core: Core, group: string): Obj | undefined {
  const versions = groups(core).get(group);
  if (!versions) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupObj(group, versions) };
}

/** GET /api/v1 or /apis/<group>/<version> (APIResourceList). */
export function apiResourceList(core: Core, group: string, version: string): Obj | undefined {
  const defs = core.servedVersions().get(apiVersionOf(group, version));
  if (!defs) return undefined;
  const resources: Obj[] = [];
  for (const d of [...defs.values()].sort((a, b) => (a.plural < b.plural ? -1 : 1))) {
    resources.push({
      name: d.plural,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: VERBS,
      ...(d.shortNames.length ? { shortNames: d.shortNames } : {}),
      ...(d.categories.length ? { categories: d.categories } : {}),
      storageVersionHash: storageVersionHash(d),
    });
    if (d.statusSubresource)
      resources.push({ name: `${d.plural}/status`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: STATUS_VERBS });
    if (d.scale)
      resources.push({
        name: `${d.plural}/scale`,
        singularName: '',
        namespaced: d.namespaced,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: STATUS_VERBS,
      });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(group, version), resources };
}

function storageVersionHash(d: ResourceDef): string {
  let h = 0;
  const s = `${d.group}/${d.storageVersion}/${d.kind}`;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return Buffer.from(new Uint32Array([h >>> 0, (h * 7) >>> 0]).buffer).toString('base64');
}

function aggregatedResource(d: ResourceDef, version: string): Obj {
  const builtinKind = { group: '', version: '', kind: d.kind };
  return {
    resource: d.plural,
    responseKind: d.builtin ? builtinKind : { group: d.group, version, kind: d.kind },
    scope: d.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: d.singular,
    verbs: VERBS,
    ...(d.shortNames.length ? { shortNames: d.shortNames } : {}),
    ...(d.categories.length ? { categories: d.categories } : {}),
    ...(d.statusSubresource || d.scale
      ? {
          subresources: [
            ...(d.statusSubresource
              ? [
                  {
                    subresource: 'status',
                    responseKind: d.builtin ? builtinKind : { group: d.group, version, kind: d.kind },
                    verbs: STATUS_VERBS,
                  },
                ]
              : []),
            ...(d.scale
              ? [{ subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: STATUS_VERBS }]
              : []),
          ],
        }
      : {}),
  };
}

/** Aggregated discovery for /api (core group) or /apis. */
export function aggregated(core: Core, legacy: boolean): Obj {
  const items: Obj[] = [];
  if (legacy) {
    const defs = [...(core.servedVersions().get('v1')?.values() ?? [])].sort((a, b) => (a.plural < b.plural ? -1 : 1));
    items.push({
      metadata: { creationTimestamp: null },
      versions: [{ version: 'v1', resources: defs.map((d) => aggregatedResource(d, 'v1')), freshness: 'Current' }],
    });
  } else {
    for (const [g, versions] of groups(core)) {
      items.push({
        metadata: { name: g, creationTimestamp: null },
        versions: versions.map((v) => ({
          version: v,
          resources: [...(core.servedVersions().get(`${g}/${v}`)?.values() ?? [])]
            .sort((a, b) => (a.plural < b.plural ? -1 : 1))
            .map((d) => aggregatedResource(d, v)),
          freshness: 'Current',
        })),
      });
    }
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}
