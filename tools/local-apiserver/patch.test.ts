import { expect } from 'chai';
import { ApiError } from './errors.js';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';

describe('patches', function () {
  it('merge patch (RFC 7386): null deletes, objects merge, lists replace', function () {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { a: null, b: { c: 5 }, l: [3] })).to.deep.equal({
      b: { c: 5, d: 3 },
      l: [3],
    });
  });

  it('JSON patch (RFC 6902): add, replace, remove, move, copy, test', function () {
    const out = jsonPatch({ a: 1, l: [1, 2], o: { x: 1 } }, [
      { op: 'add', path: '/l/-', value: 3 },
      { op: 'add', path: '/l/0', value: 0 },
      { op: 'replace', path: '/a', value: 2 },
      { op: 'remove', path: '/o/x' },
      { op: 'copy', from: '/a', path: '/b' },
      { op: 'move', from: '/b', path: '/o/b' },
      { op: 'test', path: '/a', value: 2 },
      { op: 'add', path: '/m~1n', value: 'slash' },
    ]);
    expect(out).to.deep.equal({ a: 2, l: [0, 1, 2, 3], o: { b: 2 }, 'm/n': 'slash' });
  });

  it('JSON patch failures are 422, malformed patches 400, and the input is untouched', function () {
    const doc = { a: 1 };
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/a', value: 2 }]))
      .to.throw(ApiError)
      .with.property('code', 422);
    expect(() => jsonPatch(doc, [{ op: 'replace', path: '/zz', value: 2 }]))
      .to.throw(ApiError)
      .with.property('code', 422);
    expect(() => jsonPatch(doc, { op: 'add' }))
      .to.throw(ApiError)
      .with.property('code', 400);
    expect(doc).to.deep.equal({ a: 1 });
  });

  it('strategic merge approximates merge patch and honours $patch: replace/delete', function () {
    expect(
      strategicMergePatch({ a: { x: 1, y: 2 }, b: 1 }, { a: { $patch: 'replace', z: 3 }, b: null, $setElementOrder: [] }),
    ).to.deep.equal({ a: { z: 3 } });
    expect(strategicMergePatch({ a: { x: 1 }, c: 1 }, { a: { $patch: 'delete' } })).to.deep.equal({ c: 1 });
  });
});
