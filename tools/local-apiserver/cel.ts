/**
 * CEL for CRD `x-kubernetes-validations` (and any expression over JSON variables) on @bufbuild/cel, a CEL evaluator
 * conformance-tested against the CEL spec. This file adapts it to the API server: JSON values in (integers as CEL
 * ints, as the real server's schema-typed values are), JSON out, the Kubernetes library functions the library lacks,
 * and the compile-time checks cel-go's checker makes that the library leaves to run time (undeclared references,
 * function arity, field selections against the schema).
 */
import {
  celEnv,
  celMethod,
  CelScalar,
  isCelError,
  isCelList,
  isCelMap,
  isCelUint,
  listType,
  parse,
  plan,
  type CelFunc,
  type CelInput,
  type CelList,
  type CelValue,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { RE2JS } from '@bufbuild/re2';

/** Thrown for syntax/unsupported constructs (compile time) and for runtime errors (no such key...). */
export class CelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CelError';
  }
}

/** A parsed CEL expression in the shape the schema checker and the cost estimator walk (macros not expanded). */
export type CelNode =
  | { k: 'lit'; v: unknown }
  | { k: 'id'; name: string }
  | { k: 'sel'; obj: CelNode; field: string }
  | { k: 'idx'; obj: CelNode; index: CelNode }
  | { k: 'call'; fn: string; target?: CelNode; args: CelNode[] }
  | { k: 'macro'; fn: string; target: CelNode; v: string; body: CelNode }
  | { k: 'has'; obj: CelNode; field: string }
  | { k: 'un'; op: string; x: CelNode }
  | { k: 'bin'; op: string; l: CelNode; r: CelNode }
  | { k: 'cond'; c: CelNode; t: CelNode; f: CelNode }
  | { k: 'list'; items: CelNode[] }
  | { k: 'map'; entries: Array<[CelNode, CelNode]> };

type Parsed = ReturnType<typeof parse>;
type Expr = Parsed['expr'];

const { DYN, INT, BOOL } = CelScalar;
const LIST = listType(DYN);

function listItems(l: CelList): CelValue[] {
  return [...l];
}

/** CEL ordering for the Kubernetes list functions: ints, uints, doubles, strings and bools of one kind. */
function order(a: CelValue, b: CelValue): number {
  const x = isCelUint(a) ? a.value : a;
  const y = isCelUint(b) ? b.value : b;
  if (typeof x !== typeof y || !['bigint', 'number', 'string', 'boolean'].includes(typeof x))
    throw new Error(`no such overload: comparison of ${typeof x} and ${typeof y}`);
  return (x as number) < (y as number) ? -1 : (x as number) > (y as number) ? 1 : 0;
}

function indexIn(l: CelList, v: CelValue, last: boolean): bigint {
  const items = listItems(l);
  const eq = (x: CelValue): boolean => celEquals(fromCel(x), fromCel(v));
  const i = last ? items.findLastIndex(eq) : items.findIndex(eq);
  return BigInt(i);
}

function extreme(l: CelList, sign: 1 | -1, fn: string): CelValue {
  const items = listItems(l);
  if (!items.length) throw new Error(`${fn}(list) called on an empty list`);
  return items.reduce((a, b) => (order(b, a) * sign > 0 ? b : a));
}

/** k8s.io/apiserver/pkg/cel/library lists: the Kubernetes list functions @bufbuild/cel does not have. */
const KUBERNETES_LISTS: CelFunc[] = [
  celMethod('isSorted', LIST, [], BOOL, function () {
    const items = listItems(this);
    return items.every((x, i) => i === 0 || order(items[i - 1]!, x) <= 0);
  }),
  celMethod('sum', LIST, [], DYN, function () {
    const items = listItems(this);
    if (!items.length) return 0n;
    if (items.every((x) => typeof x === 'bigint')) {
      const sum = items.reduce((a, b) => (a as bigint) + (b as bigint)) as bigint;
      // CEL ints are 64-bit: a sum outside that range is an error, not a larger number.
      if (sum !== BigInt.asIntN(64, sum)) throw new Error('integer overflow');
      return sum;
    }
    if (items.every((x) => typeof x === 'number')) return items.reduce((a, b) => (a as number) + (b as number));
    throw new Error('no such overload: sum of a list that is not all ints or all doubles');
  }),
  celMethod('min', LIST, [], DYN, function () {
    return extreme(this, -1, 'min');
  }),
  celMethod('max', LIST, [], DYN, function () {
    return extreme(this, 1, 'max');
  }),
  celMethod('indexOf', LIST, [DYN], INT, function (v) {
    return indexIn(this, v, false);
  }),
  celMethod('lastIndexOf', LIST, [DYN], INT, function (v) {
    return indexIn(this, v, true);
  }),
];

/** The functions a rule may call: CEL's standard library, the strings extension and the Kubernetes additions. */
const FUNCS: CelFunc[] = [...strings, ...KUBERNETES_LISTS];

/** Bounded memo: sources and patterns repeat (every test server registers the same CRDs), parsing is the slow part. */
function memo<T>(cache: Map<string, T>, key: string, make: () => T): T {
  let v = cache.get(key);
  if (v === undefined) {
    v = make();
    if (cache.size >= 2000) cache.clear();
    cache.set(key, v);
  }
  return v;
}

// The library compiles a `matches` pattern on every call; the same RE2 engine, compiled once per pattern.
const patterns = new Map<string, RE2JS>();
const ENV = celEnv({ funcs: FUNCS, re2: { compile: (p: string) => memo(patterns, p, () => RE2JS.compile(p)) } });

// ------------------------------------------------------------------ parsing into CelNode

const BIN: Record<string, string> = {
  '_==_': '==',
  '_!=_': '!=',
  '_<_': '<',
  '_<=_': '<=',
  '_>_': '>',
  '_>=_': '>=',
  '_&&_': '&&',
  '_||_': '||',
  '_+_': '+',
  '_-_': '-',
  '_*_': '*',
  '_/_': '/',
  '_%_': '%',
  '@in': 'in',
};

/** Converts the library's AST (macros expanded into comprehensions) back to the macro-level CelNode. */
function toNode(parsed: Parsed): CelNode {
  const macroCalls = parsed.sourceInfo?.macroCalls ?? {};
  const byId = new Map<bigint, Expr>();
  const index = (e: Expr | undefined): void => {
    if (!e) return;
    byId.set(e.id, e);
    const k = e.exprKind;
    if (k.case === 'selectExpr') index(k.value.operand);
    else if (k.case === 'callExpr') {
      index(k.value.target);
      k.value.args.forEach(index);
    } else if (k.case === 'listExpr') k.value.elements.forEach(index);
    else if (k.case === 'structExpr')
      k.value.entries.forEach((en) => {
        if (en.keyKind.case === 'mapKey') index(en.keyKind.value);
        index(en.value);
      });
    else if (k.case === 'comprehensionExpr') {
      const c = k.value;
      [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].forEach(index);
    }
  };
  index(parsed.expr);
  const conv = (e: Expr | undefined): CelNode => {
    if (!e) throw new CelError('Syntax error: incomplete expression');
    const k = e.exprKind;
    switch (k.case) {
      case undefined: {
        // A nested macro inside a macro call's arguments is a placeholder for the expanded expression.
        const full = byId.get(e.id);
        if (!full || full.exprKind.case === undefined) throw new CelError('Syntax error: incomplete expression');
        return conv(full);
      }
      case 'constExpr': {
        const c = k.value.constantKind;
        if (c.case === 'int64Value') return { k: 'lit', v: Number(c.value) };
        if (c.case === 'uint64Value') return { k: 'lit', v: Number(c.value) };
        if (c.case === 'nullValue') return { k: 'lit', v: null };
        return { k: 'lit', v: c.value };
      }
      case 'identExpr':
        return { k: 'id', name: k.value.name };
      case 'selectExpr':
        return k.value.testOnly
          ? { k: 'has', obj: conv(k.value.operand), field: k.value.field }
          : { k: 'sel', obj: conv(k.value.operand), field: k.value.field };
      case 'listExpr':
        return { k: 'list', items: k.value.elements.map(conv) };
      case 'structExpr':
        if (k.value.messageName) throw new CelError(`undeclared reference to '${k.value.messageName}'`);
        return {
          k: 'map',
          entries: k.value.entries.map((en): [CelNode, CelNode] => [
            en.keyKind.case === 'mapKey' ? conv(en.keyKind.value) : { k: 'lit', v: en.keyKind.value },
            conv(en.value),
          ]),
        };
      case 'comprehensionExpr': {
        const call = macroCalls[e.id.toString()];
        if (call?.exprKind.case !== 'callExpr' || !call.exprKind.value.target)
          throw new CelError('Syntax error: unsupported comprehension');
        const m = call.exprKind.value;
        const v = m.args[0]?.exprKind;
        if (v?.case !== 'identExpr') throw new CelError(`Syntax error: argument is not an identifier in ${m.function}()`);
        const body =
          m.args.length === 3
            ? { k: 'cond' as const, c: conv(m.args[1]), t: conv(m.args[2]), f: { k: 'lit' as const, v: null } }
            : conv(m.args[1]);
        return { k: 'macro', fn: m.function === 'existsOne' ? 'exists_one' : m.function, target: conv(m.target), v: v.value.name, body };
      }
      case 'callExpr': {
        const c = k.value;
        const a = c.args.map(conv);
        if (BIN[c.function]) return { k: 'bin', op: BIN[c.function]!, l: a[0]!, r: a[1]! };
        if (c.function === '!_' || c.function === '-_') return { k: 'un', op: c.function[0]!, x: a[0]! };
        if (c.function === '_?_:_') return { k: 'cond', c: a[0]!, t: a[1]!, f: a[2]! };
        if (c.function === '_[_]') return { k: 'idx', obj: a[0]!, index: a[1]! };
        if (c.function === 'has') throw new CelError('invalid argument to has() macro');
        const ns = c.target ? qualifiedName(c.target) : undefined;
        // `strings.quote(x)` parses as a method on `strings`; it names a namespaced global function.
        if (ns && ENV.funcs.find(`${ns}.${c.function}`)) return { k: 'call', fn: `${ns}.${c.function}`, args: a };
        return { k: 'call', fn: c.function, ...(c.target ? { target: conv(c.target) } : {}), args: a };
      }
    }
  };
  return conv(parsed.expr);
}

/** `a.b.c` for an identifier with field selections, else undefined. */
function qualifiedName(e: Expr): string | undefined {
  const k = e.exprKind;
  if (k.case === 'identExpr') return k.value.name;
  if (k.case !== 'selectExpr' || k.value.testOnly || !k.value.operand) return undefined;
  const base = qualifiedName(k.value.operand);
  return base === undefined ? undefined : `${base}.${k.value.field}`;
}

interface Compiled {
  ast: CelNode;
  program: ReturnType<typeof plan>;
}
const sources = new Map<string, Compiled>();

/** The macro-level AST and the library's evaluation plan of a source (memoized; a syntax error is not). */
function parseSource(source: string): Compiled {
  return memo(sources, source, () => {
    let parsed: Parsed;
    try {
      parsed = parse(source);
    } catch (e) {
      throw new CelError(`Syntax error: ${(e as Error).message.replace(/^<input>:/, '')}`);
    }
    return { ast: toNode(parsed), program: plan(ENV, parsed) };
  });
}

/** Parses a rule into its AST (no type check); throws CelError on a syntax error. */
export function parseCel(source: string): CelNode {
  return parseSource(source).ast;
}

// ------------------------------------------------------------------ compile-time checks

// Type identifiers usable as values (`type(x) == int`).
const TYPE_NAMES = new Set(['int', 'uint', 'double', 'bool', 'string', 'bytes', 'list', 'map', 'null_type', 'type']);

/** Fails, as cel-go's checker does, on an undeclared variable or a function with no overload of that shape. */
function checkReferences(x: CelNode, scope: ReadonlySet<string>): void {
  if (x.k === 'id' && !scope.has(x.name) && !TYPE_NAMES.has(x.name)) throw new CelError(`undeclared reference to '${x.name}'`);
  if (x.k === 'call') {
    const group = ENV.funcs.find(x.fn);
    if (!group) throw new CelError(`undeclared reference to '${x.fn}'`);
    const member = x.target !== undefined;
    if (![...group].some((f) => (f.target !== undefined) === member && f.arguments.length === x.args.length))
      throw new CelError(`found no matching overload for '${x.fn}' with ${x.args.length} arguments`);
  }
  if (x.k === 'macro') {
    checkReferences(x.target, scope);
    checkReferences(x.body, new Set([...scope, x.v]));
  } else children(x).forEach((c) => checkReferences(c, scope));
}

/** The direct sub-expressions of a node. */
function children(n: CelNode): CelNode[] {
  switch (n.k) {
    case 'id':
    case 'lit':
      return [];
    case 'sel':
    case 'has':
      return [n.obj];
    case 'idx':
      return [n.obj, n.index];
    case 'call':
      return n.target ? [n.target, ...n.args] : n.args;
    case 'macro':
      return [n.target, n.body];
    case 'un':
      return [n.x];
    case 'bin':
      return [n.l, n.r];
    case 'cond':
      return [n.c, n.t, n.f];
    case 'list':
      return n.items;
    case 'map':
      return n.entries.flat();
  }
}

/** The schema shape the checker needs (a structural-schema node). */
export interface CelSchema {
  type?: string;
  properties?: Record<string, CelSchema>;
  additionalProperties?: CelSchema | boolean;
  items?: CelSchema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}

function isSchemaObj(v: unknown): v is CelSchema {
  return typeof v === 'object' && v !== null;
}

/** Field selection on a typed value: the declared field's schema, undefined for dynamic values, or an error. */
function selectField(t: CelSchema | undefined, field: string): CelSchema | undefined {
  if (!t) return undefined;
  if (t['x-kubernetes-preserve-unknown-fields'] || t['x-kubernetes-embedded-resource'] || t['x-kubernetes-int-or-string'])
    return t.properties?.[field];
  if (t.type && t.type !== 'object') throw new CelError(`type '${t.type}' does not support field selection`);
  if (t.properties) {
    const p = t.properties[field];
    if (p) return p;
    if (isSchemaObj(t.additionalProperties)) return t.additionalProperties;
    throw new CelError(`undefined field '${field}'`);
  }
  if (isSchemaObj(t.additionalProperties)) return t.additionalProperties;
  return undefined;
}

/** Checks field selections against the schema, as CEL's type checker does for declared CRD types. */
function typeCheck(n: CelNode, env: Map<string, CelSchema | undefined>): CelSchema | undefined {
  switch (n.k) {
    case 'id':
      return env.get(n.name);
    case 'lit':
      return undefined;
    case 'sel':
      return selectField(typeCheck(n.obj, env), n.field);
    case 'has':
      selectField(typeCheck(n.obj, env), n.field);
      return { type: 'boolean' };
    case 'idx': {
      const t = typeCheck(n.obj, env);
      typeCheck(n.index, env);
      if (t?.type === 'array') return t.items;
      if (t && isSchemaObj(t.additionalProperties)) return t.additionalProperties;
      return undefined;
    }
    case 'macro': {
      const t = typeCheck(n.target, env);
      const elem = t?.type === 'array' ? t.items : t && (t.additionalProperties || t.properties) ? { type: 'string' } : undefined;
      typeCheck(n.body, new Map(env).set(n.v, elem));
      return n.fn === 'filter' ? t : undefined;
    }
    default:
      children(n).forEach((c) => typeCheck(c, env));
      return undefined;
  }
}

function usesVar(n: CelNode, name: string): boolean {
  return n.k === 'id' ? n.name === name : children(n).some((c) => usesVar(c, name));
}

// ------------------------------------------------------------------ values

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A JSON object as a CEL map, converting a field only when the expression reads it: a rule usually reads a few fields
 * of a large object, and converting it all for every rule dominated the evaluation time.
 */
class JsonMap extends Map<string, CelInput> {
  private readonly memo = new Map<string, CelInput>();
  constructor(
    private readonly obj: Record<string, unknown>,
    private readonly schema: CelSchema | undefined,
  ) {
    super();
  }
  private names(): string[] {
    return Object.keys(this.obj).filter((k) => this.obj[k] !== undefined);
  }
  override get size(): number {
    return this.names().length;
  }
  override has(key: string): boolean {
    return typeof key === 'string' && Object.prototype.hasOwnProperty.call(this.obj, key) && this.obj[key] !== undefined;
  }
  override get(key: string): CelInput | undefined {
    if (!this.has(key)) return undefined;
    let v = this.memo.get(key);
    if (v === undefined) {
      const extra = isSchemaObj(this.schema?.additionalProperties) ? this.schema.additionalProperties : undefined;
      v = toCel(this.obj[key], this.schema?.properties?.[key] ?? extra);
      this.memo.set(key, v);
    }
    return v;
  }
  override keys(): MapIterator<string> {
    return this.names()[Symbol.iterator]();
  }
  override *values(): MapIterator<CelInput> {
    for (const k of this.names()) yield this.get(k)!;
  }
  override *entries(): MapIterator<[string, CelInput]> {
    for (const k of this.names()) yield [k, this.get(k)!];
  }
  override [Symbol.iterator](): MapIterator<[string, CelInput]> {
    return this.entries();
  }
  override forEach(cb: (value: CelInput, key: string, map: Map<string, CelInput>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }
}

/**
 * A JSON value as CEL sees it: integers become CEL ints (bigint) unless the schema says `number`, as the real
 * server's schema-typed values do; absent (undefined) fields do not exist. Made afresh for every evaluation (no cache
 * keyed on the object): stored objects may change in place between requests.
 */
function toCel(v: unknown, schema: CelSchema | undefined): CelInput {
  if (typeof v === 'number') return Number.isInteger(v) && schema?.type !== 'number' ? BigInt(v) : v;
  if (typeof v !== 'object' || v === null) return v as CelInput;
  if (Array.isArray(v)) return v.map((x) => toCel(x, schema?.items));
  return new JsonMap(v as Record<string, unknown>, schema);
}

/** A CEL result as JSON: ints and uints as numbers, lists as arrays, maps as objects. */
function fromCel(v: CelValue): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (isCelUint(v)) return Number(v.value);
  if (isCelList(v)) return [...v].map(fromCel);
  if (isCelMap(v)) return Object.fromEntries([...v].map(([k, x]) => [String(fromCel(k as CelValue)), fromCel(x)]));
  return v;
}

/** CEL equality of JSON values: deep, maps unordered, lists ordered. */
function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => celEquals(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && celEquals(a[k], b[k]));
  }
  return false;
}

/** cel-go's words for the runtime errors whose wording the library differs in (they reach users in 422 causes). */
function runtimeError(e: Error): CelError {
  const m = e.message
    .replace(/^field not found: /, 'no such key: ')
    .replace(/^index (\S+) out of bounds.*$/, 'index out of bounds: $1')
    .replace(/^int divide by zero$/, 'division by zero')
    .replace(/^int modulus by zero$/, 'modulus by zero');
  return new CelError(m);
}

// ------------------------------------------------------------------ compiling

/** An expression compiled once, evaluated many times with JSON variables; throws CelError on runtime errors. */
export interface CelExpression {
  source: string;
  /** Names of the declared variables the expression reads. */
  reads: ReadonlySet<string>;
  eval(vars: Readonly<Record<string, unknown>>): unknown;
}

/**
 * Compiles an expression over the given variables (JSON values at evaluation), each optionally typed by a schema:
 * field selections are then checked against it and its `number` fields evaluate as doubles. Throws CelError, with
 * cel-go's words, on a syntax error, an undeclared reference, a function called with no matching overload or an
 * undefined field.
 */
export function compileCelExpression(
  source: string,
  variables: readonly string[],
  schemas: Readonly<Record<string, CelSchema | undefined>> = {},
): CelExpression {
  const { ast, program } = parseSource(source);
  checkReferences(ast, new Set(variables));
  if (Object.values(schemas).some((x) => x !== undefined)) typeCheck(ast, new Map(Object.entries(schemas)));
  return {
    source,
    reads: new Set(variables.filter((v) => usesVar(ast, v))),
    eval(vars) {
      const bindings: Record<string, CelInput> = {};
      for (const name of variables) if (vars[name] !== undefined) bindings[name] = toCel(vars[name], schemas[name]);
      let r: ReturnType<typeof program>;
      try {
        r = program(bindings);
      } catch (e) {
        throw runtimeError(e as Error);
      }
      if (isCelError(r)) throw runtimeError(r);
      return fromCel(r);
    },
  };
}

/** A compiled rule. */
export interface CelProgram {
  source: string;
  usesOldSelf: boolean;
  eval(self: unknown, oldSelf?: unknown): unknown;
}

/** Compiles a rule over `self`/`oldSelf` (type-checked against `schema` when given); throws CelError when it fails. */
export function compileCel(source: string, schema?: CelSchema): CelProgram {
  // The root's metadata is only partly visible to CEL; treat it as dynamic rather than guess.
  const self = schema?.properties?.metadata
    ? { ...schema, properties: { ...schema.properties, metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }
    : schema;
  const expr = compileCelExpression(source, ['self', 'oldSelf'], { self, oldSelf: self });
  return {
    source,
    usesOldSelf: expr.reads.has('oldSelf'),
    eval: (value, old) => expr.eval({ self: value, oldSelf: old }),
  };
}
