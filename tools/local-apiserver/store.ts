/** In-memory object storage per group/resource: O(1) get, per-namespace index, a bounded watch-event window, watchers. */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * How long watch events stay replayable (kube-apiserver's watch cache keeps about 75 s of history, at least 100 events
 * and at most a fixed capacity, and answers an older resourceVersion with 410 Expired). Without a time bound every
 * resource kept its last `windowSize` events, each with the object, its previous state and its JSON: hundreds of MiB
 * after a few plans at 1,000 machines, for replays no informer needs (they resume from their last event or bookmark).
 */
export const WATCH_EVENT_FRESH_MS = 75_000;
/** Events kept regardless of age (kube-apiserver's lower bound of the watch cache). */
export const WATCH_EVENT_MIN = 100;

/**
 * Events per sealed block of the window. The newest events (fewer than this) keep their object and JSON, so a watch
 * resumed from a recent resourceVersion replays them as they are; older ones are sealed in blocks whose JSON is
 * deflated together (consecutive versions of like objects compress about 20-fold).
 */
export const WATCH_BLOCK_EVENTS = 64;

/** Bounds of a store's watch-event window. */
export interface WindowBounds {
  /** At most this many events (the oldest go first). */
  maxEvents: number;
  /** Events older than this (ms) go, beyond `minEvents`. */
  freshMs?: number;
  /** Events kept regardless of age. */
  minEvents?: number;
  /** The clock (ms); tests control it. */
  now?: () => number;
  /**
   * Whether a watch selector (labels, or the resource's selectable fields) can tell two versions of an object apart:
   * a sealed MODIFIED event keeps its previous state only then (it decides ADDED/DELETED for a filtered watch, and
   * nothing when both versions select alike). Default: always (the previous state is kept).
   */
  selectionDiffers?: (a: Obj, b: Obj) => boolean;
  /** What of a previous state a sealed event keeps: what the selectors read (default: all of it). */
  selectable?: (o: Obj) => Obj;
}

type Obj = Record<string, unknown>;

/** A stored object (storage-version form; never mutated once stored: watch events and older versions share it). */
export interface Entry {
  obj: Obj;
  rv: number;
}

/** A change recorded for watchers; serialized lazily once per version. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  rv: number;
  obj: Obj;
  /** The previous state, for selector transitions (object moving in/out of a watcher's selector). */
  prev?: Obj;
  ns: string;
  /** Serialized object per served version ('' = the storage version), shared by all watchers. */
  json?: Map<string, string>;
  /** When it was recorded (ms, the store's clock): events older than the fresh window expire. */
  at?: number;
  /** The object's apiVersion, when `obj` is parsed on demand (a replayed event of a sealed block). */
  readonly apiVersion?: string;
}

/** A sealed block: its events' JSON (storage version) concatenated, deflated, as a one-byte string on V8's heap. */
interface PackedBlock {
  /** deflateRaw of the UTF-8 of the concatenated JSON, as latin1 (no native buffer, no pooled slab kept alive). */
  z: string;
  /** End offset (UTF-16 units) of each event's JSON in the inflated text. */
  ends: Uint32Array;
}

/** A retained event of a sealed block: what a replay needs besides its JSON. */
interface PackedEvent {
  type: WatchEvent['type'];
  rv: number;
  ns: string;
  at: number;
  /** The object's apiVersion (selects the served version's JSON without parsing). */
  apiVersion: string;
  block: PackedBlock;
  /** Index of its JSON in the block. */
  i: number;
  /** What selectors read of the previous state, kept only when they could tell it from the object (WindowBounds). */
  prev: Obj | undefined;
}

/** A replayed event of a sealed block: the object is parsed from its JSON only when a filter or a Table needs it. */
class ReplayedEvent implements WatchEvent {
  private parsed: Obj | undefined;
  readonly json: Map<string, string>;
  constructor(
    readonly type: WatchEvent['type'],
    readonly rv: number,
    readonly ns: string,
    readonly at: number,
    readonly apiVersion: string,
    readonly prev: Obj | undefined,
    text: string,
  ) {
    this.json = new Map([['', text]]);
  }
  get obj(): Obj {
    if (!this.parsed) this.parsed = JSON.parse(this.json.get('')!) as Obj;
    return this.parsed;
  }
}

/** A live watch; `deliver` is called synchronously for every event of its resource at or after its start. */
export interface Watcher {
  ns: string | undefined;
  deliver(ev: WatchEvent): void;
  stop?(): void;
}

/** Objects of one group/resource. */
export class ResourceStore {
  readonly objects = new Map<string, Entry>();
  readonly byNs = new Map<string, Map<string, Entry>>();
  readonly watchers = new Set<Watcher>();
  /** Retained events, oldest first, from index `start` (rv strictly increasing); sealed ones before `open`. */
  private events: (WatchEvent | PackedEvent)[] = [];
  private start = 0;
  /** Index of the first unsealed event (its object and JSON are kept until a block of them is sealed). */
  private open = 0;
  private readonly selectionDiffers: (a: Obj, b: Obj) => boolean;
  private readonly selectable: (o: Obj) => Obj;
  /** Events with rv <= floor are no longer available to watches. */
  floor: number;
  private sorted?: string[];
  private sortedNs = new Map<string, string[]>();
  private readonly maxEvents: number;
  private readonly freshMs: number;
  private readonly minEvents: number;
  private readonly now: () => number;

  constructor(bounds: number | WindowBounds, startRv: number) {
    const b = typeof bounds === 'number' ? { maxEvents: bounds } : bounds;
    this.maxEvents = Math.max(1, b.maxEvents);
    this.freshMs = b.freshMs ?? WATCH_EVENT_FRESH_MS;
    this.minEvents = Math.min(b.minEvents ?? WATCH_EVENT_MIN, this.maxEvents);
    this.now = b.now ?? Date.now;
    this.selectionDiffers = b.selectionDiffers ?? ((): boolean => true);
    this.selectable = b.selectable ?? ((o: Obj): Obj => o);
    this.floor = startRv;
  }

  /** Number of events a watch could still replay. */
  get retainedEvents(): number {
    return this.events.length - this.start;
  }

  /** Namespaces the per-namespace indexes hold an entry for (only those with objects; for tests). */
  get indexedNamespaces(): string[] {
    return [...new Set([...this.byNs.keys(), ...this.sortedNs.keys()])];
  }

  /** Storage key for a namespace/name. */
  static key(ns: string, name: string): string {
    return ns ? `${ns}/${name}` : name;
  }

  get(ns: string, name: string): Entry | undefined {
    return this.objects.get(ResourceStore.key(ns, name));
  }

  /** Inserts or replaces; `type` decides the event emitted. */
  put(ns: string, name: string, obj: Obj, rv: number, type: 'ADDED' | 'MODIFIED', prev?: Obj, json?: string): Entry {
    const key = ResourceStore.key(ns, name);
    // The JSON goes to the event (shared by watchers), not to the entry: memory per object matters more.
    const entry: Entry = { obj, rv };
    const isNew = !this.objects.has(key);
    this.place(key, ns, name, entry);
    if (isNew) {
      if (this.sorted) insertSorted(this.sorted, key);
      const s = this.sortedNs.get(ns);
      if (s) insertSorted(s, key);
    }
    this.emit(type, rv, obj, prev, ns, json);
    return entry;
  }

  /** Removes an object and emits DELETED with the final state. */
  remove(ns: string, name: string, finalObj: Obj, rv: number): void {
    const key = ResourceStore.key(ns, name);
    if (!this.objects.delete(key)) return;
    const nsMap = this.byNs.get(ns);
    nsMap?.delete(name);
    if (this.sorted) removeSorted(this.sorted, key);
    // A namespace without objects keeps no index entry: namespaces come and go (tests, tenants), their names would stay.
    if (nsMap && nsMap.size === 0) {
      this.byNs.delete(ns);
      this.sortedNs.delete(ns);
    } else {
      const s = this.sortedNs.get(ns);
      if (s) removeSorted(s, key);
    }
    this.emit('DELETED', rv, finalObj, undefined, ns, undefined);
  }

  /** Restores an object without emitting (persistence replay). */
  restore(ns: string, name: string, obj: Obj, rv: number): void {
    const key = ResourceStore.key(ns, name);
    this.place(key, ns, name, { obj, rv });
    this.invalidate(ns);
  }

  /** Stores an entry under its key and in its namespace's index. */
  private place(key: string, ns: string, name: string, entry: Entry): void {
    this.objects.set(key, entry);
    let nsMap = this.byNs.get(ns);
    if (!nsMap) {
      nsMap = new Map();
      this.byNs.set(ns, nsMap);
    }
    nsMap.set(name, entry);
  }

  private invalidate(ns: string): void {
    this.sorted = undefined;
    this.sortedNs.delete(ns);
  }

  /** Keys in etcd order (namespace/name), kept sorted incrementally once computed. */
  sortedKeys(ns: string | undefined): string[] {
    if (ns === undefined) {
      if (!this.sorted) this.sorted = [...this.objects.keys()].sort();
      return this.sorted;
    }
    let s = this.sortedNs.get(ns);
    if (!s) {
      const m = this.byNs.get(ns);
      // Not cached for an empty namespace: a list or watch of any namespace name would otherwise add an entry for good.
      if (!m) return [];
      s = [...m.keys()].sort().map((n) => ResourceStore.key(ns, n));
      this.sortedNs.set(ns, s);
    }
    return s;
  }

  private emit(type: WatchEvent['type'], rv: number, obj: Obj, prev: Obj | undefined, ns: string, json: string | undefined): void {
    // Every field set here, in one order, and none deleted later: an event whose shape changed after creation (a field
    // added, `delete ev.json`) fell back to a dictionary, 448 bytes more each (8 MiB for the ~32,000 retained events).
    const ev: WatchEvent = { type, rv, obj, prev, ns, json: json !== undefined ? new Map([['', json]]) : undefined, at: this.now() };
    this.events.push(ev);
    this.expire(ev.at);
    for (const w of this.watchers) {
      if (w.ns !== undefined && w.ns !== ev.ns) continue;
      w.deliver(ev);
    }
    // The serialization shared by the live watchers above stays with the event until its block is sealed (then it is
    // what the block compresses); only the storage version's: another served version's is made again on replay.
    if (ev.json !== undefined && ev.json.size > 1) {
      const own = ev.json.get('');
      ev.json = own !== undefined ? new Map([['', own]]) : undefined;
    }
    if (this.open < this.start) this.open = this.start;
    if (this.events.length - this.open >= WATCH_BLOCK_EVENTS) this.seal();
  }

  /**
   * Seals the oldest WATCH_BLOCK_EVENTS unsealed events into one block. What the window held per event was its version
   * of the object (shared with the next version where unchanged): about 690 bytes per event over 20 plans at 1,003
   * machines, and the whole object for a deleted one; a sealed event costs its share of the deflated JSON (~100 bytes)
   * and this record. The JSON is what the watchers were sent (serialized now only if no watcher was there).
   */
  private seal(): void {
    const from = this.open;
    const to = from + WATCH_BLOCK_EVENTS;
    const parts: string[] = [];
    const ends = new Uint32Array(to - from);
    let len = 0;
    for (let i = from; i < to; i++) {
      const ev = this.events[i] as WatchEvent;
      const j = ev.json?.get('') ?? JSON.stringify(ev.obj);
      parts.push(j);
      len += j.length;
      ends[i - from] = len;
    }
    const block: PackedBlock = { z: deflateRawSync(Buffer.from(parts.join(''), 'utf8'), { level: 1 }).toString('latin1'), ends };
    for (let i = from; i < to; i++) {
      const ev = this.events[i] as WatchEvent;
      // Machines change labels in every update: their previous states, whole, were half of the sealed window.
      const prev = ev.type === 'MODIFIED' && ev.prev && this.selectionDiffers(ev.prev, ev.obj) ? this.selectable(ev.prev) : undefined;
      const packed: PackedEvent = {
        type: ev.type,
        rv: ev.rv,
        ns: ev.ns,
        at: ev.at ?? 0,
        apiVersion: String(ev.obj.apiVersion),
        block,
        i: i - from,
        prev,
      };
      this.events[i] = packed;
    }
    this.open = to;
  }

  /** Drops the events beyond the window: over maxEvents, or older than freshMs beyond minEvents (also run on a timer). */
  expire(now: number = this.now()): void {
    const cutoff = now - this.freshMs;
    while (this.retainedEvents > 0) {
      const oldest = this.events[this.start]!;
      const n = this.retainedEvents;
      if (n <= this.maxEvents && (n <= this.minEvents || (oldest.at ?? now) >= cutoff)) break;
      this.floor = oldest.rv;
      this.events[this.start] = undefined as unknown as WatchEvent;
      this.start++;
    }
    // Compact once the dropped prefix dominates (amortized O(1) per event).
    if (this.start > 1024 && this.start * 2 > this.events.length) {
      this.events = this.events.slice(this.start);
      this.open = Math.max(0, this.open - this.start);
      this.start = 0;
    }
  }

  /** Oldest resourceVersion a watch may start from (exclusive), i.e. the compaction point. */
  oldestAvailable(): number {
    return this.floor;
  }

  /**
   * Retained events with rv > `rv`, oldest first; undefined when `rv` is older than the window. Sealed events come
   * back with their JSON as it was sent (the object parsed from it on first use) and their previous state when a
   * selector could tell it apart.
   */
  eventsSince(rv: number): WatchEvent[] | undefined {
    if (rv < this.floor) return undefined;
    // rv increases along the window: binary search for the first event after `rv`.
    let lo = this.start;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    const out: WatchEvent[] = [];
    let block: PackedBlock | undefined;
    let text = '';
    for (let i = lo; i < this.events.length; i++) {
      const e = this.events[i]!;
      if (!('block' in e)) {
        out.push(e);
        continue;
      }
      if (e.block !== block) {
        block = e.block;
        text = inflateRawSync(Buffer.from(block.z, 'latin1')).toString('utf8');
      }
      const a = e.i === 0 ? 0 : block.ends[e.i - 1]!;
      out.push(new ReplayedEvent(e.type, e.rv, e.ns, e.at, e.apiVersion, e.prev, text.slice(a, block.ends[e.i])));
    }
    return out;
  }

  /** Drops every event and object (CRD removal); history up to `rv` is gone for watches. */
  clear(rv: number): void {
    this.floor = Math.max(this.floor, rv);
    this.objects.clear();
    this.byNs.clear();
    this.events = [];
    this.start = 0;
    this.open = 0;
    this.sorted = undefined;
    this.sortedNs.clear();
  }
}

function lowerBound(arr: string[], key: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (arr[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertSorted(arr: string[], key: string): void {
  const i = lowerBound(arr, key);
  if (arr[i] !== key) arr.splice(i, 0, key);
}

function removeSorted(arr: string[], key: string): void {
  const i = lowerBound(arr, key);
  if (arr[i] === key) arr.splice(i, 1);
}
