import { expect } from 'chai';
import { costErrorMessage, estimateCelCost, ruleCostProblems, STATIC_ESTIMATED_COST_LIMIT } from './cel-cost.js';
import type { Schema } from './schema.js';

/** A root whose spec holds `list` (a list of strings) with the rule on it. */
function rootWith(list: Schema): Schema {
  return { type: 'object', properties: { spec: { type: 'object', properties: { list } } } };
}

const BASE = 'spec.versions[0].schema.openAPIV3Schema';
const LIST_RULE_PATH = `${BASE}.properties[spec].properties[list].x-kubernetes-validations[0].rule`;

describe("CEL rule cost estimation (the real server's CRD budget)", function () {
  const rule = { rule: "self.all(x, x.contains('gpu'))" };

  it('refuses a rule over an unbounded list of unbounded strings, as a real server does', function () {
    const { errors } = ruleCostProblems(rootWith({ type: 'array', items: { type: 'string' }, 'x-kubernetes-validations': [rule] }), BASE);
    expect(errors.map((e) => [e.type, e.field])).to.deep.equal([
      ['FieldValueForbidden', LIST_RULE_PATH],
      ['FieldValueForbidden', LIST_RULE_PATH],
      ['FieldValueForbidden', BASE],
    ]);
    expect(errors[0]!.detail).to.equal(
      'estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)',
    );
    expect(errors[1]!.detail).to.equal('contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema');
    expect(errors[2]!.detail).to.match(
      /^x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x/,
    );
  });

  it('accepts the same rule once maxItems and maxLength bound it', function () {
    const { errors, costs } = ruleCostProblems(
      rootWith({ type: 'array', maxItems: 64, items: { type: 'string', maxLength: 63 }, 'x-kubernetes-validations': [rule] }),
      BASE,
    );
    expect(errors).to.deep.equal([]);
    expect(costs).to.have.length(1);
    expect(costs[0]!.cost).to.be.below(STATIC_ESTIMATED_COST_LIMIT);
  });

  it('puts the budget edge where the real server does (maxLength 16 items: 909,090 accepted, 909,091 refused)', function () {
    const at = (maxItems: number) =>
      ruleCostProblems(
        rootWith({ type: 'array', maxItems, items: { type: 'string', maxLength: 16 }, 'x-kubernetes-validations': [rule] }),
        BASE,
      ).errors;
    expect(at(909_090)).to.deep.equal([]);
    expect(at(909_091)[0]?.detail).to.match(/^estimated rule cost exceeds budget by factor of 1\.0000\d\dx/);
  });

  it('multiplies a rule by how often it can run: bounded ancestors multiply, an unbounded one assumes what fits in a request', function () {
    const item = (phase: Schema): Schema => rootWith({ type: 'array', items: { type: 'object', properties: { phase } } });
    const phaseRule = { rule: "self == oldSelf || oldSelf == 'new'" };
    const unbounded = ruleCostProblems(item({ type: 'string', 'x-kubernetes-validations': [phaseRule] }), BASE);
    expect(unbounded.errors[0]?.detail).to.contain('more than 100x');
    const bounded = ruleCostProblems(
      rootWith({
        type: 'array',
        maxItems: 16,
        items: { type: 'object', properties: { phase: { type: 'string', maxLength: 32, 'x-kubernetes-validations': [phaseRule] } } },
      }),
      BASE,
    );
    expect(bounded.errors).to.deep.equal([]);
    expect(bounded.costs[0]!.cost).to.equal(16 * estimateCelCost(phaseRule.rule, { type: 'string', maxLength: 32 }));
  });

  it('bounds strings by their enum or format when they have no maxLength', function () {
    const cost = (s: Schema) => estimateCelCost('self == oldSelf', s);
    expect(cost({ type: 'string', enum: ['red', 'green'] })).to.be.below(10);
    expect(cost({ type: 'string', format: 'date-time' })).to.be.below(10);
    expect(cost({ type: 'string' })).to.be.above(100_000);
  });

  it('charges the Kubernetes list and string functions by the size they traverse', function () {
    const list = (maxItems: number): Schema => ({ type: 'array', maxItems, items: { type: 'integer' } });
    expect(estimateCelCost('self.isSorted()', list(1000)) - estimateCelCost('self.isSorted()', list(10))).to.equal(990);
    expect(estimateCelCost('self.sum() > 0', list(1000))).to.be.above(1000);
    const str = (maxLength: number): Schema => ({ type: 'string', maxLength });
    expect(estimateCelCost("self.split(',').size() > 1", str(10_000))).to.be.above(estimateCelCost("self.split(',').size() > 1", str(100)));
    const { errors } = ruleCostProblems(
      rootWith({
        type: 'array',
        items: { type: 'string' },
        'x-kubernetes-validations': [{ rule: "self.all(x, x.lowerAscii().indexOf('gpu') >= 0)" }],
      }),
      BASE,
    );
    expect(errors[0]?.detail).to.contain('estimated rule cost exceeds budget');
  });

  it('formats the factor as the real server does', function () {
    expect(costErrorMessage('estimated rule cost', 12_000_000, 10_000_000)).to.match(/factor of 1\.200000x /);
    expect(costErrorMessage('estimated rule cost', 25_000_000, 10_000_000)).to.match(/factor of 2\.5x /);
    expect(costErrorMessage('estimated rule cost', 2e9, 10_000_000)).to.match(/factor of more than 100x /);
  });
});
