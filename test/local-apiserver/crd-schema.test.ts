/* eslint-disable @typescript-eslint/no-explicit-any -- raw API JSON is asserted structurally, as a client sees it */
// Conformance table of CRD schemas: what a real kube-apiserver (1.32 line) refuses when a CRD is created or updated,
// each case with the field paths and messages it reports (apiextensions-apiserver's structural-schema, defaulting
// and OpenAPI checks), and a few it accepts. Runs on the embedded server and, when INPLACE_TEST_KUBECONFIG is set, on
// that cluster; creates are dry runs, so nothing is left there. Every shipped CRD must pass the same checks.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { TEST_LABEL } from '../support/env.js';
import { startTarget, uniq, waitCrdGone, type Target } from './target.js';

const GROUP = 'schemas.conformance.inplace.dev';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
/** The path a real server gives a schema shared by every version (one here). */
const P = 'spec.validation.openAPIV3Schema';
const S = `${P}.properties[spec]`;

/** A CRD whose only version has `schema` as its openAPIV3Schema. */
function crdWith(schema: unknown, plural = 'things', kind = 'Thing'): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}`, labels: { [TEST_LABEL]: 'true' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural, kind },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }],
    },
  };
}

/** A root schema whose `spec` has the given properties. */
function specWith(properties: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown {
  return { type: 'object', properties: { spec: { type: 'object', properties, ...extra } } };
}

const intOrString = (branches: unknown[], extra: Record<string, unknown> = {}) => ({
  'x-kubernetes-int-or-string': true,
  anyOf: branches,
  ...extra,
});

interface Case {
  name: string;
  schema: unknown;
  /** Every cause, `field: message`, as the real server reports them (any order). */
  causes: string[];
}

const refused: Case[] = [
  {
    name: 'int-or-string with a bound inside the anyOf integer branch (the campaign CRD of issue 41)',
    schema: specWith({ count: intOrString([{ type: 'integer', minimum: 0 }, { type: 'string' }]) }),
    causes: [
      `${S}.properties[count].anyOf[0].type: Forbidden: must be empty to be structural`,
      `${S}.properties[count].anyOf[1].type: Forbidden: must be empty to be structural`,
    ],
  },
  {
    name: 'a property without a type',
    schema: specWith({ size: { minimum: 1 } }),
    causes: [`${S}.properties[size].type: Required value: must not be empty for specified object fields`],
  },
  {
    name: 'array items without a type',
    schema: specWith({ list: { type: 'array', items: { maxLength: 3 } } }),
    causes: [`${S}.properties[list].items.type: Required value: must not be empty for specified array items`],
  },
  {
    name: 'an array without items',
    schema: specWith({ list: { type: 'array' } }),
    causes: [`${S}.properties[list].items: Required value: must be specified`],
  },
  {
    name: 'a root that is not an object',
    schema: { type: 'string' },
    causes: [`${P}.type: Invalid value: "string": must be object at the root`],
  },
  {
    name: 'description and type inside anyOf',
    schema: specWith({
      n: {
        type: 'integer',
        anyOf: [
          { description: 'small', maximum: 5 },
          { type: 'integer', minimum: 10 },
        ],
      },
    }),
    causes: [
      `${S}.properties[n].anyOf[0].description: Forbidden: must be empty to be structural`,
      `${S}.properties[n].anyOf[1].type: Forbidden: must be empty to be structural`,
    ],
  },
  {
    name: 'a default inside allOf',
    schema: specWith({ n: { type: 'integer', allOf: [{ default: 3 }] } }),
    causes: [`${S}.properties[n].allOf[0].default: Forbidden: must be undefined to be structural`],
  },
  {
    name: 'nullable inside oneOf',
    schema: specWith({ n: { type: 'integer', oneOf: [{ nullable: true, minimum: 1 }, { maximum: -1 }] } }),
    causes: [`${S}.properties[n].oneOf[0].nullable: Forbidden: must be false to be structural`],
  },
  {
    name: 'extensions inside not',
    schema: specWith({ n: { type: 'string', not: { 'x-kubernetes-int-or-string': true, 'x-kubernetes-list-type': 'atomic' } } }),
    causes: [
      // The OpenAPI-level walk goes into `not` too, and a list type needs an array there as anywhere.
      `${S}.properties[n].not.type: Required value: must be array if x-kubernetes-list-type is specified`,
      `${S}.properties[n].not.x-kubernetes-int-or-string: Forbidden: must be false to be structural`,
      `${S}.properties[n].not.x-kubernetes-list-type: Forbidden: must be undefined to be structural`,
    ],
  },
  {
    name: 'a rule inside anyOf',
    schema: specWith({ s: { type: 'string', anyOf: [{ 'x-kubernetes-validations': [{ rule: 'self != ""' }] }, { maxLength: 3 }] } }),
    causes: [`${S}.properties[s].anyOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural`],
  },
  {
    name: 'a property only a root junctor specifies',
    schema: { type: 'object', properties: { spec: { type: 'object' } }, anyOf: [{ properties: { ghost: { minimum: 1 } } }] },
    causes: [`${P}.properties[ghost]: Required value: because it is defined in ${P}.anyOf[0].properties[ghost]`],
  },
  {
    name: 'metadata restricted beyond name and generateName',
    schema: {
      type: 'object',
      properties: { metadata: { type: 'object', properties: { labels: { type: 'object' } } }, spec: { type: 'object' } },
    },
    causes: [
      `${P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified`,
    ],
  },
  {
    name: 'a default in top-level metadata',
    schema: { type: 'object', properties: { metadata: { type: 'object', default: { name: 'x' } }, spec: { type: 'object' } } },
    causes: [`${P}.properties[metadata].default: Forbidden: must not be set in top-level metadata`],
  },
  {
    name: 'x-kubernetes-preserve-unknown-fields: false',
    schema: specWith({ free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': false } }),
    causes: [`${S}.properties[free].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined`],
  },
  {
    name: 'int-or-string that also preserves unknown fields',
    schema: specWith({ v: intOrString([{ type: 'integer' }, { type: 'string' }], { 'x-kubernetes-preserve-unknown-fields': true }) }),
    causes: [
      `${S}.properties[v].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true`,
    ],
  },
  {
    name: 'defaults that do not validate (a scalar, an object field, an array item)',
    schema: specWith({
      n: { type: 'integer', maximum: 3, default: 5 },
      o: { type: 'object', properties: { a: { type: 'integer', minimum: 2 } }, default: { a: 1 } },
      l: { type: 'array', items: { type: 'string', maxLength: 2 }, default: ['abc'] },
    }),
    // kube-openapi names the field relative to the default, and the path appends that name (`default.[0]`).
    causes: [
      `${S}.properties[n].default: Invalid value: 5:  in body should be less than or equal to 3`,
      `${S}.properties[o].default.a: Invalid value: 1: a in body should be greater than or equal to 2`,
      `${S}.properties[l].default.[0]: Too long: may not be more than 2 bytes`,
    ],
  },
  {
    name: 'a default with a field pruning would drop',
    schema: specWith({ o: { type: 'object', properties: { a: { type: 'string' } }, default: { a: 'x', b: 'y' } } }),
    causes: [`${S}.properties[o].default: Invalid value: map[string]interface {}{"a":"x", "b":"y"}: must not have unknown fields`],
  },
  {
    name: 'list-type map without keys',
    schema: specWith({
      l: { type: 'array', 'x-kubernetes-list-type': 'map', items: { type: 'object', properties: { k: { type: 'string' } } } },
    }),
    causes: [`${S}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map`],
  },
  {
    name: 'map keys on a list-type set',
    schema: specWith({
      l: { type: 'array', 'x-kubernetes-list-type': 'set', 'x-kubernetes-list-map-keys': ['k'], items: { type: 'string' } },
    }),
    causes: [`${S}.properties[l].x-kubernetes-list-type: Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty`],
  },
  {
    name: 'a map key neither required nor defaulted',
    schema: specWith({
      l: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['k'],
        items: { type: 'object', properties: { k: { type: 'string' } } },
      },
    }),
    causes: [
      `${S}.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property`,
    ],
  },
  {
    name: 'a map key that is not an item property',
    schema: specWith({
      l: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['nope'],
        items: { type: 'object', properties: { k: { type: 'string' } } },
      },
    }),
    causes: [
      `${S}.properties[l].x-kubernetes-list-map-keys: Invalid value: []string{"nope"}: entries must all be names of item properties`,
    ],
  },
  {
    name: 'a list type on a string',
    schema: specWith({ s: { type: 'string', 'x-kubernetes-list-type': 'atomic' } }),
    causes: [`${S}.properties[s].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified`],
  },
  {
    name: 'an unknown list type',
    schema: specWith({ l: { type: 'array', 'x-kubernetes-list-type': 'bag', items: { type: 'string' } } }),
    causes: [`${S}.properties[l].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"`],
  },
  {
    name: 'a list-type set of granular objects',
    schema: specWith({
      l: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', properties: { a: { type: 'string' } } } },
    }),
    causes: [
      `${S}.properties[l].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set`,
    ],
  },
  {
    name: 'an unknown type',
    schema: specWith({ s: { type: 'str' } }),
    causes: [
      `${S}.properties[s].type: Unsupported value: "str": supported values: "array", "boolean", "integer", "number", "object", "string"`,
    ],
  },
  {
    name: 'uniqueItems',
    schema: specWith({ l: { type: 'array', uniqueItems: true, items: { type: 'string' } } }),
    causes: [`${S}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`],
  },
  {
    name: 'properties and an additionalProperties schema',
    schema: specWith({ o: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'string' } } }),
    causes: [`${S}.properties[o].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`],
  },
  {
    name: 'a pattern Go regexp does not compile (lookahead)',
    schema: specWith({ s: { type: 'string', pattern: '(?=a)b' } }),
    causes: [
      `${S}.properties[s].pattern: Invalid value: "(?=a)b": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: \`(?=\``,
    ],
  },
  {
    name: 'an embedded resource without properties',
    schema: specWith({ r: { type: 'object', 'x-kubernetes-embedded-resource': true } }),
    causes: [
      `${S}.properties[r].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields`,
    ],
  },
  {
    name: 'additionalProperties at the root',
    schema: { type: 'object', additionalProperties: { type: 'string' } },
    causes: [`${P}.additionalProperties: Forbidden: must not be used at the root`],
  },
];

const accepted: { name: string; schema: unknown }[] = [
  {
    name: 'int-or-string in its exact form, bounds beside the anyOf (minimum for integers, pattern for strings)',
    schema: specWith({
      count: intOrString([{ type: 'integer' }, { type: 'string' }], { minimum: 0, pattern: '^(100|[1-9]?[0-9])%$', default: 1 }),
    }),
  },
  {
    name: 'int-or-string under allOf with more value validations',
    schema: specWith({
      v: { 'x-kubernetes-int-or-string': true, allOf: [{ anyOf: [{ type: 'integer' }, { type: 'string' }] }, { maxLength: 5 }] },
    }),
  },
  {
    name: 'metadata restricting name only, value validations in the junctors',
    schema: {
      type: 'object',
      properties: {
        metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 20 } } },
        spec: { type: 'object', properties: { n: { type: 'integer', anyOf: [{ minimum: 10 }, { maximum: 1 }] } } },
      },
    },
  },
  {
    name: 'a list-type map with a required key and a defaulted one',
    schema: specWith({
      l: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['k', 'p'],
        items: {
          type: 'object',
          required: ['k'],
          properties: { k: { type: 'string' }, p: { type: 'integer', default: 80 } },
        },
      },
    }),
  },
];

/** The causes of a refusal as `field: message`. */
function causesOf(r: { status: number; json: any; text: string }): string[] {
  expect(r.status, r.text).to.equal(422);
  expect(r.json?.reason).to.equal('Invalid');
  return ((r.json?.details?.causes ?? []) as any[]).map((c) => `${c.field}: ${c.message}`).sort();
}

/** Every CRD under `dir` (YAML, one or more documents a file). */
function crdsIn(dir: string): { file: string; crd: any }[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.yaml'))
    .map((e) => ({ file: join(dir, e.name), crd: parse(readFileSync(join(dir, e.name), 'utf8')) }));
}

describe('CRD schemas a real kube-apiserver refuses (also runs against INPLACE_TEST_KUBECONFIG)', function () {
  this.timeout(120_000);
  let t: Target;

  before(async function () {
    t = await startTarget();
  });
  after(async function () {
    await t?.close();
  });

  const dryCreate = (crd: unknown) => t.raw('POST', `${CRDS}?dryRun=All`, crd);

  for (const c of refused)
    it(`refuses ${c.name}`, async () => {
      expect(causesOf(await dryCreate(crdWith(c.schema)))).to.deep.equal([...c.causes].sort());
    });

  for (const c of accepted)
    it(`accepts ${c.name}`, async () => {
      const r = await dryCreate(crdWith(c.schema));
      expect(r.status, r.text).to.equal(201);
    });

  it('refuses the same schema on an update, naming the same field', async () => {
    const plural = `upd${uniq('x').slice(2)}s`;
    const good = crdWith(specWith({ count: { type: 'integer' } }), plural, 'Upd');
    const created = await t.raw('POST', CRDS, good);
    expect(created.status, created.text).to.equal(201);
    try {
      // The server writes the CRD's status right after the create: the update is retried on a conflict.
      let r: Awaited<ReturnType<Target['raw']>>;
      do {
        const crd = (await t.raw('GET', `${CRDS}/${good.metadata.name}`)).json;
        crd.spec.versions[0].schema.openAPIV3Schema = specWith({
          count: intOrString([{ type: 'integer', minimum: 0 }, { type: 'string' }]),
        });
        r = await t.raw('PUT', `${CRDS}/${good.metadata.name}`, crd);
      } while (r.status === 409);
      const got = causesOf(r);
      expect(got).to.deep.equal([
        `${S}.properties[count].anyOf[0].type: Forbidden: must be empty to be structural`,
        `${S}.properties[count].anyOf[1].type: Forbidden: must be empty to be structural`,
      ]);
    } finally {
      await t.raw('DELETE', `${CRDS}/${good.metadata.name}`);
      await waitCrdGone(t, good.metadata.name);
    }
  });

  describe('the shipped CRDs', function () {
    const shipped = [
      ...crdsIn('crds'),
      ...crdsIn('crds/samples'),
      ...crdsIn('tools/capi-sim/crds'),
      ...crdsIn('tools/capi-sim/crds-runtime'),
    ];

    for (const { file, crd } of shipped)
      it(`${file} is accepted (server-side apply, dry run)`, async () => {
        const r = await t.raw(
          'PATCH',
          `${CRDS}/${crd.metadata.name}?dryRun=All&fieldManager=inplace-conformance&force=true`,
          JSON.stringify(crd),
          { 'Content-Type': 'application/apply-patch+yaml' },
        );
        expect(r.status, r.text).to.be.oneOf([200, 201]);
      });

    it('the campaign CRD as it was before issue 41 is refused, with the path the real server gave', async () => {
      const crd = parse(readFileSync('crds/inplace.cluster.x-k8s.io_inplaceupdatecampaigns.yaml', 'utf8'));
      const rollout = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.rollout.properties;
      // Back to the old form: the bound inside the integer branch.
      const count = rollout.canary.properties.count;
      count.anyOf[0].minimum = count.minimum;
      delete count.minimum;
      const r = await dryCreate({ ...crd, metadata: { name: crd.metadata.name } });
      // On a cluster that has the CRD the create would be a conflict before validation; validation comes first.
      expect(causesOf(r)).to.include(
        `${P}.properties[spec].properties[rollout].properties[canary].properties[count].anyOf[0].type: Forbidden: must be empty to be structural`,
      );
    });
  });
});
