// Snapshot -> mutate -> one patch at the end: JSON merge patches (RFC 7386) computed from a snapshot,
// status through /status, optimistic concurrency by resourceVersion.
import { resourceName, type KubeObject, type ResourceType } from '../api/kube.js';
import { ConflictError, KubeApiError } from './errors.js';
import type { KubeClient } from './types.js';

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

/** Options of `PatchHelper.apply`. */
export interface PatchApplyOptions {
  fieldManager?: string;
  /** False for kinds without a status subresource (e.g. Lease, ConfigMap): everything goes in one patch. Default true. */
  statusSubresource?: boolean;
}

/** A snapshot of an object taken before mutating it; `apply` patches exactly what changed since. */
export interface PatchHelper<T extends KubeObject> {
  /** The object as it was when the snapshot was taken (a deep copy). */
  readonly before: T;
  /** True when `obj` differs from the snapshot in anything `apply` would send. */
  changed(obj: T): boolean;
  /**
   * Sends what changed: status through /status first, then metadata (labels, annotations, finalizers,
   * ownerReferences) and spec/other fields, each guarded by the resourceVersion it builds on (409 ->
   * ConflictError, retryable). Status goes first so that removing the last finalizer comes last.
   * Sends nothing when nothing changed. Returns the updated object (or `obj` when nothing was sent).
   */
  apply(client: KubeClient, res: ResourceType, obj: T, opts?: PatchApplyOptions): Promise<T>;
}

/** Takes a snapshot of `obj` (deep copy) to patch its later mutations. */
export function snapshot<T extends KubeObject>(obj: T): PatchHelper<T> {
  const before = structuredClone(obj);
  return {
    before,
    changed(obj: T): boolean {
      const p = computePatches(before, obj);
      return Object.keys(p.main).length > 0 || Object.keys(p.status).length > 0;
    },
    async apply(client: KubeClient, res: ResourceType, obj: T, opts?: PatchApplyOptions): Promise<T> {
      const patches = computePatches(before, obj);
      let { main, status } = patches;
      if (opts?.statusSubresource === false && Object.keys(status).length > 0) {
        main = { ...main, ...status };
        status = {};
      }
      const ns = obj.metadata.namespace;
      const name = obj.metadata.name ?? '';
      const op = `patch ${resourceName(res)} ${ns ? `${ns}/` : ''}${name}`;
      let rv = before.metadata.resourceVersion;
      let result: T | undefined;
      const send = async (body: Record<string, unknown>, subresource: 'status' | undefined): Promise<T> => {
        const meta = (body['metadata'] ??= {}) as Record<string, unknown>;
        if (rv) meta['resourceVersion'] = rv;
        try {
          return await client.patch<T>(res, ns, name, body, {
            type: 'merge',
            ...(subresource ? { subresource } : {}),
            ...(opts?.fieldManager ? { fieldManager: opts.fieldManager } : {}),
          });
        } catch (err) {
          if (err instanceof KubeApiError && err.code === 409) throw new ConflictError(`${op}${subresource ? '/status' : ''}`, err);
          throw err;
        }
      };
      if (Object.keys(status).length > 0) {
        result = await send(status, 'status');
        rv = result.metadata.resourceVersion;
      }
      if (Object.keys(main).length > 0) {
        result = await send(main, undefined);
      }
      return result ?? obj;
    },
  };
}
