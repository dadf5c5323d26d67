/**
 * A CEL subset for CRD `x-kubernetes-validations`: enough for the rules in this project's CRDs and the
 * Cluster API CRDs. Anything outside the subset fails compilation, and the CRD is rejected at registration.
 */

/** Thrown for syntax/unsupported constructs (compile time) and for runtime errors (no such key...). */
export class CelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CelError';
  }
}

/** A parsed CEL expression (the subset's AST). */
export type CelNode = Node;

type Node =
  | { k: 'lit'; v: unknown }
  | { k: 'id'; name: string }
  | { k: 'sel'; obj: Node; field: string }
  | { k: 'idx'; obj: Node; index: Node }
  | { k: 'call'; fn: string; target?: Node; args: Node[] }
  | { k: 'macro'; fn: string; target: Node; v: string; body: Node }
  | { k: 'has'; obj: Node; field: string }
  | { k: 'un'; op: string; x: Node }
  | { k: 'bin'; op: string; l: Node; r: Node }
  | { k: 'cond'; c: Node; t: Node; f: Node }
  | { k: 'list'; items: Node[] }
  | { k: 'map'; entries: Array<[Node, Node]> };

interface Tok {
  t: 'num' | 'str' | 'id' | 'op' | 'eof';
  v: string;
  n?: number;
}

const OPS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '?', ':', '.', ',', '(', ')', '[', ']', '{', '}', '+', '-', '*', '/', '%'];

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[0-9]/.test(c)) {
      const m = /^(0x[0-9a-fA-F]+|\d+(\.\d+)?([eE][+-]?\d+)?)[uU]?/.exec(src.slice(i))!;
      const raw = m[0].replace(/[uU]$/, '');
      out.push({ t: 'num', v: m[0], n: Number(raw) });
      i += m[0].length;
      continue;
    }
    let raw = false;
    if ((c === 'r' || c === 'R') && (src[i + 1] === '"' || src[i + 1] === "'")) {
      raw = true;
      i++;
    }
    const q = src[i]!;
    if (q === '"' || q === "'") {
      const triple = src.startsWith(q.repeat(3), i);
      const end = triple ? q.repeat(3) : q;
      i += end.length;
      let s = '';
      while (true) {
        if (i >= src.length) throw new CelError('Syntax error: unterminated string');
        if (src.startsWith(end, i)) {
          i += end.length;
          break;
        }
        const ch = src[i]!;
        if (ch === '\\' && !raw) {
          const n = src[i + 1];
          const map: Record<string, string> = {
            n: '\n',
            t: '\t',
            r: '\r',
            '\\': '\\',
            "'": "'",
            '"': '"',
            '`': '`',
            '?': '?',
            a: '\x07',
            b: '\b',
            f: '\f',
            v: '\v',
          };
          if (n !== undefined && map[n] !== undefined) {
            s += map[n];
            i += 2;
            continue;
          }
          throw new CelError(`Syntax error: unsupported escape \\${n ?? ''}`);
        }
        s += ch;
        i++;
      }
      out.push({ t: 'str', v: s });
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      out.push({ t: 'id', v: m[0] });
      i += m[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new CelError(`Syntax error: token recognition error at: '${c}'`);
    out.push({ t: 'op', v: op });
    i += op.length;
  }
  out.push({ t: 'eof', v: '' });
  return out;
}

const MACROS = new Set(['all', 'exists', 'exists_one', 'filter', 'map']);
const METHODS: Record<string, number[]> = {
  size: [0],
  matches: [1],
  startsWith: [1],
  endsWith: [1],
  contains: [1],
  lowerAscii: [0],
  upperAscii: [0],
  trim: [0],
};
const GLOBALS: Record<string, number[]> = { size: [1], int: [1], string: [1], double: [1], bool: [1] };
const RESERVED = new Set(['true', 'false', 'null', 'in']);

class Parser {
  private p = 0;
  constructor(
    private toks: Tok[],
    private vars: Set<string>,
  ) {}
  private peek(): Tok {
    return this.toks[this.p]!;
  }
  private next(): Tok {
    return this.toks[this.p++]!;
  }
  private isOp(v: string): boolean {
    const t = this.peek();
    return t.t === 'op' && t.v === v;
  }
  private expect(v: string): void {
    const t = this.next();
    if (t.t !== 'op' || t.v !== v) throw new CelError(`Syntax error: expected '${v}', found '${t.v || 'EOF'}'`);
  }
  parseAll(): Node {
    const n = this.expr();
    if (this.peek().t !== 'eof') throw new CelError(`Syntax error: extraneous input '${this.peek().v}'`);
    return n;
  }
  private expr(): Node {
    const c = this.or();
    if (this.isOp('?')) {
      this.next();
      const t = this.or();
      this.expect(':');
      const f = this.expr();
      return { k: 'cond', c, t, f };
    }
    return c;
  }
  private or(): Node {
    let l = this.and();
    while (this.isOp('||')) {
      this.next();
      l = { k: 'bin', op: '||', l, r: this.and() };
    }
    return l;
  }
  private and(): Node {
    let l = this.rel();
    while (this.isOp('&&')) {
      this.next();
      l = { k: 'bin', op: '&&', l, r: this.rel() };
    }
    return l;
  }
  private rel(): Node {
    let l = this.add();
    while (true) {
      const t = this.peek();
      if (t.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.v)) {
        this.next();
        l = { k: 'bin', op: t.v, l, r: this.add() };
      } else if (t.t === 'id' && t.v === 'in') {
        this.next();
        l = { k: 'bin', op: 'in', l, r: this.add() };
      } else return l;
    }
  }
  private add(): Node {
    let l = this.mul();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next().v;
      l = { k: 'bin', op, l, r: this.mul() };
    }
    return l;
  }
  private mul(): Node {
    let l = this.unary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const op = this.next().v;
      l = { k: 'bin', op, l, r: this.unary() };
    }
    return l;
  }
  private unary(): Node {
    if (this.isOp('!')) {
      this.next();
      return { k: 'un', op: '!', x: this.unary() };
    }
    if (this.isOp('-')) {
      this.next();
      return { k: 'un', op: '-', x: this.unary() };
    }
    return this.member();
  }
  private args(): Node[] {
    const a: Node[] = [];
    this.expect('(');
    if (!this.isOp(')')) {
      a.push(this.expr());
      while (this.isOp(',')) {
        this.next();
        a.push(this.expr());
      }
    }
    this.expect(')');
    return a;
  }
  private member(): Node {
    let n = this.primary();
    while (true) {
      if (this.isOp('.')) {
        this.next();
        const id = this.next();
        if (id.t !== 'id') throw new CelError(`Syntax error: expected identifier after '.'`);
        if (this.isOp('(')) {
          if (MACROS.has(id.v)) {
            this.expect('(');
            const v = this.next();
            if (v.t !== 'id') throw new CelError(`Syntax error: argument is not an identifier in ${id.v}()`);
            this.expect(',');
            this.vars.add(v.v);
            const body = this.expr();
            this.expect(')');
            n = { k: 'macro', fn: id.v, target: n, v: v.v, body };
          } else {
            const args = this.args();
            const arity = METHODS[id.v];
            if (!arity) throw new CelError(`undeclared reference to '${id.v}'`);
            if (!arity.includes(args.length)) throw new CelError(`found no matching overload for '${id.v}' with ${args.length} arguments`);
            n = { k: 'call', fn: id.v, target: n, args };
          }
        } else n = { k: 'sel', obj: n, field: id.v };
      } else if (this.isOp('[')) {
        this.next();
        const index = this.expr();
        this.expect(']');
        n = { k: 'idx', obj: n, index };
      } else return n;
    }
  }
  private primary(): Node {
    const t = this.next();
    if (t.t === 'num') return { k: 'lit', v: t.n };
    if (t.t === 'str') return { k: 'lit', v: t.v };
    if (t.t === 'op' && t.v === '(') {
      const e = this.expr();
      this.expect(')');
      return e;
    }
    if (t.t === 'op' && t.v === '[') {
      const items: Node[] = [];
      if (!this.isOp(']')) {
        items.push(this.expr());
        while (this.isOp(',')) {
          this.next();
          if (this.isOp(']')) break;
          items.push(this.expr());
        }
      }
      this.expect(']');
      return { k: 'list', items };
    }
    if (t.t === 'op' && t.v === '{') {
      const entries: Array<[Node, Node]> = [];
      if (!this.isOp('}')) {
        do {
          if (this.isOp(',')) this.next();
          if (this.isOp('}')) break;
          const key = this.expr();
          this.expect(':');
          entries.push([key, this.expr()]);
        } while (this.isOp(','));
      }
      this.expect('}');
      return { k: 'map', entries };
    }
    if (t.t === 'id') {
      if (t.v === 'true') return { k: 'lit', v: true };
      if (t.v === 'false') return { k: 'lit', v: false };
      if (t.v === 'null') return { k: 'lit', v: null };
      if (this.isOp('(')) {
        if (t.v === 'has') {
          const args = this.args();
          const a = args[0];
          if (args.length !== 1 || !a || a.k !== 'sel') throw new CelError('invalid argument to has() macro');
          return { k: 'has', obj: a.obj, field: a.field };
        }
        const args = this.args();
        const arity = GLOBALS[t.v];
        if (!arity) throw new CelError(`undeclared reference to '${t.v}'`);
        if (!arity.includes(args.length)) throw new CelError(`found no matching overload for '${t.v}' with ${args.length} arguments`);
        return { k: 'call', fn: t.v, args };
      }
      if (RESERVED.has(t.v)) throw new CelError(`Syntax error: unexpected '${t.v}'`);
      if (!this.vars.has(t.v)) throw new CelError(`undeclared reference to '${t.v}'`);
      return { k: 'id', name: t.v };
    }
    throw new CelError(`Syntax error: mismatched input '${t.v || '<EOF>'}'`);
  }
}

/** Parses a rule into its AST (no type check); throws CelError outside the subset. */
export function parseCel(source: string): CelNode {
  return new Parser(lex(source), new Set(['self', 'oldSelf'])).parseAll();
}

/** A compiled rule. */
export interface CelProgram {
  source: string;
  usesOldSelf: boolean;
  eval(self: unknown, oldSelf?: unknown): unknown;
}

function usesVar(n: Node, name: string): boolean {
  switch (n.k) {
    case 'id':
      return n.name === name;
    case 'lit':
      return false;
    case 'sel':
    case 'has':
      return usesVar(n.obj, name);
    case 'idx':
      return usesVar(n.obj, name) || usesVar(n.index, name);
    case 'call':
      return (n.target ? usesVar(n.target, name) : false) || n.args.some((a) => usesVar(a, name));
    case 'macro':
      return usesVar(n.target, name) || usesVar(n.body, name);
    case 'un':
      return usesVar(n.x, name);
    case 'bin':
      return usesVar(n.l, name) || usesVar(n.r, name);
    case 'cond':
      return usesVar(n.c, name) || usesVar(n.t, name) || usesVar(n.f, name);
    case 'list':
      return n.items.some((i) => usesVar(i, name));
    case 'map':
      return n.entries.some(([a, b]) => usesVar(a, name) || usesVar(b, name));
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
function typeCheck(n: Node, env: Map<string, CelSchema | undefined>): CelSchema | undefined {
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
      const inner = new Map(env);
      inner.set(n.v, elem);
      typeCheck(n.body, inner);
      if (n.fn === 'filter') return t;
      return undefined;
    }
    case 'call':
      if (n.target) typeCheck(n.target, env);
      n.args.forEach((a) => typeCheck(a, env));
      return undefined;
    case 'un':
      typeCheck(n.x, env);
      return undefined;
    case 'bin':
      typeCheck(n.l, env);
      typeCheck(n.r, env);
      return undefined;
    case 'cond':
      typeCheck(n.c, env);
      typeCheck(n.t, env);
      typeCheck(n.f, env);
      return undefined;
    case 'list':
      n.items.forEach((i) => typeCheck(i, env));
      return undefined;
    case 'map':
      n.entries.forEach(([a, b]) => {
        typeCheck(a, env);
        typeCheck(b, env);
      });
      return undefined;
  }
}

/** Compiles a rule (type-checked against `schema` when given); throws CelError when it is outside the subset. */
export function compileCel(source: string, schema?: CelSchema): CelProgram {
  const ast = new Parser(lex(source), new Set(['self', 'oldSelf'])).parseAll();
  if (schema) {
    // The root's metadata is only partly visible to CEL; treat it as dynamic rather than guess.
    const self = schema.properties?.metadata
      ? { ...schema, properties: { ...schema.properties, metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }
      : schema;
    typeCheck(
      ast,
      new Map([
        ['self', self],
        ['oldSelf', self],
      ]),
    );
  }
  return {
    source,
    usesOldSelf: usesVar(ast, 'oldSelf'),
    eval: (self, oldSelf) =>
      evaluate(
        ast,
        new Map<string, unknown>([
          ['self', self],
          ['oldSelf', oldSelf],
        ]),
      ),
  };
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** CEL equality: deep, maps unordered, lists ordered. */
export function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => celEquals(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && celEquals(a[k], b[k]));
  }
  return false;
}

function typeName(v: unknown): string {
  if (v === null) return 'null_type';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  return 'map';
}

function toBool(v: unknown, what: string): boolean {
  if (typeof v !== 'boolean') throw new CelError(`no such overload: ${what} applied to ${typeName(v)}`);
  return v;
}

function compare(op: string, a: unknown, b: unknown): boolean {
  if (!(
    (typeof a === 'number' && typeof b === 'number') ||
    (typeof a === 'string' && typeof b === 'string') ||
    (typeof a === 'boolean' && typeof b === 'boolean')
  )) {
    throw new CelError(`no such overload: ${typeName(a)} ${op} ${typeName(b)}`);
  }
  const x = a as number;
  const y = b as number;
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}

const reCache = new Map<string, RegExp>();

function evaluate(n: Node, env: Map<string, unknown>): unknown {
  switch (n.k) {
    case 'lit':
      return n.v;
    case 'id':
      return env.get(n.name);
    case 'sel': {
      const o = evaluate(n.obj, env);
      if (!isMap(o)) throw new CelError(`no such key: ${n.field}`);
      if (!Object.prototype.hasOwnProperty.call(o, n.field)) throw new CelError(`no such key: ${n.field}`);
      return o[n.field];
    }
    case 'has': {
      const o = evaluate(n.obj, env);
      if (!isMap(o)) throw new CelError(`invalid type for field selection.`);
      return Object.prototype.hasOwnProperty.call(o, n.field) && o[n.field] !== undefined;
    }
    case 'idx': {
      const o = evaluate(n.obj, env);
      const i = evaluate(n.index, env);
      if (Array.isArray(o)) {
        if (typeof i !== 'number' || i < 0 || i >= o.length) throw new CelError(`index out of bounds: ${String(i)}`);
        return o[i];
      }
      if (isMap(o) && typeof i === 'string') {
        if (!Object.prototype.hasOwnProperty.call(o, i)) throw new CelError(`no such key: ${i}`);
        return o[i];
      }
      throw new CelError(`no such overload: index ${typeName(o)}[${typeName(i)}]`);
    }
    case 'list':
      return n.items.map((i) => evaluate(i, env));
    case 'map': {
      const m: Record<string, unknown> = {};
      for (const [k, v] of n.entries) m[String(evaluate(k, env))] = evaluate(v, env);
      return m;
    }
    case 'un': {
      const x = evaluate(n.x, env);
      if (n.op === '!') return !toBool(x, '!');
      if (typeof x !== 'number') throw new CelError(`no such overload: -${typeName(x)}`);
      return -x;
    }
    case 'cond':
      return toBool(evaluate(n.c, env), '?:') ? evaluate(n.t, env) : evaluate(n.f, env);
    case 'bin':
      return evalBin(n.op, n.l, n.r, env);
    case 'macro':
      return evalMacro(n, env);
    case 'call':
      return evalCall(n, env);
  }
}

function evalBin(op: string, ln: Node, rn: Node, env: Map<string, unknown>): unknown {
  if (op === '&&' || op === '||') {
    // CEL logical operators are commutative: an error on one side is absorbed when the other side decides.
    const decide = op === '||';
    let lErr: unknown;
    let l: boolean | undefined;
    try {
      l = toBool(evaluate(ln, env), op);
    } catch (e) {
      lErr = e;
    }
    if (l === decide) return decide;
    const r = toBool(evaluate(rn, env), op);
    if (r === decide) return decide;
    if (lErr) throw lErr;
    return !decide;
  }
  const l = evaluate(ln, env);
  const r = evaluate(rn, env);
  switch (op) {
    case '==':
      return celEquals(l, r);
    case '!=':
      return !celEquals(l, r);
    case '<':
    case '<=':
    case '>':
    case '>=':
      return compare(op, l, r);
    case 'in':
      if (Array.isArray(r)) return r.some((x) => celEquals(x, l));
      if (isMap(r)) return typeof l === 'string' && Object.prototype.hasOwnProperty.call(r, l);
      throw new CelError(`no such overload: ${typeName(l)} in ${typeName(r)}`);
    case '+':
      if (typeof l === 'number' && typeof r === 'number') return l + r;
      if (typeof l === 'string' && typeof r === 'string') return l + r;
      if (Array.isArray(l) && Array.isArray(r)) return [...l, ...r];
      throw new CelError(`no such overload: ${typeName(l)} + ${typeName(r)}`);
    default: {
      if (typeof l !== 'number' || typeof r !== 'number') throw new CelError(`no such overload: ${typeName(l)} ${op} ${typeName(r)}`);
      if (op === '-') return l - r;
      if (op === '*') return l * r;
      if ((op === '/' || op === '%') && r === 0) throw new CelError(op === '/' ? 'division by zero' : 'modulus by zero');
      if (op === '/') return Number.isInteger(l) && Number.isInteger(r) ? Math.trunc(l / r) : l / r;
      return l % r;
    }
  }
}

function evalMacro(n: Extract<Node, { k: 'macro' }>, env: Map<string, unknown>): unknown {
  const target = evaluate(n.target, env);
  let elems: unknown[];
  if (Array.isArray(target)) elems = target;
  else if (isMap(target)) elems = Object.keys(target);
  else throw new CelError(`no such overload: ${n.fn} on ${typeName(target)}`);
  const saved = env.get(n.v);
  const had = env.has(n.v);
  const run = (e: unknown): unknown => {
    env.set(n.v, e);
    return evaluate(n.body, env);
  };
  try {
    switch (n.fn) {
      case 'all': {
        let err: unknown;
        for (const e of elems) {
          try {
            if (!toBool(run(e), 'all')) return false;
          } catch (x) {
            err = x;
          }
        }
        if (err) throw err;
        return true;
      }
      case 'exists': {
        let err: unknown;
        for (const e of elems) {
          try {
            if (toBool(run(e), 'exists')) return true;
          } catch (x) {
            err = x;
          }
        }
        if (err) throw err;
        return false;
      }
      case 'exists_one':
        return elems.filter((e) => toBool(run(e), 'exists_one')).length === 1;
      case 'filter':
        return elems.filter((e) => toBool(run(e), 'filter'));
      default:
        return elems.map((e) => run(e));
    }
  } finally {
    if (had) env.set(n.v, saved);
    else env.delete(n.v);
  }
}

function size(v: unknown): number {
  if (typeof v === 'string') return [...v].length;
  if (Array.isArray(v)) return v.length;
  if (isMap(v)) return Object.keys(v).length;
  throw new CelError(`no such overload: size(${typeName(v)})`);
}

function str(v: unknown, fn: string): string {
  if (typeof v !== 'string') throw new CelError(`no such overload: ${fn} on ${typeName(v)}`);
  return v;
}

function evalCall(n: Extract<Node, { k: 'call' }>, env: Map<string, unknown>): unknown {
  const args = n.args.map((a) => evaluate(a, env));
  if (!n.target) {
    const a = args[0];
    switch (n.fn) {
      case 'size':
        return size(a);
      case 'int':
        if (typeof a === 'number') return Math.trunc(a);
        if (typeof a === 'string' && /^[+-]?\d+$/.test(a)) return Number(a);
        throw new CelError(`cannot convert ${JSON.stringify(a)} to int`);
      case 'double':
        if (typeof a === 'number') return a;
        if (typeof a === 'string' && !Number.isNaN(Number(a))) return Number(a);
        throw new CelError(`cannot convert ${JSON.stringify(a)} to double`);
      case 'string':
        if (typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean') return String(a);
        throw new CelError(`no such overload: string(${typeName(a)})`);
      default:
        if (typeof a === 'boolean') return a;
        if (a === 'true' || a === 'false') return a === 'true';
        throw new CelError(`cannot convert ${JSON.stringify(a)} to bool`);
    }
  }
  const t = evaluate(n.target, env);
  switch (n.fn) {
    case 'size':
      return size(t);
    case 'matches': {
      const p = str(args[0], 'matches');
      let re = reCache.get(p);
      if (!re) {
        try {
          re = new RegExp(p, 'u');
        } catch {
          throw new CelError(`invalid regular expression: ${p}`);
        }
        reCache.set(p, re);
      }
      return re.test(str(t, 'matches'));
    }
    case 'startsWith':
      return str(t, 'startsWith').startsWith(str(args[0], 'startsWith'));
    case 'endsWith':
      return str(t, 'endsWith').endsWith(str(args[0], 'endsWith'));
    case 'contains':
      return str(t, 'contains').includes(str(args[0], 'contains'));
    case 'lowerAscii':
      return str(t, 'lowerAscii').replace(/[A-Z]/g, (c) => c.toLowerCase());
    case 'upperAscii':
      return str(t, 'upperAscii').replace(/[a-z]/g, (c) => c.toUpperCase());
    default:
      return str(t, 'trim').trim();
  }
}
