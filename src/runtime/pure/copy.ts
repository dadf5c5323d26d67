// Deep copies of JSON values (pure): what the informer store hands out as a mutable object.

/**
 * A deep copy of a JSON value (objects, arrays, strings, numbers, booleans, null), as structuredClone would make it
 * and several times faster for an API object (structuredClone serializes and deserializes). Iterative, so an object
 * nested thousands of levels deep (a real API server stores them) copies without a stack overflow. Own enumerable keys
 * only; a `__proto__` key stays an own field. Anything else in the tree (a Date, a Map) is copied by structuredClone.
 */
export function jsonCopy<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  const root = shell(v);
  if (root.done) return root.value as T;
  // Pairs of a source container and its copy whose members are still to be copied.
  const todo: [object, unknown[] | Record<string, unknown>][] = [[v, root.value as unknown[] | Record<string, unknown>]];
  while (todo.length > 0) {
    const [src, dst] = todo.pop()!;
    if (Array.isArray(src)) {
      const out = dst as unknown[];
      for (let i = 0; i < src.length; i++) out[i] = member(src[i], todo);
      continue;
    }
    const out = dst as Record<string, unknown>;
    const keys = Object.keys(src);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const c = member((src as Record<string, unknown>)[k], todo);
      if (k === '__proto__') Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
      else out[k] = c;
    }
  }
  return root.value as T;
}

/** A member's copy: a primitive as is, a container as an empty shell queued for filling. */
function member(v: unknown, todo: [object, unknown[] | Record<string, unknown>][]): unknown {
  if (v === null || typeof v !== 'object') return v;
  const s = shell(v);
  if (!s.done) todo.push([v, s.value as unknown[] | Record<string, unknown>]);
  return s.value;
}

/** An empty array or plain object to copy `v` into, or (done) structuredClone's copy of a non-JSON object. */
function shell(v: object): { value: unknown; done: boolean } {
  if (Array.isArray(v)) return { value: new Array<unknown>(v.length), done: false };
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return { value: structuredClone(v), done: true };
  return { value: {}, done: false };
}
