// Prometheus metrics of one manager (its own Registry, so several managers in one process do not clash).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { resourceName, type ResourceType } from '../api/kube.js';
import type { DeleteOptions, KubeClient, ListOptions, PatchOptions, WatchEvent, WatchOptions, WriteOptions } from './pure/types.js';
import type { KubeObject } from '../api/kube.js';
import { apiErrorCode } from './pure/errors.js';

/** The metrics a manager exports on /metrics. */
export interface RuntimeMetrics {
  readonly registry: Registry;
  /** Reconciles by controller and result (success, requeue, error, terminal). */
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  /** Reconcile duration in seconds by controller. */
  readonly reconcileDuration: Histogram<'controller'>;
  /** Reconcile errors by controller. */
  readonly reconcileErrors: Counter<'controller'>;
  /** Keys waiting in each controller's queue. */
  readonly queueDepth: Gauge<'controller'>;
  /** Retries scheduled after errors by controller. */
  readonly queueRetries: Counter<'controller'>;
  /** API requests by verb, resource and HTTP code (0 = network error). */
  readonly apiRequests: Counter<'verb' | 'resource' | 'code'>;
  /** Informer watch restarts by resource and reason. */
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  /** 1 while this process holds the leader lease. */
  readonly leader: Gauge;
}

/** Creates a fresh registry with the runtime's metrics (and Node process metrics unless disabled). */
export function createMetrics(opts: { prefix?: string; processMetrics?: boolean } = {}): RuntimeMetrics {
  const registry = new Registry();
  const p = opts.prefix ?? 'inplace_';
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
  const registers = [registry];
  return {
    registry,
    reconcileTotal: new Counter({
      name: `${p}reconcile_total`,
      help: 'Reconciles by controller and result.',
      labelNames: ['controller', 'result'],
      registers,
    }),
    reconcileDuration: new Histogram({
      name: `${p}reconcile_duration_seconds`,
      help: 'Duration of reconciles.',
      labelNames: ['controller'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    reconcileErrors: new Counter({
      name: `${p}reconcile_errors_total`,
      help: 'Reconciles that threw.',
      labelNames: ['controller'],
      registers,
    }),
    queueDepth: new Gauge({ name: `${p}workqueue_depth`, help: 'Keys waiting in the work queue.', labelNames: ['controller'], registers }),
    queueRetries: new Counter({
      name: `${p}workqueue_retries_total`,
      help: 'Keys re-queued with backoff after an error.',
      labelNames: ['controller'],
      registers,
    }),
    apiRequests: new Counter({
      name: `${p}api_requests_total`,
      help: 'API server requests by verb, resource and code.',
      labelNames: ['verb', 'resource', 'code'],
      registers,
    }),
    watchRestarts: new Counter({
      name: `${p}watch_restarts_total`,
      help: 'Informer watch restarts by reason.',
      labelNames: ['resource', 'reason'],
      registers,
    }),
    leader: new Gauge({ name: `${p}leader`, help: '1 while this process is the leader.', registers }),
  };
}

/** Wraps a client so that every call counts in `api_requests_total` (verb, resource, code). */
export function instrumentClient(client: KubeClient, metrics: RuntimeMetrics): KubeClient {
  const count = async <R>(verb: string, res: ResourceType, fn: () => Promise<R>, okCode: (r: R) => number = () => 200): Promise<R> => {
    try {
      const r = await fn();
      metrics.apiRequests.inc({ verb, resource: resourceName(res), code: String(okCode(r)) });
      return r;
    } catch (err) {
      metrics.apiRequests.inc({ verb, resource: resourceName(res), code: String(apiErrorCode(err) ?? 0) });
      throw err;
    }
  };
  return {
    get: <T extends KubeObject>(res: ResourceType, ns: string | undefined, name: string) =>
      count(
        'get',
        res,
        () => client.get<T>(res, ns, name),
        (r) => (r === undefined ? 404 : 200),
      ),
    list: <T extends KubeObject>(res: ResourceType, ns: string | undefined, opts?: ListOptions) =>
      count('list', res, () => client.list<T>(res, ns, opts)),
    create: <T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions) =>
      count(
        'create',
        res,
        () => client.create<T>(res, obj, opts),
        () => 201,
      ),
    update: <T extends KubeObject>(res: ResourceType, obj: T, opts?: WriteOptions) =>
      count('update', res, () => client.update<T>(res, obj, opts)),
    patch: <T extends KubeObject>(res: ResourceType, ns: string | undefined, name: string, body: unknown, opts: PatchOptions) =>
      count('patch', res, () => client.patch<T>(res, ns, name, body, opts)),
    delete: (res: ResourceType, ns: string | undefined, name: string, opts?: DeleteOptions) =>
      count('delete', res, () => client.delete(res, ns, name, opts)),
    watch: <T extends KubeObject>(res: ResourceType, ns: string | undefined, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void) =>
      count('watch', res, () => client.watch<T>(res, ns, opts, onEvent)),
    resolve: (apiGroup: string, kind: string) => client.resolve(apiGroup, kind),
  };
}
