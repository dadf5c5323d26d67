// Pure part of the commit (C8): the JSON patch that writes each responsibility's value at its pointer on one
// CAPI object (guarded by a resourceVersion test), and the read-back check that every value was persisted.
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject, Responsibility } from '../api/index.js';
import { encodePointer, getPointer, parsePointer, setPointer } from '../runtime/index.js';

/** One RFC 6902 operation. */
export type JsonPatchOp = { op: 'test' | 'add' | 'replace'; path: string; value: unknown };

/** Thrown when a responsibility's path cannot be written into the object (e.g. steps through a string). */
export class CommitPathError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: ${why}`);
    this.name = 'CommitPathError';
  }
}

const isContainer = (v: unknown): boolean => v !== null && typeof v === 'object';

/**
 * A copy of `obj` deep enough for commitPatch to write into: the top-level fields the responsibilities reach (a
 * whole-object path takes everything). The rest, metadata with its managedFields above all, is left out: copying
 * it was most of a commit's CPU.
 */
function scratchCopy(obj: KubeObject, resps: readonly Pick<Responsibility, 'path'>[]): Record<string, unknown> {
  const src = obj as unknown as Record<string, unknown>;
  const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
  // No prototype: a field named like an Object.prototype member stays a plain own field, as in a full copy.
  const out = Object.create(null) as Record<string, unknown>;
  for (const r of resps) {
    const top = parsePointer(r.path)[0];
    if (top === undefined) return structuredClone(src);
    if (!has(out, top) && has(src, top)) out[top] = structuredClone(src[top]);
  }
  return out;
}

/**
 * The JSON patch that sets every responsibility on `obj`: a `test` of metadata.resourceVersion first
 * (optimistic concurrency), `add` for missing parents and members, `replace` for existing ones.
 * Empty when every value is already in place (so a repeated commit writes nothing).
 */
export function commitPatch(obj: KubeObject, resps: readonly Pick<Responsibility, 'path' | 'value'>[]): JsonPatchOp[] {
  const work = scratchCopy(obj, resps);
  const ops: JsonPatchOp[] = [];
  for (const r of resps) {
    if (isDeepStrictEqual(getPointer(work, r.path), r.value)) continue;
    const tokens = parsePointer(r.path);
    if (tokens.length === 0) throw new CommitPathError(r.path, 'cannot replace a whole object');
    if (tokens[0] === 'metadata' || tokens[0] === 'apiVersion' || tokens[0] === 'kind') throw new CommitPathError(r.path, 'only spec and status fields can be committed');
    for (let j = 1; j < tokens.length; j++) {
      const parent = encodePointer(tokens.slice(0, j));
      const cur = getPointer(work, parent);
      if (cur === undefined || cur === null) {
        ops.push({ op: 'add', path: parent, value: {} });
        setPointer(work, parent, {});
      } else if (!isContainer(cur)) {
        throw new CommitPathError(r.path, `${parent} is a ${typeof cur}, not an object or array`);
      }
    }
    const exists = getPointer(work, r.path) !== undefined;
    const parentValue = getPointer(work, encodePointer(tokens.slice(0, -1)));
    const last = tokens[tokens.length - 1]!;
    const appending = Array.isArray(parentValue) && (last === '-' || Number(last) === parentValue.length);
    try {
      setPointer(work, appending ? encodePointer([...tokens.slice(0, -1), '-']) : r.path, structuredClone(r.value));
    } catch (e) {
      throw new CommitPathError(r.path, e instanceof Error ? e.message : String(e));
    }
    ops.push({ op: exists && !appending ? 'replace' : 'add', path: r.path, value: structuredClone(r.value) });
  }
  if (ops.length === 0) return [];
  return [{ op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion }, ...ops];
}

/** A responsibility whose value is not what the object holds after the commit. */
export interface CommitMismatch {
  path: string;
  expected: unknown;
  actual: unknown;
}

/** The responsibilities whose value the object does not hold (a pruned or defaulted-away path shows up here). */
export function verifyCommit(obj: KubeObject, resps: readonly Pick<Responsibility, 'path' | 'value'>[]): CommitMismatch[] {
  // Later responsibilities for the same path win, as they do in commitPatch.
  const want = new Map<string, unknown>();
  for (const r of resps) want.set(r.path, r.value);
  const out: CommitMismatch[] = [];
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
