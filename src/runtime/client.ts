// A small dynamic REST client over the API server. KubeConfig from @kubernetes/client-node supplies auth and TLS;
// the requests are ours so that URLs, subresources, patch content types and watch streaming are under our control.
// The connection (pools, credentials, retries) is client/transport.ts, the watch stream client/watch.ts and
// discovery client/discovery.ts; this module maps the KubeClient verbs onto them.
import type http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { resourceName, type KubeObject, type ResourceType } from '../api/kube.js';
import { discover } from './client/discovery.js';
import { Transport, type ClientOptions } from './client/transport.js';
import { openWatch } from './client/watch.js';
import { KubeApiError } from './pure/errors.js';
import type {
  DeleteOptions,
  KubeClient,
  ListOptions,
  ListResult,
  PatchOptions,
  PatchType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './pure/types.js';

export type { ClientOptions, RequestInfo } from './client/transport.js';

/** A KubeClient over HTTP(S) that owns keep-alive connection pools. */
export interface RestClient extends KubeClient {
  /** The API server URL. */
  readonly server: string;
  /** Drops the discovery cache (e.g. after installing CRDs). */
  invalidateDiscovery(): void;
  /** Closes idle pooled connections and aborts running watches. */
  close(): void;
}

const CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** Loads a kubeconfig: from `path` when given, else the default chain (KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

export { resourceName };

/** The collection or object path of a resource, e.g. `/apis/g/v1/namespaces/ns/things/name/status`. */
export function resourcePath(res: ResourceType, namespace: string | undefined, name?: string, subresource?: string): string {
  let p = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  if (res.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${res.plural}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}

const objName = (ns: string | undefined, name: string): string => (ns ? `${ns}/${name}` : name);

/**
 * Creates a client for the cluster of the kubeconfig's current context. Requests share keep-alive pools
 * (one for requests, one for long-running watches). Errors are `KubeApiError`s naming the operation.
 */
export function createClient(kc: KubeConfig, options: ClientOptions = {}): RestClient {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('create client: the kubeconfig has no current cluster');
  const t = new Transport(kc, cluster, options);
  const watches = new Set<http.ClientRequest>();
  const discovery = new Map<string, Promise<ResourceType>>();
  return {
    server: t.server,
    ...readVerbs(t),
    ...writeVerbs(t),
    watch<T extends KubeObject>(
      res: ResourceType,
      namespace: string | undefined,
      opts: WatchOptions,
      onEvent: (e: WatchEvent<T>) => void,
    ): Promise<WatchHandle> {
      return openWatch(t, watches, { res, namespace, path: resourcePath(res, namespace), opts, onEvent });
    },
    resolve(apiGroup: string, kind: string): Promise<ResourceType> {
      const key = `${apiGroup}/${kind}`;
      let p = discovery.get(key);
      if (!p) {
        p = discover(t, apiGroup, kind);
        discovery.set(key, p);
        p.catch(() => discovery.delete(key));
      }
      return p;
    },
    invalidateDiscovery() {
      discovery.clear();
    },
    close() {
      for (const w of watches) w.destroy();
      watches.clear();
      t.close();
    },
  };
}

/** The query string of a write: dry run and field manager (the user agent when `defaultManager`). */
function writeQuery(t: Transport, opts: WriteOptions | undefined, defaultManager = false): URLSearchParams {
  const q = new URLSearchParams();
  if (opts?.dryRun) q.set('dryRun', 'All');
  const fm = opts?.fieldManager ?? (defaultManager ? t.userAgent : undefined);
  if (fm) q.set('fieldManager', fm);
  return q;
}

/** get and list. */
function readVerbs(t: Transport): Pick<KubeClient, 'get' | 'list'> {
  return {
    async get<T extends KubeObject>(res: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
      try {
        return await t.call<T>({
          verb: 'get',
          resource: resourceName(res),
          operation: `get ${resourceName(res)} ${objName(namespace, name)}`,
          method: 'GET',
          path: resourcePath(res, namespace, name),
        });
      } catch (err) {
        if (err instanceof KubeApiError && err.code === 404) return undefined;
        throw err;
      }
    },

    async list<T extends KubeObject>(res: ResourceType, namespace: string | undefined, opts: ListOptions = {}): Promise<ListResult<T>> {
      const q = new URLSearchParams();
      if (opts.labelSelector) q.set('labelSelector', opts.labelSelector);
      if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector);
      if (opts.limit !== undefined) q.set('limit', String(opts.limit));
      if (opts.continue) q.set('continue', opts.continue);
      if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion);
      const body = await t.call<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>({
        verb: 'list',
        resource: resourceName(res),
        operation: `list ${resourceName(res)}${namespace && res.namespaced ? ` in ${namespace}` : ''}`,
        method: 'GET',
        path: resourcePath(res, namespace),
        query: q,
      });
      const kind = res.kind;
      const apiVersion = res.group ? `${res.group}/${res.version}` : res.version;
      // List items come without kind/apiVersion from a real API server; fill them so objects are self-describing.
      const items = (body.items ?? []).map((i) => (i.kind ? i : { ...i, kind, apiVersion }));
      const out: ListResult<T> = { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
      if (body.metadata?.continue) out.continue = body.metadata.continue;
      return out;
    },
  };
}

/** create, update, patch and delete. */
function writeVerbs(t: Transport): Pick<KubeClient, 'create' | 'update' | 'patch' | 'delete'> {
  return {
    create<T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T> {
      const ns = obj.metadata.namespace;
      if (res.namespaced && !ns)
        return Promise.reject(
          new KubeApiError(`create ${resourceName(res)} ${obj.metadata.name ?? obj.metadata.generateName ?? ''}`, 400, {
            reason: 'BadRequest',
            message: 'metadata.namespace is required for a namespaced resource',
          }),
        );
      const name = obj.metadata.name ?? `${obj.metadata.generateName ?? ''}*`;
      return t.call<T>({
        verb: 'create',
        resource: resourceName(res),
        operation: `create ${resourceName(res)} ${objName(ns, name)}`,
        method: 'POST',
        path: resourcePath(res, ns),
        query: writeQuery(t, opts),
        body: withKind(res, obj),
      });
    },

    update<T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T> {
      const ns = obj.metadata.namespace;
      const name = obj.metadata.name ?? '';
      return t.call<T>({
        verb: 'update',
        resource: resourceName(res),
        operation: `update ${resourceName(res)}${opts?.subresource ? '/status' : ''} ${objName(ns, name)}`,
        method: 'PUT',
        path: resourcePath(res, ns, name, opts?.subresource),
        query: writeQuery(t, opts),
        body: withKind(res, obj),
      });
    },

    patch<T extends KubeObject>(
      res: ResourceType,
      namespace: string | undefined,
      name: string,
      body: unknown,
      opts: PatchOptions,
    ): Promise<T> {
      const q = writeQuery(t, opts, opts.type === 'apply');
      if (opts.type === 'apply' && opts.force) q.set('force', 'true');
      return t.call<T>({
        verb: 'patch',
        resource: resourceName(res),
        operation: `patch ${resourceName(res)}${opts.subresource ? '/status' : ''} ${objName(namespace, name)}`,
        method: 'PATCH',
        path: resourcePath(res, namespace, name, opts.subresource),
        query: q,
        body,
        contentType: CONTENT_TYPES[opts.type],
      });
    },

    async delete(res: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void> {
      const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
      if (opts?.propagationPolicy) body['propagationPolicy'] = opts.propagationPolicy;
      if (opts?.preconditions) body['preconditions'] = opts.preconditions;
      await t.call({
        verb: 'delete',
        resource: resourceName(res),
        operation: `delete ${resourceName(res)} ${objName(namespace, name)}`,
        method: 'DELETE',
        path: resourcePath(res, namespace, name),
        body,
      });
    },
  };
}

function withKind<T extends KubeObject>(res: ResourceType, obj: T): T {
  if (obj.kind && obj.apiVersion) return obj;
  return { ...obj, kind: obj.kind ?? res.kind, apiVersion: obj.apiVersion ?? (res.group ? `${res.group}/${res.version}` : res.version) };
}
