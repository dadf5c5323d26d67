import { expect } from 'chai';
import { ApiError } from './errors.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';

describe('label selectors', function () {
  const labels = { app: 'web', tier: 'front', 'example.com/x': 'y' };
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['app in (web, db)', true],
    ['app notin (web)', false],
    ['missing notin (a)', true],
    ['app', true],
    ['!app', false],
    ['!missing', true],
    ['app=web,tier=front', true],
    ['app=web,tier=back', false],
    ['example.com/x=y', true],
  ];
  for (const [sel, want] of cases) {
    it(`"${sel}" ${want ? 'matches' : 'does not match'}`, function () {
      expect(parseLabelSelector(sel).matches(labels)).to.equal(want);
    });
  }
  for (const bad of ['a in (b', 'a=b=c', '=x', 'a=-x-']) {
    it(`rejects "${bad}" with 400`, function () {
      expect(() => parseLabelSelector(bad))
        .to.throw(ApiError)
        .with.property('code', 400);
    });
  }
});

describe('field selectors', function () {
  const o = { metadata: { name: 'n', namespace: 'ns' }, type: 'Opaque' };
  it('matches metadata.name and metadata.namespace with =, == and !=', function () {
    expect(parseFieldSelector('metadata.name=n').matches(o)).to.equal(true);
    expect(parseFieldSelector('metadata.name==n,metadata.namespace=ns').matches(o)).to.equal(true);
    expect(parseFieldSelector('metadata.namespace!=ns').matches(o)).to.equal(false);
    expect(parseFieldSelector('metadata.name=n').exactName).to.equal('n');
  });
  it('supports resource-specific fields when given, and rejects others with 400', function () {
    expect(parseFieldSelector('type=Opaque', { type: (x) => x.type as string }).matches(o)).to.equal(true);
    expect(() => parseFieldSelector('spec.x=1'))
      .to.throw(ApiError)
      .with.property('code', 400);
  });
});
