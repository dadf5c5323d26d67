import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import type { Manager, Store } from '../runtime/pure/types.js';
import { planMetricsFor } from './metrics.js';

type Plan = InPlaceUpdatePlan & KubeObject;

const held = (name: string, since: string): Plan => ({
  metadata: { name, namespace: 'fleet-a', uid: `uid-${name}` },
  spec: { clusterName: 'c1' },
  status: {
    updateStatus: 'pending',
    maintenanceWindow: { state: 'Closed', since, message: 'window closed until …' },
    conditions: [{ type: 'Ready', status: 'False', reason: 'WaitingForMaintenanceWindow', message: 'x', lastTransitionTime: since }],
  },
});

async function value(registry: Registry, name: string, gate: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values.find((v) => v.labels['gate'] === gate)?.value as number | undefined) ?? NaN;
}

describe('plan-controller gate metrics', () => {
  it('counts plans held by a window and the seconds they wait, never going back', async () => {
    const registry = new Registry();
    let plans: Plan[] = [held('a', new Date(Date.now() - 3_600_000).toISOString())];
    const store = { list: () => plans } as unknown as Store<Plan>;
    planMetricsFor({ metrics: { registry } } as unknown as Manager, store).recordHolds(plans[0]!, []);
    expect(await value(registry, 'inplace_plan_controller_plans_held', 'maintenanceWindow')).to.equal(1);
    await new Promise((r) => setTimeout(r, 20));
    const first = await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'maintenanceWindow');
    // The hour before this process started is not counted (a restart must not count a wait twice).
    expect(first).to.be.greaterThan(0).and.lessThan(3_600);
    plans = [];
    expect(await value(registry, 'inplace_plan_controller_plans_held', 'maintenanceWindow')).to.equal(0);
    expect(await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'maintenanceWindow')).to.equal(first);
  });

  it('counts machine gates (soak, verification) per plan from the reconcile, and gate failures by gate, in the /metrics text', async () => {
    const registry = new Registry();
    const plan: Plan = {
      metadata: { name: 'p', namespace: 'fleet-a', uid: 'uid-p' },
      spec: { clusterName: 'c1' },
      status: { updateStatus: 'updating' },
    };
    let plans: Plan[] = [plan];
    const store = { list: () => plans } as unknown as Store<Plan>;
    const m = planMetricsFor({ metrics: { registry } } as unknown as Manager, store);
    m.recordHolds(plan, ['soak']);
    expect(await value(registry, 'inplace_plan_controller_plans_held', 'soak')).to.equal(1);
    expect(await value(registry, 'inplace_plan_controller_plans_held', 'verification')).to.equal(0);
    await new Promise((r) => setTimeout(r, 30));
    const text = await registry.metrics();
    const perPlan = /inplace_plan_controller_plan_gate_wait_seconds_total\{namespace="fleet-a",plan="p",gate="soak"\} ([0-9.e-]+)/.exec(
      text,
    );
    expect(Number(perPlan?.[1])).to.be.greaterThan(0);
    expect(await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'soak')).to.be.greaterThan(0);
    m.gateFailures.inc({ gate: 'verification' });
    expect(await registry.metrics()).to.contain('inplace_plan_controller_gate_failures_total{gate="verification"} 1');
    // A hold that starts and ends between two scrapes counts too (the reconcile that ends it counts it).
    const v0 = await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'verification');
    m.recordHolds(plan, ['soak', 'verification']);
    await new Promise((r) => setTimeout(r, 20));
    m.recordHolds(plan, ['soak']);
    expect(await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'verification')).to.be.greaterThan(v0);
    // The soak ended: the plan is held no more, its wait stays counted.
    m.recordHolds(plan, []);
    const after = await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'soak');
    expect(await value(registry, 'inplace_plan_controller_plans_held', 'soak')).to.equal(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(await value(registry, 'inplace_plan_controller_gate_wait_seconds_total', 'soak')).to.equal(after);
    // The plan is gone: its own series goes too.
    plans = [];
    expect(await registry.metrics()).to.not.contain('plan="p"');
  });
});
