import { expect } from 'chai';
import { formatLabelSelector, LabelSelectorError, matchesSelector, parseSelector } from './labels.js';

describe('label selectors', () => {
  const labels = { app: 'web', tier: 'front', 'cluster.x-k8s.io/control-plane': '', n: '5' };
  const cases: [string, boolean][] = [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['app in (web,db)', true],
    ['app in(web)', true],
    ['app in (db)', false],
    ['missing in (x)', false],
    ['app notin (db, cache)', true],
    ['app notin (web)', false],
    ['missing notin (x)', true],
    ['tier', true],
    ['missing', false],
    ['!missing', true],
    ['!tier', false],
    ['cluster.x-k8s.io/control-plane', true],
    ['cluster.x-k8s.io/control-plane=', true],
    ['app=web,tier=front', true],
    ['app=web,tier=back', false],
    ['app in (web,db),!missing,tier', true],
    ['n>3', true],
    ['n<3', false],
    ['app>3', false],
  ];
  for (const [sel, want] of cases) {
    it(`${JSON.stringify(sel)} ${want ? 'matches' : 'does not match'} the labels`, () => {
      expect(matchesSelector(sel, labels)).to.equal(want);
    });
  }

  it('treats absent labels as an empty set', () => {
    expect(matchesSelector('a', undefined)).to.equal(false);
    expect(matchesSelector('!a', undefined)).to.equal(true);
  });

  it('parses set requirements with spaces into trimmed values', () => {
    expect(parseSelector(' a in ( x , y ) , b ')).to.deep.equal([
      { key: 'a', op: 'in', values: ['x', 'y'] },
      { key: 'b', op: 'exists', values: [] },
    ]);
  });

  for (const bad of ['a=b,', 'a in (x', 'a=b c', 'a b', '-a=b', 'n>x', 'a in x)', 'a in ()']) {
    it(`rejects the invalid selector ${JSON.stringify(bad)}`, () => {
      expect(() => parseSelector(bad)).to.throw(LabelSelectorError);
    });
  }

  it('renders a metav1.LabelSelector to a string that selects the same objects', () => {
    const s = formatLabelSelector({
      matchLabels: { b: '2', a: '1' },
      matchExpressions: [
        { key: 'c', operator: 'In', values: ['y', 'x'] },
        { key: 'd', operator: 'NotIn', values: ['z'] },
        { key: 'e', operator: 'Exists' },
        { key: 'f', operator: 'DoesNotExist' },
      ],
    });
    expect(s).to.equal('a=1,b=2,c in (x,y),d notin (z),e,!f');
    expect(matchesSelector(s, { a: '1', b: '2', c: 'x', e: '' })).to.equal(true);
    expect(matchesSelector(s, { a: '1', b: '2', c: 'x', e: '', f: '' })).to.equal(false);
  });
});
