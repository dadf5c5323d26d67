import { expect } from 'chai';
import { ResourceStore } from './store.js';

describe('resource store', function () {
  const obj = (name: string, rv: number): Record<string, unknown> => ({ metadata: { name, namespace: 'ns', resourceVersion: String(rv) } });

  it('keeps keys in etcd order and indexes by namespace', function () {
    const s = new ResourceStore(10, 0);
    s.put('b', 'x', obj('x', 1), 1, 'ADDED');
    s.put('a', 'y', obj('y', 2), 2, 'ADDED');
    s.put('a', 'b', obj('b', 3), 3, 'ADDED');
    expect(s.sortedKeys(undefined)).to.deep.equal(['a/b', 'a/y', 'b/x']);
    expect(s.sortedKeys('a')).to.deep.equal(['a/b', 'a/y']);
    s.remove('a', 'b', obj('b', 4), 4);
    expect(s.sortedKeys('a')).to.deep.equal(['a/y']);
    expect(s.get('a', 'b')).to.equal(undefined);
    s.put('a', 'c', obj('c', 5), 5, 'ADDED');
    s.put('0', 'z', obj('z', 6), 6, 'ADDED');
    expect(s.sortedKeys(undefined)).to.deep.equal(['0/z', 'a/c', 'a/y', 'b/x']);
    expect(s.sortedKeys('a')).to.deep.equal(['a/c', 'a/y']);
  });

  it('retains a bounded window of events and reports what fell out of it', function () {
    const s = new ResourceStore(3, 0);
    for (let i = 1; i <= 5; i++) s.put('ns', `o${i}`, obj(`o${i}`, i), i, 'ADDED');
    expect(s.eventsSince(1)).to.equal(undefined);
    expect(s.eventsSince(2)!.map((e) => e.rv)).to.deep.equal([3, 4, 5]);
    expect(s.eventsSince(4)!.map((e) => e.rv)).to.deep.equal([5]);
    expect(s.oldestAvailable()).to.equal(2);
  });

  it('delivers events to watchers of the namespace only', function () {
    const s = new ResourceStore(10, 0);
    const got: string[] = [];
    s.watchers.add({ ns: 'a', deliver: (e) => got.push(`${e.type}:${String((e.obj.metadata as { name: string }).name)}`) });
    s.put('a', 'x', obj('x', 1), 1, 'ADDED');
    s.put('b', 'y', obj('y', 2), 2, 'ADDED');
    s.remove('a', 'x', obj('x', 3), 3);
    expect(got).to.deep.equal(['ADDED:x', 'DELETED:x']);
  });
});
