import { expect } from 'chai';
import type { InPlaceUpdatePlan } from '../api/index.js';
import { decideAbort, decidePause, decideResume, type ControlDecision } from './control.js';

const plan = (updateStatus: string | undefined, spec: Partial<InPlaceUpdatePlan['spec']> = {}): InPlaceUpdatePlan =>
  ({ spec: { clusterName: 'c', ...spec }, ...(updateStatus ? { status: { updateStatus } } : {}) }) as InPlaceUpdatePlan;

const patchOf = (d: ControlDecision): unknown => ('patch' in d ? d.patch : undefined);

describe('cli control verbs decide', () => {
  const abortCases: [string, InPlaceUpdatePlan, unknown][] = [
    ['aborts an updating plan', plan('updating', { updatePhase: 'updating' }), { spec: { updatePhase: 'aborting' } }],
    ['aborts a pending plan', plan(undefined), { spec: { updatePhase: 'aborting' } }],
    ['does nothing for a plan already aborting', plan('aborting', { updatePhase: 'aborting' }), undefined],
    ['does nothing for an updated plan', plan('updated'), undefined],
    ['does nothing for a failed plan', plan('failed'), undefined],
    ['does nothing for an aborted plan', plan('aborted', { updatePhase: 'aborting' }), undefined],
  ];
  for (const [name, p, want] of abortCases) it(`abort ${name}`, () => expect(patchOf(decideAbort(p))).to.deep.equal(want));

  const pauseCases: [string, InPlaceUpdatePlan, unknown][] = [
    ['pauses an updating plan', plan('updating'), { spec: { paused: true } }],
    ['does nothing when already paused', plan('updating', { paused: true }), undefined],
  ];
  for (const [name, p, want] of pauseCases) it(`pause ${name}`, () => expect(patchOf(decidePause(p))).to.deep.equal(want));

  const resumeCases: [string, InPlaceUpdatePlan, unknown][] = [
    ['resumes a paused plan', plan('updating', { paused: true }), { spec: { paused: false } }],
    ['does nothing when not paused', plan('updating'), undefined],
  ];
  for (const [name, p, want] of resumeCases) it(`resume ${name}`, () => expect(patchOf(decideResume(p))).to.deep.equal(want));

  const refused: [string, (p: InPlaceUpdatePlan) => ControlDecision, InPlaceUpdatePlan, RegExp][] = [
    ['resume', decideResume, plan('aborted', { updatePhase: 'aborting', paused: true }), /cannot resume: the plan is aborted/],
    ['resume', decideResume, plan('updated', { paused: true }), /cannot resume: the plan is updated/],
    ['resume', decideResume, plan('failed'), /cannot resume: the plan is failed/],
    ['resume', decideResume, plan('aborting', { updatePhase: 'aborting', paused: true }), /cannot resume: the plan is being aborted/],
    ['pause', decidePause, plan('updated'), /cannot pause: the plan is updated/],
    ['pause', decidePause, plan('aborted', { updatePhase: 'aborting' }), /cannot pause: the plan is aborted/],
    ['pause', decidePause, plan('updating', { updatePhase: 'aborting' }), /cannot pause: the plan is being aborted/],
  ];
  for (const [verb, decide, p, why] of refused) {
    it(`${verb} refuses a plan with status ${p.status?.updateStatus ?? 'pending'}, phase ${p.spec.updatePhase ?? 'updating'}, and says why`, () => {
      const d = decide(p);
      expect(d).to.have.property('refuse').that.matches(why);
      expect(d).to.have.property('hint').that.is.a('string');
    });
  }

  it('says why nothing was done', () => {
    const d = decideAbort(plan('updated'));
    expect(d).to.have.property('refuse', 'cannot abort: the plan is updated (finished; nothing is running to abort)');
    expect(decideAbort(plan('failed')))
      .to.have.property('refuse')
      .that.matches(/^cannot abort: the plan is failed/);
  });

  it('an aborted plan that kept an owner paused says so, with what to do', () => {
    const p = plan('aborted', { updatePhase: 'aborting' });
    p.status!.conditions = [
      {
        type: 'OwnersAligned',
        status: 'False',
        reason: 'MixedMachines',
        message: 'MachineDeployment md kept paused: 1 of 3 machines carry the plan values; remove cluster.x-k8s.io/paused yourself',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ];
    expect(decideAbort(p))
      .to.have.property('noop')
      .that.matches(
        /^already aborted; nothing to abort\. OwnersAligned=False MixedMachines: .*remove cluster\.x-k8s\.io\/paused yourself$/,
      );
  });

  it('the abort message says in-flight machines may still finish and commit', () => {
    expect(decideAbort(plan('updating')))
      .to.have.property('done')
      .that.matches(/finish and commit/);
  });
});
