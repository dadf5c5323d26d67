/** JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a strategic-merge approximation for built-ins. */
import { ApiError, badRequest } from './errors.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386 merge patch; returns a new value, `target` is not modified. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return patch;
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Strategic merge approximated as merge patch; `$patch`/`$retainKeys`/`$setElementOrder` directives are honoured or dropped. */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return patch;
  if (patch.$patch === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    if (k.startsWith('$setElementOrder/') || k.startsWith('$deleteFromPrimitiveList/')) continue;
    if (v === null) delete out[k];
    else {
      const merged = strategicMergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
  }
  return out;
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObj(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

function unescapePtr(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

function parsePtr(p: unknown): string[] {
  if (typeof p !== 'string') throw badRequest('json patch operation is missing a path');
  if (p === '') return [];
  if (!p.startsWith('/')) throw jsonPatchError(`invalid JSON pointer: ${p}`);
  return p.slice(1).split('/').map(unescapePtr);
}

function jsonPatchError(msg: string): ApiError {
  return new ApiError(422, 'Invalid', msg);
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObj(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys(v[k])]),
  );
}

function getParent(doc: unknown, path: string[], op: string, raw: string): { parent: Obj | unknown[]; key: string } {
  let cur: unknown = doc;
  for (let i = 0; i < path.length - 1; i++) {
    const seg = path[i]!;
    if (Array.isArray(cur)) {
      const idx = Number(seg);
      if (!/^\d+$/.test(seg) || idx >= cur.length)
        throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
      cur = cur[idx];
    } else if (isObj(cur)) {
      if (!(seg in cur)) throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
      cur = cur[seg];
    } else throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
  }
  if (!Array.isArray(cur) && !isObj(cur))
    throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
  return { parent: cur, key: path[path.length - 1]! };
}

function getAt(doc: unknown, path: string[], op: string, raw: string): unknown {
  let cur = doc;
  for (const seg of path) {
    if (Array.isArray(cur) && /^\d+$/.test(seg) && Number(seg) < cur.length) cur = cur[Number(seg)];
    else if (isObj(cur) && seg in cur) cur = cur[seg];
    else throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
  }
  return cur;
}

function removeAt(doc: unknown, path: string[], op: string, raw: string): unknown {
  const { parent, key } = getParent(doc, path, op, raw);
  if (Array.isArray(parent)) {
    const idx = Number(key);
    if (!/^\d+$/.test(key) || idx >= parent.length)
      throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
    return parent.splice(idx, 1)[0];
  }
  if (!(key in parent)) throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
  const v = parent[key];
  delete parent[key];
  return v;
}

function addAt(doc: unknown, path: string[], value: unknown, op: string, raw: string, replace: boolean): unknown {
  if (path.length === 0) return value;
  const { parent, key } = getParent(doc, path, op, raw);
  if (Array.isArray(parent)) {
    if (key === '-' && !replace) parent.push(value);
    else {
      const idx = Number(key);
      if (!/^\d+$/.test(key) || idx > parent.length || (replace && idx >= parent.length))
        throw jsonPatchError(`${op} operation does not apply: doc is missing path: "${raw}": missing value`);
      if (replace) parent[idx] = value;
      else parent.splice(idx, 0, value);
    }
  } else {
    if (replace && !(key in parent)) throw jsonPatchError(`replace operation does not apply: doc is missing key: ${raw}: missing value`);
    parent[key] = value;
  }
  return doc;
}

/** Applies an RFC 6902 JSON patch; returns the new document (input untouched). */
export function jsonPatch(target: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = clone(target);
  for (const opRaw of patch) {
    if (!isObj(opRaw)) throw badRequest('json: cannot unmarshal into jsonpatch.Operation');
    const op = opRaw.op;
    const raw = String(opRaw.path ?? '');
    const path = parsePtr(opRaw.path);
    switch (op) {
      case 'add':
        if (!('value' in opRaw)) throw jsonPatchError('add operation does not apply: value is missing');
        doc = addAt(doc, path, clone(opRaw.value), 'add', raw, false);
        break;
      case 'replace':
        if (!('value' in opRaw)) throw jsonPatchError('replace operation does not apply: value is missing');
        doc = addAt(doc, path, clone(opRaw.value), 'replace', raw, true);
        break;
      case 'remove':
        removeAt(doc, path, 'remove', raw);
        break;
      case 'move': {
        const from = parsePtr(opRaw.from);
        const v = removeAt(doc, from, 'move', String(opRaw.from));
        doc = addAt(doc, path, v, 'move', raw, false);
        break;
      }
      case 'copy': {
        const v = clone(getAt(doc, parsePtr(opRaw.from), 'copy', String(opRaw.from)));
        doc = addAt(doc, path, v, 'copy', raw, false);
        break;
      }
      case 'test': {
        let cur: unknown;
        try {
          cur = getAt(doc, path, 'test', raw);
        } catch {
          cur = undefined;
        }
        if (cur === undefined || !deepEqual(cur, opRaw.value)) throw jsonPatchError(`testing value ${raw} failed: test failed`);
        break;
      }
      default:
        throw badRequest(`Unexpected kind: ${String(op)}`);
    }
  }
  return doc;
}
