// Integration: the history limit. Four small plans in a row on one cluster with --finished-plans-per-cluster 2 leave the
// two newest plans and their MachineUpdates; the older plans' MachineUpdates and tasks are garbage-collected with them.
// Against the local API server, or a real cluster (INPLACE_TEST_KUBECONFIG).
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { Annotations, Events, InPlaceUpdatePlans, KubeadmControlPlanes, PlanEventReasons } from '../../src/api/index.js';
import { PAUSED_BY_PLAN } from '../../src/plan-controller/owners.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { createPlanController } from '../../src/plan-controller/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { CP, planObject, refUpdater, type Platform } from '../e2e/harness.js';

const MD = 'cluster1-md-0';

/** Starts the plan controller keeping 2 finished plans, the machine task controller and the reference updater. */
async function startWithLimit2(p: Platform): Promise<void> {
  await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
  await p.startComponent(createPlanController({ finishedPlansPerCluster: 2 }));
  await p.startComponent(machineTaskController);
  await p.startSampleUpdaters(['reference']);
}

/** Applies a MachineDeployment-only plan carrying a value of its own (every plan updates both machines) and waits until it is updated. */
async function runPlan(p: Platform, name: string): Promise<void> {
  const u = refUpdater({
    responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: `image-${name}` }],
  });
  await p.apply(planObject(p.ns, name, { mds: [{ name: MD, sequence: 2, updaters: [u] }] }));
  await p.waitStatus(name, 'updated', 60_000);
}

const plansLeft = async (p: Platform): Promise<string[]> =>
  (await p.client.list(InPlaceUpdatePlans, p.ns)).items.map((x) => x.metadata.name!).sort();

describe('plan controller: history limit of finished plans', function () {
  this.timeout(180_000);
  const env = useE2eEnv();

  it('keeps the 2 newest finished plans of the cluster with their MachineUpdates; older ones go with theirs', async () => {
    const p = await env().platform();
    await startWithLimit2(p);
    for (const name of ['h1', 'h2', 'h3', 'h4']) await runPlan(p, name);

    await waitFor(async () => (await plansLeft(p)).join() === 'h3,h4', { timeoutMs: 60_000, message: 'plans h1 and h2 deleted' });
    // Garbage collection is asynchronous: the pruned plans' MachineUpdates and tasks follow.
    const byPlan = async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const m of await p.machineUpdates()) out[m.spec.planName] = (out[m.spec.planName] ?? 0) + 1;
      return out;
    };
    await waitFor(async () => JSON.stringify(await byPlan()) === JSON.stringify({ h3: 2, h4: 2 }) || undefined, {
      timeoutMs: 60_000,
      message: 'only h3 and h4 keep MachineUpdates',
    });
    const muNames = new Set((await p.machineUpdates()).map((m) => m.metadata.name));
    await waitFor(async () => (await p.tasks()).every((t) => t.metadata.ownerReferences?.some((r) => muNames.has(r.name))) || undefined, {
      timeoutMs: 60_000,
      message: 'tasks of pruned MachineUpdates gone',
    });
    expect(await plansLeft(p)).to.deep.equal(['h3', 'h4']);

    // The deleted plans are gone: the Event is on the newest finished plan.
    const events = await waitFor(
      async () => {
        const ev = (
          await env().client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(Events, p.ns)
        ).items.filter((e) => e.reason === PlanEventReasons.pruned);
        return ev.length > 0 ? ev : undefined;
      },
      { timeoutMs: 30_000, message: `a ${PlanEventReasons.pruned} Event` },
    );
    expect(events.every((e) => e.involvedObject?.name === 'h3' || e.involvedObject?.name === 'h4')).to.equal(true);
    expect(events.map((e) => e.message).join('\n'))
      .to.match(/h1 \(updated\)/)
      .and.to.match(/h2 \(updated\)/);
  });

  it('keeps a finished plan an owner still names as its pause holder, beyond the limit', async () => {
    const p = await env().platform();
    await startWithLimit2(p);
    await runPlan(p, 'k1');
    // As after an abort over mixed machines: the control plane stays paused by k1 (no later plan targets it).
    await p.client.patch(
      KubeadmControlPlanes,
      p.ns,
      CP,
      { metadata: { annotations: { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'k1' } } },
      { type: 'merge' },
    );
    for (const name of ['k2', 'k3', 'k4']) await runPlan(p, name);
    await waitFor(async () => (await plansLeft(p)).join() === 'k1,k3,k4', { timeoutMs: 60_000, message: 'k2 deleted, k1 kept (pinned)' });
    expect((await p.client.get(KubeadmControlPlanes, p.ns, CP))?.metadata.annotations?.[PAUSED_BY_PLAN]).to.equal('k1');
  });
});
