// End to end: a plan rolls out over a control plane and two MachineDeployments with several updaters per machine.
import { expect } from 'chai';
import type { KubeObject, MachineUpdate } from '../../src/api/index.js';
import {
  Annotations,
  DevMachines,
  Events,
  KubeadmConfigs,
  KubernetesVersionUpdateTaskTemplates,
  Labels,
  Nodes,
  OSImageUpdateTaskTemplates,
  UpdaterUpdateTasks,
  apiVersionOf,
  isTerminal,
} from '../../src/api/index.js';
import { nodeNameFor } from '../../tools/capi-sim/index.js';
import { machineUpdateName } from '../../src/plan-controller/index.js';
import { useE2eEnv } from './env.js';
import { CP, TO_VERSION, conditionOf, isCp, planObject, refUpdater, versionOf } from './harness.js';

type MU = MachineUpdate & KubeObject;

// Three generic updaters, one per selectable resource, run in sequence on every machine.
const updaters = () => [
  refUpdater({
    name: 'os',
    sequence: 1,
    responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04-k8s-v1.30.1' }],
  }),
  refUpdater({ name: 'k8s', sequence: 2 }),
  refUpdater({
    name: 'ntp',
    sequence: 3,
    responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true, servers: ['time.example.com'] } }],
  }),
];

/** Replays MachineUpdate events in order and returns the largest number of simultaneously in-flight updates per target. */
function maxInFlight(events: { object: MU }[]): Map<string, number> {
  const state = new Map<string, { target: string; terminal: boolean }>();
  const max = new Map<string, number>();
  for (const { object: mu } of events) {
    state.set(mu.metadata.name!, { target: mu.spec.target.name, terminal: isTerminal(mu.status?.updateStatus) });
    const counts = new Map<string, number>();
    for (const s of state.values()) if (!s.terminal) counts.set(s.target, (counts.get(s.target) ?? 0) + 1);
    for (const [t, n] of counts) max.set(t, Math.max(max.get(t) ?? 0, n));
  }
  return max;
}

describe('e2e: plan rollout', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('updates a 3-machine control plane, then two 3-machine MachineDeployments, with three updaters per machine in order', async () => {
    const p = await env().platform();
    await p.provision({
      mds: [
        { name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 },
        { name: 'cluster1-md-1', replicas: 3, maxUnavailable: 0 },
      ],
    });
    await p.startPlatform();
    const muEvents = await p.recordMachineUpdates();
    const taskEvents: { type: string; object: KubeObject }[] = [];
    const tw = await env().client.watch(UpdaterUpdateTasks, p.ns, {}, (e) => {
      if (e.type === 'ADDED' || e.type === 'MODIFIED') taskEvents.push({ type: e.type, object: e.object });
    });

    await p.apply(
      planObject(p.ns, 'cluster1-v1-30-1', {
        cp: { name: CP, sequence: 1, updaters: updaters() },
        mds: [
          { name: 'cluster1-md-0', sequence: 2, updaters: updaters() },
          { name: 'cluster1-md-1', sequence: 2, updaters: updaters() },
        ],
      }),
    );
    const plan = await p.waitStatus('cluster1-v1-30-1', 'updated', 90_000);
    tw.abort();

    // Plan status.
    expect(plan.status).to.include({ progress: '9/9', machines: 9, updatedMachines: 9 });
    expect(plan.status?.targets?.map((t) => [t.name, t.updateStatus, t.updated, t.machines])).to.deep.equal([
      [CP, 'updated', 3, 3],
      ['cluster1-md-0', 'updated', 3, 3],
      ['cluster1-md-1', 'updated', 3, 3],
    ]);
    for (const type of ['Valid', 'ControlPlaneUpdate', 'MachineDeploymentUpdate', 'Ready'])
      expect(conditionOf(plan, type)?.status, type).to.equal('True');
    expect(plan.status?.startTime).to.be.a('string');
    expect(plan.status?.completionTime).to.be.a('string');

    // Every machine carries every committed value, and no plan label remains.
    const machines = await p.machines();
    expect(machines.filter((m) => !m.metadata.deletionTimestamp)).to.have.length(9);
    for (const m of machines.filter((x) => !x.metadata.deletionTimestamp)) {
      expect(versionOf(m), m.metadata.name).to.equal(TO_VERSION);
      expect(m.metadata.labels?.[Labels.planName]).to.equal(undefined);
      expect(m.metadata.annotations?.[Annotations.updateStartedAt]).to.equal(undefined);
      const spec = m['spec'] as { infrastructureRef: { name: string }; bootstrap: { configRef: { name: string } } };
      expect(await env().client.get(DevMachines, p.ns, spec.infrastructureRef.name)).to.have.nested.property(
        'spec.backend.docker.customImage',
        'ubuntu-24.04-k8s-v1.30.1',
      );
      expect((await env().client.get(KubeadmConfigs, p.ns, spec.bootstrap.configRef.name))?.['spec']).to.have.deep.property('ntp', {
        enabled: true,
        servers: ['time.example.com'],
      });
    }

    // MachineUpdates: deterministic names, the contract labels, owned by the plan, the target's updaters in order.
    const planObj = (await p.plan('cluster1-v1-30-1'))!;
    for (const mu of await p.machineUpdates()) {
      expect(mu.metadata.name).to.equal(machineUpdateName('cluster1-v1-30-1', mu.spec.machineRef.name));
      expect(mu.metadata.labels).to.include({
        [Labels.planName]: 'cluster1-v1-30-1',
        [Labels.machineName]: mu.spec.machineRef.name,
        [Labels.clusterName]: 'cluster1',
        [Labels.targetName]: mu.spec.target.name,
      });
      expect(mu.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
          kind: 'InPlaceUpdatePlan',
          name: 'cluster1-v1-30-1',
          uid: planObj.metadata!.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(mu.spec.updaters.map((u) => u.name)).to.deep.equal(['os', 'k8s', 'ntp']);
    }

    // Control plane one at a time and before any MachineDeployment machine; md-0 bounded by maxUnavailable 1,
    // md-1 (maxUnavailable 0) surged by one and updated one at a time, then restored to 3 replicas.
    const adds = muEvents.events.filter((e) => e.type === 'ADDED').map((e) => e.object);
    const firstMd = adds.findIndex((mu) => mu.spec.target.kind === 'MachineDeployment');
    expect(adds.slice(0, firstMd).map((mu) => mu.spec.target.name)).to.deep.equal([CP, CP, CP]);
    const cpUpdated = new Set<string>();
    const allCpUpdatedAt = muEvents.events.findIndex((e) => {
      if (e.object.spec.target.kind === 'ControlPlane' && e.object.status?.updateStatus === 'updated')
        cpUpdated.add(e.object.metadata.name!);
      return cpUpdated.size === 3;
    });
    const firstMdEvent = muEvents.events.findIndex((e) => e.object.spec.target.kind === 'MachineDeployment');
    expect(allCpUpdatedAt, 'all control-plane machines updated before any MachineDeployment machine starts').to.be.within(
      0,
      firstMdEvent - 1,
    );
    const max = maxInFlight(muEvents.events);
    expect(max.get(CP)).to.equal(1);
    expect(max.get('cluster1-md-0')).to.equal(1);
    expect(max.get('cluster1-md-1')).to.equal(1);
    expect(adds.filter((mu) => mu.spec.target.name === 'cluster1-md-1')).to.have.length(4, 'the surge machine is updated too');
    const md1 = await p.md('cluster1-md-1');
    expect((md1?.['spec'] as { replicas: number }).replicas).to.equal(3);
    expect(md1?.metadata.annotations?.[Annotations.surgeOriginalReplicas]).to.equal(undefined);

    // Updaters ran in order on each machine: a task is created only once the previous one is updated.
    const last = new Map<string, string | undefined>();
    const order = new Map<string, string[]>();
    for (const e of taskEvents) {
      const machine = e.object.metadata.labels?.[Labels.machineName] ?? '';
      const updater = e.object.metadata.labels?.[Labels.updaterName] ?? '';
      if (e.type === 'ADDED') {
        const seen = order.get(machine) ?? [];
        if (seen.length > 0)
          expect(
            last.get(`${machine}/${seen[seen.length - 1]}`),
            `${machine}: ${updater} started after ${seen[seen.length - 1]} was updated`,
          ).to.equal('updated');
        order.set(machine, [...seen, updater]);
      }
      last.set(`${machine}/${updater}`, (e.object['status'] as { updateStatus?: string } | undefined)?.updateStatus);
    }
    expect(order.size).to.equal(10);
    for (const [m, o] of order) expect(o, m).to.deep.equal(['os', 'k8s', 'ntp']);

    // Events for the transitions.
    const reasons = (await env().client.list(Events, p.ns)).items
      .filter((e) => (e['involvedObject'] as { name?: string }).name === 'cluster1-v1-30-1')
      .map((e) => e['reason']);
    expect(reasons).to.include.members([
      'PlanStarted',
      'TargetStarted',
      'TargetUpdated',
      'MachineUpdateStarted',
      'Surged',
      'SurgeRestored',
      'PlanCompleted',
    ]);

    // Metrics on the plan controller's /metrics.
    const metrics = await p.metrics('plan-controller');
    expect(metrics).to.match(/^inplace_plan_controller_machines_started_total 10$/m);
    expect(metrics).to.match(/^inplace_plan_controller_machines_updated_total 10$/m);
    expect(metrics).to.match(/^inplace_plan_controller_plans\{status="updated"\} 1$/m);
    expect(machines.some(isCp)).to.equal(true);
  });
  it('runs the sample updaters (own task kinds from templates, simulated nodes) and commits their changes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform();
    await p.startSampleUpdaters(['os-image', 'kubernetes-version']);
    await env().client.create(OSImageUpdateTaskTemplates, {
      apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
      kind: OSImageUpdateTaskTemplates.kind,
      metadata: { name: 'os-image-task', namespace: p.ns },
      spec: { template: { spec: { simulatedStepSeconds: 0 } } },
    });
    await env().client.create(KubernetesVersionUpdateTaskTemplates, {
      apiVersion: apiVersionOf(KubernetesVersionUpdateTaskTemplates),
      kind: KubernetesVersionUpdateTaskTemplates.kind,
      metadata: { name: 'kubernetes-version-task', namespace: p.ns },
      spec: { template: { spec: { simulatedStepSeconds: 0 } } },
    });
    const samples = () => [
      {
        name: 'os-image',
        sequence: 1,
        updaterUpdateTemplateRef: {
          apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
          kind: OSImageUpdateTaskTemplates.kind,
          name: 'os-image-task',
        },
        responsibilities: [
          { selectResource: 'InfraMachine' as const, path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04-k8s-1.30.1' },
        ],
      },
      {
        name: 'kubernetes-version',
        sequence: 2,
        updaterUpdateTemplateRef: {
          apiVersion: apiVersionOf(KubernetesVersionUpdateTaskTemplates),
          kind: KubernetesVersionUpdateTaskTemplates.kind,
          name: 'kubernetes-version-task',
        },
        responsibilities: [{ selectResource: 'Machine' as const, path: '/spec/version', value: TO_VERSION }],
      },
      refUpdater({
        name: 'ntp-config',
        sequence: 3,
        durationSeconds: 0,
        responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true, servers: ['0.pool.ntp.org'] } }],
      }),
    ];
    await p.apply(
      planObject(p.ns, 'samples', {
        cp: { name: CP, sequence: 1, updaters: samples() },
        mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: samples() }],
      }),
    );
    const plan = await p.waitStatus('samples', 'updated', 90_000);
    expect(plan.status?.progress).to.equal('3/3');
    const mus = await p.machineUpdates();
    for (const mu of mus)
      expect(mu.status?.tasks?.map((t) => [t.updater, t.kind, t.updateStatus])).to.deep.equal([
        ['os-image', 'OSImageUpdateTask', 'updated'],
        ['kubernetes-version', 'KubernetesVersionUpdateTask', 'updated'],
        ['ntp-config', 'UpdaterUpdateTask', 'updated'],
      ]);
    for (const m of (await p.machines()).filter((x) => !x.metadata.deletionTimestamp)) {
      expect(versionOf(m)).to.equal(TO_VERSION);
      const node = await env().client.get(Nodes, undefined, nodeNameFor(p.ns, m.metadata.name!));
      expect(node, `node of ${m.metadata.name}`).to.have.nested.property('status.nodeInfo.kubeletVersion', TO_VERSION);
    }
  });
});
