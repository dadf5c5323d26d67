// Unit tests of crd-schema.ts beyond the conformance table (test/local-apiserver/crd-schema.test.ts): what an update
// still requires when the stored CRD predates a check, and Go's rendering of the values a field error carries.
import { expect } from 'chai';
import { crdToResource } from './crd.js';
import { ALL_SCHEMA_CHECKS, goValueString, updateSchemaChecks } from './crd-schema.js';
import { fieldErrorString } from './errors.js';
import type { Schema } from './schema.js';

const nonStructural: Schema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: { n: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string' }] } },
    },
  },
};
const crd = (schema: Schema): Record<string, unknown> => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'things.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'things', kind: 'Thing' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }],
  },
});

describe('local API server: CRD schema checks', function () {
  it('an update of a CRD stored before the structural check is not held to it (a real server does not tighten on persisted data)', function () {
    expect(updateSchemaChecks([nonStructural])).to.deep.include({ structural: false, prunedDefaults: true });
    expect(crdToResource(crd(nonStructural), { old: crd(nonStructural) }).errors).to.deep.equal([]);
    // A create is, and so is an update of a structural CRD.
    const created = crdToResource(crd(nonStructural)).errors.map((e) => fieldErrorString(e));
    expect(created).to.have.length(2);
    const structural: Schema = { type: 'object', properties: { spec: { type: 'object' } } };
    expect(updateSchemaChecks([structural])).to.deep.equal(ALL_SCHEMA_CHECKS);
    expect(crdToResource(crd(nonStructural), { old: crd(structural) }).errors).to.have.length(2);
  });

  it('a stored CRD is served without its schema checks (schemas: false)', function () {
    expect(crdToResource(crd(nonStructural), { schemas: false }).def?.plural).to.equal('things');
  });

  it("renders values as Go's %#v of decoded JSON", function () {
    expect(goValueString({ b: [1, 'x', true, null], a: 1.5 })).to.equal(
      'map[string]interface {}{"a":1.5, "b":[]interface {}{1, "x", true, interface {}(nil)}}',
    );
  });
});
