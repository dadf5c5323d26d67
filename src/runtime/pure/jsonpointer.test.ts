import { expect } from 'chai';
import { encodePointer, getPointer, isPointer, JsonPointerError, parsePointer, setPointer } from './jsonpointer.js';

describe('json pointers', () => {
  const table: [string, string[]][] = [
    ['', []],
    ['/spec/version', ['spec', 'version']],
    ['/metadata/labels/cluster.x-k8s.io~1cluster-name', ['metadata', 'labels', 'cluster.x-k8s.io/cluster-name']],
    ['/a~0b', ['a~b']],
    ['/~01', ['~1']],
    ['/', ['']],
  ];
  for (const [ptr, tokens] of table) {
    it(`parses ${JSON.stringify(ptr)} and encodes it back`, () => {
      expect(parsePointer(ptr)).to.deep.equal(tokens);
      expect(encodePointer(tokens)).to.equal(ptr);
    });
  }

  for (const bad of ['spec', '/a~2', '/a~']) {
    it(`rejects ${JSON.stringify(bad)} as not a pointer`, () => {
      expect(isPointer(bad)).to.equal(false);
      expect(() => parsePointer(bad)).to.throw(JsonPointerError);
    });
  }

  it('reads nested objects and array indexes, undefined when missing', () => {
    const doc = { spec: { list: [{ a: 1 }, { a: 2 }] } };
    expect(getPointer(doc, '/spec/list/1/a')).to.equal(2);
    expect(getPointer(doc, '/spec/list/2/a')).to.equal(undefined);
    expect(getPointer(doc, '/spec/missing/x')).to.equal(undefined);
    expect(getPointer(doc, '/spec/list/x')).to.equal(undefined);
    expect(getPointer(doc, '')).to.equal(doc);
  });

  it('writes values creating missing intermediate objects', () => {
    const doc: Record<string, unknown> = { spec: {} };
    setPointer(doc, '/spec/ntp/servers', ['a']);
    setPointer(doc, '/metadata/labels/x~1y', 'z');
    expect(doc).to.deep.equal({ spec: { ntp: { servers: ['a'] } }, metadata: { labels: { 'x/y': 'z' } } });
  });

  it('replaces array items by index and appends with "-"', () => {
    const doc = { l: [1, 2] };
    setPointer(doc, '/l/0', 9);
    setPointer(doc, '/l/-', 3);
    expect(doc.l).to.deep.equal([9, 2, 3]);
    expect(() => setPointer(doc, '/l/7', 1)).to.throw(JsonPointerError);
  });

  it('refuses to step through a scalar or to replace the root', () => {
    expect(() => setPointer({ a: 1 }, '/a/b', 1)).to.throw(JsonPointerError);
    expect(() => setPointer({}, '', 1)).to.throw(JsonPointerError);
  });
});
