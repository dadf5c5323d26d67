import { expect } from 'chai';
import { CelError, compileCel } from './cel.js';

describe('CEL subset', function () {
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
});
