/**
 * Server-side apply: create-or-merge of an apply configuration with field ownership tracked in
 * `managedFields` (Apply entries). Lists are atomic unless the schema declares list-type map/set.
 */
import { ApiError } from './errors.js';
import { jsonEqual } from './json.js';
import { now } from './meta.js';
import type { Schema } from './schema.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const IGNORED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
  'generateName',
]);

function childSchema(s: Schema | undefined, key: string): Schema | undefined {
  if (!s) return undefined;
  return s.properties?.[key] ?? (isObj(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined);
}

function mapKeys(s: Schema | undefined): string[] | undefined {
  return s?.['x-kubernetes-list-type'] === 'map' ? (s['x-kubernetes-list-map-keys'] ?? []) : undefined;
}

function keyObj(item: Obj, keys: string[]): Obj {
  const k: Obj = {};
  for (const kk of keys) if (item[kk] !== undefined) k[kk] = item[kk];
  return k;
}

/** The key segment of a list-type map item (`k:{...}`, its key fields as JSON). */
function itemKey(item: Obj, keys: string[]): string {
  return `k:${JSON.stringify(keyObj(item, keys))}`;
}

/**
 * Walks the fields of an object (or an apply configuration) below `prefix` as FieldsV1-style path segments: maps field
 * by field, list-type map items by key, other lists whole, labels and annotations key by key. With `maps`, every
 * non-empty map and list-type map below the root is a field too: a write that creates one owns it, as kube-apiserver
 * records with ".".
 */
function walkFields(
  v: unknown,
  s: Schema | undefined,
  prefix: string[],
  root: boolean,
  emit: (path: string[]) => void,
  maps = false,
): void {
  if (!isObj(v)) {
    emit(prefix);
    return;
  }
  const entries = Object.entries(v);
  if (!root && prefix.length && entries.length === 0) emit(prefix);
  for (const [k, x] of entries) {
    if (root && (k === 'apiVersion' || k === 'kind')) continue;
    if (root && k === 'metadata' && isObj(x)) {
      for (const [mk, mv] of Object.entries(x)) {
        if (IGNORED_META.has(mk)) continue;
        if ((mk === 'labels' || mk === 'annotations') && isObj(mv)) {
          if (maps && Object.keys(mv).length > 0) emit(['f:metadata', `f:${mk}`]);
          for (const lk of Object.keys(mv)) emit(['f:metadata', `f:${mk}`, `f:${lk}`]);
        } else emit(['f:metadata', `f:${mk}`]);
      }
      continue;
    }
    const sub = childSchema(s, k);
    const p = [...prefix, `f:${k}`];
    const keys = mapKeys(sub);
    if (Array.isArray(x) && keys && sub?.items) {
      if (x.length === 0 || maps) emit(p);
      for (const item of x) itemFields(item, keys, sub.items, p, emit, maps);
    } else if (isObj(x)) {
      if (maps && Object.keys(x).length > 0) emit(p);
      walkFields(x, sub, p, false, emit, maps);
    } else emit(p);
  }
}

/** The fields of one list-type map item of the list at `p`: its node (by key), then its own fields. */
function itemFields(
  item: unknown,
  keys: string[],
  s: Schema | undefined,
  p: string[],
  emit: (path: string[]) => void,
  maps: boolean,
): void {
  if (!isObj(item)) return;
  const ip = [...p, itemKey(item, keys)];
  emit(ip);
  walkFields(item, s, ip, false, emit, maps);
}

/** Leaf field paths of an apply configuration, keyed by their joined segments. */
function fieldSet(v: unknown, s: Schema | undefined, prefix: string[], out: Map<string, string[]>, root: boolean): void {
  walkFields(v, s, prefix, root, (p) => out.set(p.join('\u0000'), p));
}

const nonEmptyMap = (v: unknown): v is Obj => isObj(v) && Object.keys(v).length > 0;

/** Every field of a value at `p`: itself (a leaf, or the node of a map or list-map), then everything below. */
function fieldsOf(v: unknown, s: Schema | undefined, p: string[], out: string[][]): void {
  const emit = (q: string[]): void => void out.push(q);
  const keys = mapKeys(s);
  out.push(p);
  if (Array.isArray(v) && keys && s?.items) for (const item of v) itemFields(item, keys, s.items, p, emit, true);
  else if (nonEmptyMap(v)) walkFields(v, s, p, false, emit, true);
}

/** Where a write differs from what it replaced: the fields it set or changed, and those it removed. */
interface FieldDiff {
  changed: string[][];
  removed: string[][];
}

/** Diffs one value at `p` (old and new walked together: an unchanged subtree costs comparisons, nothing more). */
function diffValue(o: unknown, n: unknown, s: Schema | undefined, p: string[], d: FieldDiff): void {
  if (n === undefined) {
    if (o !== undefined) fieldsOf(o, s, p, d.removed);
    return;
  }
  if (o === undefined) {
    fieldsOf(n, s, p, d.changed);
    return;
  }
  const keys = mapKeys(s);
  if (keys && s?.items && Array.isArray(o) && Array.isArray(n) && o.length > 0 && n.length > 0) {
    const keyOf = (it: unknown): string | undefined => (isObj(it) ? itemKey(it, keys) : undefined);
    const olds = new Map<string, Obj>();
    for (const it of o) {
      const k = keyOf(it);
      if (k) olds.set(k, it as Obj);
    }
    for (const it of n) {
      const k = keyOf(it);
      if (!k) continue;
      const before = olds.get(k);
      olds.delete(k);
      const ip = [...p, k];
      if (before) diffObj(before, it as Obj, s.items, ip, d);
      else itemFields(it, keys, s.items, p, (q) => void d.changed.push(q), true);
    }
    for (const it of olds.values()) itemFields(it, keys, s.items, p, (q) => void d.removed.push(q), true);
    return;
  }
  const isList = keys !== undefined && (Array.isArray(o) || Array.isArray(n));
  if (!isList && nonEmptyMap(o) && nonEmptyMap(n)) {
    diffObj(o, n, s, p, d);
    return;
  }
  if (jsonEqual(o, n)) return;
  // A leaf changed, or a map or list-map became something else: what was goes, what is comes.
  if (isList || nonEmptyMap(o) || nonEmptyMap(n)) fieldsOf(o, s, p, d.removed);
  fieldsOf(n, s, p, d.changed);
}

/** Diffs two non-empty maps at `p` field by field. */
function diffObj(o: Obj, n: Obj, s: Schema | undefined, p: string[], d: FieldDiff): void {
  for (const [k, v] of Object.entries(n)) diffValue(o[k], v, childSchema(s, k), [...p, `f:${k}`], d);
  for (const [k, v] of Object.entries(o)) if (!(k in n)) fieldsOf(v, childSchema(s, k), [...p, `f:${k}`], d.removed);
}

/** Diffs metadata: labels and annotations key by key (and their maps' own nodes), the other fields whole. */
function diffMeta(om: Obj, nm: Obj, d: FieldDiff): void {
  for (const mk of new Set([...Object.keys(om), ...Object.keys(nm)])) {
    if (IGNORED_META.has(mk)) continue;
    const o = om[mk];
    const n = nm[mk];
    const p = ['f:metadata', `f:${mk}`];
    if ((mk === 'labels' || mk === 'annotations') && (isObj(o) || isObj(n))) {
      const ol = isObj(o) ? o : {};
      const nl = isObj(n) ? n : {};
      if (nonEmptyMap(nl) && !nonEmptyMap(ol)) d.changed.push(p);
      if (nonEmptyMap(ol) && !nonEmptyMap(nl)) d.removed.push(p);
      for (const [k, v] of Object.entries(nl)) if (ol[k] !== v) d.changed.push([...p, `f:${k}`]);
      for (const k of Object.keys(ol)) if (!(k in nl)) d.removed.push([...p, `f:${k}`]);
    } else if (n === undefined) d.removed.push(p);
    else if (!jsonEqual(o, n)) d.changed.push(p);
  }
}

/** What a write (`old` undefined: a create) set, changed and removed, as FieldsV1 paths. */
function diffFields(old: Obj | undefined, next: Obj, s: Schema | undefined): FieldDiff {
  const d: FieldDiff = { changed: [], removed: [] };
  const o = old ?? {};
  for (const k of new Set([...Object.keys(o), ...Object.keys(next)])) {
    if (k === 'apiVersion' || k === 'kind') continue;
    if (k === 'metadata') diffMeta(isObj(o.metadata) ? o.metadata : {}, isObj(next.metadata) ? next.metadata : {}, d);
    else diffValue(o[k], next[k], childSchema(s, k), [`f:${k}`], d);
  }
  return d;
}

/** Whether a FieldsV1 tree holds `path` (as a field or a node above others). */
function holdsPath(f: unknown, path: string[]): boolean {
  let cur = f;
  for (const seg of path) {
    if (!isObj(cur) || !(seg in cur)) return false;
    cur = cur[seg];
  }
  return true;
}

/** FieldsV1 of a set of paths; a path that is in the set and has fields below it is marked "." (its own node). */
function toFieldsV1(paths: Iterable<string[]>): Obj {
  const root: Obj = {};
  const owned: Obj[] = [];
  for (const p of paths) {
    let cur = root;
    for (const seg of p) {
      if (!isObj(cur[seg])) cur[seg] = {};
      cur = cur[seg] as Obj;
    }
    if (p.length) owned.push(cur);
  }
  for (const node of owned) if (Object.keys(node).some((k) => k !== '.')) node['.'] = {};
  return root;
}

function fromFieldsV1(f: unknown, prefix: string[], out: Map<string, string[]>): void {
  if (!isObj(f)) return;
  const keys = Object.keys(f).filter((k) => k !== '.');
  if ((keys.length === 0 || '.' in f) && prefix.length) out.set(prefix.join('\u0000'), prefix);
  for (const k of keys) fromFieldsV1(f[k], [...prefix, k], out);
}

function getPath(obj: unknown, path: string[]): { found: boolean; value?: unknown } {
  let cur: unknown = obj;
  for (const seg of path) {
    if (seg.startsWith('f:')) {
      if (!isObj(cur) || !(seg.slice(2) in cur)) return { found: false };
      cur = cur[seg.slice(2)];
    } else if (seg.startsWith('k:')) {
      if (!Array.isArray(cur)) return { found: false };
      const key = JSON.parse(seg.slice(2)) as Obj;
      cur = cur.find((it) => isObj(it) && Object.entries(key).every(([kk, vv]) => JSON.stringify(it[kk]) === JSON.stringify(vv)));
      if (cur === undefined) return { found: false };
    } else return { found: false };
  }
  return { found: true, value: cur };
}

function removePath(obj: unknown, path: string[]): void {
  if (!path.length) return;
  const parent = getPath(obj, path.slice(0, -1));
  if (!parent.found) return;
  const last = path[path.length - 1]!;
  if (last.startsWith('f:') && isObj(parent.value)) delete parent.value[last.slice(2)];
  else if (last.startsWith('k:') && Array.isArray(parent.value)) {
    const key = JSON.parse(last.slice(2)) as Obj;
    const idx = parent.value.findIndex(
      (it) => isObj(it) && Object.entries(key).every(([kk, vv]) => JSON.stringify(it[kk]) === JSON.stringify(vv)),
    );
    if (idx >= 0) parent.value.splice(idx, 1);
  }
}

/** Merges `applied` into `current` (maps recursively, list-type map lists by key, other lists atomically). */
function merge(current: unknown, applied: unknown, s: Schema | undefined): unknown {
  if (!isObj(applied)) return applied;
  const out: Obj = isObj(current) ? { ...current } : {};
  for (const [k, v] of Object.entries(applied)) {
    const sub = childSchema(s, k);
    const keys = mapKeys(sub);
    if (Array.isArray(v) && keys && Array.isArray(out[k])) {
      const cur = [...(out[k] as unknown[])];
      for (const item of v) {
        if (!isObj(item)) continue;
        const ko = keyObj(item, keys);
        const idx = cur.findIndex(
          (it) => isObj(it) && Object.entries(ko).every(([kk, vv]) => JSON.stringify(it[kk]) === JSON.stringify(vv)),
        );
        if (idx >= 0) cur[idx] = merge(cur[idx], item, sub?.items);
        else cur.push(item);
      }
      out[k] = cur;
    } else if (isObj(v)) out[k] = merge(out[k], v, sub);
    else out[k] = v;
  }
  return out;
}

/** Server-side apply of `applied` over `current` by `manager`; throws 409 on conflicts with other appliers unless forced. */
export function serverSideApply(
  current: Obj | undefined,
  applied: Obj,
  manager: string,
  force: boolean,
  schema: Schema | undefined,
  apiVersion: string,
  subresource?: string,
  group = '',
  resource = '',
  name = '',
): Obj {
  const newSet = new Map<string, string[]>();
  fieldSet(applied, schema, [], newSet, true);
  const managed = (isObj(current?.metadata) ? ((current!.metadata as Obj).managedFields as Obj[] | undefined) : undefined) ?? [];
  const mine = managed.find((e) => e.manager === manager && e.operation === 'Apply' && (e.subresource ?? '') === (subresource ?? ''));
  const prevSet = new Map<string, string[]>();
  if (mine) fromFieldsV1(mine.fieldsV1, [], prevSet);
  // Every other manager's fields conflict, Update entries' too (a field an updater set is theirs until forced); an
  // Update entry of this same manager does not.
  const others = managed
    .filter((e) => e !== mine && (e.operation === 'Apply' || e.manager !== manager))
    .map((e) => {
      const set = new Map<string, string[]>();
      fromFieldsV1(e.fieldsV1, [], set);
      return { entry: e, set };
    });
  const conflicts: Array<{ manager: string; path: string[] }> = [];
  if (current) {
    for (const [k, p] of newSet) {
      const cur = getPath(current, p);
      const want = getPath(
        applied,
        p.filter((seg) => seg !== 'f:metadata' || true),
      );
      if (!cur.found || JSON.stringify(cur.value) === JSON.stringify(want.value)) continue;
      for (const o of others) if (o.set.has(k)) conflicts.push({ manager: String(o.entry.manager), path: p });
    }
  }
  if (conflicts.length && !force) {
    const fmt = (p: string[]): string => p.map((s) => (s.startsWith('f:') ? `.${s.slice(2)}` : `[${s.slice(2)}]`)).join('');
    const msgs = conflicts.map((c) => `conflict with "${c.manager}": ${fmt(c.path)}`);
    throw new ApiError(
      409,
      'Conflict',
      `Apply failed with ${conflicts.length} conflict${conflicts.length > 1 ? 's' : ''}: ${msgs.join('\n')}`,
      {
        ...(name ? { name } : {}),
        ...(group ? { group } : {}),
        ...(resource ? { kind: resource } : {}),
        causes: conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}"`, field: fmt(c.path) })),
      },
    );
  }
  let result = merge(current ?? {}, applied, schema) as Obj;
  const ownedByOthers = new Set<string>();
  for (const o of others) {
    if (force) for (const k of newSet.keys()) o.set.delete(k);
    for (const k of o.set.keys()) ownedByOthers.add(k);
  }
  for (const [k, p] of prevSet) if (!newSet.has(k) && !ownedByOthers.has(k) && current) removePath(result, p);
  result = JSON.parse(JSON.stringify(result)) as Obj;
  const entries: Obj[] = [];
  for (const e of managed) {
    if (e === mine) continue;
    const o = others.find((x) => x.entry === e);
    if (o && force) {
      if (o.set.size === 0) continue;
      entries.push({ ...e, fieldsV1: toFieldsV1(o.set.values()) });
    } else entries.push(e);
  }
  entries.push({
    manager,
    operation: 'Apply',
    apiVersion,
    time: now(),
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(newSet.values()),
    ...(subresource ? { subresource } : {}),
  });
  const m = isObj(result.metadata) ? (result.metadata as Obj) : {};
  result.metadata = { ...m, managedFields: entries };
  return result;
}

/** Canonical FieldsV1 trees by their JSON, two bounded generations (as share.ts interns strings). */
const canonical = { young: new Map<string, Obj>(), old: new Map<string, Obj>() };
const CANONICAL_GENERATION = 4096;

/**
 * One shared copy of each distinct FieldsV1 tree: the machines of a fleet are written by the same managers in the same
 * fields, so their entries are the same trees. Stored objects are never mutated (every write clones first).
 */
function canonicalFields(f: Obj): Obj {
  const key = JSON.stringify(f);
  const hit = canonical.young.get(key) ?? canonical.old.get(key) ?? f;
  if (!canonical.young.has(key)) {
    if (canonical.young.size >= CANONICAL_GENERATION) {
      canonical.old = canonical.young;
      canonical.young = new Map();
    }
    canonical.young.set(key, hit);
  }
  return hit;
}

/**
 * The managedFields after a write that is not an apply (create, update, patch) by `manager`, as kube-apiserver keeps
 * them: the fields the write set or changed become the manager's Update entry (one per manager, API version and
 * subresource) and leave every other entry; fields it removed leave every entry; an entry left with no field goes.
 * `old` is undefined for a create. Ownership of a map itself (FieldsV1 ".") is not recorded, only its fields.
 */
export function trackUpdate(
  old: Obj | undefined,
  next: Obj,
  manager: string,
  schema: Schema | undefined,
  apiVersion: string,
  subresource?: string,
): Obj[] {
  const base =
    isObj(next.metadata) && Array.isArray((next.metadata as Obj).managedFields) ? ((next.metadata as Obj).managedFields as Obj[]) : [];
  const d = diffFields(old, next, schema);
  if (d.changed.length === 0 && d.removed.length === 0) return base;
  const changed = new Map(d.changed.map((p) => [p.join('\u0000'), p]));
  const removed = new Set(d.removed.map((p) => p.join('\u0000')));
  const paths = [...d.changed, ...d.removed];
  const isMine = (e: Obj): boolean =>
    e.manager === manager && e.operation === 'Update' && e.apiVersion === apiVersion && (e.subresource ?? '') === (subresource ?? '');
  const out: Obj[] = [];
  let mine: { at: number; set: Map<string, string[]> } | undefined;
  for (const e of base) {
    const own = !mine && isMine(e);
    // An entry holding none of the paths is kept as it is, unparsed (most writes touch a few fields).
    if (!own && !paths.some((p) => holdsPath(e.fieldsV1, p))) {
      out.push(e);
      continue;
    }
    const set = new Map<string, string[]>();
    fromFieldsV1(e.fieldsV1, [], set);
    if (own) {
      mine = { at: out.length, set };
      continue;
    }
    let touched = false;
    for (const k of [...set.keys()])
      if (changed.has(k) || removed.has(k)) {
        set.delete(k);
        touched = true;
      }
    if (!touched) out.push(e);
    else if (set.size > 0) out.push({ ...e, fieldsV1: canonicalFields(toFieldsV1(set.values())) });
  }
  const set = mine?.set ?? new Map<string, string[]>();
  for (const k of removed) set.delete(k);
  for (const [k, p] of changed) set.set(k, p);
  if (set.size > 0)
    out.splice(mine?.at ?? out.length, 0, {
      manager,
      operation: 'Update',
      apiVersion,
      time: now(),
      fieldsType: 'FieldsV1',
      fieldsV1: canonicalFields(toFieldsV1(set.values())),
      ...(subresource ? { subresource } : {}),
    });
  return out;
}
