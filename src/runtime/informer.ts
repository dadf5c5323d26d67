// Informer: list, then watch from the list's resourceVersion into a Store; never gives up.
import type { KubeObject, ResourceType } from '../api/kube.js';
import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { KubeApiError, type StatusBody } from './pure/errors.js';
import { errorFields, noopLogger } from './log.js';
import { MemoryStore, objectKey } from './store.js';
import type { Informer, KubeClient, Logger, WatchEvent, WatchHandle } from './pure/types.js';

/** Why a watch was restarted (reported to `onRestart`). */
export type RestartReason = 'gone' | 'error' | 'end' | 'watchdog';

/** Change types delivered to handlers. */
export type ChangeType = 'add' | 'update' | 'delete';

/** Options of an informer. */
export interface InformerOptions {
  /** Only this namespace (ignored for cluster-scoped resources). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  log?: Logger;
  /** Restart a watch that delivered nothing (not even a bookmark) for this long (default 5 min). */
  watchdogMs?: number;
  /** Backoff between restarts after errors or stream ends (default 200 ms .. 30 s, jittered). */
  backoff?: BackoffOptions;
  /** Page size of the list calls (default 500). */
  pageSize?: number;
  /** Server-side watch timeout (default random 5–10 min, like client-go, so that watches spread out). */
  watchTimeoutSeconds?: number;
  /**
   * A watch that ends after at least this long (or after any event) counts as healthy and is re-opened from the base delay;
   * shorter, silent watches back off like errors (client-go's "very short watch" rule; default 1 s).
   */
  healthyWatchMs?: number;
  /** Called on every restart (metrics). */
  onRestart?: (reason: RestartReason) => void;
  /**
   * Keep `metadata.managedFields` on the cached objects (default false: dropped on the way in, as controller-runtime's
   * TransformStripManagedFields does). A real API server writes an entry per field manager on every object, often as
   * large as the rest of it; no controller here reads them from a cache (a GET still has them).
   */
  keepManagedFields?: boolean;
  /** Index the store by label (default true; false: byLabel scans, for a store nobody reads by label). */
  labelIndex?: boolean;
}

/** A handler of changes; `old` is the previous cached version for updates and deletes. */
export type ChangeHandler<T> = (obj: T, old: T | undefined, type: ChangeType) => void;

/**
 * A list+watch informer over one resource. Re-lists on 410 Gone (emitting deletes for objects that
 * disappeared and updates for objects that changed meanwhile), restarts the watch from the last seen
 * resourceVersion with capped, jittered exponential backoff after any other error or end of stream,
 * and restarts a watch that stayed silent longer than the watchdog allows.
 */
export class SharedInformer<T extends KubeObject = KubeObject> implements Informer<T> {
  readonly store: MemoryStore<T>;
  private readonly handlers: ChangeHandler<T>[] = [];
  private readonly log: Logger;
  private readonly stopCtl = new AbortController();
  private running: Promise<void> | undefined;
  private handle: WatchHandle | undefined;
  private rv = '';
  private synced_ = false;
  private resolveSynced!: () => void;
  private readonly syncedP = new Promise<void>((r) => (this.resolveSynced = r));
  private restarts_ = 0;

  constructor(
    private readonly client: KubeClient,
    readonly resource: ResourceType,
    private readonly opts: InformerOptions = {},
  ) {
    this.store = new MemoryStore<T>({ labelIndex: opts.labelIndex ?? true });
    this.log = (opts.log ?? noopLogger).child({ informer: resource.plural, ...(opts.namespace ? { namespace: opts.namespace } : {}) });
  }

  /** True once the initial list is in the store. */
  get hasSynced(): boolean {
    return this.synced_;
  }

  /** The resourceVersion the store is up to date with. */
  get lastResourceVersion(): string {
    return this.rv;
  }

  /** How many times the watch was restarted. */
  get restarts(): number {
    return this.restarts_;
  }

  /** Whether `start` was called and `stop` was not. */
  get isRunning(): boolean {
    return this.running !== undefined && !this.stopCtl.signal.aborted;
  }

  /** Registers a handler; objects already cached are replayed to it as `add` (like client-go). */
  onChange(handler: ChangeHandler<T>): void {
    this.handlers.push(handler);
    for (const [, o] of this.store.entries()) this.call(handler, o, undefined, 'add');
  }

  synced(): Promise<void> {
    return this.syncedP;
  }

  /** Starts list+watch in the background (idempotent). */
  start(): void {
    if (this.running || this.stopCtl.signal.aborted) return;
    this.running = this.run();
  }

  /** Stops the watch loop and waits for it to exit. */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    this.handle?.abort();
    await this.running;
  }

  private get ns(): string | undefined {
    return this.resource.namespaced ? this.opts.namespace : undefined;
  }

  private async run(): Promise<void> {
    const signal = this.stopCtl.signal;
    let needList = true;
    let failures = 0;
    let goneInARow = 0;
    while (!signal.aborted) {
      let reason: RestartReason;
      let healthy = false;
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        const r = await this.watchOnce();
        if (r.outcome === 'stopped') break;
        // Set before a failure is thrown: a watch that worked and then broke (a dropped connection) is healthy too.
        healthy = r.healthy;
        if (r.failure !== undefined) throw r.failure;
        reason = r.outcome;
        if (reason === 'gone') needList = true;
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof KubeApiError && err.code === 410) {
          needList = true;
          reason = 'gone';
        } else {
          reason = 'error';
          if (healthy) this.log.debug({ ...errorFields(err) }, 'watch failed after working; resuming from the last resourceVersion');
          else this.log.warn({ ...errorFields(err), needList }, 'list/watch failed; retrying with backoff');
        }
      }
      this.restarts_++;
      this.opts.onRestart?.(reason);
      // 410 is the protocol telling us to re-list: do it at once (but back off if re-listing keeps ending in 410).
      // Anything else backs off, growing while the watch stays unhealthy.
      if (healthy) goneInARow = 0;
      if (reason === 'gone' && goneInARow++ === 0) continue;
      failures = healthy ? 1 : failures + 1;
      const delay = backoffDelay(failures, this.opts.backoff);
      this.log.debug({ reason, delayMs: delay, attempt: failures }, 'restarting watch');
      await sleep(delay, signal);
    }
  }

  /** Lists everything (paginated) and reconciles the store with the result, emitting the differences. */
  private async relist(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.client.list<T>(this.resource, this.ns, {
        limit: this.opts.pageSize ?? 500,
        ...(cont ? { continue: cont } : {}),
        ...(this.opts.labelSelector ? { labelSelector: this.opts.labelSelector } : {}),
        ...(this.opts.fieldSelector ? { fieldSelector: this.opts.fieldSelector } : {}),
      });
      items.push(...page.items);
      rv = page.resourceVersion;
      cont = page.continue;
    } while (cont && !this.stopCtl.signal.aborted);
    if (this.stopCtl.signal.aborted) return;

    const seen = new Set<string>();
    for (const item of items) {
      seen.add(objectKey(item));
      this.upsert(item);
    }
    const gone: [string, T][] = [];
    for (const [k, o] of this.store.entries()) if (!seen.has(k)) gone.push([k, o]);
    for (const [, o] of gone) {
      this.store.remove(o.metadata.namespace, o.metadata.name ?? '');
      this.emit(o, o, 'delete');
    }
    this.rv = rv;
    this.log.debug({ count: items.length, resourceVersion: rv }, 'listed');
    if (!this.synced_) {
      this.synced_ = true;
      this.resolveSynced();
    }
  }

  private upsert(obj: T): void {
    if (!this.opts.keepManagedFields) dropManagedFields(obj);
    const old = this.store.peek(obj.metadata.namespace, obj.metadata.name ?? '');
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    this.store.upsert(obj);
    this.emit(obj, old, old ? 'update' : 'add');
  }

  /**
   * Runs one watch until it ends and says why, whether it was healthy (delivered events or lasted `healthyWatchMs`,
   * however it ended) and the failure that ended it, if any. Rejects only when the watch could not be opened.
   */
  private async watchOnce(): Promise<{ outcome: RestartReason | 'stopped'; healthy: boolean; failure?: unknown }> {
    const signal = this.stopCtl.signal;
    const started = Date.now();
    let last = started;
    let events = 0;
    let outcome: RestartReason | 'stopped' | undefined;
    let failure: unknown;
    const watchdogMs = this.opts.watchdogMs ?? 300_000;
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);

    const onEvent = (e: WatchEvent<T>): void => {
      if (outcome) return;
      last = Date.now();
      if (e.type !== 'ERROR') events++;
      switch (e.type) {
        case 'ADDED':
        case 'MODIFIED':
          this.upsert(e.object);
          break;
        case 'DELETED': {
          if (!this.opts.keepManagedFields) dropManagedFields(e.object);
          const old = this.store.remove(e.object.metadata.namespace, e.object.metadata.name ?? '');
          this.emit(e.object, old, 'delete');
          break;
        }
        case 'BOOKMARK':
          break;
        case 'ERROR': {
          const status = e.object as unknown as StatusBody;
          if (status.code === 410) outcome = 'gone';
          else {
            outcome = 'error';
            failure = new KubeApiError(`watch ${this.resource.plural}`, status.code ?? 500, status);
          }
          this.handle?.abort();
          return;
        }
      }
      const rv = e.object?.metadata?.resourceVersion;
      if (rv) this.rv = rv;
    };

    this.handle = await this.client.watch<T>(
      this.resource,
      this.ns,
      {
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds,
        ...(this.opts.labelSelector ? { labelSelector: this.opts.labelSelector } : {}),
        ...(this.opts.fieldSelector ? { fieldSelector: this.opts.fieldSelector } : {}),
      },
      onEvent,
    );
    // Events may arrive before the handle is returned: honour a stop or an ERROR seen meanwhile.
    if (signal.aborted || outcome) this.handle.abort();
    const checkEvery = Math.max(5, Math.min(watchdogMs / 4, 30_000));
    const watchdog = setInterval(() => {
      if (!outcome && Date.now() - last > watchdogMs) {
        this.log.warn({ silentMs: Date.now() - last }, 'watch silent for too long; restarting it');
        outcome = 'watchdog';
        this.handle?.abort();
      }
    }, checkEvery);
    try {
      await this.handle.done;
    } catch (err) {
      // The stream broke (e.g. the connection was dropped): judged by the same rule as a stream that ended cleanly.
      // Counting every drop as a failure grew the delay towards 30 s under periodic drops even though each watch
      // worked, and the informer then spent most of its time disconnected (a stalled e2e faults run).
      failure ??= err;
    } finally {
      clearInterval(watchdog);
      this.handle = undefined;
    }
    if (signal.aborted) return { outcome: 'stopped', healthy: true };
    const healthy = events > 0 || Date.now() - started >= (this.opts.healthyWatchMs ?? 1_000);
    if (failure !== undefined) return { outcome: 'error', healthy, failure };
    return { outcome: outcome ?? 'end', healthy };
  }

  private emit(obj: T, old: T | undefined, type: ChangeType): void {
    for (const h of this.handlers) this.call(h, obj, old, type);
  }

  private call(h: ChangeHandler<T>, obj: T, old: T | undefined, type: ChangeType): void {
    try {
      h(obj, old, type);
    } catch (err) {
      this.log.error({ ...errorFields(err), type, key: objectKey(obj) }, 'change handler threw');
    }
  }
}

/** Creates (but does not start) an informer. */
export function createInformer<T extends KubeObject = KubeObject>(
  client: KubeClient,
  res: ResourceType,
  opts?: InformerOptions,
): SharedInformer<T> {
  return new SharedInformer<T>(client, res, opts);
}

/** Deletes metadata.managedFields from an object fresh from the API (not yet frozen or shared). */
function dropManagedFields(obj: KubeObject): void {
  if (obj.metadata && 'managedFields' in obj.metadata) delete obj.metadata.managedFields;
}
