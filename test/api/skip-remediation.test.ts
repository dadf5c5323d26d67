import { expect } from 'chai';
import { jsonPatch } from '../../tools/local-apiserver/patch.js';
import { Annotations } from '../../src/api/constants.js';
import { restoreSkipRemediation, restoreSkipRemediationOps } from '../../src/api/skip-remediation.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const OTHER = 'example.com/keep';

/** The annotations after applying a merge fragment. */
const merged = (a: Record<string, string>, patch: Record<string, string | null> | undefined): Record<string, string> => {
  const out = { ...a };
  for (const [k, v] of Object.entries(patch ?? {}))
    if (v === null) delete out[k];
    else out[k] = v;
  return out;
};
/** The annotations after applying JSON-patch ops to a Machine carrying `a`. */
const applied = (a: Record<string, string>, ops: unknown[]): Record<string, string> =>
  (jsonPatch({ metadata: { name: 'm', annotations: a } }, ops) as { metadata: { annotations: Record<string, string> } }).metadata
    .annotations;

describe('skip-remediation restore (the one rule of the MHC extension and the plan unlabel)', () => {
  const cases: { name: string; a: Record<string, string>; want: Record<string, string> }[] = [
    { name: 'set by the extension: removed with the prior state', a: { [S]: 'note', [P]: 'false', [OTHER]: 'x' }, want: { [OTHER]: 'x' } },
    { name: "the operator's own: kept, prior state forgotten", a: { [S]: 'operator', [P]: 'true' }, want: { [S]: 'operator' } },
    { name: "the operator's own removed during the update: put back", a: { [P]: 'true', [OTHER]: 'x' }, want: { [S]: '', [OTHER]: 'x' } },
    { name: 'lifted on timeout: only the prior state goes', a: { [P]: 'false', [OTHER]: 'x' }, want: { [OTHER]: 'x' } },
    { name: 'never protected: nothing', a: { [S]: 'operator', [OTHER]: 'x' }, want: { [S]: 'operator', [OTHER]: 'x' } },
  ];
  for (const c of cases)
    it(`${c.name}; the ops and the merge fragment agree`, () => {
      expect(merged(c.a, restoreSkipRemediation(c.a))).to.deep.equal(c.want);
      expect(applied(c.a, restoreSkipRemediationOps(c.a))).to.deep.equal(c.want);
    });

  it('has no ops for a machine without annotations or prior state', () => {
    expect(restoreSkipRemediationOps(undefined)).to.deep.equal([]);
    expect(restoreSkipRemediationOps({ [S]: 'x' })).to.deep.equal([]);
  });

  it('tests the values it read: a concurrent change to either fails the patch, an unrelated one does not', () => {
    const read = { [S]: 'note', [P]: 'false' };
    const ops = restoreSkipRemediationOps(read);
    expect(() => applied({ ...read, [S]: 'operator edit' }, ops)).to.throw(/test failed/);
    expect(() => applied({ ...read, [P]: 'true' }, ops)).to.throw(/test failed/);
    expect(applied({ ...read, [OTHER]: 'new' }, ops)).to.deep.equal({ [OTHER]: 'new' });
  });

  it('resting on an absent annotation, tests the whole map: one added meanwhile fails the patch, never clobbered', () => {
    const read = { [P]: 'false' };
    const ops = restoreSkipRemediationOps(read);
    // Protected again meanwhile (skip-remediation added): removing only the prior state would orphan the protection.
    expect(() => applied({ ...read, [S]: 'new update' }, ops)).to.throw(/test failed/);
    const own = { [P]: 'true' };
    expect(() => applied({ ...own, [S]: 'operator' }, restoreSkipRemediationOps(own))).to.throw(/test failed/);
  });
});
