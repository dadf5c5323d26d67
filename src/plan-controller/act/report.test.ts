// The status written is computed from the decision plus what acting did, never by editing the decision: the decision
// is frozen here, so any assignment into it after acting would throw.
import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import { PlanEventReasons } from '../../api/index.js';
import { deepFreeze } from '../../runtime/pure/freeze.js';
import { decidePlan } from '../decide.js';
import type { PlanDecision } from '../decide/types.js';
import { ALIGNING_OWNERS } from '../status.js';
import { mdMachines, mdOnly, mu, snapshot } from '../testkit.js';
import { PlanStates } from '../snapshot/plan-state.js';
import { statusReport, type Acted } from './report.js';

describe('plan controller: the status report from the decision and the outcomes (act/report.ts)', () => {
  const snap = snapshot(mdOnly({ machines: mdMachines(3), mus: [0, 1, 2].map((i) => mu(`cluster1-md-0-${i}`, 'updated')) }));
  const plan = snap.plan as InPlaceUpdatePlan & KubeObject;
  const state = (): ReturnType<PlanStates['of']> => new PlanStates().of(plan);
  const decided = (over: Partial<PlanDecision> = {}): Readonly<PlanDecision> => deepFreeze({ ...decidePlan(snap), ...over });
  const acted = (d: Readonly<PlanDecision>, more: Partial<Acted> = {}): Acted => ({ latest: plan, owners: [], events: d.events, ...more });

  it('an owner alignment still pending holds the plan at updating in the report, the decision left as decided', () => {
    const d = decided();
    expect(d.status.updateStatus).to.equal('updated');
    const r = statusReport(
      state(),
      snap,
      d,
      acted(d, { owners: [{ owner: 'MachineDeployment cluster1-md-0', op: 'align', pending: 'writes left' }] }),
    );
    expect(r.status.updateStatus).to.equal('updating');
    expect(r.status.conditions?.find((c) => c.type === 'Ready')?.reason).to.equal(ALIGNING_OWNERS);
    expect(r.events.map((e) => e.reason)).to.not.include(PlanEventReasons.completed);
    expect(d.status.updateStatus).to.equal('updated');
  });

  it('a failed effect keeps the finalizer (nothing released while something may be left to undo); the decision keeps its own', () => {
    const d = decided({ finalizer: 'remove' });
    expect(statusReport(state(), snap, d, acted(d, { failure: new Error('503') })).finalizer).to.equal(undefined);
    expect(statusReport(state(), snap, d, acted(d)).finalizer).to.equal('remove');
    expect(d.finalizer).to.equal('remove');
  });

  it("counts the metric rows into the plan's state, not into the decision", () => {
    const d = decided();
    const s = state();
    const r = statusReport(s, snap, d, acted(d));
    expect(r.metrics.updated).to.equal(6); // the control plane's 3 and the MachineDeployment's 3
    expect(s.counted?.size).to.equal(r.status.targets?.length);
    // Counted once: the same rows again add nothing.
    expect(statusReport(s, snap, d, acted(d)).metrics.updated).to.equal(0);
    expect(d.metrics).to.deep.equal(decidePlan(snap).metrics);
  });
});
