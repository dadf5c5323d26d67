// In-memory cache of one resource kind keyed by namespace/name, with a label index. Fed by an informer.
import type { KubeObject } from '../api/kube.js';
import { matchesRequirements, parseSelector, type LabelRequirement } from './pure/labels.js';
import type { Store } from './pure/types.js';
import { deepFreeze } from './pure/freeze.js';
import { jsonCopy } from './pure/copy.js';

/** Store key of an object: `namespace/name`, or `name` when cluster-scoped. */
export const keyOf = (namespace: string | undefined, name: string): string => (namespace ? `${namespace}/${name}` : name);
/** Store key of an object from its metadata. */
export const objectKey = (obj: KubeObject): string => keyOf(obj.metadata.namespace, obj.metadata.name ?? '');

/** Re-exported where it was always imported from: the store freezes every object it caches. */
export { deepFreeze };

/**
 * The store behind an informer. Cached objects are frozen and shared: `get` returns a mutable deep copy
 * (safe to snapshot, mutate and patch); `list`, `byLabel` and `select` return the frozen objects
 * themselves (clone with `structuredClone` before mutating).
 */
export class MemoryStore<T extends KubeObject = KubeObject> implements Store<T> {
  private readonly items = new Map<string, T>();
  /**
   * label key -> label value -> the objects by store key. Holding the objects (not only their keys) saves a map lookup
   * per object on every byLabel: a plan reconcile lists 10,000s of machines and MachineUpdates by label.
   */
  private readonly index = new Map<string, Map<string, Map<string, T>>>();
  private readonly parsed = new Map<string, LabelRequirement[]>();
  /**
   * Per label bucket: its objects as an array (bucket order) and each one's position, for byLabelView. Kept up to date
   * in place for replaced and added objects (copied first once handed out: a handed-out array never changes); dropped
   * when an object leaves the bucket (rebuilt on the next view).
   */
  private readonly views = new WeakMap<Map<string, T>, BucketView<T>>();
  /** byLabelView's answer per handed-out array and namespace, for a bucket that holds objects of several namespaces. */
  private readonly nsViews = new WeakMap<readonly T[], Map<string, readonly T[]>>();
  /** Secondary indexes by name (client-go's Indexers): each object's index values, and the objects per value. */
  private readonly indexes = new Map<string, SecondaryIndex<T>>();

  /**
   * Changes applied so far (upserts and removals): equal counts mean the same contents, so a consumer can keep what it
   * derived from this store (the plan controller's machines-at-target answers) without reading it again.
   */
  changes = 0;

  /**
   * `labelIndex: false` keeps no label index (byLabel and byLabelView scan): for a store only its informer reads,
   * such as each scope's of a scoped informer, whose objects are indexed once in the merged store.
   */
  constructor(private readonly opts: { labelIndex?: boolean } = {}) {}

  /** Number of cached objects. */
  get size(): number {
    return this.items.size;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    const o = this.items.get(keyOf(namespace, name));
    return o === undefined ? undefined : jsonCopy(o);
  }

  /** The frozen cached object (no copy), for read-only use. */
  peek(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(keyOf(namespace, name));
  }

  list(namespace?: string): T[] {
    const out: T[] = [];
    for (const o of this.items.values()) if (namespace === undefined || o.metadata.namespace === namespace) out.push(o);
    return out;
  }

  byLabel(key: string, value: string, namespace?: string): T[] {
    if (this.opts.labelIndex === false) return this.scan(key, value, namespace);
    const objs = this.index.get(key)?.get(value);
    if (!objs) return [];
    if (namespace === undefined) return [...objs.values()];
    const out: T[] = [];
    for (const o of objs.values()) if (o.metadata.namespace === namespace) out.push(o);
    return out;
  }

  /**
   * byLabel without the copy: a frozen array shared with other callers and kept until the bucket changes, so the same
   * bucket contents give the same array (consumers may compare by reference) and a change costs one array copy rather
   * than a walk of the bucket. Bucket order, as byLabel.
   */
  byLabelView(key: string, value: string, namespace?: string): readonly T[] {
    if (this.opts.labelIndex === false) return Object.freeze(this.scan(key, value, namespace));
    const objs = this.index.get(key)?.get(value);
    if (!objs) return EMPTY as readonly T[];
    let view = this.views.get(objs);
    if (!view) {
      const arr = [...objs.values()];
      const pos = new Map<string, number>();
      const perNs = new Map<string | undefined, number>();
      let i = 0;
      for (const k of objs.keys()) pos.set(k, i++);
      for (const o of arr) countIn(perNs, o.metadata.namespace, 1);
      this.views.set(objs, (view = { arr, pos, perNs, shared: false }));
    }
    if (!view.shared) {
      Object.freeze(view.arr);
      view.shared = true;
    }
    const arr = view.arr;
    if (namespace === undefined) return arr;
    // The counts answer "all of them" and "none" without a walk: a bucket of 30,000 machines in one namespace changes
    // between almost every two reconciles, and checking each object's namespace per change cost more than the copy.
    const n = view.perNs.get(namespace) ?? 0;
    if (n === arr.length) return arr;
    if (n === 0) return EMPTY as readonly T[];
    // A bucket shared by namespaces: one filter per shared array (never changed once handed out) and namespace.
    let per = this.nsViews.get(arr);
    if (!per) this.nsViews.set(arr, (per = new Map()));
    let out = per.get(namespace);
    if (!out) per.set(namespace, (out = Object.freeze(arr.filter((o) => o.metadata.namespace === namespace))));
    return out;
  }

  /**
   * Adds a secondary index (client-go's Indexers): `valuesOf` gives an object's values, `byIndex` the objects of a
   * value. A name is added once (a later call with the same name keeps the first function); objects already cached are
   * indexed at once, later ones as they arrive.
   */
  addIndex(name: string, valuesOf: (obj: T) => readonly string[]): void {
    if (this.indexes.has(name)) return;
    const ix: SecondaryIndex<T> = { valuesOf, buckets: new Map() };
    this.indexes.set(name, ix);
    for (const [k, o] of this.items) for (const v of valuesOf(o)) bucketOf(ix, v).set(k, o);
  }

  /** The objects whose index `name` (added with addIndex) gives `value`; frozen, in arrival order. */
  byIndex(name: string, value: string): T[] {
    const ix = this.indexes.get(name);
    if (!ix) throw new Error(`store has no index named ${name} (addIndex first)`);
    const objs = ix.buckets.get(value);
    return objs ? [...objs.values()] : [];
  }

  select(selector: string, namespace?: string): T[] {
    let reqs = this.parsed.get(selector);
    if (!reqs) {
      reqs = parseSelector(selector);
      if (this.parsed.size > 1000) this.parsed.clear();
      this.parsed.set(selector, reqs);
    }
    // Narrow by the first equality requirement through the index; check the rest on each candidate.
    const eq = reqs.find((r) => r.op === '=' || (r.op === 'in' && r.values.length === 1));
    const candidates = eq ? this.byLabel(eq.key, eq.values[0]!, namespace) : this.list(namespace);
    return candidates.filter((o) => matchesRequirements(reqs, o.metadata.labels));
  }

  /** Inserts or replaces an object (frozen on the way in); returns the previous version. */
  upsert(obj: T): T | undefined {
    const k = objectKey(obj);
    const old = this.items.get(k);
    this.changes++;
    deepFreeze(obj);
    this.items.set(k, obj);
    if (this.opts.labelIndex === false) {
      for (const ix of this.indexes.values()) reindex(ix, k, old, obj);
      return old;
    }
    // Most updates keep the labels (status, annotations): the object is swapped in its buckets, none rebuilt.
    if (old && sameLabels(old.metadata.labels, obj.metadata.labels)) this.reindexObj(k, obj);
    else if (old) this.relabel(k, old, obj);
    else this.indexObj(k, obj);
    for (const ix of this.indexes.values()) reindex(ix, k, old, obj);
    return old;
  }

  /** Removes an object; returns what was cached. */
  remove(namespace: string | undefined, name: string): T | undefined {
    const k = keyOf(namespace, name);
    const old = this.items.get(k);
    if (old) {
      this.changes++;
      if (this.opts.labelIndex !== false) this.unindex(k, old);
      for (const ix of this.indexes.values()) reindex(ix, k, old, undefined);
      this.items.delete(k);
    }
    return old;
  }

  /** byLabel without an index: one pass over every object. */
  private scan(key: string, value: string, namespace?: string): T[] {
    const out: T[] = [];
    for (const o of this.items.values())
      if (o.metadata.labels?.[key] === value && (namespace === undefined || o.metadata.namespace === namespace)) out.push(o);
    return out;
  }

  /** Every cached object by store key (for re-list diffs). */
  entries(): IterableIterator<[string, T]> {
    return this.items.entries();
  }

  private indexObj(k: string, obj: T): void {
    for (const [lk, lv] of Object.entries(obj.metadata.labels ?? {})) this.indexPair(k, lk, lv, obj);
  }

  /** Replaces the object in the buckets of its (unchanged) labels; Map.set keeps each bucket's order. */
  private reindexObj(k: string, obj: T): void {
    for (const [lk, lv] of Object.entries(obj.metadata.labels ?? {})) this.replaceIn(this.index.get(lk)?.get(lv), k, obj);
  }

  /** Replaces an object already in a bucket (same place), and in its view. */
  private replaceIn(objs: Map<string, T> | undefined, k: string, obj: T): void {
    if (!objs) return;
    objs.set(k, obj);
    const view = this.views.get(objs);
    const i = view?.pos.get(k);
    if (view === undefined || i === undefined) {
      if (view) this.views.delete(objs);
      return;
    }
    this.put(view, i, obj);
  }

  /** Puts an object at a view position it already holds (a new version of the same key). */
  private put(view: BucketView<T>, i: number, obj: T): void {
    const arr = this.writable(view);
    // The key holds the namespace, but '' and no namespace share one: keep the counts exact even then.
    const was = arr[i]!.metadata.namespace;
    if (was !== obj.metadata.namespace) {
      countIn(view.perNs, was, -1);
      countIn(view.perNs, obj.metadata.namespace, 1);
    }
    arr[i] = obj;
  }

  /**
   * The view's array, copied first if it was handed out. Spread, not slice: V8 slices a frozen array element by element
   * into a holey array (about 3x the CPU at 30,000 objects, and every later read of it checks for holes).
   */
  private writable(view: BucketView<T>): T[] {
    if (view.shared) {
      view.arr = [...view.arr];
      view.shared = false;
    }
    return view.arr;
  }

  /**
   * A label change: only the buckets of the pairs that changed are left or joined; the object keeps its place in the
   * buckets of its unchanged pairs, so a bucket's order (e.g. a cluster's machines) is stable while machines are
   * labelled and unlabelled, and consumers can diff successive lists position by position.
   */
  private relabel(k: string, old: T, obj: T): void {
    const before = old.metadata.labels ?? {};
    const after = obj.metadata.labels ?? {};
    for (const [lk, lv] of Object.entries(before)) if (after[lk] !== lv) this.unindexPair(k, lk, lv);
    for (const [lk, lv] of Object.entries(after)) {
      if (before[lk] === lv) this.replaceIn(this.index.get(lk)?.get(lv), k, obj);
      else this.indexPair(k, lk, lv, obj);
    }
  }

  private indexPair(k: string, lk: string, lv: string, obj: T): void {
    let byValue = this.index.get(lk);
    if (!byValue) this.index.set(lk, (byValue = new Map()));
    let objs = byValue.get(lv);
    if (!objs) byValue.set(lv, (objs = new Map()));
    const had = objs.has(k);
    objs.set(k, obj);
    const view = this.views.get(objs);
    if (!view) return;
    // A key already there keeps its place (Map.set); a new one goes last, as in the bucket.
    const i = view.pos.get(k);
    if (had && i !== undefined) this.put(view, i, obj);
    else if (had) this.views.delete(objs);
    else {
      view.pos.set(k, this.writable(view).push(obj) - 1);
      countIn(view.perNs, obj.metadata.namespace, 1);
    }
  }

  private unindexPair(k: string, lk: string, lv: string): void {
    const byValue = this.index.get(lk);
    const objs = byValue?.get(lv);
    if (!objs) return;
    // Positions after it would shift: the view is rebuilt on its next use (removals are rare next to changes).
    if (objs.delete(k)) this.views.delete(objs);
    if (objs.size === 0) byValue!.delete(lv);
    if (byValue!.size === 0) this.index.delete(lk);
  }

  private unindex(k: string, obj: T): void {
    for (const [lk, lv] of Object.entries(obj.metadata.labels ?? {})) this.unindexPair(k, lk, lv);
  }
}

const EMPTY: readonly never[] = Object.freeze([]);

/** A secondary index: an object's values, and per value the objects by store key. */
interface SecondaryIndex<T> {
  valuesOf: (obj: T) => readonly string[];
  buckets: Map<string, Map<string, T>>;
}

function bucketOf<T>(ix: SecondaryIndex<T>, value: string): Map<string, T> {
  let b = ix.buckets.get(value);
  if (!b) ix.buckets.set(value, (b = new Map()));
  return b;
}

/** Moves key `k` from the buckets of `old`'s values to those of `obj`'s (either may be absent). */
function reindex<T>(ix: SecondaryIndex<T>, k: string, old: T | undefined, obj: T | undefined): void {
  const after = obj === undefined ? [] : ix.valuesOf(obj);
  if (old !== undefined)
    for (const v of ix.valuesOf(old)) {
      if (after.includes(v)) continue;
      const b = ix.buckets.get(v);
      if (b?.delete(k) && b.size === 0) ix.buckets.delete(v);
    }
  if (obj !== undefined) for (const v of after) bucketOf(ix, v).set(k, obj);
}

/**
 * A label bucket as an array for byLabelView: the objects in bucket order, each key's position, how many objects each
 * namespace has in it (kept where the array changes, so a namespace's view needs no walk), and whether the array was
 * handed out (then it is frozen and copied before the next change).
 */
interface BucketView<T> {
  arr: T[];
  pos: Map<string, number>;
  perNs: Map<string | undefined, number>;
  shared: boolean;
}

/** Adds `by` to a namespace's count (dropping it at zero, so the map only holds namespaces present). */
function countIn(perNs: Map<string | undefined, number>, ns: string | undefined, by: number): void {
  const n = (perNs.get(ns) ?? 0) + by;
  if (n === 0) perNs.delete(ns);
  else perNs.set(ns, n);
}

/** True when two label maps hold the same keys and values. */
function sameLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (a === b) return true;
  const ak = Object.keys(a ?? {});
  if (ak.length !== Object.keys(b ?? {}).length) return false;
  for (const k of ak) if (a![k] !== b?.[k]) return false;
  return true;
}
