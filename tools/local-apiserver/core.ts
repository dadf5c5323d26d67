/** The API machinery: resource registry, verbs with their storage semantics, garbage collection, namespace lifecycle. */
import { celSkippedNotice, celValidate, crdToResource, hasBlockingError, schemaHasRules, storedCrdForm } from './crd.js';
import { objectTooDeep, valueTooDeep } from './depth.js';
import { CORE_EVENTS_GR, validateCoreEvent } from './events.js';
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  internalError,
  invalid,
  notFound,
  unsupportedMediaType,
  type FieldError,
} from './errors.js';
import { cloneJson, jsonEqual } from './json.js';
import { generateName, newUid, now, validateMeta, validateName } from './meta.js';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import { apiVersionOf, builtinResources, grKey, type ResourceDef } from './resources.js';
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN, GarbageCollector } from './gc.js';
import { applyDefaults, OBJECT_META_FIELDS, prune, validate, type Schema } from './schema.js';
import { FIELD_SELECTORS, type FieldSelector, type LabelSelector } from './selectors.js';
import { Interner, shareWith } from './share.js';
import { serverSideApply, trackUpdate } from './ssa.js';
import { ResourceStore, type Entry } from './store.js';

type Obj = Record<string, unknown>;

/** Options common to writes. */
export interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: string;
  fieldManager?: string;
  /** The request's User-Agent: the manager of a write without fieldManager is its text up to the first "/". */
  userAgent?: string;
  force?: boolean;
  /** Internal: a server-side apply, whose managedFields the apply itself wrote. */
  applied?: boolean;
  /** Internal: the body was validated through the resource sharing this storage (an events.k8s.io/v1 Event). */
  sharedValidated?: boolean;
  /**
   * Internal: the body is the caller's to give away (parsed from JSON for this request alone: a tree, referenced from
   * nowhere else), so a create or update changes it in place instead of deep-copying it first.
   */
  ownedBody?: boolean;
}

/** A write through a resource that shares another's storage, in the owner's form. */
interface SharedWrite {
  owner: ResourceDef;
  body: Obj;
  warnings: string[];
}

/** Result of a write: the object as stored and any warnings for the Warning header. */
export interface WriteResult {
  obj: Obj;
  warnings: string[];
  created?: boolean;
  /** `obj`'s JSON (storage version) when the write serialized it: a response in that version sends it as is. */
  json?: string;
}

/** A persisted mutation (for the append log). */
export type PersistOp =
  { op: 'put'; gr: string; key: string; obj: Obj; rv: number; json?: string } | { op: 'del'; gr: string; key: string; rv: number };

/** Options of DELETE (DeleteOptions body and query). */
export interface DeleteOptions {
  propagationPolicy?: string;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const clone = cloneJson;

const bodySchemas = new WeakMap<Schema, Schema>();

/** A CR schema as the body without its metadata is validated against (made once per schema: schemas are not mutated). */
function bodySchema(schema: Schema): Schema {
  let s = bodySchemas.get(schema);
  if (!s) {
    s = { ...schema, properties: { ...(schema.properties ?? {}) }, required: (schema.required ?? []).filter((r) => r !== 'metadata') };
    bodySchemas.set(schema, s);
  }
  return s;
}

function meta(o: Obj): Obj {
  if (!isObj(o.metadata)) o.metadata = {};
  return o.metadata as Obj;
}

/** Whether two objects are equal apart from their metadata (semantically: key order does not matter). */
function nonMetadataEqual(a: Obj, b: Obj): boolean {
  let na = 0;
  for (const k in a) {
    if (k === 'metadata' || a[k] === undefined) continue;
    na++;
    if (!Object.prototype.hasOwnProperty.call(b, k) || b[k] === undefined || !jsonEqual(a[k], b[k])) return false;
  }
  let nb = 0;
  for (const k in b) if (k !== 'metadata' && b[k] !== undefined) nb++;
  return na === nb;
}

/** JSON with sorted keys, for semantic equality. */
export function stableStringify(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .filter((k) => v[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableStringify(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';
const CRD_GR = grKey('apiextensions.k8s.io', 'customresourcedefinitions');
const NS_GR = grKey('', 'namespaces');
const EVENT_GRS = new Set([grKey('', 'events'), grKey('events.k8s.io', 'events')]);
/** kube-apiserver's default --event-ttl: Events are deleted one hour after their last write. */
export const EVENT_TTL_MS = 60 * 60 * 1000;
/** How often the housekeeping (watch-window expiry of quiet resources, Event TTL) runs. */
const HOUSEKEEPING_MS = 15_000;

/** What one resource's store holds (see Core.stats). */
export interface ResourceStats {
  /** group/resource, e.g. "cluster.x-k8s.io/machines" or "/events". */
  resource: string;
  objects: number;
  /** Watch events a watch from an older resourceVersion could still replay. */
  watchEvents: number;
  watchers: number;
}

/** What the API server holds in memory, per resource and per index (for /metrics and leak hunting). */
export interface CoreStats {
  resources: ResourceStats[];
  /** Events whose TTL is tracked (one per live core/v1 or events.k8s.io Event). */
  eventTtlTracked: number;
  /** Garbage-collector indexes: owners with dependents, uids of live objects, owners queued for a pass. */
  gc: { owners: number; uids: number; queued: number };
}

/** Options of the core beyond the watch cache size. */
export interface CoreOptions {
  /** Event TTL (ms; default EVENT_TTL_MS, like --event-ttl=1h). */
  eventTtlMs?: number;
  /** How long watch events stay replayable (ms; default WATCH_EVENT_FRESH_MS). */
  watchFreshMs?: number;
  /** The clock (ms); tests control it. */
  now?: () => number;
}

const CREATE_ON_UPDATE = new Set([grKey('coordination.k8s.io', 'leases'), grKey('', 'events'), grKey('events.k8s.io', 'events')]);

/** The in-memory API server state and verb semantics (transport-independent). */
export class Core {
  rv = 1;
  readonly resources = new Map<string, ResourceDef>();
  readonly stores = new Map<string, ResourceStore>();
  /** apiVersion -> plural -> def, for served versions. */
  private served = new Map<string, Map<string, ResourceDef>>();
  private readonly gc: GarbageCollector;
  /** One copy of each common string across stored objects (bounded). */
  private readonly interner = new Interner();
  /** Set by close(); background work stops. */
  closed = false;
  onPersist?: (op: PersistOp) => void;
  onDiscoveryChange?: () => void;

  /** Last write (ms) of every Event (core and events.k8s.io), for --event-ttl. */
  private readonly eventWrites = new Map<string, { gr: string; ns: string; name: string; at: number }>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly eventTtlMs: number;
  private readonly watchFreshMs: number | undefined;
  /**
   * The resourceVersion the built-in resources' watch history starts at, as kube-apiserver's watch caches start when
   * it starts (they list then): the resourceVersion after bootstrap (startWatchHistory), or the restored one after a
   * restart from a persist file. A custom resource's history starts when its CRD is first served. A watch from an
   * older resourceVersion gets 200 with an ERROR event, 410 Expired, as from a real server's watch cache.
   */
  historyFrom = 0;

  constructor(
    readonly watchCacheSize: number,
    opts: CoreOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.eventTtlMs = opts.eventTtlMs ?? EVENT_TTL_MS;
    this.watchFreshMs = opts.watchFreshMs;
    this.gc = new GarbageCollector(this);
    for (const def of builtinResources()) this.register(def);
  }

  /**
   * Starts the periodic housekeeping a real control plane does in the background: watch-event windows of quiet
   * resources expire, Events older than the event TTL are deleted. Stopped by close().
   */
  startHousekeeping(intervalMs = HOUSEKEEPING_MS): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => this.safely(() => this.housekeep()), intervalMs);
    this.sweepTimer.unref();
  }

  /** One housekeeping pass (also called by tests with a controlled clock). */
  housekeep(): void {
    const now = this.now();
    for (const s of this.stores.values()) s.expire(now);
    for (const [key, e] of this.eventWrites) {
      if (now - e.at < this.eventTtlMs) continue;
      this.eventWrites.delete(key);
      const def = this.resources.get(e.gr);
      if (!def || !this.store(e.gr).get(e.ns, e.name)) continue;
      try {
        this.delete(def, e.ns, e.name, {});
      } catch {
        /* gone meanwhile */
      }
    }
  }

  /** Sizes of the stores and indexes. */
  stats(): CoreStats {
    const resources = [...this.stores].map(([resource, s]) => ({
      resource,
      objects: s.objects.size,
      watchEvents: s.retainedEvents,
      watchers: s.watchers.size,
    }));
    return { resources, eventTtlTracked: this.eventWrites.size, gc: this.gc.sizes() };
  }

  /** Events whose TTL is being tracked (for tests). */
  get trackedEvents(): number {
    return this.eventWrites.size;
  }

  /** The watch history of every resource served so far starts now (a real server's caches list once it is up). */
  startWatchHistory(): void {
    this.historyFrom = Math.max(this.historyFrom, this.rv);
    for (const s of this.stores.values()) s.startHistoryAt(this.historyFrom);
  }

  /** Creates the namespaces every cluster has. */
  bootstrap(): void {
    for (const ns of SYSTEM_NAMESPACES) {
      if (!this.store(NS_GR).get('', ns)) {
        this.create(this.resources.get(NS_GR)!, 'v1', '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, {});
      }
    }
  }

  /** Stops background work. */
  close(): void {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /** The store of a group/resource (created on demand). */
  store(gr: string): ResourceStore {
    let s = this.stores.get(gr);
    if (!s) {
      s = new ResourceStore(
        {
          maxEvents: this.watchCacheSize,
          now: this.now,
          selectionDiffers: this.selectionDiffers(gr),
          selectable: this.selectable(gr),
          ...(this.watchFreshMs !== undefined ? { freshMs: this.watchFreshMs } : {}),
        },
        // A store is created before its resource's first write, so every event of it since historyFrom is retained
        // (register() starts a custom resource's history later, when its CRD is served).
        this.historyFrom,
      );
      this.stores.set(gr, s);
    }
    return s;
  }

  /**
   * Whether any watch selector of the resources stored under `gr` (labels; the selectable fields of each resource
   * reading that storage, through its view) can tell two versions of an object apart: a sealed watch event keeps
   * its previous state only then (store.ts). Name and namespace never change between versions.
   */
  private selectionDiffers(gr: string): (a: Obj, b: Obj) => boolean {
    let readers: { read: (o: Obj) => Obj; fields: ((o: Obj) => string | undefined)[] }[] | undefined;
    return (a, b) => {
      if (!jsonEqual((a.metadata as Obj | undefined)?.labels, (b.metadata as Obj | undefined)?.labels)) return true;
      // Resolved on first use: the resources sharing a storage are built-ins, registered before any write.
      readers ??= [...this.resources.entries()]
        .filter(([k, d]) => (d.sharedStorage?.gr ?? k) === gr)
        .map(([k, d]) => ({ read: d.sharedStorage?.read ?? ((o: Obj): Obj => o), fields: Object.values(FIELD_SELECTORS[k] ?? {}) }))
        .filter((r) => r.fields.length > 0);
      for (const r of readers) {
        const [va, vb] = [r.read(a), r.read(b)];
        for (const f of r.fields) if (f(va) !== f(vb)) return true;
      }
      return false;
    };
  }

  /**
   * What watch selectors read of an object stored under `gr`: its name, namespace and labels, or all of it when a
   * resource reading that storage has selectable fields beyond those (built-ins: Events, Secrets, Nodes, ...).
   */
  private selectable(gr: string): (o: Obj) => Obj {
    let whole: boolean | undefined;
    return (o) => {
      whole ??= [...this.resources.entries()].some(
        ([k, d]) => (d.sharedStorage?.gr ?? k) === gr && Object.keys(FIELD_SELECTORS[k] ?? {}).length > 0,
      );
      if (whole) return o;
      const m = (o.metadata ?? {}) as Obj;
      return { metadata: { name: m.name, namespace: m.namespace, labels: m.labels } };
    };
  }

  /** The store holding a resource's objects (its own, or the one it shares: events.k8s.io Events are core Events). */
  storeOf(def: ResourceDef): ResourceStore {
    return this.store(def.sharedStorage?.gr ?? grKey(def.group, def.plural));
  }

  /** The definition owning a shared storage, and a body written through `def` in that definition's form. */
  private toSharedStorage(
    def: ResourceDef,
    version: string,
    body: Obj,
    ns: string,
    opts: WriteOptions,
    mode: 'body' | 'patch',
    create: boolean,
  ): SharedWrite {
    const shared = def.sharedStorage!;
    const owner = this.resources.get(shared.gr);
    if (!owner) throw internalError(`storage ${shared.gr} of ${grKey(def.group, def.plural)} is not served`);
    const obj = clone(body);
    if (!isObj(obj)) throw badRequest('the body of the request was not an object');
    this.checkKind(def, version, obj);
    const warnings = this.builtinUnknownFields(def, version, obj, opts, mode);
    const errs = shared.validate(obj, ns, create);
    if (errs.length) throw invalid(def.kind, def.group, String(meta(obj).name ?? ''), errs);
    return { owner, body: shared.write(obj), warnings };
  }

  /** Serves a resource definition (built-in or from a CRD). */
  register(def: ResourceDef): void {
    const gr = grKey(def.group, def.plural);
    const prev = this.resources.get(gr);
    if (prev) this.unserve(prev);
    // A real server's cache of a custom resource lists when the CRD starts being served: its history starts there.
    else if (!def.builtin) this.store(gr).startHistoryAt(this.rv);
    this.resources.set(gr, def);
    for (const v of def.versions) {
      if (!v.served) continue;
      const av = apiVersionOf(def.group, v.name);
      let m = this.served.get(av);
      if (!m) {
        m = new Map();
        this.served.set(av, m);
      }
      m.set(def.plural, def);
    }
    this.store(gr);
    this.onDiscoveryChange?.();
  }

  private unserve(def: ResourceDef): void {
    for (const v of def.versions) {
      const av = apiVersionOf(def.group, v.name);
      const m = this.served.get(av);
      m?.delete(def.plural);
      if (m && m.size === 0) this.served.delete(av);
    }
  }

  /** Stops serving a resource and drops its objects. */
  unregister(gr: string): void {
    const def = this.resources.get(gr);
    if (!def) return;
    this.unserve(def);
    this.resources.delete(gr);
    this.onDiscoveryChange?.();
  }

  /** Looks up a served resource by apiVersion and plural. */
  lookup(group: string, version: string, plural: string): ResourceDef | undefined {
    return this.served.get(apiVersionOf(group, version))?.get(plural);
  }

  /** All served apiVersions with their resources. */
  servedVersions(): Map<string, Map<string, ResourceDef>> {
    return this.served;
  }

  /** Resolves a kind in an apiVersion (for ownerReferences). */
  resolveKind(apiVersion: string, kind: string): ResourceDef | undefined {
    const m = this.served.get(apiVersion);
    if (!m) return undefined;
    for (const d of m.values()) if (d.kind === kind) return d;
    return undefined;
  }

  private nextRv(): number {
    this.rv += 1;
    return this.rv;
  }

  /** Converts a stored object to the requested version (conversion strategy None: apiVersion rewrite). */
  toVersion(def: ResourceDef, version: string, obj: Obj): Obj {
    if (def.sharedStorage) return def.sharedStorage.read(obj);
    const av = apiVersionOf(def.group, version);
    if (obj.apiVersion === av) return obj;
    return { ...obj, apiVersion: av };
  }

  /**
   * JSON of a stored entry in the requested version. Not cached on the entry: controllers read nearly every object
   * (informer lists, GETs before a patch), so a cached copy doubled the stored objects' memory (12 MiB of 100 at
   * 1,003 machines) to save a stringify on a rare re-read.
   */
  entryJson(def: ResourceDef, version: string, e: Entry): string {
    return JSON.stringify(this.toVersion(def, version, e.obj));
  }

  /** Stores a version; returns its JSON when it was serialized (for watchers or persistence; the response reuses it). */
  private writeStore(
    def: ResourceDef,
    nsIn: string,
    name: string,
    obj: Obj,
    type: 'ADDED' | 'MODIFIED',
    prev?: Obj,
    forResponse = false,
  ): string | undefined {
    const gr = grKey(def.group, def.plural);
    // Each request parses its own copy of the namespace; every retained watch event holds one.
    const ns = this.interner.intern(nsIn);
    // Serialized once for every watcher's event line and the persistence log (and not at all without either).
    const store = this.store(gr);
    // In place, content unchanged: the retained versions of an object share what a write left alone.
    shareWith(obj, prev, this.interner);
    const json = forResponse || store.watchers.size > 0 || this.onPersist ? JSON.stringify(obj) : undefined;
    store.put(ns, name, obj, Number((obj.metadata as Obj).resourceVersion), type, prev, json);
    // Like etcd's lease per Event write (kube-apiserver --event-ttl): an Event lives eventTtlMs after its last write.
    if (EVENT_GRS.has(gr)) this.eventWrites.set(`${gr}|${ResourceStore.key(ns, name)}`, { gr, ns, name, at: this.now() });
    this.gc.written(gr, ResourceStore.key(ns, name), prev, obj);
    this.onPersist?.({ op: 'put', gr, key: ResourceStore.key(ns, name), obj, rv: this.rv, json });
    return json;
  }

  private removeStore(def: ResourceDef, nsIn: string, name: string, finalObj: Obj): void {
    const gr = grKey(def.group, def.plural);
    const ns = this.interner.intern(nsIn);
    shareWith(finalObj, this.store(gr).get(ns, name)?.obj, this.interner);
    this.store(gr).remove(ns, name, finalObj, this.rv);
    if (EVENT_GRS.has(gr)) this.eventWrites.delete(`${gr}|${ResourceStore.key(ns, name)}`);
    this.onPersist?.({ op: 'del', gr, key: ResourceStore.key(ns, name), rv: this.rv });
    this.gc.removed(gr, ResourceStore.key(ns, name), finalObj);
    if (gr === CRD_GR) this.onCrdGone(finalObj);
  }

  /** Rebuilds indexes after persistence replay. */
  reindex(): void {
    for (const [gr, s] of this.stores) for (const [key, e] of s.objects) this.gc.written(gr, key, undefined, e.obj);
    // Restored Events live one TTL from the restart (their last write time is not persisted).
    for (const gr of EVENT_GRS)
      for (const e of this.stores.get(gr)?.objects.values() ?? []) {
        const m = e.obj.metadata as Obj;
        const ns = String(m.namespace ?? '');
        const name = String(m.name);
        this.eventWrites.set(`${gr}|${ResourceStore.key(ns, name)}`, { gr, ns, name, at: this.now() });
      }
  }

  // ---------------------------------------------------------------- admission

  private checkNamespace(def: ResourceDef, ns: string, creating: boolean): void {
    if (!def.namespaced) return;
    const nsObj = this.store(NS_GR).get('', ns);
    if (!nsObj) throw notFound('', 'namespaces', ns);
    if (creating && (nsObj.obj.metadata as Obj).deletionTimestamp) {
      throw forbidden(
        `${def.plural}${def.group ? '.' + def.group : ''} "${''}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
        { kind: def.plural, ...(def.group ? { group: def.group } : {}) },
      );
    }
  }

  /** Prunes, defaults and validates a CR; handles fieldValidation. Returns warnings. */
  private admitCustom(
    def: ResourceDef,
    version: string,
    obj: Obj,
    old: Obj | undefined,
    opts: WriteOptions,
    mode: 'body' | 'patch',
    name: string,
  ): string[] {
    const v = def.versions.find((x) => x.name === version);
    const schema = v?.schema;
    const unknown: string[] = [];
    const before = mode === 'patch' && opts.fieldValidation === 'Strict' ? JSON.stringify(obj) : '';
    if (schema) prune(obj, schema, '', unknown, true);
    else {
      for (const k of Object.keys(meta(obj)))
        if (!OBJECT_META_FIELDS.has(k)) {
          unknown.push(`metadata.${k}`);
          delete meta(obj)[k];
        }
    }
    const warnings = this.fieldValidation(def, version, unknown, opts, mode, before);
    if (schema) applyDefaults(obj, schema);
    let errs: FieldError[] = [];
    if (schema) {
      // From here on nothing changes the body outside its metadata: what the update left as it was becomes the stored
      // version's own (as writeStore would do anyway), so validation and CEL skip it by identity.
      if (old) for (const k in obj) if (k !== 'metadata') obj[k] = shareWith(obj[k], old[k], this.interner);
      const { metadata: _m, ...rest } = obj;
      let oldRest: Obj | undefined;
      if (old) {
        const { metadata: _om, ...r } = old;
        oldRest = r;
      }
      validate(rest, bodySchema(schema), '', errs, oldRest);
      // Validation ratcheting (on by default since 1.30): an update may keep a value that is invalid but unchanged.
      if (old) errs = errs.filter((e) => !sameAt(obj, old, e.field));
      // As the real registry strategy: a structural error means the object lacks the shape the rules were written for;
      // a schema without rules has no CEL validator, hence no notice either.
      if (schemaHasRules(schema)) {
        if (hasBlockingError(errs)) errs.push(celSkippedNotice());
        else celValidate(obj, old, schema, '', errs);
      }
    }
    if (errs.length) throw invalid(def.kind, def.group, name, errs);
    return warnings;
  }

  private checkKind(def: ResourceDef, version: string, obj: Obj): void {
    const av = apiVersionOf(def.group, version);
    if (obj.metadata !== undefined && obj.metadata !== null && !isObj(obj.metadata)) {
      throw badRequest(
        `${def.kind} in version "${version}" cannot be handled as a ${def.kind}: json: cannot unmarshal ${Array.isArray(obj.metadata) ? 'array' : typeof obj.metadata} into Go struct field ${def.kind}.metadata of type v1.ObjectMeta`,
      );
    }
    for (const k of ['apiVersion', 'kind'] as const) {
      if (obj[k] !== undefined && typeof obj[k] !== 'string')
        throw badRequest(
          `${def.kind} in version "${version}" cannot be handled as a ${def.kind}: json: cannot unmarshal ${typeof obj[k]} into Go struct field ${def.kind}.${k} of type string`,
        );
    }
    if (obj.kind === undefined || obj.kind === '') {
      if (!def.builtin) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(obj)}'`);
      obj.kind = def.kind;
    }
    if (obj.apiVersion === undefined || obj.apiVersion === '') {
      if (!def.builtin) throw badRequest(`Object 'apiVersion' is missing in '${JSON.stringify(obj)}'`);
      obj.apiVersion = av;
    }
    if (obj.apiVersion !== av)
      throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${av})`);
    if (obj.kind !== def.kind) {
      // A custom resource is decoded as unstructured, whatever its kind; its validator then refuses the kind (422).
      if (!def.builtin) {
        const name = typeof meta(obj).name === 'string' ? String(meta(obj).name) : '';
        throw invalid(def.kind, def.group, name, [
          { type: 'FieldValueInvalid', field: 'kind', value: obj.kind, hasValue: true, detail: `must be ${def.kind}` },
        ]);
      }
      throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${def.kind})`);
    }
  }

  /** Unknown top-level and metadata fields of a built-in (typed decoding drops them); handles fieldValidation. */
  private builtinUnknownFields(def: ResourceDef, version: string, obj: Obj, opts: WriteOptions, mode: 'body' | 'patch'): string[] {
    const unknown: string[] = [];
    const before = mode === 'patch' && opts.fieldValidation === 'Strict' ? JSON.stringify(obj) : '';
    if (def.topLevelFields) {
      const allowed = new Set(['apiVersion', 'kind', 'metadata', ...def.topLevelFields]);
      for (const k of Object.keys(obj))
        if (!allowed.has(k)) {
          unknown.push(k);
          delete obj[k];
        }
    }
    for (const k of Object.keys(meta(obj)))
      if (!OBJECT_META_FIELDS.has(k)) {
        unknown.push(`metadata.${k}`);
        delete meta(obj)[k];
      }
    return this.fieldValidation(def, version, unknown, opts, mode, before);
  }

  private fieldValidation(
    def: ResourceDef,
    version: string,
    unknown: string[],
    opts: WriteOptions,
    mode: 'body' | 'patch',
    before: string,
  ): string[] {
    const warnings: string[] = [];
    const fv = opts.fieldValidation ?? 'Warn';
    if (!unknown.length) return warnings;
    if (fv === 'Strict') {
      const detail = `strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(', ')}`;
      if (mode === 'patch') {
        throw new ApiError(422, 'Invalid', ` "" is invalid: patch: Invalid value: ${JSON.stringify(before)}: ${detail}`, {
          causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(before)}: ${detail}`, field: 'patch' }],
        });
      }
      throw badRequest(`${def.kind} in version "${version}" cannot be handled as a ${def.kind}: ${detail}`);
    }
    if (fv === 'Warn') for (const u of unknown) warnings.push(`unknown field "${u}"`);
    return warnings;
  }

  /** Kind-specific defaulting/validation for the schemaless built-ins that have semantics here. */
  private admitBuiltin(def: ResourceDef, obj: Obj, old: Obj | undefined, name: string, ns: string, opts: WriteOptions): void {
    const gr = grKey(def.group, def.plural);
    // A core/v1 Event gets the legacy checks; one written through events.k8s.io/v1 had them (and more) already.
    if (gr === CORE_EVENTS_GR && !opts.sharedValidated) {
      const errs = validateCoreEvent(obj, ns);
      if (errs.length) throw invalid(def.kind, def.group, name, errs);
    }
    if (gr === NS_GR) {
      const spec = isObj(obj.spec) ? obj.spec : {};
      obj.spec = { ...spec, finalizers: Array.isArray(spec.finalizers) ? spec.finalizers : ['kubernetes'] };
      if (!old) obj.status = { phase: 'Active' };
      const labels = { ...((meta(obj).labels as Obj | undefined) ?? {}), 'kubernetes.io/metadata.name': name };
      meta(obj).labels = labels;
    } else if (gr === CRD_GR) {
      // Stored as kube-apiserver stores it (empty optional fields dropped, v1 defaults), so readers see the same CRD.
      obj.spec = storedCrdForm(obj).spec;
      const { errors } = crdToResource(obj, { ...(old ? { old } : {}) });
      if (errors.length) throw invalid(def.kind, def.group, name, errors);
    }
    const errs: FieldError[] = [];
    if (gr === grKey('', 'configmaps') || gr === grKey('', 'secrets')) {
      for (const field of ['data', 'binaryData', 'stringData']) {
        const d = obj[field];
        if (d === undefined || d === null) continue;
        // Typed decoding in kube-apiserver fails these with 400 before validation.
        if (!isObj(d))
          throw badRequest(
            `${def.kind} in version "v1" cannot be handled as a ${def.kind}: json: cannot unmarshal ${Array.isArray(d) ? 'array' : typeof d} into Go struct field ${def.kind}.${field} of type map[string]string`,
          );
        for (const [k, v] of Object.entries(d)) {
          if (typeof v !== 'string')
            throw badRequest(
              `${def.kind} in version "v1" cannot be handled as a ${def.kind}: json: cannot unmarshal ${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v} into Go struct field ${def.kind}.${field} of type string`,
            );
          if ((field === 'binaryData' || (gr === grKey('', 'secrets') && field === 'data')) && !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) {
            throw badRequest(
              `${def.kind} in version "v1" cannot be handled as a ${def.kind}: illegal base64 data at input byte 0 (key ${k})`,
            );
          }
        }
      }
    }
    if (gr === grKey('', 'secrets') && isObj(obj.stringData)) {
      const data = { ...((obj.data as Obj | undefined) ?? {}) };
      for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v)).toString('base64');
      obj.data = data;
      delete obj.stringData;
      if (!obj.type) obj.type = 'Opaque';
    } else if (gr === grKey('', 'secrets') && !obj.type) obj.type = 'Opaque';
    if (errs.length) throw invalid(def.kind, def.group, name, errs);
  }

  // ---------------------------------------------------------------- verbs

  /** GET of one object. */
  get(def: ResourceDef, ns: string, name: string): Entry {
    const e = this.storeOf(def).get(def.namespaced ? ns : '', name);
    if (!e) throw notFound(def.group, def.plural, name);
    return e;
  }

  /** LIST with selectors and paging; returns entries in key order. */
  list(
    def: ResourceDef,
    ns: string | undefined,
    label: LabelSelector,
    field: FieldSelector,
    limit: number,
    cont: string | undefined,
  ): { entries: Entry[]; rv: number; continue?: string; remaining?: number } {
    const s = this.storeOf(def);
    // Field selectors see the object as the requested resource shows it (regarding.name for events.k8s.io Events).
    const fieldOf = def.sharedStorage ? (e: Entry): Obj => def.sharedStorage!.read(e.obj) : (e: Entry): Obj => e.obj;
    const nsKey = def.namespaced ? ns : undefined;
    let startAfter: string | undefined;
    let listRv = this.rv;
    if (cont) {
      try {
        const tok = JSON.parse(Buffer.from(cont, 'base64').toString('utf8')) as { rv: number; start: string };
        startAfter = tok.start;
        listRv = tok.rv;
      } catch {
        throw badRequest(`continue key is not valid: illegal base64 data at input byte 0`);
      }
    }
    if (field.exactName !== undefined && limit <= 0 && !cont) {
      const keys =
        nsKey !== undefined
          ? [ResourceStore.key(nsKey, field.exactName)]
          : [...(def.namespaced ? [...s.byNs.keys()].sort().map((n) => ResourceStore.key(n, field.exactName!)) : [field.exactName])];
      const entries = keys
        .map((k) => s.objects.get(k))
        .filter(
          (e): e is Entry => !!e && label.matches((e.obj.metadata as Obj).labels as Record<string, string>) && field.matches(fieldOf(e)),
        );
      return { entries, rv: listRv };
    }
    // An equality on a label narrows the keys through the store's label index (the rest is checked per object below).
    const keys = label.equal ? s.keysWithLabel(label.equal[0], label.equal[1], nsKey) : s.sortedKeys(nsKey);
    let i = 0;
    if (startAfter !== undefined) {
      let lo = 0;
      let hi = keys.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (keys[mid]! <= startAfter) lo = mid + 1;
        else hi = mid;
      }
      i = lo;
    }
    const out: Entry[] = [];
    const filtering = !label.empty || !field.empty;
    for (; i < keys.length; i++) {
      const e = s.objects.get(keys[i]!);
      if (!e) continue;
      if (filtering && !(label.matches((e.obj.metadata as Obj).labels as Record<string, string>) && field.matches(fieldOf(e)))) continue;
      if (limit > 0 && out.length >= limit) {
        const last = keys[i - 1]!;
        const token = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: listRv, start: lastKeyOf(out, keys, i) ?? last })).toString(
          'base64',
        );
        return { entries: out, rv: listRv, continue: token, ...(filtering ? {} : { remaining: keys.length - i }) };
      }
      out.push(e);
    }
    return { entries: out, rv: listRv };
  }

  /** CREATE. */
  create(def: ResourceDef, version: string, ns: string, body: Obj, opts: WriteOptions): WriteResult {
    if (valueTooDeep(body)) throw objectTooDeep();
    if (def.sharedStorage) {
      const w = this.toSharedStorage(def, version, body, ns, opts, 'body', true);
      const r = this.create(w.owner, w.owner.storageVersion, ns, w.body, { ...opts, sharedValidated: true, ownedBody: false });
      return { ...r, warnings: [...w.warnings, ...r.warnings] };
    }
    const obj = opts.ownedBody ? body : clone(body);
    if (!isObj(obj)) throw badRequest('the body of the request was not an object');
    this.checkKind(def, version, obj);
    const m = meta(obj);
    if (def.namespaced) {
      if (m.namespace !== undefined && m.namespace !== '' && m.namespace !== ns) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      m.namespace = ns;
    } else delete m.namespace;
    if ((!m.name || m.name === '') && typeof m.generateName === 'string' && m.generateName) m.name = generateName(m.generateName);
    const name = typeof m.name === 'string' ? m.name : '';
    if (!name)
      throw invalid(def.kind, def.group, '', [
        { type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' },
      ]);
    this.checkNamespace(def, ns, true);
    const gr = grKey(def.group, def.plural);
    let warnings: string[] = [];
    if (!def.builtin) warnings = this.admitCustom(def, version, obj, undefined, opts, 'body', name);
    else {
      warnings = this.builtinUnknownFields(def, version, obj, opts, 'body');
      this.admitBuiltin(def, obj, undefined, name, ns, opts);
    }
    const errs = [...validateName(name, gr === NS_GR), ...validateMeta(m)];
    if (errs.length) throw invalid(def.kind, def.group, name, errs);
    if (this.store(gr).get(def.namespaced ? ns : '', name)) throw alreadyExists(def.group, def.plural, name);
    if (def.clearStatusOnCreate) delete obj.status;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.selfLink;
    m.uid = newUid();
    m.creationTimestamp = now();
    if (def.hasGeneration) m.generation = 1;
    else delete m.generation;
    if (Array.isArray(m.managedFields) && m.managedFields.length === 0) delete m.managedFields;
    if (!opts.applied) this.recordManager(def, version, undefined, obj, opts);
    obj.apiVersion = apiVersionOf(def.group, def.storageVersion);
    if (opts.dryRun) {
      m.resourceVersion = String(this.rv);
      return { obj: obj, warnings };
    }
    m.resourceVersion = String(this.nextRv());
    const stored = normalizeMeta(obj);
    const json = this.writeStore(def, def.namespaced ? ns : '', name, stored, 'ADDED', undefined, true);
    if (gr === CRD_GR) this.onCrdWritten(stored);
    return { obj: stored, warnings, created: true, ...(json !== undefined ? { json } : {}) };
  }

  /** UPDATE (PUT) of the main resource or the status subresource. */
  update(def: ResourceDef, version: string, ns: string, name: string, body: Obj, opts: WriteOptions, subresource?: string): WriteResult {
    if (!isObj(body)) throw badRequest('the body of the request was not an object');
    if (def.sharedStorage) {
      const w = this.toSharedStorage(def, version, body, ns, opts, 'body', false);
      const r = this.update(
        w.owner,
        w.owner.storageVersion,
        ns,
        name,
        w.body,
        { ...opts, sharedValidated: true, ownedBody: false },
        subresource,
      );
      return { ...r, warnings: [...w.warnings, ...r.warnings] };
    }
    const obj = opts.ownedBody ? body : clone(body);
    this.checkKind(def, version, obj);
    const m = meta(obj);
    if (m.name !== undefined && m.name !== name)
      throw badRequest(`the name of the object (${String(m.name)}) does not match the name on the URL (${name})`);
    if (def.namespaced && m.namespace !== undefined && m.namespace !== '' && m.namespace !== ns) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const existing = this.storeOf(def).get(def.namespaced ? ns : '', name);
    if (!existing) {
      if (!subresource && CREATE_ON_UPDATE.has(grKey(def.group, def.plural))) {
        m.name = name;
        return this.create(def, version, ns, obj, opts);
      }
      throw notFound(def.group, def.plural, name);
    }
    const rv = m.resourceVersion;
    if (rv === undefined || rv === '') {
      if (!def.builtin) {
        throw invalid(def.kind, def.group, name, [
          {
            type: 'FieldValueInvalid',
            field: 'metadata.resourceVersion',
            value: 0,
            hasValue: true,
            detail: 'must be specified for an update',
          },
        ]);
      }
    } else if (String(rv) !== String((existing.obj.metadata as Obj).resourceVersion)) {
      throw conflict(def.group, def.plural, name);
    }
    return this.applyUpdate(def, version, ns, name, existing, obj, opts, subresource, 'body');
  }

  /** Shared tail of update/patch: status semantics, generation, admission, storage, deletion on emptied finalizers. */
  private applyUpdate(
    def: ResourceDef,
    version: string,
    ns: string,
    name: string,
    existing: Entry,
    incoming: Obj,
    opts: WriteOptions,
    subresource: string | undefined,
    mode: 'body' | 'patch',
  ): WriteResult {
    // A JSON patch can nest a value below an existing path: the result is checked, not only the request body.
    if (valueTooDeep(incoming)) throw objectTooDeep();
    if (def.sharedStorage) {
      const w = this.toSharedStorage(def, version, incoming, ns, opts, mode, false);
      const r = this.applyUpdate(
        w.owner,
        w.owner.storageVersion,
        ns,
        name,
        existing,
        w.body,
        { ...opts, sharedValidated: true },
        subresource,
        mode,
      );
      return { ...r, warnings: [...w.warnings, ...r.warnings] };
    }
    const old = existing.obj;
    let obj: Obj;
    if (subresource === 'status') {
      obj = clone(old);
      obj.apiVersion = incoming.apiVersion;
      if (incoming.status !== undefined) obj.status = incoming.status;
      else delete obj.status;
      const mf = (incoming.metadata as Obj | undefined)?.managedFields;
      if (mf !== undefined) meta(obj).managedFields = mf;
    } else {
      obj = incoming;
      if (def.statusSubresource) {
        if (old.status !== undefined) obj.status = clone(old.status);
        else delete obj.status;
      }
    }
    const m = meta(obj);
    const om = old.metadata as Obj;
    if (m.uid !== undefined && m.uid !== '' && m.uid !== om.uid) {
      throw conflict(
        def.group,
        def.plural,
        name,
        `Precondition failed: UID in precondition: ${String(m.uid)}, UID in object meta: ${String(om.uid)}`,
      );
    }
    m.name = name;
    if (def.namespaced) m.namespace = ns;
    else delete m.namespace;
    m.uid = om.uid;
    m.creationTimestamp = om.creationTimestamp;
    if (om.deletionTimestamp) {
      m.deletionTimestamp = om.deletionTimestamp;
      m.deletionGracePeriodSeconds = om.deletionGracePeriodSeconds ?? 0;
    } else {
      delete m.deletionTimestamp;
      delete m.deletionGracePeriodSeconds;
    }
    delete m.generateName;
    if (om.generateName !== undefined) m.generateName = om.generateName;
    if (m.managedFields === undefined && om.managedFields !== undefined) m.managedFields = om.managedFields;
    if (Array.isArray(m.managedFields) && m.managedFields.length === 0) delete m.managedFields;
    let warnings: string[] = [];
    if (!def.builtin) warnings = this.admitCustom(def, version, obj, this.toVersion(def, version, old), opts, mode, name);
    else {
      warnings = this.builtinUnknownFields(def, version, obj, opts, mode);
      this.admitBuiltin(def, obj, old, name, ns, opts);
    }
    const errs = validateMeta(m);
    if (om.deletionTimestamp) {
      const oldFin = new Set((om.finalizers as string[] | undefined) ?? []);
      const added = ((m.finalizers as string[] | undefined) ?? []).filter((f) => !oldFin.has(f));
      if (added.length)
        errs.push({
          type: 'FieldValueForbidden',
          field: 'metadata.finalizers',
          detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((a) => JSON.stringify(a)).join(', ')}}`,
        });
    }
    if (errs.length) throw invalid(def.kind, def.group, name, errs);
    obj.apiVersion = apiVersionOf(def.group, def.storageVersion);
    const sameBody = nonMetadataEqual(obj, old);
    if (def.hasGeneration) {
      const gen = Number(om.generation ?? 1);
      m.generation = subresource || sameBody ? gen : gen + 1;
    } else delete m.generation;
    m.resourceVersion = om.resourceVersion;
    const normalized = normalizeMeta(obj);
    if (sameBody && jsonEqual(normalized.metadata, old.metadata)) {
      // A no-op write does not bump resourceVersion nor notify watchers, as in kube-apiserver.
      return { obj: old, warnings };
    }
    if (!opts.applied) this.recordManager(def, version, old, normalized, opts, subresource);
    const emptiedFinalizers = om.deletionTimestamp && !((m.finalizers as string[] | undefined) ?? []).length;
    if (opts.dryRun) {
      return { obj: normalized, warnings };
    }
    m.resourceVersion = String(this.nextRv());
    normalized.metadata = { ...(normalized.metadata as Obj), resourceVersion: m.resourceVersion };
    if (emptiedFinalizers) {
      this.removeStore(def, def.namespaced ? ns : '', name, normalized);
      return { obj: normalized, warnings };
    }
    const json = this.writeStore(def, def.namespaced ? ns : '', name, normalized, 'MODIFIED', old, true);
    if (grKey(def.group, def.plural) === CRD_GR) this.onCrdWritten(normalized);
    return { obj: normalized, warnings, ...(json !== undefined ? { json } : {}) };
  }

  /** PATCH: merge, JSON patch, strategic (built-ins) or server-side apply. */
  patch(
    def: ResourceDef,
    version: string,
    ns: string,
    name: string,
    contentType: string,
    patchBody: unknown,
    opts: WriteOptions,
    subresource?: string,
  ): WriteResult {
    const accepted = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
    if (def.strategicMerge) accepted.push('application/strategic-merge-patch+json');
    if (!accepted.includes(contentType)) throw unsupportedMediaType(accepted);
    const existing = this.storeOf(def).get(def.namespaced ? ns : '', name);
    if (contentType === 'application/apply-patch+yaml') {
      if (!isObj(patchBody)) throw badRequest('error decoding YAML: the apply configuration must be an object');
      if (!opts.fieldManager) throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be set');
      const applied = clone(patchBody);
      this.checkKind(def, version, applied);
      const am = meta(applied);
      if (am.name !== undefined && am.name !== name)
        throw badRequest(`the name of the object (${String(am.name)}) does not match the name on the URL (${name})`);
      if (!existing) {
        if (subresource) throw notFound(def.group, def.plural, name);
        const created = serverSideApply(
          undefined,
          applied,
          opts.fieldManager,
          opts.force === true,
          this.schemaOf(def, version),
          apiVersionOf(def.group, version),
          subresource,
        );
        meta(created).name = name;
        const r = this.create(def, version, ns, created, { ...opts, applied: true });
        return r;
      }
      const current = this.toVersion(def, version, existing.obj);
      const merged = serverSideApply(
        clone(current),
        applied,
        opts.fieldManager,
        opts.force === true,
        this.schemaOf(def, version),
        apiVersionOf(def.group, version),
        subresource,
        def.group,
        def.plural,
        name,
      );
      return this.applyUpdate(def, version, ns, name, existing, merged, { ...opts, applied: true }, subresource, 'patch');
    }
    if (!existing) throw notFound(def.group, def.plural, name);
    const current = clone(this.toVersion(def, version, existing.obj));
    let patched: unknown;
    if (contentType === 'application/json-patch+json') patched = jsonPatch(current, patchBody);
    else if (contentType === 'application/merge-patch+json') {
      if (!isObj(patchBody))
        throw badRequest(
          `json: cannot unmarshal ${Array.isArray(patchBody) ? 'array' : typeof patchBody} into Go value of type map[string]interface {}`,
        );
      patched = mergePatch(current, patchBody);
    } else {
      if (!isObj(patchBody))
        throw badRequest(
          `json: cannot unmarshal ${Array.isArray(patchBody) ? 'array' : typeof patchBody} into Go value of type map[string]interface {}`,
        );
      patched = strategicMergePatch(current, patchBody);
    }
    if (!isObj(patched)) throw badRequest('the patch produced a non-object document');
    const pm = meta(patched);
    if (pm.resourceVersion !== undefined && String(pm.resourceVersion) !== String((existing.obj.metadata as Obj).resourceVersion)) {
      throw conflict(def.group, def.plural, name);
    }
    if (pm.name !== name) throw badRequest(`the name of the object (${String(pm.name)}) does not match the name on the URL (${name})`);
    this.checkKind(def, version, patched);
    return this.applyUpdate(def, version, ns, name, existing, patched, opts, subresource, 'patch');
  }

  /**
   * Records a create, update or patch in `obj`'s managedFields (ssa.ts trackUpdate) under its field manager: the
   * fieldManager parameter, else the User-Agent up to its first "/", as kube-apiserver names Update managers.
   */
  private recordManager(def: ResourceDef, version: string, old: Obj | undefined, obj: Obj, opts: WriteOptions, subresource?: string): void {
    const manager = opts.fieldManager ?? (opts.userAgent?.split('/')[0] || 'unknown');
    const entries = trackUpdate(old, obj, manager, this.schemaOf(def, version), apiVersionOf(def.group, version), subresource);
    const m = meta(obj);
    if (entries.length > 0) m.managedFields = entries;
    else delete m.managedFields;
  }

  private schemaOf(def: ResourceDef, version: string): Schema | undefined {
    return def.versions.find((v) => v.name === version)?.schema;
  }

  /** DELETE honouring preconditions, finalizers and propagationPolicy. */
  delete(def: ResourceDef, ns: string, name: string, o: DeleteOptions): { obj: Obj; deleted: boolean } {
    if (def.sharedStorage) return this.delete(this.resources.get(def.sharedStorage.gr)!, ns, name, o);
    const nsKey = def.namespaced ? ns : '';
    const existing = this.storeOf(def).get(nsKey, name);
    if (!existing) throw notFound(def.group, def.plural, name);
    const old = existing.obj;
    const om = old.metadata as Obj;
    if (o.preconditions?.uid && o.preconditions.uid !== om.uid) {
      throw conflict(
        def.group,
        def.plural,
        name,
        `Precondition failed: UID in precondition: ${o.preconditions.uid}, UID in object meta: ${String(om.uid)}`,
      );
    }
    if (o.preconditions?.resourceVersion && o.preconditions.resourceVersion !== om.resourceVersion) {
      throw conflict(
        def.group,
        def.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${o.preconditions.resourceVersion}, ResourceVersion in object meta: ${String(om.resourceVersion)}`,
      );
    }
    const policy =
      o.propagationPolicy ?? (o.orphanDependents === true ? 'Orphan' : o.orphanDependents === false ? 'Background' : undefined);
    if (policy !== undefined && !['Foreground', 'Background', 'Orphan'].includes(policy)) {
      throw invalid('DeleteOptions', 'meta.k8s.io', '', [
        {
          type: 'FieldValueNotSupported',
          field: 'propagationPolicy',
          value: policy,
          hasValue: true,
          detail: 'supported values: "Foreground", "Background", "Orphan", "nil"',
        },
      ]);
    }
    const gr = grKey(def.group, def.plural);
    const finalizers = [...((om.finalizers as string[] | undefined) ?? [])];
    if (gr === NS_GR) {
      // Namespaces are always removed by the namespace controller after their content is gone.
      if (!om.deletionTimestamp && !o.dryRun) {
        const obj = clone(old);
        const m = meta(obj);
        m.deletionTimestamp = now();
        m.deletionGracePeriodSeconds = 0;
        obj.status = { ...((obj.status as Obj | undefined) ?? {}), phase: 'Terminating' };
        m.resourceVersion = String(this.nextRv());
        this.writeStore(def, '', name, obj, 'MODIFIED', old);
        this.enqueueNamespace(name);
        return { obj, deleted: false };
      }
      return { obj: old, deleted: false };
    }
    if (gr === CRD_GR && !finalizers.includes(CRD_CLEANUP_FINALIZER) && !om.deletionTimestamp) finalizers.push(CRD_CLEANUP_FINALIZER);
    if (policy === 'Foreground' && !finalizers.includes(FINALIZER_FOREGROUND)) finalizers.push(FINALIZER_FOREGROUND);
    if (policy === 'Orphan' && !finalizers.includes(FINALIZER_ORPHAN)) finalizers.push(FINALIZER_ORPHAN);
    if (finalizers.length) {
      if (o.dryRun) return { obj: old, deleted: false };
      const obj = clone(old);
      const m = meta(obj);
      const changed = !m.deletionTimestamp || finalizers.length !== ((m.finalizers as string[] | undefined) ?? []).length;
      if (!changed) return { obj: old, deleted: false };
      if (!m.deletionTimestamp) {
        m.deletionTimestamp = now();
        m.deletionGracePeriodSeconds = 0;
      }
      m.finalizers = finalizers;
      if (def.hasGeneration) m.generation = Number(m.generation ?? 1) + 1;
      m.resourceVersion = String(this.nextRv());
      this.writeStore(def, nsKey, name, obj, 'MODIFIED', old);
      if (finalizers.includes(FINALIZER_FOREGROUND) || finalizers.includes(FINALIZER_ORPHAN)) this.gc.enqueue(String(m.uid));
      if (gr === CRD_GR) this.enqueueCrdCleanup(name);
      return { obj, deleted: false };
    }
    if (o.dryRun) return { obj: old, deleted: true };
    const obj = clone(old);
    meta(obj).resourceVersion = String(this.nextRv());
    this.removeStore(def, nsKey, name, obj);
    return { obj, deleted: true };
  }

  /** DELETE collection: every selected object, each with delete semantics. */
  deleteCollection(def: ResourceDef, ns: string | undefined, label: LabelSelector, field: FieldSelector, o: DeleteOptions): Entry[] {
    const { entries } = this.list(def, ns, label, field, 0, undefined);
    const out: Entry[] = [];
    for (const e of entries) {
      const m = e.obj.metadata as Obj;
      try {
        const r = this.delete(def, String(m.namespace ?? ''), String(m.name), o);
        out.push({ obj: r.obj, rv: Number((r.obj.metadata as Obj).resourceVersion) });
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- CRDs

  private onCrdWritten(crd: Obj): void {
    const m = crd.metadata as Obj;
    if (m.deletionTimestamp) return;
    // Validated when written; serving it needs only its resource definition.
    const { def } = crdToResource(crd, { schemas: false });
    if (!def) return;
    const existingDef = this.resources.get(grKey(def.group, def.plural));
    if (existingDef && existingDef.builtin) return;
    this.register(def);
    const status = (crd.status ?? {}) as Obj;
    const names = (crd.spec as Obj).names as Obj;
    const conds = (Array.isArray(status.conditions) ? status.conditions : []) as Obj[];
    const hasTrue = (t: string): boolean => conds.some((c) => c.type === t && c.status === 'True');
    const stored = (status.storedVersions as string[] | undefined) ?? [];
    const acceptedNames = { ...names, singular: def.singular, listKind: def.listKind };
    if (
      hasTrue('Established') &&
      hasTrue('NamesAccepted') &&
      stored.includes(def.storageVersion) &&
      stableStringify(status.acceptedNames) === stableStringify(acceptedNames)
    )
      return;
    const t = now();
    const newStatus: Obj = {
      acceptedNames,
      conditions: [
        { type: 'NamesAccepted', status: 'True', lastTransitionTime: t, reason: 'NoConflicts', message: 'no conflicts found' },
        {
          type: 'Established',
          status: 'True',
          lastTransitionTime: t,
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
        },
      ],
      storedVersions: stored.includes(def.storageVersion) ? stored : [...stored, def.storageVersion],
    };
    const crdDef = this.resources.get(CRD_GR)!;
    const e = this.store(CRD_GR).get('', String(m.name))!;
    const obj = clone(e.obj);
    obj.status = newStatus;
    meta(obj).resourceVersion = String(this.nextRv());
    this.writeStore(crdDef, '', String(m.name), obj, 'MODIFIED', e.obj);
  }

  private onCrdGone(crd: Obj): void {
    const spec = (crd.spec ?? {}) as Obj;
    const gr = grKey(String(spec.group ?? ''), String(((spec.names ?? {}) as Obj).plural ?? ''));
    const def = this.resources.get(gr);
    if (def && !def.builtin) {
      this.unregister(gr);
      const s = this.stores.get(gr);
      // Watches of a resource that stops being served end, as they do when kube-apiserver removes the CRD.
      for (const w of [...(s?.watchers ?? [])]) w.stop?.();
      s?.clear(this.rv);
    }
  }

  /** Registers every stored CRD (after persistence replay). */
  registerStoredCrds(): void {
    for (const e of this.store(CRD_GR).objects.values()) {
      // A CRD persisted before a schema check existed is served, as a real server serves what it stored.
      const { def } = crdToResource(e.obj, { schemas: false });
      if (def) this.register(def);
      if ((e.obj.metadata as Obj).deletionTimestamp) this.enqueueCrdCleanup(String((e.obj.metadata as Obj).name));
    }
    for (const e of this.store(NS_GR).objects.values())
      if ((e.obj.metadata as Obj).deletionTimestamp) this.enqueueNamespace(String((e.obj.metadata as Obj).name));
  }

  private enqueueCrdCleanup(name: string, afterMs = 0): void {
    setTimeout(() => this.safely(() => this.cleanupCrd(name)), afterMs).unref();
  }

  /**
   * kube-apiserver's CRD finalizer: deletes every object of the CRD and removes its cleanup finalizer once they are
   * all gone. An object with finalizers gets its deletionTimestamp and stays until they are removed, and so does the
   * CRD (Terminating), as on a real cluster.
   */
  private cleanupCrd(name: string): void {
    if (this.closed) return;
    const e = this.store(CRD_GR).get('', name);
    if (!e || !(e.obj.metadata as Obj).deletionTimestamp) return;
    const spec = (e.obj.spec ?? {}) as Obj;
    const gr = grKey(String(spec.group ?? ''), String(((spec.names ?? {}) as Obj).plural ?? ''));
    const def = this.resources.get(gr);
    if (def && !def.builtin) {
      const s = this.store(gr);
      for (const entry of [...s.objects.values()]) {
        const m = entry.obj.metadata as Obj;
        if (m.deletionTimestamp) continue;
        try {
          this.delete(def, def.namespaced ? String(m.namespace) : '', String(m.name), { propagationPolicy: 'Background' });
        } catch {
          /* gone meanwhile */
        }
      }
      if (s.objects.size > 0) {
        this.enqueueCrdCleanup(name, 50);
        return;
      }
    }
    this.removeFinalizer(CRD_GR, '', name, CRD_CLEANUP_FINALIZER);
  }

  /** Runs background work (GC, namespace and CRD cleanup) without ever crashing the hosting process. */
  safely(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      process.stderr.write(`local-apiserver: background task failed: ${(e as Error)?.stack ?? String(e)}\n`);
    }
  }

  // ---------------------------------------------------------------- namespaces & GC

  private enqueueNamespace(name: string): void {
    setTimeout(() => this.safely(() => this.finalizeNamespace(name)), 5).unref();
  }

  private finalizeNamespace(name: string): void {
    if (this.closed) return;
    const nsEntry = this.store(NS_GR).get('', name);
    if (!nsEntry || !(nsEntry.obj.metadata as Obj).deletionTimestamp) return;
    let remaining = 0;
    for (const [gr, def] of this.resources) {
      if (!def.namespaced) continue;
      const s = this.store(gr);
      const m = s.byNs.get(name);
      if (!m) continue;
      for (const e of [...m.values()]) {
        remaining++;
        if (!(e.obj.metadata as Obj).deletionTimestamp) {
          try {
            this.delete(def, name, String((e.obj.metadata as Obj).name), { propagationPolicy: 'Background' });
          } catch {
            /* already gone */
          }
        }
      }
    }
    if (remaining > 0) {
      let left = 0;
      for (const [gr, def] of this.resources) if (def.namespaced) left += this.store(gr).byNs.get(name)?.size ?? 0;
      if (left > 0) {
        setTimeout(() => this.safely(() => this.finalizeNamespace(name)), 20).unref();
        return;
      }
    }
    const def = this.resources.get(NS_GR)!;
    const cur = this.store(NS_GR).get('', name);
    if (!cur) return;
    const fins = (cur.obj.metadata as Obj).finalizers as string[] | undefined;
    if (fins && fins.length) {
      setTimeout(() => this.safely(() => this.finalizeNamespace(name)), 20).unref();
      return;
    }
    const obj = clone(cur.obj);
    obj.spec = { ...((obj.spec as Obj | undefined) ?? {}), finalizers: [] };
    meta(obj).resourceVersion = String(this.nextRv());
    this.removeStore(def, '', name, obj);
  }

  /** Removes the ownerReference to `ownerUid` from a dependent (GC orphaning). */
  dropOwnerRef(gr: string, key: string, ownerUid: string): void {
    const def = this.resources.get(gr);
    const e = this.store(gr).objects.get(key);
    if (!def || !e) return;
    const obj = clone(e.obj);
    const m = meta(obj);
    const refs = ((m.ownerReferences as Obj[] | undefined) ?? []).filter((r) => r.uid !== ownerUid);
    if (refs.length) m.ownerReferences = refs;
    else delete m.ownerReferences;
    m.resourceVersion = String(this.nextRv());
    this.writeStore(def, def.namespaced ? String(m.namespace) : '', String(m.name), obj, 'MODIFIED', e.obj);
  }

  /** Removes one finalizer (deleting the object when it was the last one and deletion is pending). */
  removeFinalizer(gr: string, ns: string, name: string, finalizer: string): void {
    const def = this.resources.get(gr);
    const e = this.store(gr).get(ns, name);
    if (!def || !e) return;
    const fins = ((e.obj.metadata as Obj).finalizers as string[] | undefined) ?? [];
    if (!fins.includes(finalizer)) return;
    const obj = clone(e.obj);
    const rest = fins.filter((f) => f !== finalizer);
    if (rest.length) meta(obj).finalizers = rest;
    else delete meta(obj).finalizers;
    meta(obj).resourceVersion = String(this.nextRv());
    if (!rest.length && (obj.metadata as Obj).deletionTimestamp) this.removeStore(def, ns, name, obj);
    else this.writeStore(def, ns, name, obj, 'MODIFIED', e.obj);
  }
}

function lastKeyOf(out: Entry[], _keys: string[], _i: number): string | undefined {
  const last = out[out.length - 1];
  if (!last) return undefined;
  const m = last.obj.metadata as Obj;
  return m.namespace ? `${String(m.namespace)}/${String(m.name)}` : String(m.name);
}

/** Orders metadata keys like the API server's JSON encoder (alphabetical for unstructured objects). */
function normalizeMeta(obj: Obj): Obj {
  const m = obj.metadata as Obj;
  const sorted: Obj = {};
  for (const k of Object.keys(m).sort()) if (m[k] !== undefined && m[k] !== null) sorted[k] = m[k];
  const out: Obj = {};
  for (const k of Object.keys(obj).sort()) out[k] = k === 'metadata' ? sorted : obj[k];
  return out;
}

function pathSegments(field: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const part of field.split('.')) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) return [];
    if (m[1]) out.push(m[1]);
    for (const idx of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}

function valueAt(o: unknown, segs: Array<string | number>): unknown {
  let cur = o;
  for (const s of segs) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[s];
  }
  return cur;
}

/** Whether the value at a field path is the same in both objects (and present in the old one). */
function sameAt(a: Obj, b: Obj, field: string): boolean {
  const segs = pathSegments(field);
  if (!segs.length) return false;
  const parentSegs = segs.slice(0, -1);
  const va = valueAt(a, segs);
  const vb = valueAt(b, segs);
  if (va === undefined && vb === undefined) return stableStringify(valueAt(a, parentSegs)) === stableStringify(valueAt(b, parentSegs));
  return stableStringify(va) === stableStringify(vb);
}
