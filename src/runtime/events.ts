// Kubernetes Events (events.k8s.io/v1, as controller-runtime v0.23 and client-go tools/events write them) with series
// for repeats and rate limiting; never throws. kube-apiserver shows them as core/v1 Events too (kubectl describe).
import { hostname } from 'node:os';
import { EventsV1, MessageBudget, boundMessage, type KubeObject } from '../api/kube.js';
import { isNotFound } from './pure/errors.js';
import { errorFields, noopLogger } from './log.js';
import type { EventRecorder, KubeClient, Logger } from './pure/types.js';

/** Options of an event recorder. */
export interface EventRecorderOptions {
  /** `reportingController` of every event (a qualified name). */
  component: string;
  /** The events.k8s.io/v1 `action` of a reason (required by the API): what the component did; default `Reconcile`. */
  eventAction?: (reason: string) => string;
  /** `reportingInstance` (default the hostname; at most 128 bytes). */
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

/** One Event as the recorder writes it. */
interface Recorded {
  regarding: KubeObject;
  related: KubeObject | undefined;
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
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
  const host = Buffer.from(opts.host ?? hostname())
    .subarray(0, 128)
    .toString()
    .replace(/\uFFFD$/, '');
  const global = new TokenBucket(opts.burst ?? 100, opts.refillPerSec ?? 10);
  const perObject = new Map<string, TokenBucket>();
  const cache = new Map<string, Aggregate>();
  const cacheSize = opts.cacheSize ?? 4096;
  const pending = new Set<Promise<void>>();
  let dropped = 0;

  const objectId = (o: KubeObject): string => o.metadata.uid ?? `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

  const write = (agg: Aggregate, ev: Recorded): Promise<void> => writeEvent({ client, opts, host }, agg, ev);

  return {
    get dropped() {
      return dropped;
    },
    event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, fullMessage: string, related?: KubeObject): void {
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
        // Unlike client-go (action, reason, regarding, related), the note is part of the key: a different message is news.
        const key = `${id}\u0000${type}\u0000${reason}\u0000${message}\u0000${related ? objectId(related) : ''}`;
        let agg = cache.get(key);
        if (agg)
          cache.delete(key); // re-insert below: most recently used last
        else agg = { name: eventName(obj, new Date()), namespace: obj.metadata.namespace || 'default', count: 0, chain: Promise.resolve() };
        cache.set(key, agg);
        if (cache.size > cacheSize) cache.delete(cache.keys().next().value!);
        const a = agg;
        const p = a.chain
          .then(() => write(a, { regarding: obj, related, type, reason, note: message }))
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

/** Who writes the Events: the client, the recorder's options and the reporting instance. */
interface Writer {
  client: KubeClient;
  opts: EventRecorderOptions;
  host: string;
}

/** Writes one recorded event: a patch of the aggregated Event's series for a repeat, else a new Event. */
async function writeEvent({ client, opts, host }: Writer, agg: Aggregate, ev: Recorded): Promise<void> {
  const now = new Date();
  if (agg.count > 0) {
    try {
      // A repeat updates the Event's series (count >= 2), as client-go's events broadcaster does.
      await client.patch(
        EventsV1,
        agg.namespace,
        agg.name,
        { series: { count: agg.count + 1, lastObservedTime: microTime(now) } },
        { type: 'merge' },
      );
      agg.count++;
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // The aggregated Event expired (events have a TTL): start a new one.
      agg.count = 0;
      agg.name = eventName(ev.regarding, now);
    }
  }
  await client.create(EventsV1, {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: agg.name, namespace: agg.namespace },
    eventTime: microTime(now),
    reportingController: opts.component,
    reportingInstance: host,
    action: opts.eventAction?.(ev.reason) ?? 'Reconcile',
    reason: ev.reason,
    regarding: reference(ev.regarding),
    ...(ev.related ? { related: reference(ev.related) } : {}),
    note: ev.note,
    type: ev.type,
  });
  agg.count = 1;
}

/** client-go style unique name: `<object>.<hex nanoseconds>`. */
function eventName(obj: KubeObject, now: Date): string {
  const ns = BigInt(now.getTime()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  return `${(obj.metadata.name ?? 'object').slice(0, 230)}.${ns.toString(16)}`;
}

/** metav1.MicroTime: RFC 3339 with microseconds, as events.k8s.io/v1 requires for eventTime and lastObservedTime. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** An ObjectReference to `o`, as `regarding` / `related` carry it. */
function reference(o: KubeObject): Record<string, string> {
  return {
    ...(o.apiVersion ? { apiVersion: o.apiVersion } : {}),
    ...(o.kind ? { kind: o.kind } : {}),
    name: o.metadata.name ?? '',
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    ...(o.metadata.uid ? { uid: o.metadata.uid } : {}),
    ...(o.metadata.resourceVersion ? { resourceVersion: o.metadata.resourceVersion } : {}),
  };
}
