import { expect } from 'chai';
import type { FieldError } from './errors.js';
import { crdSchemaErrors } from './crd-schema.js';
import { fieldErrorString } from './errors.js';
import { applyDefaults, prune, validate, type Schema } from './schema.js';

const schema: Schema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        a: { type: 'string', default: 'x' },
        n: { type: 'integer', minimum: 1, exclusiveMaximum: true, maximum: 5 },
        items: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' }, v: { type: 'integer', default: 7 } } } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        map: { type: 'object', additionalProperties: { type: 'string' } },
        ios: { 'x-kubernetes-int-or-string': true },
        nul: { type: 'string', nullable: true },
        any: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
      },
    },
  },
};

describe('structural schema', function () {
  it('prunes unknown fields and reports their paths, keeping preserved and additionalProperties maps', function () {
    const o = {
      apiVersion: 'v',
      kind: 'K',
      metadata: { name: 'x', bogus: 1 },
      spec: { a: 'y', zz: 1, items: [{ k: 'a', q: 1 }], free: { any: 1 }, map: { k: 'v' } },
      top: 1,
    };
    const unknown: string[] = [];
    prune(o, schema, '', unknown, true);
    expect(unknown.sort()).to.deep.equal(['metadata.bogus', 'spec.items[0].q', 'spec.zz', 'top']);
    expect(o).to.deep.equal({
      apiVersion: 'v',
      kind: 'K',
      metadata: { name: 'x' },
      spec: { a: 'y', items: [{ k: 'a' }], free: { any: 1 }, map: { k: 'v' } },
    });
  });

  it('defaults missing fields, inside array items too', function () {
    const o: Record<string, unknown> = { spec: { items: [{ k: 'a' }, { k: 'b', v: 1 }] } };
    applyDefaults(o, schema);
    expect(o).to.deep.equal({
      spec: {
        a: 'x',
        items: [
          { k: 'a', v: 7 },
          { k: 'b', v: 1 },
        ],
      },
    });
  });

  it('defaults inside maps, replaces nulls that have a default and leaves subtrees without defaults alone', function () {
    const s: Schema = {
      type: 'object',
      properties: {
        plain: { type: 'object', properties: { x: { type: 'string' } } },
        maps: { type: 'object', additionalProperties: { type: 'object', properties: { n: { type: 'integer', default: 1 } } } },
        nulled: { type: 'string', default: 'd' },
      },
    };
    const o: Record<string, unknown> = { plain: { x: null }, maps: { a: {}, b: { n: 2 } }, nulled: null };
    applyDefaults(o, s);
    expect(o).to.deep.equal({ plain: { x: null }, maps: { a: { n: 1 }, b: { n: 2 } }, nulled: 'd' });
    // The same schema object again (its defaulting plan is kept): the same result.
    const again: Record<string, unknown> = { maps: { c: {} } };
    applyDefaults(again, s);
    expect(again).to.deep.equal({ maps: { c: { n: 1 } }, nulled: 'd' });
  });

  const errs = (v: unknown): FieldError[] => {
    const out: FieldError[] = [];
    validate(v, schema, '', out);
    return out;
  };
  const cases: Array<[string, unknown, string, string]> = [
    ['a type mismatch', { spec: { a: 1 } }, 'spec.a', 'FieldValueTypeInvalid'],
    ['minimum', { spec: { n: 0 } }, 'spec.n', 'FieldValueInvalid'],
    ['exclusive maximum', { spec: { n: 5 } }, 'spec.n', 'FieldValueInvalid'],
    ['int-or-string given a bool', { spec: { ios: true } }, 'spec.ios', 'FieldValueTypeInvalid'],
    ['null for a non-nullable field', { spec: { a: null } }, 'spec.a', 'FieldValueTypeInvalid'],
    ['anyOf with no match', { spec: { any: true } }, 'spec.any', 'FieldValueInvalid'],
    ['additionalProperties value type', { spec: { map: { k: 1 } } }, 'spec.map.k', 'FieldValueTypeInvalid'],
  ];
  for (const [what, v, field, reason] of cases) {
    it(`rejects ${what}`, function () {
      const e = errs(v);
      expect(e.map((x) => [x.field, x.type])).to.deep.include([field, reason]);
    });
  }
  it('accepts valid values, including null for a nullable field and both int-or-string forms', function () {
    expect(errs({ spec: { a: 'x', n: 4, ios: 'a', nul: null, any: 3 } })).to.deep.equal([]);
    expect(errs({ spec: { ios: 3 } })).to.deep.equal([]);
  });

  it('does not walk what an update left as the stored version has it (identity), but walks every changed subtree', function () {
    const stored = { spec: { a: 1, n: 0, items: [{ k: 'a', v: 'bad' }], map: { k: 2 } } };
    const next = { spec: { ...stored.spec, n: 9, map: { k: 3 } } };
    const out: FieldError[] = [];
    validate(next, schema, '', out, stored);
    // Unchanged: a (an equal value), items (the stored array itself). Changed: n, map.
    expect(out.map((x) => x.field)).to.deep.equal(['spec.n', 'spec.map.k']);
    const all: FieldError[] = [];
    validate(next, schema, '', all);
    expect(all.map((x) => x.field)).to.deep.equal(['spec.a', 'spec.n', 'spec.items[0].v', 'spec.map.k']);
  });

  it('counts string lengths in code points', function () {
    const s: Schema = { type: 'string', maxLength: 2, minLength: 2 };
    const run = (v: string): string[] => {
      const out: FieldError[] = [];
      validate(v, s, 'f', out);
      return out.map((x) => x.type);
    };
    expect(run('😀😀')).to.deep.equal([]);
    expect(run('😀😀😀')).to.deep.equal(['FieldValueTooLong']);
    expect(run('😀')).to.deep.equal(['FieldValueInvalid']);
    expect(run('\ud800a')).to.deep.equal([]);
  });

  it('flags a non-structural schema (missing type below the root)', function () {
    const out = crdSchemaErrors({ type: 'object', properties: { spec: { properties: {} } } }, 'openAPIV3Schema').map((e) =>
      fieldErrorString(e),
    );
    expect(out).to.deep.equal(['openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields']);
  });
});
