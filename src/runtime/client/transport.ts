// The connection side of the REST client: keep-alive pools, credentials from the kubeconfig, one request with its
// retries, and the mapping of an HTTP answer to a value or a KubeApiError. The verbs (client.ts) and the watch
// stream (client/watch.ts) build on it.
import http from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import type { Cluster, KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, type StatusBody } from '../pure/errors.js';

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

/** Auth headers from the kubeconfig are recomputed this often (exec/token-file credentials rotate). */
const AUTH_TTL_MS = 30_000;

/** Characters http.request sends as they are in a path; anything else goes through `new URL`, which percent-encodes it. */
const PLAIN_PATH = /^[\u0021-\u007e]*$/;

/** Credentials of the current kubeconfig user. */
export interface Auth {
  headers: Record<string, string>;
  /** `headers` plus Accept and User-Agent, built once per credential refresh (http.request does not mutate it). */
  base: Record<string, string>;
  /**
   * `base` plus Host as a raw header list, for the plain requests (`Transport.options`): http.request then writes them
   * as they are instead of validating and storing each through setHeader on every request.
   */
  raw: readonly string[];
  at: number;
}

/** The two keep-alive pools: short requests, and long-running watches. */
export interface Agents {
  req: http.Agent;
  watch: http.Agent;
}

/** A whole HTTP answer. */
export interface Raw {
  code: number;
  body: string;
  res: http.IncomingMessage;
}

/** One request as sent: the path carries its query string; a body is already serialised. */
export interface RawRequest {
  method: string;
  path: string;
  body?: string | undefined;
  contentType?: string | undefined;
}

/** One API call: what it is for (metrics, error messages) and what it sends. */
export interface CallSpec {
  verb: RequestInfo['verb'];
  /** `plural.group`, for metrics. */
  resource: string;
  /** What the call does, e.g. `get machines.cluster.x-k8s.io ns/name`: the prefix of its error messages. */
  operation: string;
  method: string;
  path: string;
  query?: URLSearchParams | undefined;
  /** Sent as JSON. */
  body?: unknown;
  contentType?: string | undefined;
}

/**
 * The connection to one API server: its pools and cached credentials. Requests take a synchronous fast path when
 * both are cached (the usual case), so a request does not wait a microtask round for them.
 */
export class Transport {
  /** The API server URL without trailing slashes. */
  readonly server: string;
  readonly userAgent: string;
  readonly onRequest: ((info: RequestInfo) => void) | undefined;
  readonly mod: typeof http | typeof https;
  private readonly base: URL;
  private readonly isHttps: boolean;
  private readonly timeoutMs: number;
  // The server's own path (e.g. a proxy's /k8s/clusters/x) prefixes every request path.
  private readonly basePath: string;
  // A server with credentials in its URL keeps going through `new URL`, which turns them into the request's auth.
  private readonly plainBase: boolean;
  private readonly hostname: string;
  private agents: Promise<Agents> | undefined;
  // The settled value of `agents`, so that a request does not wait a microtask round for an already-made pool.
  private agentsValue: Agents | undefined;
  private auth: Promise<Auth> | undefined;
  private authValue: Auth | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly cluster: Cluster,
    private readonly options: ClientOptions,
  ) {
    this.server = cluster.server.replace(/\/+$/, '');
    this.base = new URL(this.server);
    this.isHttps = this.base.protocol === 'https:';
    this.userAgent = options.userAgent ?? 'inplace';
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.onRequest = options.onRequest;
    this.mod = this.isHttps ? https : http;
    this.basePath = this.base.pathname === '/' ? '' : this.base.pathname;
    this.plainBase = !this.base.username && !this.base.password && !this.base.search && !this.base.hash;
    this.hostname = this.base.hostname.startsWith('[') ? this.base.hostname.slice(1, -1) : this.base.hostname;
  }

  /** Runs client-node's option logic; it throws for plain http without skipTLSVerify after filling the options. */
  private async kubeOptions(): Promise<https.RequestOptions> {
    const o: https.RequestOptions = {};
    try {
      await this.kc.applyToHTTPSOptions(o);
    } catch (err) {
      if (this.isHttps) throw err;
    }
    return o;
  }

  /** The pools, made on first use from the kubeconfig's TLS options. */
  getAgents(): Promise<Agents> {
    if (this.agents) return this.agents;
    const made = this.kubeOptions().then((o) => this.makeAgents(o));
    this.agents = made;
    // Only the current pools are remembered: a close() meanwhile dropped `agents`.
    void made.then(
      (a) => {
        if (this.agents === made) this.agentsValue = a;
      },
      () => undefined,
    );
    return made;
  }

  private makeAgents(o: https.RequestOptions): Agents {
    if (this.cluster.proxyUrl && o.agent) return { req: o.agent as http.Agent, watch: o.agent as http.Agent };
    // One secure context for the pool: https.Agent names its pools by the connection options, and with the CA
    // and client certificate among them it concatenated their PEM text into that name on every request.
    const tls: https.AgentOptions = { keepAlive: true, servername: o.servername ?? this.cluster.tlsServerName };
    if (this.isHttps) tls.secureContext = createSecureContext({ ca: o.ca, cert: o.cert, key: o.key, pfx: o.pfx, passphrase: o.passphrase });
    if (o.rejectUnauthorized !== undefined) tls.rejectUnauthorized = o.rejectUnauthorized;
    const make = (maxSockets: number): http.Agent =>
      this.isHttps ? new https.Agent({ ...tls, maxSockets }) : new http.Agent({ keepAlive: true, maxSockets });
    return { req: make(this.options.maxSockets ?? 64), watch: make(Infinity) };
  }

  /** The cached auth while it is fresh, else undefined (the caller then refreshes through getAuth). */
  private freshAuth(): Auth | undefined {
    return this.authValue && Date.now() - this.authValue.at < AUTH_TTL_MS ? this.authValue : undefined;
  }

  /** Fresh credentials; concurrent callers share one refresh. */
  getAuth(): Promise<Auth> {
    const fresh = this.freshAuth();
    if (fresh) return Promise.resolve(fresh);
    this.auth ??= this.kubeOptions()
      .then((o) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
        if (o.auth) headers['Authorization'] = `Basic ${Buffer.from(o.auth).toString('base64')}`;
        const base = { ...headers, Accept: 'application/json', 'User-Agent': this.userAgent };
        const raw = Object.entries(base).flat();
        // http.request adds Host only to object headers; URL.host is what it would write (no default port, IPv6 bracketed).
        if (!Object.keys(base).some((k) => k.toLowerCase() === 'host')) raw.push('Host', this.base.host);
        this.authValue = { headers, base, raw, at: Date.now() };
        return this.authValue;
      })
      .finally(() => (this.auth = undefined));
    return this.auth;
  }

  /** Request options for `path` (with its query string) on the server. */
  target(path: string, headers: Record<string, string>, agent: http.Agent, method: string): http.RequestOptions {
    if (this.plainBase && PLAIN_PATH.test(path)) return this.plainTarget(path, headers, agent, method);
    const url = new URL(this.server + path);
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

  /** Request options for a path that needs no encoding on a server URL without credentials, query or fragment. */
  private plainTarget(
    path: string,
    headers: Record<string, string> | readonly string[],
    agent: http.Agent,
    method: string,
  ): http.RequestOptions {
    const o: http.RequestOptions = {
      protocol: this.base.protocol,
      hostname: this.hostname,
      path: this.basePath + path,
      method,
      headers,
      agent,
    };
    if (this.base.port) o.port = this.base.port;
    return o;
  }

  /**
   * The options of one request. Raw headers when http.request would write nothing else: a plain path, no proxy agent,
   * and a GET or a body of known length (without one, a POST's Content-Length: 0 comes from end(), after the headers).
   */
  private requestOptions(a: Agents, au: Auth, r: RawRequest): http.RequestOptions {
    const body = r.body;
    const contentType = r.contentType ?? 'application/json';
    if (this.plainBase && !this.cluster.proxyUrl && (body !== undefined || r.method === 'GET') && PLAIN_PATH.test(r.path)) {
      const headers =
        body === undefined ? au.raw : [...au.raw, 'Content-Type', contentType, 'Content-Length', String(Buffer.byteLength(body))];
      return this.plainTarget(r.path, headers, a.req, r.method);
    }
    let headers = au.base;
    if (body !== undefined) headers = { ...headers, 'Content-Type': contentType, 'Content-Length': String(Buffer.byteLength(body)) };
    return this.target(r.path, headers, a.req, r.method);
  }

  /** Sends one request and reads its whole body. Rejections before a response carry `reusedSocket`. */
  private send(a: Agents, au: Auth, r: RawRequest): Promise<Raw> {
    const body = r.body;
    const timeoutMs = this.timeoutMs;
    return new Promise((resolve, reject) => {
      const req = this.mod.request(this.requestOptions(a, au, r), (res) => {
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
  private exchange(r: RawRequest): Promise<Raw> {
    const a = this.agentsValue;
    const au = this.freshAuth();
    if (a && au) return this.send(a, au, r);
    return Promise.all([this.getAgents(), this.getAuth()]).then(([a2, au2]) => this.send(a2, au2, r));
  }

  /** One request, sent again once on a stale pooled socket or once with refreshed credentials on a 401. */
  private async request(r: RawRequest): Promise<Raw> {
    let attempt = 0;
    for (;;) {
      let raw: Raw;
      try {
        raw = await this.exchange(r);
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
        this.authValue = undefined;
        attempt++;
        continue;
      }
      return raw;
    }
  }

  /** One API call: its parsed JSON answer, or a KubeApiError naming the operation; reported to `onRequest`. */
  async call<T>(c: CallSpec): Promise<T> {
    const started = performance.now();
    let code = 0;
    try {
      const path = c.query && c.query.size ? `${c.path}?${c.query.toString()}` : c.path;
      const body = c.body === undefined ? undefined : JSON.stringify(c.body);
      const raw = await this.request({ method: c.method, path, body, contentType: c.contentType });
      code = raw.code;
      if (raw.code < 200 || raw.code >= 300) throw new KubeApiError(c.operation, raw.code, parseStatus(raw.body, raw.code));
      return (raw.body ? JSON.parse(raw.body) : undefined) as T;
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
      throw new KubeApiError(c.operation, 0, undefined, err);
    } finally {
      this.onRequest?.({ verb: c.verb, resource: c.resource, code, durationMs: performance.now() - started });
    }
  }

  /** Closes the pools (idle connections go; the next request makes new pools). */
  close(): void {
    void this.agents?.then((a) => {
      a.req.destroy();
      a.watch.destroy();
    });
    this.agents = undefined;
    this.agentsValue = undefined;
  }
}

/** True for a connection reset on a reused keep-alive socket (the server closed it while idle). */
function isStaleSocket(err: unknown): boolean {
  const e = err as { code?: string; reusedSocket?: boolean };
  return e?.reusedSocket === true && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
}

/** The Status of an error answer; a body that is not one becomes a Status with its first 500 characters. */
export function parseStatus(body: string, code: number): StatusBody {
  try {
    const s = JSON.parse(body) as StatusBody;
    if (s && typeof s === 'object') return s;
  } catch {
    // not JSON: fall through
  }
  return { kind: 'Status', status: 'Failure', code, message: body.slice(0, 500) || http.STATUS_CODES[code] || `HTTP ${code}` };
}
