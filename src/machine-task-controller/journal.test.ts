import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { commitPatch } from './commit.js';
import { journalEntries, mergeJournal, restorePatch, type JournalObject } from './journal.js';

const obj = (spec: Record<string, unknown>, rv = '42'): KubeObject => ({
  apiVersion: 'x/v1',
  kind: 'X',
  metadata: { name: 'o', resourceVersion: rv },
  spec,
});

describe('commit journal (C8)', () => {
  it('records the previous value of each written path, absent when it did not exist', () => {
    const o = obj({ version: 'v1', backend: {} });
    const ops = commitPatch(o, [
      { path: '/spec/version', value: 'v2' },
      { path: '/spec/backend/docker/image', value: 'img' },
    ]);
    expect(journalEntries(o, ops)).to.deep.equal([
      { path: '/spec/version', before: '"v1"', after: '"v2"' },
      { path: '/spec/backend/docker', after: '{}' },
      { path: '/spec/backend/docker/image', after: '"img"' },
    ]);
  });

  it('keeps the value from before the whole commit when one path is written twice', () => {
    const o = obj({ v: 1 });
    expect(
      journalEntries(
        o,
        commitPatch(o, [
          { path: '/spec/v', value: 2 },
          { path: '/spec/v', value: 3 },
        ]),
      ),
    ).to.deep.equal([{ path: '/spec/v', before: '1', after: '3' }]);
  });

  it('merges a resumed run into the journal without losing the first before', () => {
    // Frozen, as the informer's cached MachineUpdate is.
    const first = Object.freeze([
      Object.freeze({
        apiGroup: 'g',
        kind: 'K',
        name: 'a',
        entries: Object.freeze([Object.freeze({ path: '/spec/v', before: '1', after: '2' })]),
      }),
    ]) as unknown as JournalObject[];
    const next = [
      {
        apiGroup: 'g',
        kind: 'K',
        name: 'a',
        entries: [
          { path: '/spec/v', before: '2', after: '3' },
          { path: '/spec/w', after: '"x"' },
        ],
      },
      { apiGroup: 'g', kind: 'K', name: 'b', entries: [{ path: '/spec/v', after: '1' }] },
    ];
    expect(mergeJournal(first, next)).to.deep.equal([
      {
        apiGroup: 'g',
        kind: 'K',
        name: 'a',
        entries: [
          { path: '/spec/v', before: '1', after: '3' },
          { path: '/spec/w', after: '"x"' },
        ],
      },
      { apiGroup: 'g', kind: 'K', name: 'b', entries: [{ path: '/spec/v', after: '1' }] },
    ]);
    expect(first[0]!.entries).to.have.length(1);
  });

  describe('restorePatch', () => {
    const entries = [
      { path: '/spec/version', before: '"v1"', after: '"v2"' },
      { path: '/spec/backend', after: '{}' },
      { path: '/spec/backend/image', after: '"img"' },
    ];

    it('puts previous values back behind resourceVersion and value tests, removing created parents', () => {
      const now = obj({ version: 'v2', backend: { image: 'img' } }, '43');
      expect(restorePatch(now, entries)).to.deep.equal({
        ops: [
          { op: 'test', path: '/metadata/resourceVersion', value: '43' },
          { op: 'test', path: '/spec/backend/image', value: 'img' },
          { op: 'test', path: '/spec/version', value: 'v2' },
          { op: 'remove', path: '/spec/backend/image' },
          { op: 'remove', path: '/spec/backend' },
          { op: 'replace', path: '/spec/version', value: 'v1' },
        ],
        changed: [],
      });
    });

    it('is empty once everything is restored (a repeated rollback writes nothing)', () => {
      expect(restorePatch(obj({ version: 'v1' }), entries)).to.deep.equal({ ops: [], changed: [] });
    });

    it('leaves a path someone else changed since the commit and names it', () => {
      const r = restorePatch(obj({ version: 'v9', backend: { image: 'img' } }), entries);
      expect(r.changed).to.deep.equal(['/spec/version']);
      expect(r.ops.map((o) => o.op + o.path)).to.deep.equal([
        'test/metadata/resourceVersion',
        'test/spec/backend/image',
        'remove/spec/backend/image',
        'remove/spec/backend',
      ]);
    });

    it('keeps a created parent that meanwhile holds other fields', () => {
      const r = restorePatch(obj({ version: 'v1', backend: { image: 'img', other: 1 } }), entries);
      expect(r.ops.map((o) => o.op + o.path)).to.deep.equal([
        'test/metadata/resourceVersion',
        'test/spec/backend/image',
        'remove/spec/backend/image',
      ]);
    });
  });
});
