// Retry plans skip machines already at target (issue 15): after plan A updated a MachineDeployment, plan B with the
// same values counts those machines as updated without a MachineUpdate or a task (status skipped counts, an Event),
// and still updates the machines that are not at target. spec.rerunMachinesAtTarget forces the updaters to run.
import { expect } from 'chai';
import type { KubeObject, MachineUpdate } from '../../src/api/index.js';
import { DevMachines, Events, PlanEventReasons } from '../../src/api/index.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { PlanPreview } from '../../src/plan-controller/index.js';
import { cli } from '../support/cli.js';
import { useE2eEnv } from '../e2e/env.js';
import { CP, TO_VERSION, planObject, refUpdater, versionOf, type Platform } from '../e2e/harness.js';

const MD = 'cluster1-md-0';
const IMAGE = 'ubuntu-24.04-k8s-v1.30.1';
// Values on the Machine and on the InfraMachine: both must be in place for a machine to be at target.
const updaters = () => [
  refUpdater({
    name: 'os',
    sequence: 1,
    responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: IMAGE }],
  }),
  refUpdater({ name: 'k8s', sequence: 2 }),
];
const muOf = (mus: (MachineUpdate & KubeObject)[], plan: string): (MachineUpdate & KubeObject)[] =>
  mus.filter((m) => m.spec.planName === plan);
/** Tasks created for the MachineUpdates of `plan` (tasks are owned by their MachineUpdate). */
const tasksOf = async (p: Platform, plan: string): Promise<KubeObject[]> => {
  const names = new Set(muOf(await p.machineUpdates(), plan).map((m) => m.metadata.name));
  return (await p.tasks()).filter((t) => t.metadata.ownerReferences?.some((r) => names.has(r.name)));
};

describe('plan controller: machines already at target', function () {
  this.timeout(180_000);
  const env = useE2eEnv();

  /** Provisions 1 control-plane machine and 3 workers, and updates the workers with plan A. */
  async function workersUpdated(): Promise<Platform> {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 3, maxUnavailable: 1 }] });
    await p.startPlatform();
    await p.apply(planObject(p.ns, 'a', { mds: [{ name: MD, sequence: 2, updaters: updaters() }] }));
    await p.waitStatus('a', 'updated', 60_000);
    expect(muOf(await p.machineUpdates(), 'a')).to.have.length(3);
    return p;
  }

  it('a retry plan counts machines at target as updated without a MachineUpdate or a task', async () => {
    const p = await workersUpdated();
    const workers = (await p.machines())
      .filter((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === MD)
      .map((m) => m.metadata.name!)
      .sort();
    expect(workers).to.have.length(3);

    const planB = planObject(p.ns, 'b', {
      cp: { name: CP, sequence: 1, updaters: updaters() },
      mds: [{ name: MD, sequence: 2, updaters: updaters() }],
    });
    // Preview (same rule, same objects) says so before the plan is applied.
    const file = join(mkdtempSync(join(tmpdir(), 'at-target-')), 'b.yaml');
    writeFileSync(file, stringify(planB));
    const r = await cli('preview', '-f', file, '-o', 'json', '--kubeconfig', env().kubeconfigPath);
    const previewed = (JSON.parse(r.out) as PlanPreview).groups.flatMap((g) =>
      g.targets.flatMap((t) => t.machines.map((m) => [m.name, m.state])),
    );
    expect(
      previewed
        .filter(([, st]) => st === 'alreadyAtTarget')
        .map(([n]) => n)
        .sort(),
    ).to.deep.equal(workers);
    expect(previewed.filter(([, st]) => st === 'notStarted')).to.have.length(1);

    await p.apply(planB);
    const b = await p.waitStatus('b', 'updated', 60_000);
    // Only the control-plane machine was not at target: it alone got a MachineUpdate and tasks.
    const mus = muOf(await p.machineUpdates(), 'b');
    expect(mus.map((m) => m.spec.target.kind)).to.deep.equal(['ControlPlane']);
    expect(await tasksOf(p, 'b')).to.have.length(2);
    expect(b.status).to.include({ progress: '4/4', updatedMachines: 4, skippedMachines: 3 });
    expect(b.status?.targets?.find((r) => r.name === MD)).to.include({ updateStatus: 'updated', machines: 3, updated: 3, skipped: 3 });
    expect(b.status?.targets?.find((r) => r.name === CP)?.skipped).to.equal(undefined);
    const cpMachine = (await p.machines()).find((m) => !workers.includes(m.metadata.name!))!;
    expect(versionOf(cpMachine)).to.equal(TO_VERSION);
    const events = (await env().client.list(Events, p.ns)).items.filter(
      (e) => (e['involvedObject'] as { name?: string }).name === 'b' && e['reason'] === PlanEventReasons.alreadyAtTarget,
    );
    expect(events, 'MachinesAlreadyAtTarget event').to.have.length(1);
    expect(String(events[0]!['message'])).to.contain(workers[0]);
  });

  it('a machine whose InfraMachine lacks a value is not at target', async () => {
    const p = await workersUpdated();
    const worker = (await p.machines()).find((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === MD)!;
    const infra = (worker['spec'] as { infrastructureRef: { name: string } }).infrastructureRef.name;
    await env().client.patch(DevMachines, p.ns, infra, { spec: { backend: { docker: { customImage: 'drifted' } } } }, { type: 'merge' });

    await p.apply(planObject(p.ns, 'b', { mds: [{ name: MD, sequence: 2, updaters: updaters() }] }));
    const b = await p.waitStatus('b', 'updated', 60_000);
    const mus = muOf(await p.machineUpdates(), 'b');
    expect(mus.map((m) => m.spec.machineRef.name)).to.deep.equal([worker.metadata.name]);
    // The values before the update, as the at-target check read them (contract C8: spec.previous), InfraMachine included.
    expect(mus[0]!.spec.previous).to.deep.equal([
      { selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: '"drifted"' },
      { selectResource: 'Machine', path: '/spec/version', value: JSON.stringify(TO_VERSION) },
    ]);
    expect(b.status).to.include({ progress: '3/3', skippedMachines: 2 });
    expect((await env().client.get(DevMachines, p.ns, infra))?.['spec']).to.nested.include({ 'backend.docker.customImage': IMAGE });
  });

  it('spec.rerunMachinesAtTarget runs the updaters on machines at target', async () => {
    const p = await workersUpdated();
    const plan = planObject(p.ns, 'b', { mds: [{ name: MD, sequence: 2, updaters: updaters() }] });
    plan.spec.rerunMachinesAtTarget = true;
    await p.apply(plan);
    const b = await p.waitStatus('b', 'updated', 60_000);
    const mus = muOf(await p.machineUpdates(), 'b');
    expect(mus).to.have.length(3);
    expect(mus.every((m) => m.status?.updateStatus === 'updated')).to.equal(true);
    expect(await tasksOf(p, 'b')).to.have.length(6);
    expect(b.status).to.include({ progress: '3/3', skippedMachines: 0 });
  });
});
