import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { commitPatch } from './commit.js';
import { entriesFromPrevious, holdsPrevious, journalEntries, mergeJournal, restorePatch, type JournalObject } from './journal.js';

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

describe('commit without a journal: spec.previous (C8)', () => {
  const V = { selectResource: 'Machine' as const, path: '/spec/version', value: 'v2' };
  const A = { selectResource: 'Machine' as const, path: '/metadata/annotations/a', value: 'x' };
  const prev = [
    { selectResource: 'Machine' as const, path: '/spec/version', value: '"v1"' },
    // No value: the path did not exist before the update.
    { selectResource: 'Machine' as const, path: '/metadata/annotations/a' },
  ];

  it('holdsPrevious: only when every path has a recorded value and the object holds exactly it', () => {
    expect(holdsPrevious(obj({ version: 'v1' }), [V, A], prev)).to.equal(true);
    expect(holdsPrevious(obj({ version: 'v1.1' }), [V, A], prev), 'changed since').to.equal(false);
    expect(holdsPrevious(obj({ version: 'v2' }), [V, A], prev), 'at the new value').to.equal(false);
    expect(holdsPrevious(obj({ version: 'v1' }), [V, { ...A, path: '/spec/other' }], prev), 'a path not recorded').to.equal(false);
    expect(holdsPrevious(obj({ version: 'v1' }), [{ ...V, selectResource: 'InfraMachine' as const }], prev), 'another object').to.equal(
      false,
    );
    expect(holdsPrevious(obj({ version: 'v1' }), [], prev)).to.equal(false);
  });

  it('entriesFromPrevious: the paths already at their new value, with the recorded before (none for a path at target from the start)', () => {
    const o = { ...obj({ version: 'v2' }), metadata: { name: 'o', resourceVersion: '1', annotations: { a: 'x' } } };
    expect(entriesFromPrevious(o, [V, A], prev)).to.deep.equal([
      { path: '/spec/version', before: '"v1"', after: '"v2"' },
      { path: '/metadata/annotations/a', after: '"x"' },
    ]);
    expect(entriesFromPrevious(obj({ version: 'v1' }), [V], prev), 'not at the new value').to.deep.equal([]);
    expect(entriesFromPrevious(obj({ version: 'v2' }), [V], [{ ...prev[0]!, value: '"v2"' }]), 'at target from the start').to.deep.equal(
      [],
    );
  });

  it('a journal seeded from spec.previous keeps that before when the commit journals the same path again', () => {
    const seeded: JournalObject[] = [
      { apiGroup: 'g', kind: 'X', name: 'o', entries: entriesFromPrevious(obj({ version: 'v2' }), [V], prev) },
    ];
    const merged = mergeJournal(seeded, [
      { apiGroup: 'g', kind: 'X', name: 'o', entries: [{ path: '/spec/version', before: '"v2"', after: '"v2"' }] },
    ]);
    expect(merged[0]?.entries?.[0]).to.deep.equal({ path: '/spec/version', before: '"v1"', after: '"v2"' });
  });
});
