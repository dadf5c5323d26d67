// A small dynamic REST client over the API server. KubeConfig from @kubernetes/client-node supplies auth and TLS;
// the requests are ours so that URLs, subresources, patch content types and watch streaming are under our control.
import http from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
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
  /** `headers` plus Accept and User-Agent, built once per credential refresh (http.request does not mutate it). */
  base: Record<string, string>;
  at: number;
}

interface Agents {
  req: http.Agent;
  watch: http.Agent;
}

/** Characters http.request sends as they are in a path; anything else goes through `new URL`, which percent-encodes it. */
const PLAIN_PATH = /^[\u0021-\u007e]*$/;

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
  const mod = isHttps ? https : http;
  // The server's own path (e.g. a proxy's /k8s/clusters/x) prefixes every request path.
  const basePath = base.pathname === '/' ? '' : base.pathname;
  // A server with credentials in its URL keeps going through `new URL`, which turns them into the request's auth.
  const plainBase = !base.username && !base.password && !base.search && !base.hash;
  const hostname = base.hostname.startsWith('[') ? base.hostname.slice(1, -1) : base.hostname;

  let agents: Promise<Agents> | undefined;
  // The settled value of `agents`, so that a request does not wait a microtask round for an already-made pool.
  let agentsValue: Agents | undefined;
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

  function getAgents(): Promise<Agents> {
    if (agents) return agents;
    const made = kubeOptions().then((o): Agents => {
      if (cluster!.proxyUrl && o.agent) return { req: o.agent as http.Agent, watch: o.agent as http.Agent };
      // One secure context for the pool: https.Agent names its pools by the connection options, and with the CA
      // and client certificate among them it concatenated their PEM text into that name on every request.
      const tls: https.AgentOptions = {
        keepAlive: true,
        servername: o.servername ?? cluster!.tlsServerName,
      };
      if (isHttps) tls.secureContext = createSecureContext({ ca: o.ca, cert: o.cert, key: o.key, pfx: o.pfx, passphrase: o.passphrase });
      if (o.rejectUnauthorized !== undefined) tls.rejectUnauthorized = o.rejectUnauthorized;
      const make = (maxSockets: number): http.Agent =>
        isHttps ? new https.Agent({ ...tls, maxSockets }) : new http.Agent({ keepAlive: true, maxSockets });
      return { req: make(options.maxSockets ?? 64), watch: make(Infinity) };
    });
    agents = made;
    // Only the current pools are remembered: a close() meanwhile dropped `agents`.
    void made.then(
      (a) => {
        if (agents === made) agentsValue = a;
      },
      () => undefined,
    );
    return made;
  }

  /** The cached auth while it is fresh, else undefined (the caller then refreshes through getAuth). */
  function freshAuth(): Auth | undefined {
    return authValue && Date.now() - authValue.at < AUTH_TTL_MS ? authValue : undefined;
  }

  let authValue: Auth | undefined;
  function getAuth(): Promise<Auth> {
    const fresh = freshAuth();
    if (fresh) return Promise.resolve(fresh);
    auth ??= kubeOptions()
      .then((o) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
        if (o.auth) headers['Authorization'] = `Basic ${Buffer.from(o.auth).toString('base64')}`;
        authValue = { headers, base: { ...headers, Accept: 'application/json', 'User-Agent': userAgent }, at: Date.now() };
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

  /** Request options for `path` (with its query string) on the server. */
  function target(path: string, headers: Record<string, string>, agent: http.Agent, method: string): http.RequestOptions {
    if (plainBase && PLAIN_PATH.test(path)) {
      const o: http.RequestOptions = { protocol: base.protocol, hostname, path: basePath + path, method, headers, agent };
      if (base.port) o.port = base.port;
      return o;
    }
    const url = new URL(server + path);
    const o: http.RequestOptions = {
      protocol: url.protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      path: url.pathname + url.search,
      method,
      headers,
      agent,
    };
    if (url.port) o.port = url.port;
    if (url.username || url.password) o.auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    return o;
  }

  /** Sends one request and reads its whole body. Rejections before a response carry `reusedSocket`. */
  function send(
    a: Agents,
    au: Auth,
    method: string,
    path: string,
    body: string | undefined,
    contentType: string | undefined,
  ): Promise<Raw> {
    let headers = au.base;
    if (body !== undefined) {
      headers = { ...headers, 'Content-Type': contentType ?? 'application/json', 'Content-Length': String(Buffer.byteLength(body)) };
    }
    return new Promise((resolve, reject) => {
      const req = mod.request(target(path, headers, a.req, method), (res) => {
        const chunks: Buffer[] = [];
        let ended = false;
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          ended = true;
          const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          resolve({ code: res.statusCode ?? 0, body: buf.toString('utf8'), res });
        });
        res.on('error', reject);
        // A response cut short without an error (destroyed) must not leave the caller waiting.
        res.on('close', () => {
          if (!ended) reject(new Error('response closed before its end'));
        });
      });
      req.on('error', (err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
        err.reusedSocket = req.reusedSocket;
        reject(err);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
      // The body goes with end(): headers and body leave in one write.
      if (body !== undefined) req.end(body);
      else req.end();
    });
  }

  /** Sends a request without waiting a microtask round when the agents and auth are cached (the usual case). */
  function exchange(method: string, path: string, body: string | undefined, contentType: string | undefined): Promise<Raw> {
    const a = agentsValue;
    const au = freshAuth();
    if (a && au) return send(a, au, method, path, body, contentType);
    return Promise.all([getAgents(), getAuth()]).then(([a2, au2]) => send(a2, au2, method, path, body, contentType));
  }

  async function request(method: string, path: string, query?: URLSearchParams, body?: string, contentType?: string): Promise<Raw> {
    if (query && query.size) path += `?${query.toString()}`;
    let attempt = 0;
    for (;;) {
      let raw: Raw;
      try {
        raw = await exchange(method, path, body, contentType);
      } catch (err) {
        // A pooled keep-alive socket the server closed meanwhile: the request never reached it, send it again once.
        if (attempt === 0 && isStaleSocket(err)) {
          attempt++;
          continue;
        }
        throw err;
      }
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
      let a: Agents;
      let au: Auth;
      try {
        [a, au] = await Promise.all([getAgents(), getAuth()]);
      } catch (err) {
        throw new KubeApiError(operation, 0, undefined, err);
      }

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
      const req = mod.request(target(`${resourcePath(res, namespace)}?${q.toString()}`, au.base, a.watch, 'GET'));
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
        // setEncoding keeps a multi-byte character split across chunks whole. A line split across chunks waits in
        // `pending` (pieces, joined once its newline arrives); a chunk is scanned by index, one slice per line.
        const pending: string[] = [];
        stream.setEncoding('utf8');
        const handle = (text: string): boolean => {
          const line = text.trim();
          if (!line) return true;
          let ev: WatchEvent<T>;
          try {
            ev = JSON.parse(line) as WatchEvent<T>;
          } catch (err) {
            finish(new Error(`malformed watch event: ${String(err)}`));
            req.destroy();
            return false;
          }
          try {
            onEvent(ev);
          } catch (err) {
            finish(err);
            req.destroy();
            return false;
          }
          return true;
        };
        stream.on('data', (chunk: string) => {
          if (settled) return;
          let nl = chunk.indexOf('\n');
          if (nl < 0) {
            pending.push(chunk);
            return;
          }
          let start = 0;
          if (pending.length > 0) {
            pending.push(chunk.slice(0, nl));
            const line = pending.join('');
            pending.length = 0;
            if (!handle(line)) return;
            start = nl + 1;
            nl = chunk.indexOf('\n', start);
          }
          while (nl >= 0) {
            if (settled || !handle(chunk.slice(start, nl))) return;
            start = nl + 1;
            nl = chunk.indexOf('\n', start);
          }
          if (start < chunk.length) pending.push(start === 0 ? chunk : chunk.slice(start));
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
      agentsValue = undefined;
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
