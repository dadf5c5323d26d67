// Kubernetes Events (core/v1) with aggregation of repeats and rate limiting; never throws.
import { hostname } from 'node:os';
import { Events, MessageBudget, boundMessage, type KubeObject } from '../api/kube.js';
import { isNotFound } from './pure/errors.js';
import { errorFields, noopLogger } from './log.js';
import type { EventRecorder, KubeClient, Logger } from './pure/types.js';
import { toKubeTime } from './pure/conditions.js';

/** Options of an event recorder. */
export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent` of every event. */
  component: string;
  /** `source.host` / `reportingInstance` (default hostname). */
  host?: string;
  log?: Logger;
  /** Events a single object may burst (default 25), refilled at `perObjectRefillPerSec` (default 0.2/s). */
  perObjectBurst?: number;
  perObjectRefillPerSec?: number;
  /** Process-wide burst (default 100) and refill rate (default 10/s). */
  burst?: number;
  refillPerSec?: number;
  /** Remembered aggregation keys (default 4096, least recently used dropped). */
  cacheSize?: number;
}

class TokenBucket {
  private tokens: number;
  private at = Date.now();
  constructor(
    private readonly burst: number,
    private readonly perSec: number,
  ) {
    this.tokens = burst;
  }
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSec);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

interface Aggregate {
  name: string;
  namespace: string;
  count: number;
  /** Serialises writes of one aggregate so that counts never go backwards. */
  chain: Promise<void>;
}

/** An EventRecorder that also lets callers wait for pending writes (tests, shutdown). */
export interface FlushableEventRecorder extends EventRecorder {
  /** Resolves when every event recorded so far was written (or dropped). */
  flush(): Promise<void>;
  /** Events dropped by the rate limiter so far. */
  readonly dropped: number;
}

/**
 * Creates a recorder. Repeats of the same object+type+reason+message within the cache patch the existing
 * Event's `count` and `lastTimestamp` instead of creating a new one. Failures are logged, never thrown.
 */
export function createEventRecorder(client: KubeClient, opts: EventRecorderOptions): FlushableEventRecorder {
  const log = (opts.log ?? noopLogger).child({ events: opts.component });
  const host = opts.host ?? hostname();
  const global = new TokenBucket(opts.burst ?? 100, opts.refillPerSec ?? 10);
  const perObject = new Map<string, TokenBucket>();
  const cache = new Map<string, Aggregate>();
  const cacheSize = opts.cacheSize ?? 4096;
  const pending = new Set<Promise<void>>();
  let dropped = 0;

  const objectId = (o: KubeObject): string => o.metadata.uid ?? `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

  async function write(agg: Aggregate, obj: KubeObject, type: string, reason: string, message: string): Promise<void> {
    const now = new Date();
    if (agg.count > 0) {
      try {
        await client.patch(Events, agg.namespace, agg.name, { count: agg.count + 1, lastTimestamp: toKubeTime(now) }, { type: 'merge' });
        agg.count++;
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // The aggregated Event expired (events have a TTL): start a new one.
        agg.count = 0;
        agg.name = eventName(obj, now);
      }
    }
    const ev: KubeObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: agg.name, namespace: agg.namespace },
      involvedObject: {
        ...(obj.apiVersion ? { apiVersion: obj.apiVersion } : {}),
        ...(obj.kind ? { kind: obj.kind } : {}),
        name: obj.metadata.name,
        ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
        ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
        ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
      },
      reason,
      message,
      type,
      source: { component: opts.component, host },
      reportingComponent: opts.component,
      reportingInstance: host,
      firstTimestamp: toKubeTime(now),
      lastTimestamp: toKubeTime(now),
      eventTime: null,
      count: 1,
    };
    await client.create(Events, ev);
    agg.count = 1;
  }

  return {
    get dropped() {
      return dropped;
    },
    event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, fullMessage: string): void {
      try {
        // Bounded before the aggregation key, so that repeats of a long message still aggregate.
        const message = boundMessage(fullMessage, MessageBudget.event);
        const id = objectId(obj);
        let bucket = perObject.get(id);
        if (!bucket) {
          if (perObject.size >= cacheSize) perObject.delete(perObject.keys().next().value!);
          perObject.set(id, (bucket = new TokenBucket(opts.perObjectBurst ?? 25, opts.perObjectRefillPerSec ?? 0.2)));
        }
        if (!bucket.take() || !global.take()) {
          dropped++;
          log.debug({ reason, object: id }, 'event dropped by rate limit');
          return;
        }
        const key = `${id}\u0000${type}\u0000${reason}\u0000${message}`;
        let agg = cache.get(key);
        if (agg)
          cache.delete(key); // re-insert below: most recently used last
        else agg = { name: eventName(obj, new Date()), namespace: obj.metadata.namespace || 'default', count: 0, chain: Promise.resolve() };
        cache.set(key, agg);
        if (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
        const a = agg;
        const p = a.chain
          .then(() => write(a, obj, type, reason, message))
          .catch((err: unknown) => log.warn({ ...errorFields(err), reason }, 'could not record event'));
        a.chain = p;
        pending.add(p);
        void p.finally(() => pending.delete(p));
      } catch (err) {
        log.warn(errorFields(err), 'could not record event');
      }
    },
    async flush(): Promise<void> {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}

/** client-go style unique name: `<object>.<hex nanoseconds>`. */
function eventName(obj: KubeObject, now: Date): string {
  const ns = BigInt(now.getTime()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  return `${(obj.metadata.name ?? 'object').slice(0, 230)}.${ns.toString(16)}`;
}
