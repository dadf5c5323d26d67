// JSON merge patches (RFC 7386) computed from a snapshot, and JSON equality: the pure half of the runtime's patch
// helper (src/runtime/patch.ts sends them), usable by decisions without the client.
import type { KubeObject } from '../../api/kube.js';

type Json = unknown;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Deep structural equality of JSON values (object key order ignored). */
export function jsonEqual(a: Json, b: Json): boolean {
  // Iterative (pairs still to compare), so that deeply nested objects cannot overflow the stack.
  const todo: Array<[Json, Json]> = [[a, b]];
  while (todo.length > 0) {
    const [x, y] = todo.pop()!;
    if (x === y) continue;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) todo.push([x[i], y[i]]);
    } else if (isObject(x) && isObject(y)) {
      const kx = Object.keys(x).filter((k) => x[k] !== undefined);
      const ky = Object.keys(y).filter((k) => y[k] !== undefined);
      if (kx.length !== ky.length) return false;
      for (const k of kx) {
        if (!Object.prototype.hasOwnProperty.call(y, k)) return false;
        todo.push([x[k], y[k]]);
      }
    } else return false;
  }
  return true;
}

/**
 * The JSON merge patch that turns `before` into `after` (both objects): removed keys become null, nested
 * objects are diffed recursively, arrays and scalars are replaced whole. `{}` when nothing changed.
 * Keys whose value is `undefined` count as absent.
 */
export function mergePatchDiff(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const k of Object.keys(before)) {
    if (before[k] !== undefined && (!Object.prototype.hasOwnProperty.call(after, k) || after[k] === undefined)) patch[k] = null;
  }
  for (const [k, v] of Object.entries(after)) {
    if (v === undefined) continue;
    const b = before[k];
    if (isObject(b) && isObject(v)) {
      const sub = mergePatchDiff(b, v);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (!jsonEqual(b, v)) {
      patch[k] = v === null ? null : structuredClone(v);
    }
  }
  return patch;
}

/** Applies a JSON merge patch (RFC 7386) to a document, returning a new value. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isObject(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/** The metadata fields a controller may change through the patch helper. */
const META_FIELDS = ['labels', 'annotations', 'finalizers', 'ownerReferences'] as const;

/** The part of an object sent to the main resource: listed metadata + every top-level field except status. */
function mainPart(obj: KubeObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (k !== 'status' && k !== 'metadata' && k !== 'apiVersion' && k !== 'kind') out[k] = v;
  const meta: Record<string, unknown> = {};
  for (const f of META_FIELDS) if (obj.metadata[f] !== undefined) meta[f] = obj.metadata[f];
  out['metadata'] = meta;
  return out;
}

/** The patches `apply` would send for the change from `before` to `after` (empty objects = nothing to send). */
export function computePatches(before: KubeObject, after: KubeObject): { main: Record<string, unknown>; status: Record<string, unknown> } {
  const main = mergePatchDiff(mainPart(before), mainPart(after));
  const status = mergePatchDiff({ status: before['status'] }, { status: after['status'] });
  return { main, status };
}
