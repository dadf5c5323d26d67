import { expect } from 'chai';
import { jsonCopy } from './copy.js';
import { deepFreeze } from './freeze.js';

describe('jsonCopy', () => {
  it('copies a frozen API object deeply into a mutable one equal to it', () => {
    const o = deepFreeze({ metadata: { name: 'm', labels: { a: 'b' } }, spec: { list: [1, 'x', null, { y: true }] }, status: undefined });
    const c = jsonCopy(o);
    expect(c).to.deep.equal(structuredClone(o));
    expect(c).to.not.equal(o);
    c.metadata.labels.a = 'changed';
    c.spec.list.push(2);
    expect(o.metadata.labels.a).to.equal('b');
    expect(o.spec.list).to.have.length(4);
    expect(Object.isFrozen(c.spec.list[3])).to.equal(false);
  });

  it('keeps a __proto__ key from JSON an own field, and copies values nested past its recursion depth', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const c = jsonCopy(parsed);
    expect(Object.keys(c)).to.deep.equal(['__proto__', 'a']);
    expect(Object.getPrototypeOf(c)).to.equal(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).to.equal(undefined);
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    const dc = jsonCopy(deep);
    let x = dc;
    for (let i = 0; i < 20_000; i++) x = x['d'] as Record<string, unknown>;
    expect(x).to.deep.equal({ leaf: 1 });
  });

  it('leaves non-JSON objects to structuredClone', () => {
    const d = new Date(0);
    const c = jsonCopy({ at: d });
    expect(c.at).to.be.instanceOf(Date);
    expect(c.at).to.not.equal(d);
    expect(c.at.getTime()).to.equal(0);
  });
});
