// Public interfaces of the controller runtime. Controllers, the updater SDK and the CLI code against these;
// src/runtime/*.ts implements them. Generic: nothing here knows about plans or machines.
import type { KubeObject, ResourceType } from '../api/index.js';

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
  patch<T extends KubeObject = KubeObject>(res: ResourceType, namespace: string | undefined, name: string, body: unknown, opts: PatchOptions): Promise<T>;
  delete(res: ResourceType, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void>;
  watch<T extends KubeObject = KubeObject>(res: ResourceType, namespace: string | undefined, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void): Promise<WatchHandle>;
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

/** Read-only cache of one resource kind, fed by an informer. */
export interface Store<T extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): T[];
  /** Objects whose label `key` equals `value` (indexed). */
  byLabel(key: string, value: string, namespace?: string): T[];
  /** Objects matching a label selector string (k8s syntax). */
  select(selector: string, namespace?: string): T[];
}
