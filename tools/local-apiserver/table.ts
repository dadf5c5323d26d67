/** `as=Table` rendering with printer columns (CRD additionalPrinterColumns, built-in columns) and a JSONPath subset. */
import { humanDuration } from './duration.js';
import type { PrinterColumn, ResourceDef } from './resources.js';

/** Re-exported for callers that render ages next to tables. */
export { humanDuration };

type Obj = Record<string, unknown>;

const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';

type Step =
  | { t: 'field'; name: string }
  | { t: 'index'; i: number }
  | { t: 'all' }
  | { t: 'filter'; path: string[]; op: string; value: unknown }
  | { t: 'exists'; path: string[] };

/** Parses the JSONPath forms used in printer columns: .a.b, .a[0], .a[*].b, .a[?(@.x=="y")].b, {...} wrappers. */
export function parseJsonPath(src: string): Step[] {
  let s = src.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  if (s.startsWith('$')) s = s.slice(1);
  const steps: Step[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '.') {
      i++;
      const m = /^[^.[]+/.exec(s.slice(i));
      if (m) {
        steps.push({ t: 'field', name: m[0] });
        i += m[0].length;
      }
    } else if (c === '[') {
      const end = findClose(s, i);
      const inner = s.slice(i + 1, end).trim();
      i = end + 1;
      if (inner === '*') steps.push({ t: 'all' });
      else if (/^-?\d+$/.test(inner)) steps.push({ t: 'index', i: Number(inner) });
      else if (/^'.*'$|^".*"$/.test(inner)) steps.push({ t: 'field', name: inner.slice(1, -1) });
      else if (inner.startsWith('?(') && inner.endsWith(')')) {
        const expr = inner.slice(2, -1).trim();
        const m = /^@((?:\.[A-Za-z0-9_-]+)+)\s*(==|!=|<=|>=|<|>)\s*(.+)$/.exec(expr);
        if (m) {
          const raw = m[3]!.trim();
          let value: unknown = raw;
          if (/^".*"$|^'.*'$/.test(raw)) value = raw.slice(1, -1);
          else if (/^-?\d+(\.\d+)?$/.test(raw)) value = Number(raw);
          else if (raw === 'true' || raw === 'false') value = raw === 'true';
          steps.push({ t: 'filter', path: m[1]!.slice(1).split('.'), op: m[2]!, value });
        } else {
          const e = /^@((?:\.[A-Za-z0-9_-]+)+)$/.exec(expr);
          if (!e) throw new Error(`unsupported JSONPath filter: ${expr}`);
          steps.push({ t: 'exists', path: e[1]!.slice(1).split('.') });
        }
      } else throw new Error(`unsupported JSONPath segment: [${inner}]`);
    } else throw new Error(`unsupported JSONPath: ${src}`);
  }
  return steps;
}

function findClose(s: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) return i;
  }
  throw new Error(`unterminated [ in JSONPath: ${s}`);
}

function dig(v: unknown, path: string[]): unknown {
  let cur = v;
  for (const p of path) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) return undefined;
    cur = (cur as Obj)[p];
  }
  return cur;
}

/** Evaluates a parsed JSONPath; returns all matched values. */
export function evalJsonPath(steps: Step[], root: unknown): unknown[] {
  let cur: unknown[] = [root];
  for (const st of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (st.t === 'field') {
        if (typeof v === 'object' && v !== null && !Array.isArray(v) && (v as Obj)[st.name] !== undefined) next.push((v as Obj)[st.name]);
      } else if (st.t === 'index') {
        if (Array.isArray(v)) {
          const i = st.i < 0 ? v.length + st.i : st.i;
          if (i >= 0 && i < v.length) next.push(v[i]);
        }
      } else if (st.t === 'all') {
        if (Array.isArray(v)) next.push(...v);
        else if (typeof v === 'object' && v !== null) next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        for (const item of v) {
          const x = dig(item, st.path);
          if (st.t === 'exists') {
            if (x !== undefined) next.push(item);
            continue;
          }
          if (x === undefined) continue;
          let ok = false;
          switch (st.op) {
            case '==':
              ok = x === st.value;
              break;
            case '!=':
              ok = x !== st.value;
              break;
            case '<':
              ok = (x as number) < (st.value as number);
              break;
            case '<=':
              ok = (x as number) <= (st.value as number);
              break;
            case '>':
              ok = (x as number) > (st.value as number);
              break;
            default:
              ok = (x as number) >= (st.value as number);
          }
          if (ok) next.push(item);
        }
      }
    }
    cur = next;
  }
  return cur;
}

const compiledPaths = new Map<string, Step[] | null>();

function cellFor(col: PrinterColumn, obj: Obj): unknown {
  if (col.cell) return col.cell(obj);
  let steps = compiledPaths.get(col.jsonPath);
  if (steps === undefined) {
    try {
      steps = parseJsonPath(col.jsonPath);
    } catch {
      steps = null;
    }
    compiledPaths.set(col.jsonPath, steps);
  }
  if (!steps) return null;
  const res = evalJsonPath(steps, obj);
  if (res.length === 0) return null;
  const first = res[0];
  if (col.type === 'date') {
    if (typeof first !== 'string') return null;
    const t = Date.parse(first);
    return Number.isNaN(t) ? null : humanDuration(Date.now() - t);
  }
  if (col.type === 'string') return res.map((r) => (typeof r === 'object' ? JSON.stringify(r) : String(r))).join(' ');
  return first;
}

/** Column definitions of a resource version (Name first, then printer columns, or Age by default). */
export function columnsOf(def: ResourceDef, version: string): PrinterColumn[] {
  const v = def.versions.find((x) => x.name === version);
  const cols = v?.columns ?? [];
  if (!def.builtin && cols.length === 0)
    return [
      {
        name: 'Age',
        type: 'date',
        jsonPath: '.metadata.creationTimestamp',
        description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
      },
    ];
  return cols;
}

/** The metadata-only form of a row object (includeObject=Metadata). */
function partial(obj: Obj): Obj {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/** Renders objects as a meta.k8s.io/v1 Table. */
export function toTable(def: ResourceDef, version: string, objs: Obj[], listMeta: Obj, includeObject: string, withHeaders = true): Obj {
  const cols = columnsOf(def, version);
  const columnDefinitions = [
    { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
    ...cols.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description ?? '',
      priority: c.priority ?? 0,
    })),
  ];
  const rows = objs.map((o) => {
    const row: Obj = { cells: [(o.metadata as Obj).name, ...cols.map((c) => cellFor(c, o))] };
    if (includeObject === 'Object') row.object = o;
    else if (includeObject !== 'None') row.object = partial(o);
    return row;
  });
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    ...(withHeaders ? { columnDefinitions } : { columnDefinitions: [] }),
    rows,
  };
}
