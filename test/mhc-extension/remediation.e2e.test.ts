// End to end: the whole platform (plan controller, machine task controller, MHC extension, an updater) with the
// CAPI simulator. An update that hangs on one machine exceeds the MHC's in-place timeout; the extension triggers
// remediation, CAPI (simulated) replaces the machine at the MachineDeployment's version, and the plan, being
// level-based, updates the replacement too.
import { expect } from 'chai';
import {
  API_VERSION,
  Annotations,
  InPlaceUpdatePlans,
  KubeadmConfigs,
  Labels,
  MachineUpdates,
  Machines,
  Reasons,
  type Condition,
  type KubeObject,
} from '../../src/api/index.js';
import { createManager, noopLogger, type Component, type KubeClient, type RuntimeManager } from '../../src/runtime/index.js';
import {
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  startCapiSimulator,
  type CapiSimulator,
  type Machine,
} from '../../tools/capi-sim/index.js';
import { defineUpdater, done, progress } from '../../src/contract/sdk/index.js';
import { mhcExtension } from '../../src/mhc-extension/index.js';
import { planController } from '../../src/plan-controller/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const NTP = { enabled: true, servers: ['time.example.com'] };

async function run(client: KubeClient, ns: string, c: Component): Promise<RuntimeManager> {
  const mgr = createManager({ client, name: c.name, namespace: ns });
  await c.setup(mgr);
  await mgr.start();
  return mgr;
}

describe('mhc-extension e2e: remediation of a timed-out update and update of the replacement', function () {
  let env: TestEnv;
  let ns = '';
  const stops: Array<() => Promise<void>> = [];

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop();
    if (ns && env) await deleteWorkloadNodes(env.client, ns);
    await env?.stop();
  });

  it('replaces the machine whose update hung past the timeout, and the plan updates the replacement', async () => {
    const client = env.client;
    ns = await env.newNamespace('mhc-e2e');
    const objs = buildInventory({
      namespace: ns,
      clusterName: 'c1',
      version: 'v1.29.5',
      machineDeployments: [{ name: 'c1-md', replicas: 2, maxUnavailable: 1 }],
      mhc: { name: 'c1-mhc', inPlaceUpdateTimeout: '2s' },
    });
    await applyInventory(client, objs);
    const original = objs.filter((o) => o.kind === 'Machine').map((o) => o.metadata.name ?? '');
    const hung = original[0]!;

    // An updater that never finishes on the first machine it was built to hang on, and is instant elsewhere.
    const updater = defineUpdater({
      name: 'ntp',
      names: ['ntp'],
      update: async (task) =>
        task.spec.machineRef.name === hung ? progress(undefined, 'waiting for a reboot that never comes') : done('ntp configured'),
      abort: async () => done(),
    });
    const sim: CapiSimulator = await startCapiSimulator({ client, namespace: ns, readyDelayMs: 50 });
    stops.push(() => sim.stop());
    for (const c of [planController, machineTaskController, mhcExtension]) {
      const mgr = await run(client, ns, c);
      stops.push(() => mgr.stop());
    }
    const running = await updater.start({ client, namespace: ns, log: noopLogger });
    stops.push(() => running.stop());

    await client.create(InPlaceUpdatePlans, {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdatePlan',
      metadata: { name: 'ntp', namespace: ns },
      spec: {
        clusterName: 'c1',
        updatePhase: 'updating',
        failurePolicy: 'Halt',
        machineDeployments: [
          {
            name: 'c1-md',
            sequence: 1,
            updaters: [
              { name: 'ntp', sequence: 1, responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: NTP }] },
            ],
          },
        ],
      },
    } as KubeObject);

    // The hung machine is judged timed out and remediated: CAPI deletes it.
    await waitFor(async () => (await client.get(Machines, ns, hung)) === undefined, {
      timeoutMs: 30_000,
      message: 'hung machine remediated',
    });
    const hungUpdate = (await client.list(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${hung}` })).items[0];
    const verdict = (hungUpdate?.['status'] as { conditions?: Condition[] } | undefined)?.conditions?.find(
      (c) => c.type === 'HealthCheckSucceeded',
    );
    expect(verdict).to.include({ status: 'False', reason: Reasons.inPlaceUpdateTimedOut });

    // The replacement comes up at the MachineDeployment's version and is updated by the same plan.
    const replacement = await waitFor(
      async () => {
        const ms = (await client.list<Machine>(Machines, ns)).items;
        return ms.find((m) => !original.includes(m.metadata.name ?? '') && m.status?.phase === 'Running');
      },
      { timeoutMs: 30_000, message: 'replacement machine running' },
    );
    expect(replacement.spec).to.include({ version: 'v1.29.5' });
    await waitFor(
      async () => {
        const us = (await client.list(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${replacement.metadata.name}` })).items;
        return us.some((u) => (u['status'] as { updateStatus?: string } | undefined)?.updateStatus === 'updated');
      },
      { timeoutMs: 30_000, message: 'replacement updated by the plan' },
    );
    const config = await client.get(KubeadmConfigs, ns, replacement.spec.bootstrap.configRef!.name);
    expect((config?.['spec'] as { ntp?: unknown }).ntp).to.deep.equal(NTP);
    // The other original machine was updated and is no longer protected.
    const other = await client.get<Machine>(Machines, ns, original[1]!);
    expect(other?.metadata.annotations ?? {}).to.not.have.property(Annotations.skipRemediation);
    expect(((await client.get(KubeadmConfigs, ns, original[1]!))?.['spec'] as { ntp?: unknown }).ntp).to.deep.equal(NTP);
    // The plan counts the current machines only: even with failurePolicy Halt it ends updated.
    await waitFor(
      async () =>
        ((await client.get(InPlaceUpdatePlans, ns, 'ntp'))?.['status'] as { updateStatus?: string } | undefined)?.updateStatus ===
        'updated',
      { timeoutMs: 30_000, message: 'plan updated' },
    );
  });
});
