// The pre-start check against an API server: the commit patch is dry-run (nothing persisted) once per plan generation,
// not on every reconcile; a value the schema prunes makes the plan Valid=False before any machine starts.
import { expect } from 'chai';
import {
  API_VERSION,
  DevMachines,
  InPlaceUpdatePlans,
  MachineUpdates,
  Machines,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { createPlanController } from '../../src/plan-controller/index.js';
import { createManager, noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import type { KubeClient, PatchOptions } from '../../src/runtime/pure/types.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

describe('plan controller: pre-start check (dry-run of the commit)', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let ns = '';
  let mgr: RuntimeManager | undefined;
  const dryRuns: string[] = [];

  // Counts the dry-run patches the controller sends; everything else goes through unchanged.
  const counting = (c: KubeClient): KubeClient => ({
    ...c,
    get: (res, n, name) => c.get(res, n, name),
    list: (res, n, o) => c.list(res, n, o),
    create: (res, obj, o) => c.create(res, obj, o),
    update: (res, obj, o) => c.update(res, obj, o),
    delete: (res, n, name, o) => c.delete(res, n, name, o),
    watch: (res, n, o, on) => c.watch(res, n, o, on),
    resolve: (g, k) => c.resolve(g, k),
    patch: (res, n, name, body, o: PatchOptions) => {
      if (o.dryRun) dryRuns.push(`${res.kind}/${name}`);
      return c.patch(res, n, name, body, o);
    },
  });
  const planOf = (name: string, path: string, value: unknown, paused = true): KubeObject => ({
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name, namespace: ns },
    spec: {
      clusterName: 'c1',
      paused,
      machineDeployments: [
        {
          name: 'c1-md-0',
          sequence: 2,
          updaters: [{ name: 'u', sequence: 1, responsibilities: [{ selectResource: 'InfraMachine', path, value }] }],
        },
      ],
    },
  });
  const valid = async (name: string): Promise<{ status?: string; message?: string } | undefined> =>
    (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, name))?.status?.conditions?.find(
      (c) => c.type === 'Valid',
    );

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('prestart');
    await applyInventory(
      env.client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.30.0',
        controlPlane: { name: 'c1-cp', replicas: 1 },
        machineDeployments: [{ name: 'c1-md-0', replicas: 2, maxUnavailable: 1 }],
      }),
    );
    mgr = createManager({ client: counting(env.client), name: 'plan-controller', namespace: ns, log: noopLogger });
    await createPlanController().setup(mgr);
    await mgr.start();
  });
  after(async () => {
    await mgr?.stop();
    await env?.stop();
  });

  it('dry-runs a valid plan once per generation, persists nothing, and keeps it valid across reconciles', async () => {
    const infraBefore = (await env.client.list(DevMachines, ns)).items.map((o) => [o.metadata.name, o.metadata.resourceVersion]);
    await env.client.create(InPlaceUpdatePlans, planOf('ok', '/spec/backend/docker/customImage', 'ubuntu-24.04'));
    await waitFor(async () => (await valid('ok'))?.status === 'True', { timeoutMs: 30_000, message: 'plan ok Valid=True' });
    expect(dryRuns.filter((d) => d.startsWith('DevMachine/'))).to.have.length(1);
    // More reconciles (a label change on the plan, machine events) do not dry-run again.
    for (let i = 0; i < 3; i++)
      await env.client.patch(InPlaceUpdatePlans, ns, 'ok', { metadata: { labels: { poke: String(i) } } }, { type: 'merge' });
    const m = (await env.client.list(Machines, ns)).items[0]!;
    await env.client.patch(Machines, ns, m.metadata.name!, { metadata: { labels: { poke: 'x' } } }, { type: 'merge' });
    await waitFor(
      async () => (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, 'ok'))?.metadata.labels?.['poke'] === '2',
      { timeoutMs: 10_000 },
    );
    await new Promise((r) => setTimeout(r, 1500)); // let those reconciles run: the count below must not move
    expect(dryRuns.filter((d) => d.startsWith('DevMachine/'))).to.have.length(1);
    expect((await valid('ok'))?.status).to.equal('True');
    expect((await env.client.list(DevMachines, ns)).items.map((o) => [o.metadata.name, o.metadata.resourceVersion])).to.deep.equal(
      infraBefore,
    );
  });

  it('finds a field the InfraMachine schema prunes: Valid=False naming it, no MachineUpdate', async () => {
    await env.client.create(InPlaceUpdatePlans, planOf('pruned', '/spec/notAField', 'x', false));
    let msg = '';
    await waitFor(
      async () => {
        const v = await valid('pruned');
        msg = v?.message ?? '';
        return v?.status === 'False';
      },
      { timeoutMs: 30_000, message: 'plan pruned Valid=False' },
    );
    expect(msg).to.match(
      /machineDeployment c1-md-0: InfraMachine \/spec\/notAField would not be kept by DevMachine \S+ \(dry-run: wanted "x", the server keeps nothing\)/,
    );
    expect((await env.client.list(MachineUpdates, ns)).items).to.have.length(0);
  });
});
