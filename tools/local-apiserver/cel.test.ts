import { expect } from 'chai';
import { CelError, compileCel } from './cel.js';
import { crdVersionChecks, evaluateCel } from './offline.js';

describe('CEL (on @bufbuild/cel)', function () {
  const obj = {
    a: 1,
    s: 'abc',
    list: [1, 2, 3],
    items: [
      { name: 'x', n: 1 },
      { name: 'y', n: 2 },
    ],
    m: { k: 'v' },
    flag: true,
  };
  const cases: Array<[string, unknown, unknown?]> = [
    ['self.a == 1', true],
    ['self.a != 1', false],
    ['self.a < 2 && self.a <= 1 && self.a > 0 && self.a >= 1', true],
    ['self.s == "abc" && self.s == \'abc\'', true],
    ['has(self.a) && !has(self.missing)', true],
    ['self.a == 1 ? "one" : "other"', 'one'],
    ["self.s in ['abc', 'def']", true],
    ["!(self.s in ['x'])", true],
    ['size(self.list) == 3 && self.list.size() == 3 && size(self.s) == 3', true],
    ['self.list.all(x, x > 0)', true],
    ['self.list.exists(x, x == 2)', true],
    ['self.items.all(x, self.items.exists_one(y, x.name == y.name))', true],
    ['self.list.filter(x, x > 1).size() == 2', true],
    ['[has(self.a), has(self.zz)].filter(x, x == true).size() == 1', true],
    ['self.list.map(x, x * 2) == [2, 4, 6]', true],
    ["self.s.matches('^a.c$') && self.s.startsWith('a') && self.s.endsWith('c') && self.s.contains('b')", true],
    ['self.m == {"k": "v"}', true],
    ['self.items[1].name', 'y'],
    ['self.m["k"]', 'v'],
    ['"k" in self.m', true],
    ['self.a + 1 == 2 && 7 / 2 == 3 && 7 % 2 == 1 && -self.a == -1', true],
    ['self.missing == 1 || true', true, 'an error absorbed by a true right side of ||'],
    ['false && self.missing == 1', false],
    ['self == oldSelf', true, 'deep equality against oldSelf'],
  ];
  for (const [src, want, note] of cases) {
    it(`evaluates ${src}${note ? ` (${note})` : ''}`, function () {
      expect(compileCel(src).eval(obj, structuredClone(obj))).to.deep.equal(want);
    });
  }

  it('reports a runtime error for a missing field', function () {
    expect(() => compileCel('self.missing == 1').eval(obj)).to.throw(CelError, 'no such key: missing');
  });

  it('knows which rules are transition rules', function () {
    expect(compileCel('self.x == oldSelf.x').usesOldSelf).to.equal(true);
    expect(compileCel('self.x == 1').usesOldSelf).to.equal(false);
  });

  for (const bad of ['self.x.quantity()', 'isSorted(self.x)', 'self.x ==', 'unknownVar == 1', 'self.x.exists(1, true)']) {
    it(`rejects "${bad}" at compile time`, function () {
      expect(() => compileCel(bad)).to.throw(CelError);
    });
  }

  describe('type checking against the schema', function () {
    const schema = {
      type: 'object',
      properties: {
        a: { type: 'integer' },
        list: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
        m: { type: 'object', additionalProperties: { type: 'string' } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    };
    for (const ok of [
      'self.a == 1',
      'has(self.a)',
      'self.list.all(x, x.name != "")',
      'self.m.anything == "x"',
      'self.free.whatever.deep == 1',
      'self.list[0].name == oldSelf.list[0].name',
    ]) {
      it(`accepts ${ok}`, function () {
        expect(() => compileCel(ok, schema)).to.not.throw();
      });
    }
    for (const [bad, msg] of [
      ['self.b == 1', "undefined field 'b'"],
      ['has(self.zz)', "undefined field 'zz'"],
      ['self.list.all(x, x.nmae == "")', "undefined field 'nmae'"],
      ['self.a.b == 1', "type 'integer' does not support field selection"],
    ]) {
      it(`rejects ${bad} (${msg})`, function () {
        expect(() => compileCel(bad!, schema)).to.throw(CelError, msg);
      });
    }
  });

  it('compiles every rule of the project CRDs', async function () {
    const { readdir, readFile } = await import('node:fs/promises');
    const { parse } = await import('yaml');
    const rules: string[] = [];
    const walk = (o: unknown): void => {
      if (Array.isArray(o)) o.forEach(walk);
      else if (o && typeof o === 'object') {
        const v = (o as Record<string, unknown>)['x-kubernetes-validations'];
        if (Array.isArray(v)) for (const r of v) rules.push(String((r as { rule: string }).rule));
        Object.values(o).forEach(walk);
      }
    };
    for (const dir of ['crds', 'crds/samples']) {
      for (const f of (await readdir(dir)).filter((x) => x.endsWith('.yaml'))) walk(parse(await readFile(`${dir}/${f}`, 'utf8')));
    }
    expect(rules.length).to.be.greaterThan(5);
    for (const r of rules) expect(() => compileCel(r), r).to.not.throw();
  });
  describe('the Kubernetes library functions', function () {
    const vars = { self: { l: [3, 1, 2], sorted: [1, 2, 2], d: [1.5, 2.25], s: 'a,b,c', name: 'Worker-01', v: 'v1.31.2' } };
    const cases: Array<[string, unknown]> = [
      ['self.l.isSorted()', false],
      ['self.sorted.isSorted()', true],
      ["['a', 'b'].isSorted()", true],
      ['self.l.sum()', 6],
      ['self.d.sum()', 3.75],
      ['self.l.min()', 1],
      ['self.l.max()', 3],
      ['self.l.indexOf(1)', 1],
      ['self.sorted.lastIndexOf(2)', 2],
      ['self.l.indexOf(9)', -1],
      ['self.name.lowerAscii()', 'worker-01'],
      ['self.name.upperAscii()', 'WORKER-01'],
      ["self.name.indexOf('-')", 6],
      ["self.v.lastIndexOf('.')", 5],
      ["self.s.split(',')", ['a', 'b', 'c']],
      ["self.s.split(',').join('/')", 'a/b/c'],
      ["self.s.replace(',', ';')", 'a;b;c'],
      ['self.name.substring(0, 6)', 'Worker'],
      ['self.name.charAt(0)', 'W'],
      ["'  x '.trim()", 'x'],
      ["'%s has %d parts'.format([self.name, size(self.l)])", 'Worker-01 has 3 parts'],
      ["self.name.matches('(?i)^worker-[0-9]+$')", true],
      ["strings.quote('a\"b')", '"a\\"b"'],
      ['self.l.map(x, x > 1, x * 10)', [30, 20]],
      ['type(self.l) == list && type(self.name) == string && type(1) != double', true],
    ];
    for (const [src, want] of cases) {
      it(`evaluates ${src}`, function () {
        expect(evaluateCel(src, vars)).to.deep.equal(want);
      });
    }
  });

  describe('numbers: integers are CEL ints, schema numbers are doubles', function () {
    const schema = { type: 'object', properties: { n: { type: 'integer' }, x: { type: 'number' } } };
    it('does integer arithmetic on integer fields (truncating division) and refuses int + double', function () {
      expect(compileCel('self.n / 2 == 3 && self.n % 2 == 1', schema).eval({ n: 7, x: 1 })).to.equal(true);
      expect(() => compileCel('self.n + 0.5 > 0', schema).eval({ n: 7, x: 1 })).to.throw(CelError, "no matching overload for '_+_'");
    });
    it('treats a `number` field as a double even when its JSON value is integral', function () {
      expect(compileCel('self.x / 2.0 == 0.5', schema).eval({ n: 7, x: 1 })).to.equal(true);
      expect(() => compileCel('self.x + 1 > 0', schema).eval({ n: 7, x: 1 })).to.throw(CelError, 'no matching overload');
    });
    it('compares ints with doubles numerically, and fails on int overflow', function () {
      expect(evaluateCel('self.n < 7.5 && self.n == 7.0', { self: { n: 7 } })).to.equal(true);
      expect(() => evaluateCel('9223372036854775807 + self.n', { self: { n: 1 } })).to.throw(CelError, 'overflow');
    });
  });

  describe('errors', function () {
    for (const [src, msg] of [
      ['self.a / self.zero', 'division by zero'],
      ['self.a % self.zero', 'modulus by zero'],
      ['self.l[3]', 'index out of bounds: 3'],
      ['self.m.nope', 'no such key: nope'],
      ["self.m['nope']", 'no such key: nope'],
      ['[].min()', 'empty list'],
      ['[9223372036854775807, 1].sum()', 'integer overflow'],
      ["'x'.matches('[')", 'missing closing ]'],
    ]) {
      it(`fails at run time: ${src} (${msg})`, function () {
        expect(() => evaluateCel(src!, { self: { a: 1, zero: 0, l: [1, 2, 3], m: { k: 'v' } } })).to.throw(CelError, msg);
      });
    }
    for (const [src, msg] of [
      ['self.a +', 'Syntax error'],
      ['nope(self.a)', "undeclared reference to 'nope'"],
      ['self.a.quantity()', "undeclared reference to 'quantity'"],
      ['self.l.isSorted(1)', "found no matching overload for 'isSorted' with 1 arguments"],
      ['other.a == 1', "undeclared reference to 'other'"],
      ['self.l.all(x, y > 0)', "undeclared reference to 'y'"],
    ]) {
      it(`fails at compile time: ${src} (${msg})`, function () {
        expect(() => evaluateCel(src!, { self: {} })).to.throw(CelError, msg);
      });
    }
  });

  describe('through a CRD (the server path)', function () {
    const crd = (rule: Record<string, unknown>): Record<string, unknown> => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.cel.example.com' },
      spec: {
        group: 'cel.example.com',
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    'x-kubernetes-validations': [rule],
                    properties: {
                      total: { type: 'integer' },
                      parts: { type: 'array', maxItems: 10, items: { type: 'integer' } },
                      name: { type: 'string', maxLength: 63 },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });
    const check = (rule: Record<string, unknown>, spec: Record<string, unknown>) =>
      crdVersionChecks(crd(rule)).get('cel.example.com/v1')!.check({ apiVersion: 'cel.example.com/v1', kind: 'Gadget', spec });

    it('refuses a CRD whose rule does not compile, naming the rule and the reason', function () {
      expect(() => crdVersionChecks(crd({ rule: 'self.parts.isSorted() && nope(self.total)' }))).to.throw(
        'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "self.parts.isSorted() && nope(self.total)": compilation failed: ERROR: undeclared reference to \'nope\'',
      );
      expect(() => crdVersionChecks(crd({ rule: 'self.totl == 1' }))).to.throw("undefined field 'totl'");
    });

    it('accepts or refuses an object by a rule using a Kubernetes list function', function () {
      const rule = { rule: 'self.parts.isSorted() && self.parts.sum() == self.total', message: 'parts must be sorted and add up' };
      expect(check(rule, { total: 6, parts: [1, 2, 3] }).ruleErrors).to.deep.equal([]);
      expect(check(rule, { total: 6, parts: [3, 2, 1] }).ruleErrors).to.deep.equal([
        'spec: Invalid value: "object": parts must be sorted and add up',
      ]);
    });

    it('refuses an object whose rule fails at run time, as a real server words it', function () {
      const rule = { rule: 'self.total / size(self.parts) > 1' };
      expect(check(rule, { total: 6, parts: [] }).ruleErrors).to.deep.equal([
        'spec: Invalid value: "object": division by zero evaluating rule: self.total / size(self.parts) > 1',
      ]);
    });

    it('words the failure with messageExpression', function () {
      const rule = {
        rule: 'self.total <= 5',
        messageExpression: "'total ' + string(self.total) + ' of ' + self.name.upperAscii() + ' is over 5'",
      };
      expect(check(rule, { total: 6, name: 'a1' }).ruleErrors).to.deep.equal(['spec: Invalid value: "object": total 6 of A1 is over 5']);
    });
  });

  describe('evaluateCel (the public entry, e.g. for ValidatingAdmissionPolicy expressions)', function () {
    it('binds any variables and returns JSON', function () {
      const vars = {
        object: { metadata: { labels: { 'inplace.dev/guard': 'true' } }, spec: { replicas: 3 } },
        oldObject: { spec: { replicas: 2 } },
        request: { operation: 'UPDATE' },
      };
      expect(
        evaluateCel(
          "request.operation == 'UPDATE' && object.metadata.labels['inplace.dev/guard'] == 'true' && object.spec.replicas > oldObject.spec.replicas",
          vars,
        ),
      ).to.equal(true);
      expect(evaluateCel('[object.spec.replicas, {"a": oldObject.spec.replicas}]', vars)).to.deep.equal([3, { a: 2 }]);
      expect(evaluateCel("has(object.spec.paused) ? 'paused' : 'running'", vars)).to.equal('running');
    });
  });
});
