// Public interfaces of the controller runtime. Controllers, the updater SDK and the CLI code against these;
// src/runtime/*.ts implements them. Generic: nothing here knows about plans or machines.
import type { KubeObject, ResourceType } from '../../api/kube.js';

/** Options of a list call. */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

/** Result of a list call. */
export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

/** Options of a write call. */
export interface WriteOptions {
  /** Write to the status subresource. */
  subresource?: 'status';
  dryRun?: boolean;
  fieldManager?: string;
}

/** Patch content types the client sends. */
export type PatchType = 'merge' | 'json' | 'apply';

/** Options of a patch call. */
export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** Server-side apply only. */
  force?: boolean;
}

/** Options of a delete call. */
export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** A watch event as the API server sends it. */
export interface WatchEvent<T = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** Options of a watch call. */
export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
}

/** A running watch; `done` settles when the stream ends (resolves on clean end, rejects with the error). */
export interface WatchHandle {
  abort(): void;
  done: Promise<void>;
}

/**
 * A dynamic Kubernetes client: the only way controllers talk to an API server.
 * `namespace` is ignored for cluster-scoped resources. Errors are `KubeApiError`s (see errors.ts).
 */
export interface KubeClient {
  get<T extends KubeObject = KubeObject>(res: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(res: ResourceType, namespace: string | undefined, opts?: ListOptions): Promise<ListResult<T>>;
  create<T extends KubeObject = KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T>;
  update<T extends KubeObject = KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions): Promise<T>;
  patch<T extends KubeObject = KubeObject>(
    res: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T>;
  delete(res: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void>;
  watch<T extends KubeObject = KubeObject>(
    res: ResourceType,
    namespace: string | undefined,
    opts: WatchOptions,
    onEvent: (e: WatchEvent<T>) => void,
  ): Promise<WatchHandle>;
  /** Resolves the served (preferred) version of group+kind through discovery (cached). */
  resolve(apiGroup: string, kind: string): Promise<ResourceType>;
}

/** What a reconcile asks for next. */
export type Action = { kind: 'requeue'; afterMs: number } | { kind: 'awaitChange' };
/** Constructors of reconcile results. */
export const Action = {
  /** Reconcile this key again after `ms` (in addition to any change). */
  requeue: (ms: number): Action => ({ kind: 'requeue', afterMs: ms }),
  /** Reconcile again only when a watched object changes. */
  awaitChange: (): Action => ({ kind: 'awaitChange' }),
};

/** Work-queue key of a namespaced or cluster-scoped object. */
export interface ObjectKey {
  namespace?: string;
  name: string;
}

/**
 * Read-only cache of one resource kind, fed by an informer. Cached objects are frozen and shared:
 * `get` returns a mutable deep copy (snapshot/mutate/patch it freely); `list`, `byLabel` and `select` return
 * the frozen objects themselves (mutating them throws; `structuredClone` one before changing it).
 */
export interface Store<T extends KubeObject = KubeObject> {
  /** A mutable deep copy of the cached object, or undefined. */
  get(namespace: string | undefined, name: string): T | undefined;
  /** The frozen cached object itself (no copy): for reads on hot paths; clone before mutating. */
  peek(namespace: string | undefined, name: string): T | undefined;
  /** Every cached object (of one namespace when given); frozen. */
  list(namespace?: string): T[];
  /** Objects whose label `key` equals `value` (indexed). */
  byLabel(key: string, value: string, namespace?: string): T[];
  /** Objects matching a label selector string (k8s syntax). */
  select(selector: string, namespace?: string): T[];
  /** Adds a secondary index named `name` (client-go's Indexers); a name already added is kept. */
  addIndex(name: string, valuesOf: (obj: T) => readonly string[]): void;
  /** Objects whose index `name` gives `value`; frozen. Throws when the index was not added. */
  byIndex(name: string, value: string): T[];
}

/**
 * The rest (ms) a key takes after a run that took `lastRunMs` of wall time and `lastRunCpuMs` of the process's CPU
 * meanwhile (waits on the API server cost wall time, not CPU).
 */
export type CooldownFn = (lastRunMs: number, lastRunCpuMs: number, key: string) => number;

/** Maps an event on a watched object to the keys of the primary objects to reconcile. */
export type Mapper<T extends KubeObject = KubeObject> = (obj: T) => ObjectKey[];

/** What a reconcile function gets besides its key. */
export interface ReconcileContext {
  /** Child logger bound to the controller and key. */
  log: Logger;
}

/** A reconcile function: level-based, derives everything from current state. */
export type ReconcileFn = (key: ObjectKey, ctx: ReconcileContext) => Promise<Action>;

/** Minimal logger interface (pino-compatible). */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A shared informer: list+watch of one resource (optionally one namespace / label selector) into a Store. */
export interface Informer<T extends KubeObject = KubeObject> {
  readonly store: Store<T>;
  /** Registers a handler for every add/update/delete (after the initial list too). */
  onChange(handler: (obj: T, old: T | undefined, type: 'add' | 'update' | 'delete') => void): void;
  /** Resolves once the initial list is in the store. */
  synced(): Promise<void>;
}

/** A hold on one scope of a ScopedCache: the scope stays cached until every lease on it ended. */
export interface ScopeLease {
  /** Resolves once the scope's objects are listed into the store (never rejects; retries like any informer). */
  readonly synced: Promise<void>;
  /** Ends the hold (idempotent). */
  end(): void;
}

/**
 * An informer of one resource that caches only the label values something holds (runtime/scoped.ts): each
 * (namespace, value) its own label-selected list+watch, merged into `store`, dropped once idle and not kept.
 */
export interface ScopedCache<T extends KubeObject = KubeObject> extends Informer<T> {
  /** The label whose values scope the cache. */
  readonly labelKey: string;
  /** Holds a scope, starting its list+watch when it is not cached. */
  acquire(namespace: string, value: string): ScopeLease;
  /** Which scopes stay cached while no lease holds them. */
  keepWhile(keep: (namespace: string, value: string) => boolean): void;
  /** Whether the scope is cached. */
  has(namespace: string, value: string): boolean;
}

/** A running controller. */
export interface Controller {
  readonly name: string;
  /** Adds a watch at run time (e.g. a task kind first seen in a template ref); idempotent per resource. */
  watch<T extends KubeObject>(res: ResourceType, mapper: Mapper<T>): Promise<void>;
  /** Adds a watch of a scoped cache at run time (its events from every scope it holds); idempotent per cache. */
  watchScoped<T extends KubeObject>(cache: ScopedCache<T>, mapper: Mapper<T>): void;
  /** Enqueues a key by hand (e.g. from a timer owned by the controller). */
  enqueue(key: ObjectKey, afterMs?: number): void;
}

/** Fluent builder of a controller (controller-runtime style). */
export interface ControllerBuilder<T extends KubeObject = KubeObject> {
  /** The primary resource: its own changes enqueue its key. */
  for(res: ResourceType): ControllerBuilder<T>;
  /** A resource whose controller ownerReference points at the primary: changes enqueue the owner. */
  owns(res: ResourceType): ControllerBuilder<T>;
  /** Any other resource, mapped to primary keys. */
  watches<W extends KubeObject>(res: ResourceType, mapper: Mapper<W>): ControllerBuilder<T>;
  /** Number of keys reconciled in parallel (default 1; one key never runs twice at once). */
  withConcurrency(n: number): ControllerBuilder<T>;
  /**
   * How long a key rests after a run (default 0): events meanwhile collapse into one run at the end. For keys whose
   * reconcile is expensive and whose events are many (one plan over thousands of machines).
   */
  withCooldown(fn: CooldownFn): ControllerBuilder<T>;
  /** Completes the builder; the controller starts with the manager. */
  reconcile(fn: ReconcileFn): Controller;
}

/** Records Kubernetes Events (fire-and-forget: failures are logged, never thrown). */
export interface EventRecorder {
  /** An Event `regarding` obj; `related` names a second object it involves (events.k8s.io/v1 `related`). */
  event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string, related?: KubeObject): void;
}

/** An RBAC PolicyRule as a component declares what it needs (cdk8s synthesizes Roles from these). */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** Owns the client, the shared informers, metrics, events, leader election and the controllers of one process. */
export interface Manager {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly events: EventRecorder;
  /** Namespace the manager is scoped to (undefined = all namespaces). */
  readonly namespace: string | undefined;
  /** The shared informer of a resource (created on first use; started with the manager or at once if it runs). */
  informer<T extends KubeObject = KubeObject>(res: ResourceType): Informer<T>;
  /** The scoped cache of a resource by a label (created on first use, one per resource and label; runtime/scoped.ts). */
  scopedInformer<T extends KubeObject = KubeObject>(res: ResourceType, labelKey: string): ScopedCache<T>;
  /** Starts building a controller. */
  controller<T extends KubeObject = KubeObject>(name: string): ControllerBuilder<T>;
  /** Starts informers and (after winning leader election when enabled) the controllers. */
  start(): Promise<void>;
  /** Stops everything; resolves when in-flight reconciles finished. */
  stop(): Promise<void>;
}

/** A deployable component (one Deployment): its name, the RBAC it needs, and how it registers its controllers. */
export interface Component {
  name: string;
  rbac: PolicyRule[];
  setup(mgr: Manager): void | Promise<void>;
}
