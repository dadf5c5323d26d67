// A small dynamic REST client over the API server. KubeConfig from @kubernetes/client-node supplies auth and TLS;
// the requests are ours so that URLs, subresources, patch content types and watch streaming are under our control.
import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { resourceName, type KubeObject, type ResourceType } from '../api/kube.js';
import { KubeApiError, type StatusBody } from './pure/errors.js';
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

/** One finished API request, as reported to `ClientOptions.onRequest` (metrics). */
export interface RequestInfo {
  verb: 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'watch' | 'discovery';
  /** `plural.group` (or `plural` for the core group). */
  resource: string;
  /** HTTP status code, 0 for a network error. */
  code: number;
  durationMs: number;
}

/** Options of `createClient`. */
export interface ClientOptions {
  /** User-Agent header and default field manager (default `inplace`). */
  userAgent?: string;
  /** Deadline of a non-watch request (default 30 s). */
  timeoutMs?: number;
  /** Maximum parallel sockets of the request pool (watches have their own pool; default 64). */
  maxSockets?: number;
  /** Called after every request (metrics instrumentation). */
  onRequest?: (info: RequestInfo) => void;
}

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

/** Auth headers from the kubeconfig are recomputed this often (exec/token-file credentials rotate). */
const AUTH_TTL_MS = 30_000;

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

interface Auth {
  headers: Record<string, string>;
  at: number;
}

/**
 * Creates a client for the cluster of the kubeconfig's current context. Requests share keep-alive pools
 * (one for requests, one for long-running watches). Errors are `KubeApiError`s naming the operation.
 */
export function createClient(kc: KubeConfig, options: ClientOptions = {}): RestClient {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('create client: the kubeconfig has no current cluster');
  const server = cluster.server.replace(/\/+$/, '');
  const base = new URL(server);
  const isHttps = base.protocol === 'https:';
  const userAgent = options.userAgent ?? 'inplace';
  const timeoutMs = options.timeoutMs ?? 30_000;
  const onRequest = options.onRequest;

  let agents: Promise<{ req: http.Agent; watch: http.Agent }> | undefined;
  let auth: Promise<Auth> | undefined;
  const watches = new Set<http.ClientRequest>();
  const discovery = new Map<string, Promise<ResourceType>>();

  /** Runs client-node's option logic; it throws for plain http without skipTLSVerify after filling the options. */
  async function kubeOptions(): Promise<https.RequestOptions> {
    const o: https.RequestOptions = {};
    try {
      await kc.applyToHTTPSOptions(o);
    } catch (err) {
      if (isHttps) throw err;
    }
    return o;
  }

  function getAgents(): Promise<{ req: http.Agent; watch: http.Agent }> {
    agents ??= kubeOptions().then((o) => {
      if (cluster!.proxyUrl && o.agent) return { req: o.agent as http.Agent, watch: o.agent as http.Agent };
      const tls: https.AgentOptions = {
        keepAlive: true,
        ca: o.ca,
        cert: o.cert,
        key: o.key,
        pfx: o.pfx,
        passphrase: o.passphrase,
        servername: o.servername ?? cluster!.tlsServerName,
      };
      if (o.rejectUnauthorized !== undefined) tls.rejectUnauthorized = o.rejectUnauthorized;
      const make = (maxSockets: number): http.Agent =>
        isHttps ? new https.Agent({ ...tls, maxSockets }) : new http.Agent({ keepAlive: true, maxSockets });
      return { req: make(options.maxSockets ?? 64), watch: make(Infinity) };
    });
    return agents;
  }

  let authValue: Auth | undefined;
  function getAuth(): Promise<Auth> {
    if (authValue && Date.now() - authValue.at < AUTH_TTL_MS) return Promise.resolve(authValue);
    auth ??= kubeOptions()
      .then((o) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
        if (o.auth) headers['Authorization'] = `Basic ${Buffer.from(o.auth).toString('base64')}`;
        authValue = { headers, at: Date.now() };
        return authValue;
      })
      .finally(() => (auth = undefined));
    return auth;
  }

  interface Raw {
    code: number;
    body: string;
    res: http.IncomingMessage;
  }

  async function open(
    method: string,
    path: string,
    query: URLSearchParams | undefined,
    body: string | undefined,
    contentType: string | undefined,
  ): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
    const [a, au] = await Promise.all([getAgents(), getAuth()]);
    const url = new URL(server + path + (query && query.size ? `?${query.toString()}` : ''));
    const headers: Record<string, string> = { ...au.headers, Accept: 'application/json', 'User-Agent': userAgent };
    if (body !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    return new Promise((resolve, reject) => {
      const mod = isHttps ? https : http;
      const req = mod.request(url, { method, headers, agent: a.req }, (res) => resolve({ req, res }));
      req.on('error', (err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
        err.reusedSocket = req.reusedSocket;
        reject(err);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  async function request(method: string, path: string, query?: URLSearchParams, body?: string, contentType?: string): Promise<Raw> {
    let attempt = 0;
    for (;;) {
      let opened: { req: http.ClientRequest; res: http.IncomingMessage };
      try {
        opened = await open(method, path, query, body, contentType);
      } catch (err) {
        // A pooled keep-alive socket the server closed meanwhile: the request never reached it, send it again once.
        if (attempt === 0 && isStaleSocket(err)) {
          attempt++;
          continue;
        }
        throw err;
      }
      const { res } = opened;
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      const raw = { code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), res };
      // Rotated credentials: refresh once.
      if (raw.code === 401 && attempt === 0) {
        authValue = undefined;
        attempt++;
        continue;
      }
      return raw;
    }
  }

  async function call<T>(
    verb: RequestInfo['verb'],
    resource: string,
    operation: string,
    method: string,
    path: string,
    query?: URLSearchParams,
    body?: unknown,
    contentType?: string,
  ): Promise<T> {
    const started = performance.now();
    let code = 0;
    try {
      const raw = await request(method, path, query, body === undefined ? undefined : JSON.stringify(body), contentType);
      code = raw.code;
      if (raw.code < 200 || raw.code >= 300) throw new KubeApiError(operation, raw.code, parseStatus(raw.body, raw.code));
      return (raw.body ? JSON.parse(raw.body) : undefined) as T;
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
      throw new KubeApiError(operation, 0, undefined, err);
    } finally {
      onRequest?.({ verb, resource, code, durationMs: performance.now() - started });
    }
  }

  const writeQuery = (opts: WriteOptions | undefined, defaultManager = false): URLSearchParams => {
    const q = new URLSearchParams();
    if (opts?.dryRun) q.set('dryRun', 'All');
    const fm = opts?.fieldManager ?? (defaultManager ? userAgent : undefined);
    if (fm) q.set('fieldManager', fm);
    return q;
  };

  const client: RestClient = {
    server,

    async get<T extends KubeObject>(res: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
      try {
        return await call<T>(
          'get',
          resourceName(res),
          `get ${resourceName(res)} ${objName(namespace, name)}`,
          'GET',
          resourcePath(res, namespace, name),
        );
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
      const body = await call<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
        'list',
        resourceName(res),
        `list ${resourceName(res)}${namespace && res.namespaced ? ` in ${namespace}` : ''}`,
        'GET',
        resourcePath(res, namespace),
        q,
      );
      const kind = res.kind;
      const apiVersion = res.group ? `${res.group}/${res.version}` : res.version;
      // List items come without kind/apiVersion from a real API server; fill them so objects are self-describing.
      const items = (body.items ?? []).map((i) => (i.kind ? i : { ...i, kind, apiVersion }));
      const out: ListResult<T> = { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
      if (body.metadata?.continue) out.continue = body.metadata.continue;
      return out;
    },

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
      return call<T>(
        'create',
        resourceName(res),
        `create ${resourceName(res)} ${objName(ns, name)}`,
        'POST',
        resourcePath(res, ns),
        writeQuery(opts),
        withKind(res, obj),
      );
    },

    update<T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T> {
      const ns = obj.metadata.namespace;
      const name = obj.metadata.name ?? '';
      const op = `update ${resourceName(res)}${opts?.subresource ? '/status' : ''} ${objName(ns, name)}`;
      return call<T>(
        'update',
        resourceName(res),
        op,
        'PUT',
        resourcePath(res, ns, name, opts?.subresource),
        writeQuery(opts),
        withKind(res, obj),
      );
    },

    patch<T extends KubeObject>(
      res: ResourceType,
      namespace: string | undefined,
      name: string,
      body: unknown,
      opts: PatchOptions,
    ): Promise<T> {
      const q = writeQuery(opts, opts.type === 'apply');
      if (opts.type === 'apply' && opts.force) q.set('force', 'true');
      const op = `patch ${resourceName(res)}${opts.subresource ? '/status' : ''} ${objName(namespace, name)}`;
      return call<T>(
        'patch',
        resourceName(res),
        op,
        'PATCH',
        resourcePath(res, namespace, name, opts.subresource),
        q,
        body,
        CONTENT_TYPES[opts.type],
      );
    },

    async delete(res: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void> {
      const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
      if (opts?.propagationPolicy) body['propagationPolicy'] = opts.propagationPolicy;
      if (opts?.preconditions) body['preconditions'] = opts.preconditions;
      await call(
        'delete',
        resourceName(res),
        `delete ${resourceName(res)} ${objName(namespace, name)}`,
        'DELETE',
        resourcePath(res, namespace, name),
        undefined,
        body,
      );
    },

    async watch<T extends KubeObject>(
      res: ResourceType,
      namespace: string | undefined,
      opts: WatchOptions,
      onEvent: (e: WatchEvent<T>) => void,
    ): Promise<WatchHandle> {
      const q = new URLSearchParams({ watch: 'true' });
      if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion);
      if (opts.labelSelector) q.set('labelSelector', opts.labelSelector);
      if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector);
      if (opts.allowWatchBookmarks) q.set('allowWatchBookmarks', 'true');
      if (opts.timeoutSeconds !== undefined) q.set('timeoutSeconds', String(opts.timeoutSeconds));
      const operation = `watch ${resourceName(res)}${namespace && res.namespaced ? ` in ${namespace}` : ''}`;
      const started = performance.now();
      let a: { req: http.Agent; watch: http.Agent };
      let au: Auth;
      try {
        [a, au] = await Promise.all([getAgents(), getAuth()]);
      } catch (err) {
        throw new KubeApiError(operation, 0, undefined, err);
      }
      const url = new URL(server + resourcePath(res, namespace) + `?${q.toString()}`);
      const headers = { ...au.headers, Accept: 'application/json', 'User-Agent': userAgent };

      let aborted = false;
      let settled = false;
      let resolveDone!: () => void;
      let rejectDone!: (e: unknown) => void;
      const done = new Promise<void>((resolve, reject) => {
        resolveDone = resolve;
        rejectDone = reject;
      });
      // The caller may attach its handler later; an early failure must not count as an unhandled rejection.
      done.catch(() => undefined);
      const req = (isHttps ? https : http).request(url, { method: 'GET', headers, agent: a.watch });
      watches.add(req);
      const finish = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        watches.delete(req);
        if (err && !aborted) rejectDone(err instanceof KubeApiError ? err : new KubeApiError(operation, 0, undefined, err));
        else resolveDone();
      };
      req.on('error', (err) => finish(err));
      // The handle is returned before the response arrives: a server may hold back the headers of a quiet
      // watch, and the caller must be able to abort (or time out) such a watch all the same.
      req.on('response', (stream) => {
        const code = stream.statusCode ?? 0;
        onRequest?.({ verb: 'watch', resource: resourceName(res), code, durationMs: performance.now() - started });
        if (code !== 200) {
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => finish(new KubeApiError(operation, code, parseStatus(Buffer.concat(chunks).toString('utf8'), code))));
          stream.on('error', (err) => finish(err));
          return;
        }
        let buf = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          buf += chunk;
          let nl: number;
          while (!settled && (nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            let ev: WatchEvent<T>;
            try {
              ev = JSON.parse(line) as WatchEvent<T>;
            } catch (err) {
              finish(new Error(`malformed watch event: ${String(err)}`));
              req.destroy();
              return;
            }
            try {
              onEvent(ev);
            } catch (err) {
              finish(err);
              req.destroy();
              return;
            }
          }
        });
        stream.on('end', () => finish());
        stream.on('error', (err) => finish(err));
        stream.on('close', () => finish(stream.complete ? undefined : new Error('watch connection closed')));
      });
      req.end();
      return {
        abort() {
          if (settled) return;
          aborted = true;
          req.destroy();
          finish();
        },
        done,
      };
    },

    resolve(apiGroup: string, kind: string): Promise<ResourceType> {
      const key = `${apiGroup}/${kind}`;
      let p = discovery.get(key);
      if (!p) {
        p = discover(apiGroup, kind);
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
      void agents?.then((a) => {
        a.req.destroy();
        a.watch.destroy();
      });
      agents = undefined;
    },
  };

  async function discover(group: string, kind: string): Promise<ResourceType> {
    const operation = `resolve ${kind}${group ? `.${group}` : ''}`;
    let versions: string[];
    if (group === '') versions = ['v1'];
    else {
      const g = await call<{ preferredVersion?: { version: string }; versions?: { version: string }[] }>(
        'discovery',
        group,
        operation,
        'GET',
        `/apis/${group}`,
      );
      versions = [...new Set([g.preferredVersion?.version, ...(g.versions ?? []).map((v) => v.version)].filter((v): v is string => !!v))];
    }
    for (const version of versions) {
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      const list = await call<{ resources?: { name: string; kind: string; namespaced: boolean }[] }>(
        'discovery',
        group || 'core',
        operation,
        'GET',
        path,
      );
      const r = list.resources?.find((x) => x.kind === kind && !x.name.includes('/'));
      if (r) return { group, version, plural: r.name, kind, namespaced: r.namespaced };
    }
    throw new KubeApiError(operation, 404, {
      reason: 'NotFound',
      message: `kind ${kind} is not served by group ${JSON.stringify(group)} (versions ${versions.join(', ')})`,
    });
  }

  return client;
}

/** True for a connection reset on a reused keep-alive socket (the server closed it while idle). */
function isStaleSocket(err: unknown): boolean {
  const e = err as { code?: string; reusedSocket?: boolean };
  return e?.reusedSocket === true && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
}

function withKind<T extends KubeObject>(res: ResourceType, obj: T): T {
  if (obj.kind && obj.apiVersion) return obj;
  return { ...obj, kind: obj.kind ?? res.kind, apiVersion: obj.apiVersion ?? (res.group ? `${res.group}/${res.version}` : res.version) };
}

function parseStatus(body: string, code: number): StatusBody {
  try {
    const s = JSON.parse(body) as StatusBody;
    if (s && typeof s === 'object') return s;
  } catch {
    // not JSON: fall through
  }
  return { kind: 'Status', status: 'Failure', code, message: body.slice(0, 500) || http.STATUS_CODES[code] || `HTTP ${code}` };
}
