import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { CommitPathError, commitPatch, verifyCommit } from './commit.js';

const obj = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'x/v1',
  kind: 'X',
  metadata: { name: 'o', resourceVersion: '42' },
  spec,
});

describe('commit patch (C8)', () => {
  const cases: { name: string; spec: Record<string, unknown>; resps: { path: string; value: unknown }[]; ops: unknown[] }[] = [
    {
      name: 'replaces an existing value behind a resourceVersion test',
      spec: { version: 'v1.29.0' },
      resps: [{ path: '/spec/version', value: 'v1.30.1' }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'replace', path: '/spec/version', value: 'v1.30.1' },
      ],
    },
    {
      name: 'adds a missing member',
      spec: {},
      resps: [{ path: '/spec/version', value: 'v1.30.1' }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'add', path: '/spec/version', value: 'v1.30.1' },
      ],
    },
    {
      name: 'creates missing parents',
      spec: {},
      resps: [{ path: '/spec/backend/docker/customImage', value: 'img' }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'add', path: '/spec/backend', value: {} },
        { op: 'add', path: '/spec/backend/docker', value: {} },
        { op: 'add', path: '/spec/backend/docker/customImage', value: 'img' },
      ],
    },
    {
      name: 'writes object values whole',
      spec: { ntp: { servers: ['a'] } },
      resps: [{ path: '/spec/ntp', value: { servers: ['b', 'c'], enabled: true } }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'replace', path: '/spec/ntp', value: { servers: ['b', 'c'], enabled: true } },
      ],
    },
    {
      name: 'replaces an array element by index',
      spec: { files: ['a', 'b'] },
      resps: [{ path: '/spec/files/1', value: 'z' }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'replace', path: '/spec/files/1', value: 'z' },
      ],
    },
    {
      name: 'is empty when every value is already in place',
      spec: { version: 'v1.30.1' },
      resps: [{ path: '/spec/version', value: 'v1.30.1' }],
      ops: [],
    },
    {
      name: 'unescapes pointer tokens',
      spec: { 'a/b': 1 },
      resps: [{ path: '/spec/a~1b', value: 2 }],
      ops: [
        { op: 'test', path: '/metadata/resourceVersion', value: '42' },
        { op: 'replace', path: '/spec/a~1b', value: 2 },
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => expect(commitPatch(obj(c.spec), c.resps)).to.deep.equal(c.ops));
  }

  it('refuses a path that steps through a scalar', () => {
    expect(() => commitPatch(obj({ version: 'v1' }), [{ path: '/spec/version/major', value: 1 }])).to.throw(
      CommitPathError,
      /\/spec\/version is a string/,
    );
  });
  it('refuses to replace the whole object', () => {
    expect(() => commitPatch(obj({}), [{ path: '', value: {} }])).to.throw(CommitPathError, /whole object/);
  });
  it('writes several top-level fields and leaves the object as it was', () => {
    const o = { ...obj({ version: 'v1' }), status: { phase: 'Running' } };
    const before = structuredClone(o);
    const ops = commitPatch(o, [
      { path: '/spec/version', value: 'v2' },
      { path: '/spec/extra/x', value: 1 },
      { path: '/spec/version', value: 'v3' },
    ]);
    expect(ops).to.deep.equal([
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'replace', path: '/spec/version', value: 'v2' },
      { op: 'add', path: '/spec/extra', value: {} },
      { op: 'add', path: '/spec/extra/x', value: 1 },
      { op: 'replace', path: '/spec/version', value: 'v3' },
    ]);
    expect(o).to.deep.equal(before);
  });
  it('refuses to write metadata, labels and annotations under the default policy', () => {
    expect(() => commitPatch(obj({}), [{ path: '/metadata/labels/x', value: 'y' }])).to.throw(CommitPathError, /not writable/);
    expect(() => commitPatch(obj({}), [{ path: '/metadata/name', value: 'y' }])).to.throw(CommitPathError, /not writable/);
  });
  // The commit refuses what the write policy refuses, whoever created the MachineUpdate (a hand-made one included).
  for (const [sel, path] of [
    ['Machine', '/spec/providerID'],
    ['Machine', '/spec/clusterName'],
    ['Machine', '/spec/infrastructureRef/name'],
    ['Machine', '/spec/bootstrap/configRef/name'],
    ['Machine', '/spec/bootstrap/dataSecretName'],
    ['Machine', '/spec/failureDomain'],
    ['InfraMachine', '/spec/providerID'],
    ['Machine', '/status/phase'],
    ['Machine', '/spec'],
    ['Machine', '/kind'],
  ] as const) {
    it(`refuses ${sel} ${path} (never writable)`, () => {
      expect(() =>
        commitPatch(obj({}), [{ selectResource: sel, path, value: 'x' }], { Machine: { allow: ['/spec', '/metadata/labels'] } }),
      ).to.throw(CommitPathError, /not writable/);
    });
  }
  it('refuses what a narrower policy denies', () => {
    expect(() =>
      commitPatch(obj({}), [{ selectResource: 'Machine', path: '/spec/version', value: 'v1' }], { Machine: { deny: ['/spec/version'] } }),
    ).to.throw(CommitPathError, /denies/);
  });
  it('writes a label the policy allows, creating the labels map', () => {
    const o = obj({});
    expect(
      commitPatch(o, [{ selectResource: 'Machine', path: '/metadata/labels/team', value: 'a' }], {
        Machine: { allow: ['/metadata/labels/team'] },
      }),
    ).to.deep.equal([
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/metadata/labels', value: {} },
      { op: 'add', path: '/metadata/labels/team', value: 'a' },
    ]);
    expect(() =>
      commitPatch(o, [{ selectResource: 'Machine', path: '/metadata/labels/cluster.x-k8s.io~1paused', value: '' }], {
        Machine: { allow: ['/metadata/labels'] },
      }),
    ).to.throw(CommitPathError, /reserved/);
  });

  it('verifies by reading back and names a pruned path', () => {
    const after = obj({ version: 'v1.30.1' });
    expect(verifyCommit(after, [{ path: '/spec/version', value: 'v1.30.1' }])).to.deep.equal([]);
    expect(verifyCommit(after, [{ path: '/spec/image', value: 'img' }])).to.deep.equal([
      { path: '/spec/image', expected: 'img', actual: undefined },
    ]);
  });
  it('lets the later responsibility win for the same path', () => {
    expect(
      verifyCommit(obj({ v: 2 }), [
        { path: '/spec/v', value: 1 },
        { path: '/spec/v', value: 2 },
      ]),
    ).to.deep.equal([]);
  });
});
