// An in-memory KubeClient for unit tests of the runtime: the resourceVersion, conflict, watch-history and
// 410 semantics of an API server, plus knobs to break watches and calls. Integration tests use the real
// protocol through startTestEnv instead.
import type { KubeObject, ResourceType } from '../../src/api/index.js';
import { resourceKey } from '../../src/api/index.js';
import { KubeApiError } from '../../src/runtime/pure/errors.js';
import { matchesSelector } from '../../src/runtime/pure/labels.js';
import { applyMergePatch } from '../../src/runtime/patch.js';
import type {
  DeleteOptions,
  KubeClient,
  ListOptions,
  ListResult,
  PatchOptions,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from '../../src/runtime/pure/types.js';

interface Watcher {
  res: string;
  namespace: string | undefined;
  labelSelector: string | undefined;
  onEvent: (e: WatchEvent) => void;
  end: (err?: unknown) => void;
}

type Verb = 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'watch';

const notFound = (op: string, name: string): KubeApiError =>
  new KubeApiError(op, 404, { reason: 'NotFound', code: 404, message: `"${name}" not found` });

/** In-memory API server behind the KubeClient interface. */
export class FakeClient implements KubeClient {
  private rv = 100;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly history = new Map<string, { rv: number; event: WatchEvent }[]>();
  /** Lowest resourceVersion still in the watch history (older watches get 410). */
  private compactedRv = 0;
  private readonly watchers = new Set<Watcher>();
  private readonly failures: { verb: Verb; err: KubeApiError }[] = [];
  /** Every call made, as `verb plural` (for asserting that nothing was sent). */
  readonly calls: { verb: Verb; res: string; name?: string; body?: unknown; opts?: unknown }[] = [];
  /** Served kinds for `resolve`. */
  readonly served: ResourceType[] = [];

  /** Number of open watches. */
  get openWatches(): number {
    return this.watchers.size;
  }

  /** Makes the next call of `verb` fail with an API error of `code`. */
  failNext(verb: Verb, code: number, reason = 'InternalError'): void {
    this.failures.push({ verb, err: new KubeApiError(`${verb} (injected)`, code, { reason, code, message: 'injected failure' }) });
  }

  /** Ends every open watch stream: cleanly, or with `err`. */
  dropWatches(err?: unknown): void {
    for (const w of [...this.watchers]) w.end(err);
  }

  /** Sends a watch ERROR event (a Status with `code`) on every open watch. */
  sendWatchError(code: number, reason = 'Expired'): void {
    for (const w of [...this.watchers])
      w.onEvent({
        type: 'ERROR',
        object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, code } as unknown as KubeObject,
      });
  }

  /** Sends a BOOKMARK at the current resourceVersion on every open watch. */
  sendBookmark(): void {
    for (const w of [...this.watchers]) w.onEvent({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(this.rv) } } });
  }

  /** Forgets the watch history: a watch from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.clear();
  }

  /** Stores an object directly (no events), e.g. to set up state or to simulate changes missed by a watch. */
  seed(res: ResourceType, obj: KubeObject, emit = true): KubeObject {
    const o = structuredClone(obj);
    o.metadata.resourceVersion = String(++this.rv);
    o.metadata.uid ??= `uid-${o.metadata.name}-${this.rv}`;
    o.metadata.generation ??= 1;
    o.kind ??= res.kind;
    o.apiVersion ??= res.group ? `${res.group}/${res.version}` : res.version;
    const existed = this.bucket(res).has(this.key(o));
    this.bucket(res).set(this.key(o), o);
    if (emit) this.emit(res, existed ? 'MODIFIED' : 'ADDED', o);
    return structuredClone(o);
  }

  /** Removes an object directly; with `emit` false the watchers never hear about it (only a re-list will). */
  unseed(res: ResourceType, namespace: string | undefined, name: string, emit = true): void {
    const k = namespace ? `${namespace}/${name}` : name;
    const o = this.bucket(res).get(k);
    if (!o) return;
    this.bucket(res).delete(k);
    o.metadata.resourceVersion = String(++this.rv);
    if (emit) this.emit(res, 'DELETED', o);
  }

  /** The stored object (a copy). */
  peek(res: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.bucket(res).get(namespace ? `${namespace}/${name}` : name);
    return o && structuredClone(o);
  }

  async get<T extends KubeObject>(res: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
    this.record('get', res, name);
    const o = this.bucket(res).get(this.k(res, namespace, name));
    return o && (structuredClone(o) as T);
  }

  async list<T extends KubeObject>(res: ResourceType, namespace: string | undefined, opts: ListOptions = {}): Promise<ListResult<T>> {
    this.record('list', res);
    const items = [...this.bucket(res).values()]
      .filter((o) => !res.namespaced || !namespace || o.metadata.namespace === namespace)
      .filter((o) => !opts.labelSelector || matchesSelector(opts.labelSelector, o.metadata.labels))
      .map((o) => structuredClone(o) as T);
    return { items, resourceVersion: String(this.rv) };
  }

  async create<T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T> {
    this.record('create', res, obj.metadata.name, obj, opts);
    const o = structuredClone(obj);
    if (!o.metadata.name && o.metadata.generateName) o.metadata.name = `${o.metadata.generateName}${(++this.rv).toString(36)}`;
    const k = this.key(o);
    if (this.bucket(res).has(k))
      throw new KubeApiError(`create ${res.plural}`, 409, {
        reason: 'AlreadyExists',
        code: 409,
        message: `"${o.metadata.name}" already exists`,
      });
    o.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    return this.seed(res, o) as T;
  }

  async update<T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T> {
    this.record('update', res, obj.metadata.name, obj, opts);
    const cur = this.bucket(res).get(this.key(obj));
    if (!cur) throw notFound(`update ${res.plural}`, obj.metadata.name ?? '');
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== cur.metadata.resourceVersion)
      throw this.conflict(res, obj.metadata.name);
    const next = structuredClone(obj) as KubeObject;
    if (opts?.subresource === 'status') {
      const keep = structuredClone(cur);
      keep['status'] = next['status'];
      return this.write(res, cur, keep) as T;
    }
    next['status'] = cur['status'];
    return this.write(res, cur, next) as T;
  }

  async patch<T extends KubeObject>(
    res: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T> {
    this.record('patch', res, name, body, opts);
    const cur = this.bucket(res).get(this.k(res, namespace, name));
    if (!cur) throw notFound(`patch ${res.plural}`, name);
    if (opts.type !== 'merge') throw new KubeApiError('patch', 415, { reason: 'UnsupportedMediaType', code: 415 });
    const wantRv = (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wantRv && wantRv !== cur.metadata.resourceVersion) throw this.conflict(res, name);
    const patched = applyMergePatch(cur, body) as KubeObject;
    const next = structuredClone(cur);
    if (opts.subresource === 'status') next['status'] = patched['status'];
    else Object.assign(next, patched, { status: cur['status'] });
    if (next['status'] === undefined) delete next['status'];
    return this.write(res, cur, next) as T;
  }

  async delete(res: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void> {
    this.record('delete', res, name, undefined, opts);
    const cur = this.bucket(res).get(this.k(res, namespace, name));
    if (!cur) throw notFound(`delete ${res.plural}`, name);
    if (cur.metadata.finalizers?.length) {
      const next = structuredClone(cur);
      next.metadata.deletionTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      this.write(res, cur, next);
      return;
    }
    this.unseed(res, cur.metadata.namespace, name);
  }

  async watch<T extends KubeObject>(
    res: ResourceType,
    namespace: string | undefined,
    opts: WatchOptions,
    onEvent: (e: WatchEvent<T>) => void,
  ): Promise<WatchHandle> {
    this.record('watch', res);
    const from = Number(opts.resourceVersion || this.rv);
    let resolveDone!: () => void;
    let rejectDone!: (e: unknown) => void;
    const done = new Promise<void>((a, b) => ((resolveDone = a), (rejectDone = b)));
    const w: Watcher = {
      res: resourceKey(res),
      namespace: res.namespaced ? namespace : undefined,
      labelSelector: opts.labelSelector,
      onEvent: onEvent as (e: WatchEvent) => void,
      end: (err?: unknown) => {
        if (!this.watchers.delete(w)) return;
        if (err) rejectDone(err);
        else resolveDone();
      },
    };
    this.watchers.add(w);
    queueMicrotask(() => {
      if (from < this.compactedRv) {
        w.onEvent({
          type: 'ERROR',
          object: {
            kind: 'Status',
            metadata: {},
            reason: 'Expired',
            code: 410,
            message: `too old resource version: ${from}`,
          } as unknown as KubeObject,
        });
        w.end();
        return;
      }
      for (const h of this.history.get(w.res) ?? [])
        if (h.rv > from && this.matches(w, h.event.object)) w.onEvent(structuredClone(h.event));
    });
    return { abort: () => w.end(), done };
  }

  async resolve(apiGroup: string, kind: string): Promise<ResourceType> {
    const r = this.served.find((s) => s.group === apiGroup && s.kind === kind);
    if (!r) throw new KubeApiError(`resolve ${kind}.${apiGroup}`, 404, { reason: 'NotFound', code: 404 });
    return r;
  }

  private write(res: ResourceType, cur: KubeObject, next: KubeObject): KubeObject {
    const specChanged =
      JSON.stringify({ ...cur, metadata: undefined, status: undefined }) !==
      JSON.stringify({ ...next, metadata: undefined, status: undefined });
    next.metadata.generation = (cur.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    next.metadata.uid = cur.metadata.uid;
    next.metadata.resourceVersion = String(++this.rv);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.bucket(res).delete(this.key(next));
      this.emit(res, 'DELETED', next);
      return structuredClone(next);
    }
    this.bucket(res).set(this.key(next), next);
    this.emit(res, 'MODIFIED', next);
    return structuredClone(next);
  }

  private emit(res: ResourceType, type: WatchEvent['type'], obj: KubeObject): void {
    const rk = resourceKey(res);
    const event: WatchEvent = { type, object: structuredClone(obj) };
    let h = this.history.get(rk);
    if (!h) this.history.set(rk, (h = []));
    h.push({ rv: Number(obj.metadata.resourceVersion), event });
    for (const w of [...this.watchers]) if (w.res === rk && this.matches(w, obj)) w.onEvent(structuredClone(event));
  }

  private matches(w: Watcher, o: KubeObject): boolean {
    return (
      (!w.namespace || o.metadata.namespace === w.namespace) && (!w.labelSelector || matchesSelector(w.labelSelector, o.metadata.labels))
    );
  }

  private conflict(res: ResourceType, name?: string): KubeApiError {
    return new KubeApiError(`write ${res.plural}`, 409, {
      reason: 'Conflict',
      code: 409,
      message: `Operation cannot be fulfilled on ${res.plural} "${name}": the object has been modified`,
    });
  }

  private record(verb: Verb, res: ResourceType, name?: string, body?: unknown, opts?: unknown): void {
    this.calls.push({
      verb,
      res: res.plural,
      ...(name ? { name } : {}),
      ...(body !== undefined ? { body: structuredClone(body) } : {}),
      ...(opts !== undefined ? { opts } : {}),
    });
    const i = this.failures.findIndex((f) => f.verb === verb);
    if (i >= 0) {
      const [f] = this.failures.splice(i, 1);
      throw f!.err;
    }
  }

  private bucket(res: ResourceType): Map<string, KubeObject> {
    const rk = resourceKey(res);
    let b = this.objects.get(rk);
    if (!b) this.objects.set(rk, (b = new Map()));
    return b;
  }

  private key(o: KubeObject): string {
    return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? '');
  }

  private k(res: ResourceType, namespace: string | undefined, name: string): string {
    return res.namespaced && namespace ? `${namespace}/${name}` : name;
  }
}
