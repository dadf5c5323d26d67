/**
 * Worst-case cost estimation of CRD `x-kubernetes-validations`, modelled on apiextensions-apiserver: each rule's
 * static cost (cel-go's estimator: traversal of strings, lists and maps sized by maxLength / maxItems / maxProperties,
 * or by what fits in one request when unbounded) times how often the rule can run (the product of the maxItems /
 * maxProperties above it, or what fits in a request when an ancestor is unbounded). A real server refuses a CRD whose
 * rule exceeds the per-rule budget or whose rules together exceed the per-CRD budget; so does the local one.
 */
import { CelError, parseCel, type CelNode } from './cel.js';
import type { FieldError } from './errors.js';
import type { Schema } from './schema.js';

/** Largest request body the API server accepts (celconfig.MaxRequestSizeBytes); bounds unbounded strings and lists. */
export const MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024;
/** Per-rule estimated cost limit (StaticEstimatedCostLimit). */
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
/** Estimated cost limit for all rules of one version's schema together (StaticEstimatedCRDCostLimit). */
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;

const STRING_TRAVERSAL_FACTOR = 0.1;
const REGEX_LENGTH_FACTOR = 0.25;
const LIST_CREATE_COST = 10;
const MAP_CREATE_COST = 30;
// Serialized sizes of bounded string formats (quotes included), as the real server's type declarations assume.
const FORMAT_MAX_LENGTH: Record<string, number> = { 'date-time': 37, date: 12, duration: 36 };

/** The shape the estimator tracks for a value: its kind, its largest size and, for containers, its element. */
interface Ty {
  kind: 'string' | 'list' | 'map' | 'object' | 'scalar' | 'dyn';
  max: number;
  schema?: Schema;
  elem?: Ty;
}
interface Est {
  cost: number;
  ty: Ty;
}

const DYN: Ty = { kind: 'dyn', max: 1 };
const SCALAR: Ty = { kind: 'scalar', max: 1 };
const unboundedString = (): Ty => ({ kind: 'string', max: MAX_REQUEST_SIZE_BYTES - 2 });

function isSchemaObj(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null;
}

/** Smallest JSON serialization of a value of the schema (required fields without defaults count). */
export function minSerializedSize(s: Schema | undefined): number {
  if (!s || s['x-kubernetes-int-or-string']) return 1;
  switch (s.type) {
    case 'string':
      return 2;
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return 4;
    case 'array':
      return 2;
    case 'object': {
      if (isSchemaObj(s.additionalProperties)) return 2;
      let size = 2;
      for (const r of s.required ?? []) {
        const p = s.properties?.[r];
        if (p && p.default === undefined) size += r.length + minSerializedSize(p) + 4;
      }
      return size;
    }
    default:
      return 1;
  }
}

/** The estimator's view of a schema node, with the real server's bounds for unbounded strings, lists and maps. */
function typeOf(s: Schema | undefined): Ty {
  if (!s) return DYN;
  if (s['x-kubernetes-int-or-string']) return DYN;
  switch (s.type) {
    case 'string': {
      // maxLength counts code points; the real estimator reasons in bytes, up to 4 per code point.
      let max = s.maxLength === undefined ? undefined : s.maxLength * 4;
      if (max === undefined && s.enum?.length) max = Math.max(...s.enum.map((e) => (typeof e === 'string' ? [...e].length : 0)));
      if (max === undefined && s.format) max = FORMAT_MAX_LENGTH[s.format];
      return { kind: 'string', max: max ?? MAX_REQUEST_SIZE_BYTES - 2, schema: s };
    }
    case 'array': {
      const max = s.maxItems ?? Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minSerializedSize(s.items) + 1));
      return { kind: 'list', max, schema: s, elem: typeOf(s.items) };
    }
    case 'object':
      if (isSchemaObj(s.additionalProperties)) {
        const max = s.maxProperties ?? Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minSerializedSize(s.additionalProperties) + 6));
        return { kind: 'map', max, schema: s, elem: typeOf(s.additionalProperties) };
      }
      return { kind: 'object', max: 1, schema: s };
    case 'integer':
    case 'number':
    case 'boolean':
      return SCALAR;
    default:
      return s.properties ? { kind: 'object', max: 1, schema: s } : DYN;
  }
}

function field(t: Ty, name: string): Ty {
  if (t.kind === 'map') return t.elem ?? DYN;
  const s = t.schema;
  if (!s) return DYN;
  const p = s.properties?.[name];
  return p ? typeOf(p) : DYN;
}

const sized = (t: Ty): boolean => t.kind === 'string' || t.kind === 'list' || t.kind === 'map';
const traversal = (n: number, factor = STRING_TRAVERSAL_FACTOR): number => Math.ceil(n * factor);

/** cel-go's comprehension overhead per iteration (loop condition + accumulator step) for each macro. */
const MACRO_STEP: Record<string, number> = { all: 3, exists: 3, exists_one: 2, map: 12, filter: 13 };

function est(n: CelNode, env: Map<string, Ty>): Est {
  switch (n.k) {
    case 'lit':
      if (typeof n.v === 'string') return { cost: 0, ty: { kind: 'string', max: [...n.v].length } };
      return { cost: 0, ty: SCALAR };
    case 'id':
      return { cost: 1, ty: env.get(n.name) ?? DYN };
    case 'sel': {
      const o = est(n.obj, env);
      return { cost: o.cost + 1, ty: field(o.ty, n.field) };
    }
    case 'has':
      return { cost: est(n.obj, env).cost + 1, ty: SCALAR };
    case 'idx': {
      const o = est(n.obj, env);
      const i = est(n.index, env);
      return { cost: o.cost + i.cost + 1, ty: o.ty.elem ?? DYN };
    }
    case 'list': {
      const items = n.items.map((x) => est(x, env));
      const elem = items.reduce<Ty | undefined>((a, b) => (a && a.max >= b.ty.max ? a : b.ty), undefined);
      return {
        cost: LIST_CREATE_COST + items.reduce((a, b) => a + b.cost, 0),
        ty: { kind: 'list', max: items.length, ...(elem ? { elem } : {}) },
      };
    }
    case 'map': {
      const cost = n.entries.reduce((a, [k, v]) => a + est(k, env).cost + est(v, env).cost, 0);
      return { cost: MAP_CREATE_COST + cost, ty: { kind: 'map', max: n.entries.length } };
    }
    case 'un':
      return { cost: est(n.x, env).cost + 1, ty: SCALAR };
    case 'cond': {
      const c = est(n.c, env);
      const t = est(n.t, env);
      const f = est(n.f, env);
      return { cost: c.cost + Math.max(t.cost, f.cost), ty: t.ty.max >= f.ty.max ? t.ty : f.ty };
    }
    case 'bin':
      return estBin(n.op, est(n.l, env), est(n.r, env));
    case 'macro': {
      const target = est(n.target, env);
      const count = sized(target.ty) || target.ty.kind === 'dyn' ? target.ty.max : 1;
      const elem = target.ty.kind === 'map' ? unboundedString() : (target.ty.elem ?? DYN);
      const inner = new Map(env);
      inner.set(n.v, elem);
      const body = est(n.body, inner);
      const cost = target.cost + count * (body.cost + (MACRO_STEP[n.fn] ?? 3)) + 1;
      const ty: Ty =
        n.fn === 'map' ? { kind: 'list', max: count, elem: body.ty } : n.fn === 'filter' ? { kind: 'list', max: count, elem } : SCALAR;
      return { cost, ty };
    }
    case 'call':
      return estCall(n, env);
  }
}

function estBin(op: string, l: Est, r: Est): Est {
  const args = l.cost + r.cost;
  switch (op) {
    case '&&':
    case '||':
      return { cost: args, ty: SCALAR };
    case '==':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      // Comparing two strings, lists or maps traverses the smaller one.
      return { cost: args + 1 + (sized(l.ty) && sized(r.ty) ? traversal(Math.min(l.ty.max, r.ty.max)) : 0), ty: SCALAR };
    case 'in':
      return { cost: args + (r.ty.kind === 'list' ? r.ty.max : 1), ty: SCALAR };
    case '+':
      if (l.ty.kind === 'string' && r.ty.kind === 'string') {
        const max = l.ty.max + r.ty.max;
        return { cost: args + traversal(max), ty: { kind: 'string', max } };
      }
      if (l.ty.kind === 'list' && r.ty.kind === 'list')
        return { cost: args + 1, ty: { kind: 'list', max: l.ty.max + r.ty.max, ...(l.ty.elem ? { elem: l.ty.elem } : {}) } };
      return { cost: args + 1, ty: l.ty.kind === 'dyn' ? r.ty : l.ty };
    default:
      return { cost: args + 1, ty: SCALAR };
  }
}

function estCall(n: Extract<CelNode, { k: 'call' }>, env: Map<string, Ty>): Est {
  const target = n.target ? est(n.target, env) : undefined;
  const args = n.args.map((a) => est(a, env));
  const argCost = (target?.cost ?? 0) + args.reduce((a, b) => a + b.cost, 0);
  const a0 = args[0]?.ty ?? DYN;
  const t = target?.ty ?? DYN;
  switch (n.fn) {
    case 'matches':
      return { cost: argCost + traversal(t.max) * traversal(a0.max, REGEX_LENGTH_FACTOR), ty: SCALAR };
    case 'contains':
      return { cost: argCost + traversal(t.max) * traversal(a0.max), ty: SCALAR };
    case 'startsWith':
    case 'endsWith':
      return { cost: argCost + traversal(a0.max), ty: SCALAR };
    case 'lowerAscii':
    case 'upperAscii':
    case 'trim':
    case 'substring':
    case 'charAt':
      return { cost: argCost + traversal(t.max), ty: t.kind === 'string' ? { kind: 'string', max: t.max } : t };
    case 'split':
      return { cost: argCost + traversal(t.max), ty: { kind: 'list', max: t.max, elem: { kind: 'string', max: t.max } } };
    case 'replace':
      // The result can grow by the replacement for every character replaced.
      return {
        cost: argCost + traversal(t.max) * Math.max(1, traversal(a0.max)),
        ty: { kind: 'string', max: t.max * Math.max(1, args[1]?.ty.max ?? 1) },
      };
    case 'join': {
      const max = t.max * (t.elem?.max ?? 1) + (a0.kind === 'string' ? a0.max * t.max : 0);
      return { cost: argCost + traversal(max), ty: { kind: 'string', max } };
    }
    case 'format':
      return { cost: argCost + traversal(t.max) + a0.max, ty: { kind: 'string', max: MAX_REQUEST_SIZE_BYTES - 2 } };
    case 'indexOf':
    case 'lastIndexOf':
      // On a string, a substring search; on a list, one comparison per element.
      return { cost: argCost + (t.kind === 'string' ? traversal(t.max) * Math.max(1, traversal(a0.max)) : t.max), ty: SCALAR };
    case 'isSorted':
    case 'sum':
      return { cost: argCost + t.max, ty: SCALAR };
    case 'min':
    case 'max':
      return { cost: argCost + t.max, ty: t.elem ?? DYN };
    case 'string':
      return { cost: argCost + 1, ty: a0.kind === 'string' ? a0 : { kind: 'string', max: 32 } };
    default:
      return { cost: argCost + 1, ty: SCALAR };
  }
}

/** The estimated worst-case cost of one evaluation of `source` with `self` typed by `schema` (cel-go's MaxCost). */
export function estimateCelCost(source: string, schema: Schema, root = false): number {
  const ast = parseCel(source);
  let self = typeOf(schema);
  if (root) {
    // At a resource root apiVersion, kind, metadata.name and metadata.generateName are visible to rules.
    const meta: Schema = { type: 'object', properties: { name: { type: 'string' }, generateName: { type: 'string' } } };
    self = { ...self, schema: { ...schema, properties: { ...(schema.properties ?? {}), metadata: meta } } };
  }
  return est(
    ast,
    new Map([
      ['self', self],
      ['oldSelf', self],
    ]),
  ).cost;
}

/** How many times data of this schema can occur in one object when an ancestor does not bound it. */
export function unboundedCardinality(schema: Schema): number {
  return Math.floor(MAX_REQUEST_SIZE_BYTES / (minSerializedSize(schema) + 1));
}

/** How many children a node can have per occurrence; undefined when it does not bound them. */
function maxElements(s: Schema): number | undefined {
  if (s.type === 'object') return isSchemaObj(s.additionalProperties) ? s.maxProperties : 1;
  if (s.type === 'array') return s.maxItems;
  return 1;
}

/** The budget-exceeded wording of the real server (Go's %f below 1.5x, %.1f up to 100x). */
export function costErrorMessage(costName: string, cost: number, limit: number): string {
  const f = cost / limit;
  const factor = f > 100 ? 'more than 100x' : f < 1.5 ? `${f.toFixed(6)}x` : `${f.toFixed(1)}x`;
  return `${costName} exceeds budget by factor of ${factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

/** One rule's estimated cost, as the real server computes it at CRD registration (for diagnostics and tests). */
export interface RuleCost {
  path: string;
  cost: number;
}

/**
 * Estimates every rule of one version's schema (rooted at `basePath`, e.g. `spec.versions[0].schema.openAPIV3Schema`)
 * and returns the errors a real server gives for rules over budget, plus all rule costs.
 */
export function ruleCostProblems(root: Schema, basePath: string): { errors: FieldError[]; costs: RuleCost[] } {
  const errors: FieldError[] = [];
  const costs: RuleCost[] = [];
  let total = 0;
  const expensive: RuleCost[] = [];
  const observe = (path: string, cost: number): void => {
    total += cost;
    costs.push({ path, cost });
    if (cost >= STATIC_ESTIMATED_CRD_COST_LIMIT / 100) {
      expensive.push({ path, cost });
      expensive.sort((a, b) => b.cost - a.cost);
      expensive.splice(4);
    }
  };
  const walk = (s: Schema, path: string, cardinality: number | undefined, isRoot: boolean): void => {
    (s['x-kubernetes-validations'] ?? []).forEach((r, i) => {
      const rulePath = `${path}.x-kubernetes-validations[${i}]`;
      let base: number;
      try {
        base = estimateCelCost(String(r.rule), s, isRoot || s['x-kubernetes-embedded-resource'] === true);
      } catch (e) {
        if (e instanceof CelError) return; // reported as a compilation error
        throw e;
      }
      const cost = base * (cardinality ?? unboundedCardinality(s));
      if (cost > STATIC_ESTIMATED_COST_LIMIT)
        errors.push({
          type: 'FieldValueForbidden',
          field: `${rulePath}.rule`,
          detail: costErrorMessage('estimated rule cost', cost, STATIC_ESTIMATED_COST_LIMIT),
        });
      observe(`${rulePath}.rule`, cost);
      if (r.messageExpression) {
        let mcost: number | undefined;
        try {
          mcost = estimateCelCost(r.messageExpression, s, isRoot);
        } catch {
          mcost = undefined;
        }
        if (mcost !== undefined) {
          if (mcost > STATIC_ESTIMATED_COST_LIMIT)
            errors.push({
              type: 'FieldValueForbidden',
              field: `${rulePath}.messageExpression`,
              detail: costErrorMessage('estimated messageExpression cost', mcost, STATIC_ESTIMATED_COST_LIMIT),
            });
          observe(`${rulePath}.messageExpression`, mcost);
        }
      }
    });
    const per = maxElements(s);
    const child = cardinality === undefined || per === undefined ? undefined : cardinality * per;
    for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${path}.properties[${k}]`, child, false);
    if (s.items) walk(s.items, `${path}.items`, child, false);
    if (isSchemaObj(s.additionalProperties)) walk(s.additionalProperties, `${path}.additionalProperties`, child, false);
  };
  walk(root, basePath, 1, true);
  if (total > STATIC_ESTIMATED_CRD_COST_LIMIT) {
    for (const e of expensive)
      errors.push({
        type: 'FieldValueForbidden',
        field: e.path,
        detail: 'contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema',
      });
    errors.push({
      type: 'FieldValueForbidden',
      field: basePath,
      detail: costErrorMessage(
        'x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema',
        total,
        STATIC_ESTIMATED_CRD_COST_LIMIT,
      ),
    });
  }
  return { errors, costs };
}
