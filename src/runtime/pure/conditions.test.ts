import { expect } from 'chai';
import type { Condition } from '../../api/kube.js';
import { getCondition, isFalse, isTrue, isUnknown, removeCondition, setCondition, setStatusCondition, toKubeTime } from './conditions.js';

describe('conditions', () => {
  const t0 = new Date('2026-01-01T00:00:00.123Z');
  const t1 = new Date('2026-01-01T00:05:00Z');
  const ready = (
    status: Condition['status'],
    reason = 'R',
    message = 'm',
  ): { type: string; status: Condition['status']; reason: string; message: string } => ({
    type: 'Ready',
    status,
    reason,
    message,
  });

  it('adds a new condition stamped with now (second precision) and the observed generation', () => {
    const out = setCondition(undefined, ready('True'), 3, t0);
    expect(out).to.deep.equal([
      { type: 'Ready', status: 'True', reason: 'R', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 3 },
    ]);
  });

  it('keeps lastTransitionTime when the status does not change but updates reason, message and generation', () => {
    const first = setCondition([], ready('False', 'A', 'one'), 1, t0);
    const second = setCondition(first, ready('False', 'B', 'two'), 2, t1);
    expect(second[0]).to.deep.include({ reason: 'B', message: 'two', observedGeneration: 2, lastTransitionTime: toKubeTime(t0) });
  });

  it('moves lastTransitionTime when the status flips', () => {
    const first = setCondition([], ready('False'), 1, t0);
    const second = setCondition(first, ready('True'), 1, t1);
    expect(second[0]!.lastTransitionTime).to.equal('2026-01-01T00:05:00Z');
  });

  it('does not modify the input list and keeps other conditions in place', () => {
    const input: Condition[] = [
      { type: 'A', status: 'True', reason: 'x', lastTransitionTime: 't' },
      { type: 'Ready', status: 'False', reason: 'x', lastTransitionTime: 't' },
    ];
    const copy = structuredClone(input);
    const out = setCondition(input, ready('True'), undefined, t1);
    expect(input).to.deep.equal(copy);
    expect(out.map((c) => c.type)).to.deep.equal(['A', 'Ready']);
    expect(out[1]).to.not.have.property('observedGeneration');
  });

  it('sets a condition on an object status using its metadata.generation', () => {
    const obj: { metadata: { generation: number }; status?: unknown } = { metadata: { generation: 7 } };
    setStatusCondition(obj, ready('True'), t0);
    expect((obj.status as { conditions: Condition[] }).conditions[0]).to.deep.include({ status: 'True', observedGeneration: 7 });
  });

  it('answers lookups for true, false, unknown and missing conditions', () => {
    const cs: Condition[] = [
      { type: 'T', status: 'True', reason: 'x', lastTransitionTime: 't' },
      { type: 'F', status: 'False', reason: 'x', lastTransitionTime: 't' },
      { type: 'U', status: 'Unknown', reason: 'x', lastTransitionTime: 't' },
    ];
    expect([
      isTrue(cs, 'T'),
      isTrue(cs, 'F'),
      isFalse(cs, 'F'),
      isFalse(cs, 'U'),
      isUnknown(cs, 'U'),
      isUnknown(cs, 'M'),
      isTrue(undefined, 'T'),
    ]).to.deep.equal([true, false, true, false, true, true, false]);
    expect(getCondition(cs, 'F')?.status).to.equal('False');
    expect(removeCondition(cs, 'F').map((c) => c.type)).to.deep.equal(['T', 'U']);
  });

  it('cuts a message over the 32 KiB schema limit instead of letting the status write fail', () => {
    const out = setCondition(undefined, ready('False', 'Failed', 'x'.repeat(100_000)), 1, t0);
    expect(Buffer.byteLength(out[0]!.message!)).to.be.at.most(32768);
    expect(out[0]!.message).to.match(/^x+\.\.\. \(\d+ more bytes\)$/);
  });
});
