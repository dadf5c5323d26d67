import { expect } from 'chai';
import { stableStringify } from './core.js';
import { cloneJson, jsonEqual } from './json.js';

const viaText = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;

describe('JSON values without text (json.ts)', function () {
  const samples: unknown[] = [
    { apiVersion: 'v1', kind: 'X', metadata: { name: 'a', labels: { b: '1', a: '2' } }, spec: { l: [1, 'x', null, true, { z: 1 }] } },
    { a: undefined, b: [undefined, 1], c: { d: undefined, e: 0 }, '10': 'int-like key' },
    [],
    {},
    'str',
    3.5,
    null,
  ];

  it('clones as JSON.parse(JSON.stringify()) does, sharing nothing with the source', function () {
    for (const s of samples) {
      const c = cloneJson(s);
      expect(JSON.stringify(c)).to.equal(JSON.stringify(viaText(s)));
      expect(c).to.deep.equal(viaText(s));
      if (typeof s === 'object' && s !== null) expect(c).to.not.equal(s);
    }
    const src = { m: { l: [{ x: 1 }] } };
    const c = cloneJson(src);
    c.m.l[0]!.x = 2;
    expect(src.m.l[0]!.x).to.equal(1);
  });

  it('keeps a "__proto__" member a member (never the prototype)', function () {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const c = cloneJson(parsed);
    expect(Object.getPrototypeOf(c)).to.equal(Object.prototype);
    expect(Object.keys(c)).to.deep.equal(['__proto__', 'a']);
    expect(JSON.stringify(c)).to.equal(JSON.stringify(parsed));
    expect(({} as Record<string, unknown>)['polluted']).to.equal(undefined);
  });

  it('equality agrees with comparing key-sorted JSON', function () {
    const pairs: [unknown, unknown][] = [
      [
        { a: 1, b: { c: [1, 2] } },
        { b: { c: [1, 2] }, a: 1 },
      ],
      [{ a: 1, b: undefined }, { a: 1 }],
      [{ a: 1 }, { a: 1, b: 2 }],
      [{ a: [1, 2] }, { a: [2, 1] }],
      [{ a: [undefined] }, { a: [null] }],
      [{ a: null }, { a: undefined }],
      [{ a: {} }, { a: [] }],
      [{ a: '1' }, { a: 1 }],
      [
        [1, { x: 'y' }],
        [1, { x: 'y' }],
      ],
      [null, undefined],
      [{ a: { b: { c: 'd' } } }, { a: { b: { c: 'e' } } }],
      [{}, { x: undefined }],
    ];
    for (const [a, b] of pairs) {
      const want = stableStringify(a) === stableStringify(b);
      expect(jsonEqual(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).to.equal(want);
      expect(jsonEqual(b, a), `${JSON.stringify(b)} vs ${JSON.stringify(a)}`).to.equal(want);
    }
  });
});
