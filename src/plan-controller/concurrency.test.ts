import { expect } from 'chai';
import { mdConcurrency } from './concurrency.js';
import { previewPlan } from './preview.js';
import { decidePlan } from './decide.js';
import { md, mdMachines, mdOnly, snapshot } from './testkit.js';

describe('plan-controller concurrency: one rule for decide, preview and owner alignment', () => {
  it('resolves maxUnavailable like CAPI: percentages round down, 0 with maxSurge 0 is 1, 0 with a surge surges', () => {
    expect(mdConcurrency(md('m', { replicas: 50, maxUnavailable: '10%' }))).to.deep.include({ ok: true, max: 5, surge: false });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: '10%', maxSurge: 0 }))).to.deep.include({ ok: true, max: 1, surge: false });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 0, maxSurge: 1 }))).to.deep.include({ ok: true, max: 1, surge: true });
    expect(mdConcurrency(md('m', { replicas: 5, maxUnavailable: 'x' }))).to.include({ ok: false });
  });
  it('decide starts as many machines as preview announces', () => {
    for (const maxUnavailable of [1, 2, '50%'] as const) {
      const snap = snapshot(mdOnly({ mdOpts: { replicas: 4, maxUnavailable }, machines: mdMachines(4) }));
      const want = mdConcurrency(snap.machineDeployments[0]!);
      const d = decidePlan(snap);
      const p = previewPlan(snap.plan, snap);
      const t = p.groups.flatMap((g) => g.targets).find((x) => x.kind === 'MachineDeployment')!;
      expect(want.ok && want.max, String(maxUnavailable)).to.equal(d.create.length);
      expect(t.concurrency.max, String(maxUnavailable)).to.equal(d.create.length);
    }
  });
});
