// A fleet of a second, non-dev provider (test/providers/fixtures: ExampleMetalMachine, ExampleControlPlane): the plan
// controller finds the control plane through Cluster.spec.controlPlaneRef (no KubeadmControlPlane anywhere), and the
// machine task controller commits an InfraMachine responsibility to the ExampleMetalMachine — each component running
// with exactly the RBAC the manifests synthesize for that provider list. Without the InfraMachine kind in the list the
// commit is forbidden, and the error says which resource.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import {
  API_VERSION,
  Clusters,
  InPlaceUpdatePlans,
  MachineUpdates,
  Machines,
  type InPlaceUpdatePlan,
  type KubeObject,
  type PlanUpdater,
  type ResourceType,
} from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { controlPlaneMachineLabels, kubeTime, machineRunningStatus, nodeInfoFor } from '../../tools/capi-sim/builders.js';
import { createMachineTaskController } from '../../src/machine-task-controller/index.js';
import { createPlanController } from '../../src/plan-controller/index.js';
import { createManager, noopLogger, type ProviderResource, type RuntimeManager } from '../../src/runtime/index.js';
import type { Component, Logger } from '../../src/runtime/pure/types.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { synthesize } from '../../cdk8s/synth.js';
import { docsOf, effectiveRules } from '../cli/manifests.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { restrictedClient, type RestrictedClient } from '../support/rbac-client.js';
import { waitFor } from '../support/wait.js';
import { waitPlanInvalid } from '../support/plans.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'example-provider.yaml');
const ExampleMetalMachines: ResourceType = {
  group: 'infrastructure.example.dev',
  version: 'v1alpha1',
  plural: 'examplemetalmachines',
  kind: 'ExampleMetalMachine',
  namespaced: true,
};
const ExampleControlPlanes: ResourceType = {
  group: 'controlplane.example.dev',
  version: 'v1alpha1',
  plural: 'examplecontrolplanes',
  kind: 'ExampleControlPlane',
  namespaced: true,
};

/** The example fleet's provider list: no DevMachine, no kubeadm. */
const EXAMPLE_PROVIDERS: ProviderResource[] = [
  { role: 'InfraMachine', apiGroup: 'infrastructure.example.dev', resource: 'examplemetalmachines' },
  { role: 'InfraMachineTemplate', apiGroup: 'infrastructure.example.dev', resource: 'examplemetalmachinetemplates' },
  { role: 'ControlPlane', apiGroup: 'controlplane.example.dev', resource: 'examplecontrolplanes' },
];
const CLUSTER = 'metal1';
const CP = 'metal1-cp';
const MACHINE = 'metal1-cp-0';
const VERSION = 'v1.30.0';

/** Collects error log lines (message and error fields), so a test can show what an operator would read. */
function capturingLogger(lines: string[]): Logger {
  const log: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (obj, msg) => void lines.push(`${msg ?? ''} ${typeof obj === 'string' ? obj : JSON.stringify(obj)}`),
    child: () => log,
  };
  return log;
}

/** One control-plane machine of the example provider, Running and Ready. */
async function provisionFleet(env: TestEnv, ns: string): Promise<void> {
  const now = kubeTime(new Date());
  const c = env.client;
  await c.create(Clusters, {
    apiVersion: `${Clusters.group}/${Clusters.version}`,
    kind: Clusters.kind,
    metadata: { name: CLUSTER, namespace: ns },
    spec: { controlPlaneRef: { apiGroup: ExampleControlPlanes.group, kind: ExampleControlPlanes.kind, name: CP } },
  });
  const cp: KubeObject = await c.create<KubeObject>(ExampleControlPlanes, {
    apiVersion: `${ExampleControlPlanes.group}/v1alpha1`,
    kind: ExampleControlPlanes.kind,
    metadata: { name: CP, namespace: ns, labels: { 'cluster.x-k8s.io/cluster-name': CLUSTER } },
    spec: { replicas: 1, version: VERSION },
  });
  await c.create(ExampleMetalMachines, {
    apiVersion: `${ExampleMetalMachines.group}/v1alpha1`,
    kind: ExampleMetalMachines.kind,
    metadata: { name: MACHINE, namespace: ns, labels: { 'cluster.x-k8s.io/cluster-name': CLUSTER } },
    spec: { image: 'metal-os-1', providerID: `example://${MACHINE}` },
  });
  const m = await c.create(Machines, {
    apiVersion: `${Machines.group}/${Machines.version}`,
    kind: Machines.kind,
    metadata: {
      name: MACHINE,
      namespace: ns,
      labels: controlPlaneMachineLabels(CLUSTER, CP),
      ownerReferences: [
        {
          apiVersion: `${ExampleControlPlanes.group}/v1alpha1`,
          kind: ExampleControlPlanes.kind,
          name: CP,
          uid: cp.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      clusterName: CLUSTER,
      version: VERSION,
      providerID: `example://${MACHINE}`,
      bootstrap: { dataSecretName: `${MACHINE}-bootstrap` },
      infrastructureRef: { apiGroup: ExampleMetalMachines.group, kind: ExampleMetalMachines.kind, name: MACHINE },
    },
  });
  const node = `${ns}-${MACHINE}`;
  await c.update(
    Machines,
    { ...m, status: machineRunningStatus(node, nodeInfoFor(node, VERSION, 'metal-os-1'), 1, now) },
    { subresource: 'status' },
  );
  await c.update(ExampleControlPlanes, { ...cp, status: { readyReplicas: 1 } }, { subresource: 'status' });
}

/** A plan whose one updater owns the ExampleMetalMachine's image. */
const plan = (ns: string, name: string, extra: PlanUpdater[] = []): InPlaceUpdatePlan & KubeObject => ({
  apiVersion: API_VERSION,
  kind: 'InPlaceUpdatePlan',
  metadata: { name, namespace: ns },
  spec: {
    clusterName: CLUSTER,
    controlPlane: {
      name: CP,
      sequence: 1,
      updaters: [
        {
          name: 'os',
          sequence: 1,
          parameters: { durationSeconds: 0.05 },
          responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'metal-os-2' }],
        },
        ...extra,
      ],
    },
  },
});

describe('a non-dev provider (ExampleMetalMachine, ExampleControlPlane) with RBAC generated for its provider list', function () {
  this.timeout(120_000);
  let env: TestEnv;
  const running: { stop(): Promise<void> }[] = [];

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs(), FIXTURES] });
  });
  afterEach(async () => {
    for (const r of running.splice(0).reverse()) await r.stop();
  });
  after(async () => env?.stop());

  /** Starts the plan and machine task controllers through clients bound to the rules synthesized for `providers`. */
  async function startPlatform(
    ns: string,
    providers: readonly ProviderResource[],
    errors: string[],
  ): Promise<Record<string, RestrictedClient>> {
    const docs = docsOf(synthesize({ providers }));
    const clients: Record<string, RestrictedClient> = {};
    const components: Component[] = [createPlanController({ providers }), createMachineTaskController({ providers })];
    for (const comp of components) {
      const client = restrictedClient(
        env.client,
        effectiveRules(docs, comp.name),
        `system:serviceaccount:inplace-system:inplace-${comp.name}`,
      );
      clients[comp.name] = client;
      const mgr: RuntimeManager = createManager({ client, name: comp.name, namespace: ns, log: capturingLogger(errors) });
      await comp.setup(mgr);
      await mgr.start();
      running.push(mgr);
    }
    running.push(await sampleUpdaters.reference.start({ client: env.client, namespace: ns, catchAll: true, log: noopLogger }));
    return clients;
  }

  it('updates the control plane through controlPlaneRef and commits the image to the ExampleMetalMachine', async () => {
    const ns = await env.newNamespace('provider');
    await provisionFleet(env, ns);
    const errors: string[] = [];
    const clients = await startPlatform(ns, EXAMPLE_PROVIDERS, errors);
    await env.client.create(InPlaceUpdatePlans, plan(ns, 'metal-os-2'));

    await waitFor(
      async () =>
        (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, 'metal-os-2'))?.status?.updateStatus === 'updated',
      {
        timeoutMs: 90_000,
        intervalMs: 100,
        message: `plan metal-os-2 to be updated (errors: ${errors.join(' | ')})`,
      },
    );
    const infra = await env.client.get(ExampleMetalMachines, ns, MACHINE);
    expect((infra?.spec as { image?: string }).image).to.equal('metal-os-2');
    const done = await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, 'metal-os-2');
    expect(done?.status?.targets?.map((t) => [t.kind, t.name, t.updateStatus, t.machines])).to.deep.equal([
      ['ControlPlane', CP, 'updated', 1],
    ]);
    // Nothing was asked of the default kinds, and nothing the generated rules deny was attempted.
    for (const [name, c] of Object.entries(clients)) expect(c.denied, name).to.deep.equal([]);
  });

  /** The plan's Valid=False message, once the plan controller reports it. */
  const invalidMessage = async (ns: string, name: string): Promise<string> => (await waitPlanInvalid(env.client, ns, name, 90_000)).message;

  it('without the InfraMachine kind in the list, the plan is refused before any machine starts and the message names the resource', async () => {
    const ns = await env.newNamespace('provider');
    await provisionFleet(env, ns);
    const errors: string[] = [];
    const clients = await startPlatform(
      ns,
      EXAMPLE_PROVIDERS.filter((p) => p.role !== 'InfraMachine'),
      errors,
    );
    await env.client.create(InPlaceUpdatePlans, plan(ns, 'metal-os-2'));

    // Fail closed: the plan controller's pre-start check (a dry-run of the commit on one InfraMachine) is forbidden,
    // which is a named problem, not a retry loop and not a half-done update.
    const message = await invalidMessage(ns, 'metal-os-2');
    expect(message, message).to.include('examplemetalmachines');
    expect(clients['plan-controller']!.denied.map((d) => `${d.group}/${d.resource}`)).to.include(
      'infrastructure.example.dev/examplemetalmachines',
    );
    // Nothing started and nothing was committed.
    expect((await env.client.list(MachineUpdates, ns)).items).to.deep.equal([]);
    expect(((await env.client.get(ExampleMetalMachines, ns, MACHINE))?.spec as { image?: string }).image).to.equal('metal-os-1');
  });

  it('without the control-plane kind in the list, the plan is invalid and says which kind could not be read', async () => {
    const ns = await env.newNamespace('provider');
    await provisionFleet(env, ns);
    const errors: string[] = [];
    const clients = await startPlatform(
      ns,
      EXAMPLE_PROVIDERS.filter((p) => p.role !== 'ControlPlane'),
      errors,
    );
    await env.client.create(InPlaceUpdatePlans, plan(ns, 'metal-os-2'));

    const message = await invalidMessage(ns, 'metal-os-2');
    expect(message).to.include('examplecontrolplanes.controlplane.example.dev could not be listed');
    expect(message).to.include('provider list');
    expect(clients['plan-controller']!.denied.map((d) => `${d.verb} ${d.resource}`)).to.include('list examplecontrolplanes');
    // Nothing started: no machine in update.
    expect((await env.client.list(MachineUpdates, ns)).items).to.deep.equal([]);
  });
});
