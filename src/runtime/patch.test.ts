import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { ConflictError, isRetryable } from './pure/errors.js';
import { applyMergePatch, computePatches, jsonEqual, mergePatchDiff, snapshot } from './patch.js';
import { deepFreeze, isDeepFrozen } from './pure/freeze.js';

const nested = (depth: number, leaf: unknown = 1): Record<string, unknown> => {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v as Record<string, unknown>;
};

const Things: ResourceType = { group: 'test.io', version: 'v1', plural: 'things', kind: 'Thing', namespaced: true };

describe('mergePatchDiff', () => {
  const table: [string, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>][] = [
    ['nothing changed', { a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }, {}],
    ['a scalar changed', { a: 1 }, { a: 2 }, { a: 2 }],
    ['a key was added', { a: 1 }, { a: 1, b: 'x' }, { b: 'x' }],
    ['a key was removed (null)', { a: 1, b: 2 }, { a: 1 }, { b: null }],
    ['a key set to undefined counts as removed', { a: 1, b: 2 }, { a: 1, b: undefined }, { b: null }],
    [
      'nested objects are diffed recursively',
      { m: { l: { x: '1', y: '2' } } },
      { m: { l: { x: '1', z: '3' } } },
      { m: { l: { y: null, z: '3' } } },
    ],
    ['arrays are replaced whole', { f: ['a', 'b'] }, { f: ['a'] }, { f: ['a'] }],
    ['an object replacing a scalar is sent whole', { a: 1 }, { a: { b: 1 } }, { a: { b: 1 } }],
    ['an explicit null is sent', { a: 1 }, { a: null }, { a: null }],
  ];
  for (const [name, before, after, want] of table) {
    it(`${name}`, () => {
      const patch = mergePatchDiff(before, after);
      expect(patch).to.deep.equal(want);
      if (!name.includes('null is sent'))
        expect(jsonEqual(applyMergePatch(before, patch), JSON.parse(JSON.stringify(after)))).to.equal(true);
    });
  }
});

describe('computePatches', () => {
  it('splits spec and metadata changes from status changes and ignores other metadata', () => {
    const before: KubeObject = {
      metadata: { name: 'n', resourceVersion: '1', labels: { a: '1' }, managedFields: [] },
      spec: { x: 1 },
      status: { s: 'a' },
    };
    const after = structuredClone(before);
    after.metadata.labels = { b: '2' };
    after.metadata.finalizers = ['f'];
    after.metadata.managedFields = [{ x: 1 }];
    after.metadata.resourceVersion = '9';
    (after['status'] as { s: string }).s = 'b';
    expect(computePatches(before, after)).to.deep.equal({
      main: { metadata: { labels: { a: null, b: '2' }, finalizers: ['f'] } },
      status: { status: { s: 'b' } },
    });
  });
});

describe('PatchHelper', () => {
  let client: FakeClient;
  const seed = (): KubeObject =>
    client.seed(Things, {
      metadata: { name: 'n', namespace: 'ns', labels: { keep: 'y', drop: 'y' } },
      spec: { v: 1 },
      status: { phase: 'a' },
    });
  beforeEach(() => {
    client = new FakeClient();
  });

  it("takes a deep-frozen object (an informer cache's) as its own snapshot and copies any other", async () => {
    const frozen = deepFreeze(seed());
    expect(isDeepFrozen(frozen)).to.equal(true);
    expect(snapshot(frozen).before).to.equal(frozen);
    const h = snapshot(frozen);
    const next = { ...frozen, status: { phase: 'b' } };
    await h.apply(client, Things, next);
    expect(client.calls.filter((c) => c.verb === 'patch').map((c) => c.body)).to.deep.equal([
      { status: { phase: 'b' }, metadata: { resourceVersion: frozen.metadata.resourceVersion } },
    ]);
    const plain = seed();
    expect(snapshot(plain).before).to.not.equal(plain);
    // Frozen on top only, or above a node someone else froze: its children may still change, so it is copied.
    const shallow = Object.freeze(seed());
    expect(snapshot(shallow).before).to.not.equal(shallow);
    const inner = Object.freeze({ v: 1 });
    const mixed = deepFreeze({ ...seed(), spec: { inner } });
    expect(isDeepFrozen(mixed)).to.equal(false);
    expect(isDeepFrozen(deepFreeze({ ...seed(), spec: { inner: deepFreeze({ v: 1 }) } }))).to.equal(true);
  });

  it('sends nothing when nothing changed', async () => {
    const obj = seed();
    const h = snapshot(obj);
    const out = await h.apply(client, Things, obj);
    expect(out).to.equal(obj);
    expect(h.changed(obj)).to.equal(false);
    expect(client.calls.filter((c) => c.verb === 'patch')).to.deep.equal([]);
  });

  it('patches status through /status and the rest on the object, each guarded by resourceVersion', async () => {
    const obj = seed();
    const h = snapshot(obj);
    obj.metadata.labels = { keep: 'y', added: 'z' };
    obj.metadata.finalizers = ['x/f'];
    (obj['spec'] as { v: number }).v = 2;
    (obj['status'] as { phase: string }).phase = 'b';
    const out = await h.apply(client, Things, obj);
    const patches = client.calls.filter((c) => c.verb === 'patch');
    expect(patches.map((p) => (p.opts as { subresource?: string }).subresource)).to.deep.equal(['status', undefined]);
    expect(patches[0]!.body).to.deep.equal({ status: { phase: 'b' }, metadata: { resourceVersion: obj.metadata.resourceVersion } });
    const statusRv = String(Number(obj.metadata.resourceVersion) + 1);
    expect(patches[1]!.body).to.deep.equal({
      spec: { v: 2 },
      metadata: { labels: { drop: null, added: 'z' }, finalizers: ['x/f'], resourceVersion: statusRv },
    });
    expect(out.metadata.labels).to.deep.equal({ keep: 'y', added: 'z' });
    expect(client.peek(Things, 'ns', 'n')).to.deep.include({ spec: { v: 2 }, status: { phase: 'b' } });
  });

  it('throws a retryable ConflictError when the object changed since the snapshot', async () => {
    const obj = seed();
    const h = snapshot(obj);
    await client.patch(Things, 'ns', 'n', { spec: { v: 5 } }, { type: 'merge' });
    (obj['spec'] as { v: number }).v = 2;
    const err = await h.apply(client, Things, obj).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ConflictError);
    expect(isRetryable(err)).to.equal(true);
    expect((client.peek(Things, 'ns', 'n')!['spec'] as { v: number }).v).to.equal(5);
  });

  it('only sends status when only status changed', async () => {
    const obj = seed();
    const h = snapshot(obj);
    obj['status'] = { phase: 'c', extra: 1 };
    await h.apply(client, Things, obj);
    const patches = client.calls.filter((c) => c.verb === 'patch');
    expect(patches).to.have.length(1);
    expect((patches[0]!.opts as { subresource?: string }).subresource).to.equal('status');
  });

  it('sends status in the main patch for kinds without a status subresource', async () => {
    const obj = seed();
    const h = snapshot(obj);
    obj['status'] = { phase: 'c' };
    (obj['spec'] as { v: number }).v = 3;
    await h.apply(client, Things, obj, { statusSubresource: false });
    const patches = client.calls.filter((c) => c.verb === 'patch');
    expect(patches).to.have.length(1);
    expect(patches[0]!.body).to.deep.equal({
      spec: { v: 3 },
      status: { phase: 'c' },
      metadata: { resourceVersion: obj.metadata.resourceVersion },
    });
  });

  it('jsonEqual compares values nested 100,000 levels deep without overflowing the stack', () => {
    expect(jsonEqual(nested(100_000), nested(100_000))).to.equal(true);
    expect(jsonEqual(nested(100_000, 1), nested(100_000, 2))).to.equal(false);
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).to.equal(true);
    expect(jsonEqual({ a: [1] }, { a: { 0: 1 } })).to.equal(false);
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).to.equal(true);
  });
});
