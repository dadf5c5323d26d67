// The benchmark's stage breakdown (bench/lib/observe.ts, stages): fed a hand-made timeline, it must split the plan's
// wall time into its stages, and the critical path's stages must add up to wall time minus the steps' durations.
import { expect } from 'chai';
import { PlanObserver, stages } from '../../bench/lib/observe.js';
import type { KubeClient } from '../../src/runtime/index.js';

const D = 2000;

/** One machine's step, at these receipt times (ms); the updater's own clock says it ran `run` ms. */
function step(
  o: PlanObserver,
  machine: string,
  target: string,
  t: { mu: number; task: number; started: number; taskUpdated: number; muUpdated: number; run: number },
): void {
  o.mus.set(`p-${machine}`, { created: t.mu, updated: t.muUpdated, target, machine });
  o.tasks.set(`${machine}.u`, { created: t.task, started: t.started, updated: t.taskUpdated, machine, runMs: t.run });
}

describe('bench: where a step goes (stages)', () => {
  // Plan created at 0; control plane cp (1 machine), then md-a (2 machines, one at a time) and md-b (1 machine).
  const o = new PlanObserver({} as KubeClient, 'ns', 'p');
  step(o, 'cp-0', 'cp', { mu: 100, task: 110, started: 120, taskUpdated: 2130, muUpdated: 2150, run: 2005 });
  step(o, 'a-0', 'md-a', { mu: 2400, task: 2420, started: 2430, taskUpdated: 4440, muUpdated: 4460, run: 2008 });
  step(o, 'a-1', 'md-a', { mu: 4500, task: 4510, started: 4530, taskUpdated: 6550, muUpdated: 6600, run: 2010 });
  step(o, 'b-0', 'md-b', { mu: 2300, task: 2310, started: 2320, taskUpdated: 4320, muUpdated: 4330, run: 2000 });
  o.targetsDone.set('cp', 2200);
  o.targetsDone.set('md-b', 4400);
  o.targetsDone.set('md-a', 6700);
  o.terminal = { at: 6750, status: 'updated' };
  const s = stages(
    o,
    0,
    D,
    new Map([
      ['cp', 1],
      ['md-a', 1],
      ['md-b', 1],
    ]),
    'cp',
  );

  it('follows the control plane and the MachineDeployment that finished last, and its stages add up to wall − steps × d', () => {
    const c = s.criticalPath;
    expect(c.target).to.equal('md-a');
    expect(c.steps).to.equal(3);
    expect(c.planStart).to.equal(100);
    expect(c.handoff).to.equal(2400 - 2150);
    expect(c.slotFreeToMuCreated).to.equal(4500 - 4460);
    expect(c.muCreatedToTaskCreated).to.equal(10 + 20 + 10);
    expect(c.taskCreatedToUpdaterStarted).to.equal(10 + 10 + 20);
    expect(c.updaterOverrun).to.equal(10 + 10 + 20);
    expect(c.taskUpdatedToMuUpdated).to.equal(20 + 20 + 50);
    expect(c.planEnd).to.equal(6750 - 6600);
    expect(c.total).to.equal(6750 - 3 * D);
  });

  it('summarises every step, the updater by its own clock, and the plan start and end', () => {
    expect(s.perStep.muCreatedToTaskCreated.n).to.equal(4);
    expect(s.perStep.updaterOverrun.max).to.equal(10);
    expect(s.perStep.slotFreeToMuCreated.n, 'only a refilled slot has a refill gap').to.equal(1);
    expect(s.planStart).to.deep.equal({ toFirstMu: 100, toFirstMdMu: 2300 });
    expect(s.planEnd.lastMuUpdatedToPlanTerminal).to.equal(150);
    expect(s.planEnd.lastTargetToPlanTerminal).to.equal(50);
    expect(s.planEnd.lastMuToTargetUpdated.max).to.equal(100);
  });
});
