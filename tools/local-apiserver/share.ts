/**
 * Structural sharing between an object's consecutive stored versions, and one copy of each common string. Every write
 * builds a fresh deep copy (JSON.parse of the body, clone, patch, normalize), so each version kept by the watch-event
 * window held an object graph and strings of its own although a write changes a few fields, and JSON.parse makes a
 * new copy of every string value (a heap snapshot at 1,003 machines: 65,609 copies of one timestamp, 31,476 of one
 * apiVersion, 4,194 of one uid). Stored objects are never mutated once stored (every write clones first), so an
 * unchanged subtree can be the previous version's own and equal strings one string.
 */

type Obj = Record<string, unknown>;

/** Strings longer than this are not interned (messages, JSON blobs: rarely repeated, costly to hash). */
const INTERN_MAX_LENGTH = 128;
/** Entries per generation of the intern table: bounded, so unique strings (uids, timestamps) do not pile up. */
const INTERN_GENERATION = 16_384;

/** A bounded string intern table: two generations; a string used again moves to the young one, the old one is dropped whole. */
export class Interner {
  private young = new Map<string, string>();
  private old = new Map<string, string>();

  constructor(private readonly generation = INTERN_GENERATION) {}

  /** The table's copy of `s` (or `s`, now the copy). */
  intern(s: string): string {
    if (s.length > INTERN_MAX_LENGTH) return s;
    const y = this.young.get(s);
    if (y !== undefined) return y;
    const o = this.old.get(s);
    const v = o ?? s;
    if (this.young.size >= this.generation) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(v, v);
    return v;
  }

  /** Entries held (for tests: the table stays bounded). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}

/**
 * Makes `next` reuse every subtree and string of `prev` that is deep-equal to its counterpart, and interned copies of
 * its other strings, in place; returns `prev` itself when the two are equal, else `next` (whose content, key order
 * included, is unchanged). `next` must not be stored yet; `prev` is the stored version it replaces, if any.
 */
export function shareWith<T>(next: T, prev: unknown, interner: Interner): T {
  return share(next, prev, interner) as T;
}

function share(next: unknown, prev: unknown, it: Interner): unknown {
  // Equal strings may still be two copies (each JSON.parse makes its own): keep the previous one.
  if (next === prev) return prev;
  if (typeof next === 'string') return it.intern(next);
  if (typeof next !== 'object' || next === null) return next;
  const p = typeof prev === 'object' && prev !== null ? prev : undefined;
  if (Array.isArray(next)) {
    const pa = Array.isArray(p) ? (p as unknown[]) : undefined;
    let same = pa !== undefined && next.length === pa.length;
    for (let i = 0; i < next.length; i++) {
      // Index by index: the usual change appends, removes the last or edits an element in place (conditions, finalizers).
      const v = share(next[i], pa?.[i], it);
      next[i] = v;
      if (same && v !== pa![i]) same = false;
    }
    return same ? pa : next;
  }
  const n = next as Obj;
  const po = p !== undefined && !Array.isArray(p) ? (p as Obj) : undefined;
  let same = po !== undefined;
  let count = 0;
  for (const k in n) {
    count++;
    const v = share(n[k], po?.[k], it);
    n[k] = v;
    if (same && (v !== po![k] || !(k in po!))) same = false;
  }
  // Same keys in the same order, or the JSON (the watch and list bytes) would differ.
  if (same && sameKeys(n, po!, count)) return po;
  return next;
}

function sameKeys(a: Obj, b: Obj, count: number): boolean {
  const kb = Object.keys(b);
  if (kb.length !== count) return false;
  let i = 0;
  for (const k in a) if (kb[i++] !== k) return false;
  return true;
}
