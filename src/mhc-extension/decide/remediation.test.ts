import { expect } from 'chai';
import { Annotations } from '../../api/index.js';
import type { Machine, MachineUpdate } from './objects.js';
import { decideRemediation, inRemediationOrder, takeCensus } from './remediation.js';
import { MAX_REQUEUE_MS, requeueAfterMs, type Judged, type Verdict } from './timeouts.js';

const machine = (name: string, o: { annotations?: Record<string, string>; hcFalse?: boolean } = {}): Machine =>
  ({
    metadata: { name, namespace: 'ns', ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: { clusterName: 'c1', bootstrap: {}, infrastructureRef: { apiGroup: 'x', kind: 'K', name } },
    status: {
      conditions: o.hcFalse
        ? [{ type: 'HealthCheckSucceeded', status: 'False', reason: 'R', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }]
        : [],
    },
  }) as Machine;

const judged = (m: Machine, verdict: Verdict): Judged => ({
  m,
  u: { metadata: { name: `mu-${m.metadata.name}` } } as MachineUpdate,
  verdict,
});
const within = (expiresAtMs: number): Verdict => ({ kind: 'within', expiresAtMs, timeoutMs: 1000 });
const timedOut = (expiresAtMs: number): Verdict => ({ kind: 'timedOut', expiresAtMs, timeoutMs: 1000 });

describe('mhc-extension decide/remediation and timeouts phases', () => {
  it('the census counts CAPI-unhealthy, remediation-requested and judged-unhealthy machines; healthy ones in update apart', () => {
    const a = machine('a', { hcFalse: true });
    const b = machine('b', { annotations: { [Annotations.remediateMachine]: '' } });
    const c = machine('c');
    const d = machine('d');
    const e = machine('e');
    const census = takeCensus([a, b, c, d, e], [judged(c, timedOut(5)), judged(d, within(9))]);
    expect([...census.unhealthy].sort()).to.deep.equal(['a', 'b', 'c']);
    expect([...census.inUpdateHealthy]).to.deep.equal(['d']);
  });

  it('candidates come failed first, then by earliest expiry, then by name', () => {
    const order = inRemediationOrder([
      judged(machine('z'), timedOut(5)),
      judged(machine('b'), timedOut(3)),
      judged(machine('a'), timedOut(3)),
      judged(machine('f'), { kind: 'failed', message: 'x' }),
    ]).map((j) => j.m.metadata.name);
    expect(order).to.deep.equal(['f', 'a', 'b', 'z']);
  });

  it('decides operator opt-out, an existing request, a new trigger, an exhausted budget and a range minimum', () => {
    const census = { unhealthy: new Set(['x', 'y']), inUpdateHealthy: new Set(['z']) };
    expect(
      decideRemediation(machine('x', { annotations: { [Annotations.skipRemediationPrior]: 'true' } }), census, { min: 0, max: 9 }),
    ).to.deep.equal({
      kind: 'operatorSkips',
    });
    expect(
      decideRemediation(machine('x', { annotations: { [Annotations.remediateMachine]: '' } }), census, { min: 0, max: 0 }),
    ).to.deep.equal({
      kind: 'triggered',
      isNew: false,
    });
    // Others: 1 unhealthy (y) + 1 in update (z); max 3 leaves 1.
    expect(decideRemediation(machine('x'), census, { min: 0, max: 3 })).to.deep.equal({ kind: 'triggered', isNew: true });
    const exhausted = decideRemediation(machine('x'), census, { min: 0, max: 2 });
    expect(exhausted).to.deep.include({ kind: 'blocked' });
    expect((exhausted as { why: string }).why).to.contain('= 0');
    const below = decideRemediation(machine('x'), census, { min: 4, max: 9 });
    expect((below as { why: string }).why).to.contain('below unhealthyInRange minimum 4');
  });

  it('looks again at the earliest deadline of a machine within its timeout, at least 1 ms, at most MAX_REQUEUE_MS', () => {
    expect(requeueAfterMs([judged(machine('a'), timedOut(5))], 0)).to.equal(undefined);
    expect(
      requeueAfterMs([judged(machine('a'), within(500)), judged(machine('b'), within(200)), judged(machine('c'), timedOut(1))], 100),
    ).to.equal(100);
    expect(requeueAfterMs([judged(machine('a'), within(100))], 100)).to.equal(1);
    expect(requeueAfterMs([judged(machine('a'), within(MAX_REQUEUE_MS * 10))], 0)).to.equal(MAX_REQUEUE_MS);
  });
});
