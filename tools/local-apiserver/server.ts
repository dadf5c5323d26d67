/** HTTP(S) transport: authentication, routing, content negotiation, body limits, fault injection. */
import { randomInt } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import type { Core, DeleteOptions, WriteOptions } from './core.js';
import { aggregated, apiGroup, apiGroupList, apiResourceList, apiVersions } from './discovery.js';
import {
  ApiError,
  badRequest,
  conflict,
  internalError,
  invalid,
  methodNotAllowed,
  notAcceptable,
  resourceNotFound,
  tooLarge,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
} from './errors.js';
import { docHash, groupVersionDoc, openapiRoot } from './openapi.js';
import { jsonPatch, mergePatch } from './patch.js';
import { jsonTextTooDeep, tooDeep, valueTooDeep } from './depth.js';
import { decodeProtobufObject } from './protobuf.js';
import { apiVersionOf, grKey, type ResourceDef } from './resources.js';
import { FIELD_SELECTORS, parseFieldSelector, parseLabelSelector } from './selectors.js';
import { toTable } from './table.js';
import { activeWatches, serveWatch } from './watch.js';

type Obj = Record<string, unknown>;

function getPath(o: Obj, path: string): unknown {
  let cur: unknown = o;
  for (const p of path.replace(/^\./, '').split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Obj)[p];
  }
  return cur;
}

function setPath(o: Obj, path: string, value: unknown): Obj {
  const parts = path.replace(/^\./, '').split('.');
  let cur = o;
  for (const p of parts.slice(0, -1)) {
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Obj;
  }
  cur[parts[parts.length - 1]!] = value;
  return o;
}

/** Fault injection settings (see index.ts FaultConfig). */
export interface Faults {
  errorRate?: number;
  errorCodes?: number[];
  verbs?: string[];
  latencyMs?: number;
  dropWatchesEveryMs?: number;
}

/** Transport settings. */
export interface ServerSettings {
  token: string;
  maxBodyBytes: number;
  bookmarkIntervalMs: number;
  hostPort: () => string;
  /** Accept requests without credentials (plain-HTTP mode: kubectl never sends a token over http). Wrong tokens stay 401. */
  allowAnonymous?: boolean;
}

const AGGREGATED_CT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const BODY_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];
const DEFAULT_VERBS = ['get', 'list', 'create', 'update', 'patch', 'delete', 'deletecollection'];

const VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-inplace-local',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.23.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/** Bodies above this many bytes go out in slices of it, each after the last was taken (sendJson). */
export const RESPONSE_SLICE_BYTES = 64 * 1024;

function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
  contentType = 'application/json',
): void {
  const data = typeof body === 'string' ? body : JSON.stringify(body);
  const bytes = Buffer.byteLength(data);
  res.writeHead(code, {
    'Content-Type': contentType,
    'Cache-Control': 'no-cache, private',
    'Content-Length': bytes,
    ...headers,
  });
  if (bytes <= RESPONSE_SLICE_BYTES) res.end(data);
  else sendSliced(res, Buffer.from(data, 'utf8'));
}

/**
 * Writes a large body a slice at a time, the next once the connection drained. Written at once, a list of 3,000
 * MachineUpdates (~13 MiB) went through TLS in one piece, and each connection kept TLS buffers of that size for good:
 * over 20 plans the server's memory outside V8's heap grew 20–25 MiB over TLS and not at all over plain HTTP.
 */
function sendSliced(res: ServerResponse, buf: Buffer): void {
  let off = 0;
  const pump = (): void => {
    while (off < buf.length) {
      if (res.destroyed) return;
      const end = Math.min(off + RESPONSE_SLICE_BYTES, buf.length);
      const more = res.write(buf.subarray(off, end));
      off = end;
      if (!more) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}

function sendError(res: ServerResponse, err: ApiError, headers: Record<string, string> = {}): void {
  const extra = { ...headers };
  if (err.code === 429) extra['Retry-After'] = '1';
  sendJson(res, err.code, err.toStatus(), extra);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const len = Number(req.headers['content-length'] ?? 0);
    if (len > limit) {
      req.resume();
      reject(tooLarge(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let total = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      total += c.length;
      if (total > limit) {
        failed = true;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!failed) reject(e);
    });
  });
}

function mediaType(h: string | undefined): string {
  return (h ?? '').split(';')[0]!.trim().toLowerCase();
}

function parseBody(buf: Buffer, ct: string, allowed: string[]): unknown {
  const type = ct || 'application/json';
  if (!allowed.includes(type)) throw unsupportedMediaType(allowed);
  const decoded = decodeBody(buf, type);
  // Whatever the encoding, nothing deeper than the limit reaches the recursive schema, CEL, patch and SSA code. JSON
  // text had its depth measured before it was parsed (one pass over the text, no allocation): walking the parsed
  // value again would tell nothing more.
  if (decoded.depthChecked) return decoded.value;
  if (valueTooDeep(decoded.value))
    throw tooDeep(type.endsWith('yaml') ? 'error decoding YAML' : "couldn't get version/kind; json parse error");
  return decoded.value;
}

/** A decoded body; `depthChecked` when its nesting was measured while decoding (JSON text). */
interface Decoded {
  value: unknown;
  depthChecked: boolean;
}

/**
 * Whether a body of this media type, once parsed, is a tree only the request holds (JSON.parse makes one). YAML is not:
 * an alias is the object its anchor made, reachable twice.
 */
function ownedJson(ct: string): boolean {
  return ct === '' || ct === 'application/json';
}

function decodeBody(buf: Buffer, type: string): Decoded {
  if (type === 'application/vnd.kubernetes.protobuf') {
    try {
      return { value: decodeProtobufObject(buf), depthChecked: false };
    } catch (e) {
      if (e instanceof RangeError) throw tooDeep('error decoding protobuf');
      throw e;
    }
  }
  const text = buf.toString('utf8');
  if (!text.trim()) throw badRequest('the body of the request was empty');
  // JSON is YAML: a JSON document (what client libraries send for apply patches) takes the iterative JSON parser,
  // whose depth is checked, rather than the recursive YAML one.
  if (type.endsWith('yaml') && !text.trimStart().startsWith('{')) {
    try {
      return { value: parseYaml(text, { maxAliasCount: 100 }) as unknown, depthChecked: false };
    } catch (e) {
      // The YAML parser recurses: a stack overflow there is a too-deep document, not a server fault.
      if (e instanceof RangeError || /call stack/i.test((e as Error).message)) throw tooDeep('error decoding YAML', '[');
      throw badRequest(`error decoding YAML: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  return decodeJson(text);
}

/**
 * Bodies up to this many characters are parsed before their depth is measured. JSON.parse is iterative, so a
 * too-deep document cannot overflow it, but it builds every level: 3 MiB of `[` took 1.4 s and ~100 MB before the
 * refusal, 64 KiB takes milliseconds. Below it the parsed value's walk (a few percent of the parse) replaces the scan
 * of the text (more than half the parse, on Kubernetes objects); above it the text is scanned first.
 */
const PARSE_FIRST_CHARS = 64 * 1024;

/** JSON text, its depth checked either way (PARSE_FIRST_CHARS), with the answers of a scan-first decoder. */
function decodeJson(text: string): Decoded {
  const ctx = "couldn't get version/kind; json parse error";
  const parseFirst = text.length <= PARSE_FIRST_CHARS;
  if (!parseFirst) {
    const deep = jsonTextTooDeep(text);
    if (deep !== undefined) throw tooDeep(ctx, deep);
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (e) {
    // A document both too deep and malformed is refused for its depth, as when the text was scanned first.
    const deep = parseFirst ? jsonTextTooDeep(text) : undefined;
    if (deep !== undefined) throw tooDeep(ctx, deep);
    throw badRequest(`${ctx}: ${(e as Error).message}`);
  }
  if (parseFirst && valueTooDeep(value)) throw tooDeep(ctx, jsonTextTooDeep(text) ?? '{');
  return { value, depthChecked: true };
}

function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((a) => /as=Table/.test(a) && /g=meta\.k8s\.io/.test(a));
}

function wantsAggregated(accept: string | undefined): boolean {
  return (
    !!accept &&
    accept
      .split(',')
      .some(
        (a) =>
          a.includes('as=APIGroupDiscoveryList') && a.includes('g=apidiscovery.k8s.io') && /v=v2(;|$|\s)/.test(a.replace(/\s/g, '') + ';'),
      )
  );
}

function checkAcceptable(accept: string | undefined): void {
  if (!accept) return;
  const ok = accept.split(',').some((a) => {
    const t = mediaType(a);
    return t === 'application/json' || t === '*/*' || t === 'application/*' || t === 'application/yaml' || t === '';
  });
  if (!ok) throw notAcceptable();
}

/** One resource request as dispatch parsed it: what the verb handlers read and how they answer. */
interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  r: Route;
  q: URLSearchParams;
  method: string;
  verb: string;
  /** Set when the client asked for a Table. */
  table: { includeObject: string } | undefined;
  ns: string | undefined;
  nsOrEmpty: string;
  wopts: () => WriteOptions;
  /** The object in the requested version. */
  out: (obj: Obj) => Obj;
  respondObj: (code: number, obj: Obj, warnings?: string[], json?: string) => void;
}

interface Route {
  def: ResourceDef;
  version: string;
  ns: string | undefined;
  name?: string;
  sub?: string;
}

/** Resolves /api/v1/... or /apis/g/v/... to a resource route. */
function route(core: Core, segs: string[]): Route | undefined {
  let group = '';
  let version: string;
  let rest: string[];
  if (segs[0] === 'api') {
    version = segs[1]!;
    rest = segs.slice(2);
  } else {
    group = segs[1]!;
    version = segs[2]!;
    rest = segs.slice(3);
  }
  if (!rest.length) return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const def = core.lookup(group, version, rest[2]!);
    if (def && def.namespaced) {
      if (rest.length > 5) return undefined;
      return {
        def,
        version,
        ns: rest[1]!,
        ...(rest[3] !== undefined ? { name: rest[3] } : {}),
        ...(rest[4] !== undefined ? { sub: rest[4] } : {}),
      };
    }
  }
  const def = core.lookup(group, version, rest[0]!);
  if (!def || rest.length > 3) return undefined;
  return {
    def,
    version,
    ns: undefined,
    ...(rest[1] !== undefined ? { name: rest[1] } : {}),
    ...(rest[2] !== undefined ? { sub: rest[2] } : {}),
  };
}

function verbOf(method: string, r: Route, watch: boolean): string {
  switch (method) {
    case 'GET':
      return r.name ? 'get' : watch ? 'watch' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return r.name ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}

function boolParam(q: URLSearchParams, k: string): boolean {
  const v = q.get(k);
  return v === 'true' || v === '1';
}

/** The request handler (a closure over the core and mutable fault settings). */
export class Handler {
  faults: Faults | undefined;
  private dropTimer: NodeJS.Timeout | undefined;
  private openapiCache = new Map<string, { body: string; hash: string }>();

  constructor(
    private core: Core,
    private s: ServerSettings,
  ) {
    core.onDiscoveryChange = () => this.openapiCache.clear();
  }

  /** Applies fault settings (drop timer included). */
  setFaults(f: Faults | undefined): void {
    this.faults = f;
    if (this.dropTimer) clearInterval(this.dropTimer);
    this.dropTimer = undefined;
    if (f?.dropWatchesEveryMs && f.dropWatchesEveryMs > 0) {
      this.dropTimer = setInterval(() => {
        for (const res of [...activeWatches]) res.destroy();
      }, f.dropWatchesEveryMs);
      this.dropTimer.unref();
    }
  }

  /** Stops timers. */
  close(): void {
    if (this.dropTimer) clearInterval(this.dropTimer);
    for (const res of [...activeWatches]) res.destroy();
  }

  /** Node request listener. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.dispatch(req, res).catch((e: unknown) => {
      const err = e instanceof ApiError ? e : internalError((e as Error)?.message ?? String(e));
      if (!res.headersSent) sendError(res, err, err.code === 413 ? { Connection: 'close' } : {});
      else res.destroy();
    });
  };

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const q = url.searchParams;
    const method = req.method ?? 'GET';
    if (['/healthz', '/livez', '/readyz'].includes(path) || /^\/(healthz|livez|readyz)\//.test(path)) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end('ok');
      return;
    }
    if (path === '/version') {
      sendJson(res, 200, VERSION);
      return;
    }
    const auth = req.headers.authorization;
    if (auth !== `Bearer ${this.s.token}` && !(auth === undefined && this.s.allowAnonymous)) {
      req.resume();
      throw unauthorized();
    }
    let segs: string[];
    try {
      // Decoded only when something is percent-encoded (rare in resource paths): decoding costs a call per segment.
      const parts = path.split('/').filter(Boolean);
      segs = path.includes('%') ? parts.map(decodeURIComponent) : parts;
    } catch {
      throw resourceNotFound();
    }
    if (segs[0] === 'openapi') return this.openapi(req, res, segs);
    if (segs[0] !== 'api' && segs[0] !== 'apis') throw resourceNotFound();
    const accept = req.headers.accept;
    if (this.discoveryRoute(res, segs, accept)) return;
    const r = route(this.core, segs);
    if (!r) throw resourceNotFound();
    if (
      r.sub !== undefined &&
      !(r.sub === 'status' && r.def.statusSubresource) &&
      !(r.sub === 'scale' && r.def.scale) &&
      !(r.sub === 'finalize' && grKey(r.def.group, r.def.plural) === '/namespaces')
    ) {
      throw resourceNotFound();
    }
    if (r.sub === 'scale') return this.scale(req, res, r, method, q);
    const verb = verbOf(method, r, boolParam(q, 'watch'));
    // Without faults set, no await: a request needs no extra turn of the microtask queue for a no-op.
    if (this.faults) await this.injectFaults(verb, r);
    const c = this.resourceCall({ req, res, r, q, method }, verb, accept);
    switch (verb) {
      case 'get':
        return this.serveGet(c);
      case 'list':
      case 'watch':
        return this.serveList(c);
      case 'create':
        return this.serveCreate(c);
      case 'update':
        return this.serveUpdate(c);
      case 'patch':
        return this.servePatch(c);
      case 'delete':
      case 'deletecollection':
        return this.serveDelete(c);
      default:
        req.resume();
        throw methodNotAllowed();
    }
  }

  /** The checks every resource request passes after its faults (Accept, scope, query values) and how it answers. */
  private resourceCall(
    { req, res, r, q, method }: Pick<Call, 'req' | 'res' | 'r' | 'q' | 'method'>,
    verb: string,
    accept: string | undefined,
  ): Call {
    checkAcceptable(accept);
    const table = wantsTable(accept) ? { includeObject: q.get('includeObject') ?? 'Metadata' } : undefined;
    const ns = r.ns;
    const nsOrEmpty = ns ?? '';
    // A namespaced resource's cluster-wide path only lists, watches and deletes collections.
    if (r.def.namespaced && ns === undefined && verb === 'create') throw methodNotAllowed();
    if (r.def.namespaced && ns === undefined && r.name !== undefined) throw resourceNotFound();
    const wopts = (): WriteOptions => ({
      dryRun: q.getAll('dryRun').includes('All'),
      ...(q.get('fieldValidation') ? { fieldValidation: q.get('fieldValidation')! } : {}),
      ...(q.get('fieldManager') ? { fieldManager: q.get('fieldManager')! } : {}),
      ...(req.headers['user-agent'] ? { userAgent: req.headers['user-agent'] } : {}),
      force: boolParam(q, 'force'),
    });
    const fv = q.get('fieldValidation');
    if (fv !== null && !['Strict', 'Warn', 'Ignore'].includes(fv))
      throw badRequest(`fieldValidation must be one of "Ignore", "Warn", or "Strict", but got: ${fv}`);
    const dryRunVals = q.getAll('dryRun');
    if (dryRunVals.some((d) => d !== 'All')) throw badRequest(`Invalid dryRun values: ${dryRunVals.join(',')}: supported values: "All"`);
    const out = (obj: Obj): Obj => this.core.toVersion(r.def, r.version, obj);
    const respondObj = (code: number, obj: Obj, warnings: string[] = [], json?: string): void => {
      const headers: Record<string, string | string[]> = {};
      if (warnings.length) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
      if (table && method === 'GET') {
        sendJson(
          res,
          code,
          toTable(r.def, r.version, [out(obj)], { resourceVersion: String((obj.metadata as Obj).resourceVersion) }, table.includeObject),
          headers,
        );
      } else {
        const o = out(obj);
        // The write's own serialization when the object is answered in its storage form (one stringify less per write).
        sendJson(res, code, json !== undefined && o === obj ? json : o, headers);
      }
    };
    return { req, res, r, q, method, verb, table, ns, nsOrEmpty, wopts, out, respondObj };
  }

  /** Discovery documents (/api, /apis, a group, a group version); false when the path is none of them. */
  private discoveryRoute(res: ServerResponse, segs: string[], accept: string | undefined): boolean {
    if (segs[0] === 'api' && segs.length === 1) {
      this.discovery(
        res,
        accept,
        () => apiVersions(this.s.hostPort()),
        () => aggregated(this.core, true),
      );
      return true;
    }
    if (segs[0] === 'apis' && segs.length === 1) {
      this.discovery(
        res,
        accept,
        () => apiGroupList(this.core),
        () => aggregated(this.core, false),
      );
      return true;
    }
    if (segs[0] === 'apis' && segs.length === 2) {
      const g = apiGroup(this.core, segs[1]!);
      if (!g) throw resourceNotFound();
      sendJson(res, 200, g);
      return true;
    }
    if ((segs[0] === 'api' && segs.length === 2) || (segs[0] === 'apis' && segs.length === 3)) {
      const group = segs[0] === 'api' ? '' : segs[1]!;
      const version = segs[0] === 'api' ? segs[1]! : segs[2]!;
      const l = apiResourceList(this.core, group, version);
      if (!l) throw resourceNotFound();
      sendJson(res, 200, l);
      return true;
    }
    return false;
  }

  /** GET of one object (as a Table when asked). */
  private async serveGet(c: Call): Promise<void> {
    c.req.resume();
    const e = this.core.get(c.r.def, c.nsOrEmpty, c.r.name!);
    if (c.table) return c.respondObj(200, e.obj);
    return sendJson(c.res, 200, this.core.entryJson(c.r.def, c.r.version, e));
  }

  /** A list or a watch of a collection. */
  private async serveList(c: Call): Promise<void> {
    c.req.resume();
    if (c.method !== 'GET') throw methodNotAllowed();
    const label = parseLabelSelector(c.q.get('labelSelector'));
    const field = parseFieldSelector(c.q.get('fieldSelector'), FIELD_SELECTORS[grKey(c.r.def.group, c.r.def.plural)]);
    if (c.verb === 'watch') {
      const timeout = Number(c.q.get('timeoutSeconds') ?? 0);
      serveWatch(
        this.core,
        {
          def: c.r.def,
          version: c.r.version,
          ns: c.ns,
          resourceVersion: c.q.get('resourceVersion') ?? undefined,
          label,
          field,
          bookmarks: boolParam(c.q, 'allowWatchBookmarks'),
          sendInitialEvents: boolParam(c.q, 'sendInitialEvents'),
          timeoutSeconds: timeout > 0 ? timeout : 1800 + randomInt(1800),
          bookmarkIntervalMs: this.s.bookmarkIntervalMs,
          ...(c.table ? { table: c.table } : {}),
        },
        c.res,
      );
      return;
    }
    const limit = Number(c.q.get('limit') ?? 0);
    const l = this.core.list(
      c.r.def,
      c.ns,
      label,
      field,
      Number.isFinite(limit) && limit > 0 ? limit : 0,
      c.q.get('continue') ?? undefined,
    );
    const listMeta: Obj = {
      resourceVersion: String(l.rv),
      ...(l.continue ? { continue: l.continue } : {}),
      ...(l.remaining !== undefined ? { remainingItemCount: l.remaining } : {}),
    };
    if (c.table)
      return sendJson(
        c.res,
        200,
        toTable(
          c.r.def,
          c.r.version,
          l.entries.map((e) => c.out(e.obj)),
          listMeta,
          c.table.includeObject,
        ),
      );
    const av = apiVersionOf(c.r.def.group, c.r.version);
    const items = l.entries.map((e) => this.core.entryJson(c.r.def, c.r.version, e)).join(',');
    const body = `{"apiVersion":${JSON.stringify(av)},"items":[${items}],"kind":${JSON.stringify(c.r.def.listKind)},"metadata":${JSON.stringify(listMeta)}}`;
    return sendJson(c.res, 200, body);
  }

  /** POST: a create. */
  private async serveCreate(c: Call): Promise<void> {
    // kube-apiserver's custom resource handler serves POST on an object's path as a create of the body (the name
    // in the path is not used); built-in kinds only accept POST on the collection.
    if (c.r.name !== undefined && (c.r.def.builtin || c.r.sub !== undefined)) throw methodNotAllowed();
    const ct = mediaType(c.req.headers['content-type']);
    const body = parseBody(await readBody(c.req, this.s.maxBodyBytes), ct, BODY_TYPES);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the body of the request must be an object');
    const result = this.core.create(c.r.def, c.r.version, c.nsOrEmpty, body as Obj, { ...c.wopts(), ownedBody: ownedJson(ct) });
    return c.respondObj(201, result.obj, result.warnings, result.json);
  }

  /** PUT: an update (of the object, its status, or a namespace's finalizers). */
  private async serveUpdate(c: Call): Promise<void> {
    if (c.r.name === undefined) throw methodNotAllowed();
    const ct = mediaType(c.req.headers['content-type']);
    const body = parseBody(await readBody(c.req, this.s.maxBodyBytes), ct, BODY_TYPES);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the body of the request must be an object');
    let bodyObj = body as Obj;
    if (c.r.sub === 'finalize') {
      const cur = this.core.get(c.r.def, '', c.r.name).obj;
      bodyObj = {
        ...cur,
        spec: {
          ...((cur.spec as Obj | undefined) ?? {}),
          finalizers: ((bodyObj.spec as Obj | undefined)?.finalizers as unknown) ?? [],
        },
        metadata: {
          ...(cur.metadata as Obj),
          resourceVersion: (bodyObj.metadata as Obj | undefined)?.resourceVersion ?? (cur.metadata as Obj).resourceVersion,
        },
      };
    }
    const result = this.core.update(
      c.r.def,
      c.r.version,
      c.nsOrEmpty,
      c.r.name,
      bodyObj,
      // A finalize body is built from the stored object: it shares its subtrees.
      { ...c.wopts(), ownedBody: c.r.sub !== 'finalize' && ownedJson(ct) },
      c.r.sub === 'status' ? 'status' : undefined,
    );
    return c.respondObj(result.created ? 201 : 200, result.obj, result.warnings, result.json);
  }

  /** PATCH: JSON, merge, strategic merge or apply. */
  private async servePatch(c: Call): Promise<void> {
    if (c.r.name === undefined) throw methodNotAllowed();
    const ct = mediaType(c.req.headers['content-type']);
    const accepted = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
    if (c.r.def.strategicMerge) accepted.push('application/strategic-merge-patch+json');
    if (!accepted.includes(ct)) {
      c.req.resume();
      throw unsupportedMediaType(accepted);
    }
    const buf = await readBody(c.req, this.s.maxBodyBytes);
    const body =
      ct === 'application/apply-patch+yaml'
        ? parseBody(buf, 'application/yaml', ['application/yaml'])
        : parseBody(buf, 'application/json', ['application/json']);
    const result = this.core.patch(
      c.r.def,
      c.r.version,
      c.nsOrEmpty,
      c.r.name,
      ct,
      body,
      c.wopts(),
      c.r.sub === 'status' ? 'status' : undefined,
    );
    return c.respondObj(result.created ? 201 : 200, result.obj, result.warnings, result.json);
  }

  /** DELETE of an object or a collection. */
  private async serveDelete(c: Call): Promise<void> {
    const buf = await readBody(c.req, this.s.maxBodyBytes);
    let opts: Obj = {};
    if (buf.length && buf.toString('utf8').trim()) {
      const b = parseBody(buf, mediaType(c.req.headers['content-type']) || 'application/json', BODY_TYPES);
      if (typeof b !== 'object' || b === null || Array.isArray(b)) throw badRequest('DeleteOptions must be an object');
      opts = b as Obj;
    }
    const dopts: DeleteOptions = {
      ...(typeof opts.propagationPolicy === 'string' ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(c.q.get('propagationPolicy') ? { propagationPolicy: c.q.get('propagationPolicy')! } : {}),
      ...(typeof opts.preconditions === 'object' && opts.preconditions
        ? { preconditions: opts.preconditions as DeleteOptions['preconditions'] }
        : {}),
      ...(typeof opts.orphanDependents === 'boolean' ? { orphanDependents: opts.orphanDependents } : {}),
      dryRun: c.q.getAll('dryRun').includes('All') || (Array.isArray(opts.dryRun) && opts.dryRun.includes('All')),
    };
    if (c.verb === 'deletecollection') {
      const label = parseLabelSelector(c.q.get('labelSelector'));
      const field = parseFieldSelector(c.q.get('fieldSelector'), FIELD_SELECTORS[grKey(c.r.def.group, c.r.def.plural)]);
      const deleted = this.core.deleteCollection(c.r.def, c.ns, label, field, dopts);
      const av = apiVersionOf(c.r.def.group, c.r.version);
      return sendJson(c.res, 200, {
        apiVersion: av,
        kind: c.r.def.listKind,
        metadata: { resourceVersion: String(this.core.rv) },
        items: deleted.map((e) => c.out(e.obj)),
      });
    }
    const result = this.core.delete(c.r.def, c.nsOrEmpty, c.r.name!, dopts);
    if (result.deleted && c.r.def.builtin && grKey(c.r.def.group, c.r.def.plural) !== '/namespaces') {
      const m = result.obj.metadata as Obj;
      return sendJson(c.res, 200, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: { name: m.name, ...(c.r.def.group ? { group: c.r.def.group } : {}), kind: c.r.def.plural, uid: m.uid },
      });
    }
    return c.respondObj(200, result.obj);
  }

  /** The scale subresource (autoscaling/v1 Scale) of a CRD that declares one. */
  private async scale(req: IncomingMessage, res: ServerResponse, r: Route, method: string, q: URLSearchParams): Promise<void> {
    const sc = r.def.scale!;
    const ns = r.ns ?? '';
    const toScale = (o: Obj): Obj => {
      const m = o.metadata as Obj;
      const replicas = Number(getPath(o, sc.specReplicasPath) ?? 0);
      const selector = sc.labelSelectorPath ? getPath(o, sc.labelSelectorPath) : undefined;
      return {
        kind: 'Scale',
        apiVersion: 'autoscaling/v1',
        metadata: {
          name: m.name,
          ...(m.namespace ? { namespace: m.namespace } : {}),
          uid: m.uid,
          resourceVersion: m.resourceVersion,
          creationTimestamp: m.creationTimestamp,
        },
        spec: { replicas },
        status: { replicas: Number(getPath(o, sc.statusReplicasPath) ?? 0), ...(typeof selector === 'string' ? { selector } : {}) },
      };
    };
    const cur = this.core.get(r.def, ns, r.name!).obj;
    if (method === 'GET') {
      req.resume();
      return sendJson(res, 200, toScale(cur));
    }
    if (method !== 'PUT' && method !== 'PATCH') {
      req.resume();
      throw methodNotAllowed();
    }
    const ct = mediaType(req.headers['content-type']);
    const buf = await readBody(req, this.s.maxBodyBytes);
    let scaleObj: Obj;
    if (method === 'PUT') {
      const b = parseBody(buf, ct, BODY_TYPES);
      if (typeof b !== 'object' || b === null || Array.isArray(b)) throw badRequest('the body of the request must be an object');
      scaleObj = b as Obj;
    } else {
      const accepted = ['application/json-patch+json', 'application/merge-patch+json'];
      if (!accepted.includes(ct)) throw unsupportedMediaType(accepted);
      const patchBody = parseBody(buf, 'application/json', ['application/json']);
      const base = toScale(cur);
      scaleObj = (ct === 'application/merge-patch+json' ? mergePatch(base, patchBody) : jsonPatch(base, patchBody)) as Obj;
    }
    const replicas = (scaleObj.spec as Obj | undefined)?.replicas;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw invalid('Scale', 'autoscaling', r.name!, [
        {
          type: 'FieldValueInvalid',
          field: 'spec.replicas',
          value: replicas ?? null,
          hasValue: true,
          detail: 'must be greater than or equal to 0',
        },
      ]);
    }
    const rv = (scaleObj.metadata as Obj | undefined)?.resourceVersion;
    if (rv && String(rv) !== String((cur.metadata as Obj).resourceVersion)) throw conflict(r.def.group, r.def.plural, r.name!);
    const patch = setPath({}, sc.specReplicasPath, replicas);
    const result = this.core.patch(r.def, r.version, ns, r.name!, 'application/merge-patch+json', patch, {
      dryRun: q.getAll('dryRun').includes('All'),
      ...(q.get('fieldManager') ? { fieldManager: q.get('fieldManager')! } : {}),
    });
    return sendJson(res, 200, toScale(result.obj));
  }

  private discovery(res: ServerResponse, accept: string | undefined, legacy: () => Obj, agg: () => Obj): void {
    if (wantsAggregated(accept)) sendJson(res, 200, agg(), { Vary: 'Accept' }, AGGREGATED_CT);
    else sendJson(res, 200, legacy(), { Vary: 'Accept' });
  }

  private gvDoc(path: string): { body: string; hash: string } | undefined {
    let c = this.openapiCache.get(path);
    if (c) return c;
    const segs = path.split('/');
    const doc = segs[0] === 'api' ? groupVersionDoc(this.core, '', segs[1]!) : groupVersionDoc(this.core, segs[1]!, segs[2]!);
    if (!doc) return undefined;
    const body = JSON.stringify(doc);
    c = { body, hash: docHash(body) };
    this.openapiCache.set(path, c);
    return c;
  }

  private openapi(req: IncomingMessage, res: ServerResponse, segs: string[]): void {
    req.resume();
    if (segs[1] === 'v3' && segs.length === 2) {
      const root = openapiRoot(this.core, (p) => this.gvDoc(p)?.hash ?? '');
      return sendJson(res, 200, root);
    }
    if (segs[1] === 'v3') {
      const doc = this.gvDoc(segs.slice(2).join('/'));
      if (!doc) throw resourceNotFound();
      return sendJson(res, 200, doc.body, { ETag: `"${doc.hash}"`, 'Cache-Control': 'public, immutable' });
    }
    throw resourceNotFound();
  }

  private async injectFaults(verb: string, r: Route): Promise<void> {
    const f = this.faults;
    if (!f) return;
    if (f.latencyMs && f.latencyMs > 0) await new Promise((res) => setTimeout(res, f.latencyMs));
    if (verb === 'watch' || !f.errorRate) return;
    const verbs = f.verbs ?? DEFAULT_VERBS;
    if (!verbs.includes(verb)) return;
    if (Math.random() >= f.errorRate) return;
    const codes = f.errorCodes && f.errorCodes.length ? f.errorCodes : [500, 429, 409];
    const code = codes[randomInt(codes.length)]!;
    if (code === 429) throw tooManyRequests();
    if (code === 409)
      throw conflict(
        r.def.group,
        r.def.plural,
        r.name ?? '',
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    if (code === 500) throw internalError('injected fault');
    throw new ApiError(code, code === 503 ? 'ServiceUnavailable' : code === 504 ? 'Timeout' : 'InternalError', `injected fault (${code})`);
  }
}
