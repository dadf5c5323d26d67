// Generic, pure: the RFC 6902 patch that sets values at JSON pointers on one object (behind a resourceVersion test),
// and the read-back check that an object holds them. Shared by the commit (machine-task-controller) and the plan
// controller's pre-start dry-run, so the value checked before any machine starts is the exact patch committed later.
import { isDeepStrictEqual } from 'node:util';
import { encodePointer, getPointer, parsePointer, setPointer } from './jsonpointer.js';

/** One RFC 6902 operation. */
export type JsonPatchOp = { op: 'test' | 'add' | 'replace'; path: string; value: unknown };

/** A value to set at a JSON pointer. */
export interface PointerValue {
  path: string;
  value: unknown;
}

/** Thrown when a value cannot be set at its pointer in the object (e.g. the path steps through a string). */
export class SetPathError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: ${why}`);
    this.name = 'SetPathError';
  }
}

const isContainer = (v: unknown): boolean => v !== null && typeof v === 'object';
interface Obj {
  metadata?: { resourceVersion?: string };
}

/**
 * A copy of `obj` deep enough to write into: the top-level fields the pointers reach (a whole-object path takes
 * everything). The rest, metadata with its managedFields above all, is left out: copying it was most of a commit's CPU.
 */
function scratchCopy(obj: object, items: readonly Pick<PointerValue, 'path'>[]): Record<string, unknown> {
  const src = obj as Record<string, unknown>;
  const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
  // No prototype: a field named like an Object.prototype member stays a plain own field, as in a full copy.
  const out = Object.create(null) as Record<string, unknown>;
  for (const r of items) {
    const top = parsePointer(r.path)[0];
    if (top === undefined) return structuredClone(src);
    if (!has(out, top) && has(src, top)) out[top] = structuredClone(src[top]);
  }
  return out;
}

/**
 * The JSON patch that sets every value on `obj`: a `test` of metadata.resourceVersion first (optimistic
 * concurrency), `add` for missing parents and members, `replace` for existing ones. Later items for the same path
 * win. Empty when every value is already in place (so a repeated write writes nothing).
 */
export function setValuesPatch(obj: Obj, items: readonly PointerValue[]): JsonPatchOp[] {
  const work = scratchCopy(obj, items);
  const ops: JsonPatchOp[] = [];
  for (const r of items) {
    if (isDeepStrictEqual(getPointer(work, r.path), r.value)) continue;
    const tokens = parsePointer(r.path);
    if (tokens.length === 0) throw new SetPathError(r.path, 'cannot replace a whole object');
    for (let j = 1; j < tokens.length; j++) {
      const parent = encodePointer(tokens.slice(0, j));
      const cur = getPointer(work, parent);
      if (cur === undefined || cur === null) {
        ops.push({ op: 'add', path: parent, value: {} });
        setPointer(work, parent, {});
      } else if (!isContainer(cur)) {
        throw new SetPathError(r.path, `${parent} is a ${typeof cur}, not an object or array`);
      }
    }
    const exists = getPointer(work, r.path) !== undefined;
    const parentValue = getPointer(work, encodePointer(tokens.slice(0, -1)));
    const last = tokens[tokens.length - 1]!;
    const appending = Array.isArray(parentValue) && (last === '-' || Number(last) === parentValue.length);
    try {
      setPointer(work, appending ? encodePointer([...tokens.slice(0, -1), '-']) : r.path, structuredClone(r.value));
    } catch (e) {
      throw new SetPathError(r.path, e instanceof Error ? e.message : String(e));
    }
    ops.push({ op: exists && !appending ? 'replace' : 'add', path: r.path, value: structuredClone(r.value) });
  }
  if (ops.length === 0) return [];
  return [{ op: 'test', path: '/metadata/resourceVersion', value: obj.metadata?.resourceVersion }, ...ops];
}

/** A value the object does not hold. */
export interface ValueMismatch {
  path: string;
  expected: unknown;
  actual: unknown;
}

/** The items whose value `obj` does not hold (a pruned or defaulted-away path shows up here); later items for a path win. */
export function verifyValues(obj: object, items: readonly PointerValue[]): ValueMismatch[] {
  const want = new Map<string, unknown>();
  for (const r of items) want.set(r.path, r.value);
  const out: ValueMismatch[] = [];
  for (const [path, expected] of want) {
    let actual: unknown;
    try {
      actual = getPointer(obj, path);
    } catch {
      actual = undefined;
    }
    if (!isDeepStrictEqual(actual, expected)) out.push({ path, expected, actual });
  }
  return out;
}
