// The runtime extension against the shared test env (local API server, or a real cluster with INPLACE_TEST_KUBECONFIG):
// upstream-shaped hook requests (fixtures written from Cluster API's hooks.runtime.cluster.x-k8s.io/v1alpha1 types)
// POSTed over HTTPS as Cluster API's runtime client does, trusting the extension's caBundle; UpdateMachine runs
// through the machine task controller and the reference updater to Done, and a failing updater gives a Failure with
// its own message.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  API_VERSION,
  Annotations,
  DevMachines,
  InPlaceUpdaters,
  KubeadmConfigs,
  Labels,
  MachineUpdates,
  Machines,
  type KubeObject,
  type MachineUpdate,
} from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { postHook } from './hook-client.js';
import { createRuntimeExtension, decodePatchBytes, type RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';
import { createManager, noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const fixture = (name: string, ns: string): unknown =>
  JSON.parse(readFileSync(join(fixtures, name), 'utf8').replaceAll('NAMESPACE', ns)) as unknown;
const PREFIX = '/hooks.runtime.cluster.x-k8s.io/v1alpha1';
const IMAGE = '/spec/backend/docker/customImage';

type Answer = Record<string, unknown> & { status: string; message?: string; retryAfterSeconds?: number };

const post = (ext: RuntimeExtensionComponent, path: string, body: unknown): Promise<{ code: number; body: Answer }> =>
  postHook<Answer>(ext, path, body);

/** An object as Cluster API puts it in an UpdateMachine request: name, namespace, labels, annotations and spec only. */
const cleaned = (o: KubeObject): Record<string, unknown> => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  metadata: {
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    ...(o.metadata.labels ? { labels: o.metadata.labels } : {}),
    ...(o.metadata.annotations ? { annotations: o.metadata.annotations } : {}),
  },
  spec: (o as KubeObject & { spec?: unknown }).spec,
});

describe('runtime extension: Cluster API in-place update hooks (integration)', function () {
  let env: TestEnv;
  let ns: string;
  let machines: string[];
  let mgr: RuntimeManager;
  let ext: RuntimeExtensionComponent;
  let updater: { stop(): Promise<void> };

  const inPlaceUpdater = (name: string, sequence: number, covers: { selectResource: string; path: string }[], parameters: object) =>
    env.client.create(InPlaceUpdaters, {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdater',
      metadata: { name, namespace: ns },
      spec: { sequence, covers, parameters },
    } as KubeObject);

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('rtx');
    await applyInventory(
      env.client,
      buildInventory({ namespace: ns, clusterName: 'c1', version: 'v1.30.0', machineDeployments: [{ name: 'md0', replicas: 2 }] }),
    );
    machines = (await env.client.list(Machines, ns)).items.map((m) => m.metadata.name!).sort();
    await inPlaceUpdater('kubernetes', 1, [{ selectResource: 'Machine', path: '/spec/version' }], { durationSeconds: 0 });
    await inPlaceUpdater('os', 2, [{ selectResource: 'InfraMachine', path: IMAGE }], { durationSeconds: 0 });
    await inPlaceUpdater('ntp', 3, [{ selectResource: 'BootstrapConfig', path: '/spec/ntp' }], { failWith: 'ntp: no server reachable' });
    mgr = createManager({ client: env.client, name: 'rtx-test', namespace: ns });
    ext = createRuntimeExtension({ port: 0, bindAddress: '127.0.0.1', retryAfterSeconds: 1 });
    await machineTaskController.setup(mgr);
    await ext.setup(mgr);
    await mgr.start();
    await Promise.all([InPlaceUpdaters, MachineUpdates].map((r) => mgr.informer(r).synced()));
    updater = await sampleUpdaters.reference.start({ client: env.client, namespace: ns, catchAll: true, log: noopLogger });
  });
  after(async () => {
    await updater?.stop();
    await mgr?.stop();
    await ext?.close();
    await env?.stop();
  });

  it('discovery announces the three in-place hooks with upstream timeout and failure policy', async () => {
    const res = await post(ext, `${PREFIX}/discovery`, fixture('discovery-request.json', ns));
    expect(res.code).to.equal(200);
    expect(res.body).to.deep.equal({
      apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1',
      kind: 'DiscoveryResponse',
      status: 'Success',
      handlers: ['CanUpdateMachine', 'CanUpdateMachineSet', 'UpdateMachine'].map((hook) => ({
        name: { CanUpdateMachine: 'can-update-machine', CanUpdateMachineSet: 'can-update-machineset', UpdateMachine: 'update-machine' }[
          hook
        ],
        requestHook: { apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1', hook },
        timeoutSeconds: 10,
        failurePolicy: 'Fail',
      })),
    });
    expect((await post(ext, `${PREFIX}/canupdatemachine/unknown-handler`, {})).code).to.equal(404);
  });

  it('CanUpdateMachine: two updaters compose; a change nobody covers gets no patch (Cluster API rolls out for it)', async () => {
    const res = await post(ext, `${PREFIX}/canupdatemachine/can-update-machine`, fixture('can-update-machine-request.json', ns));
    expect(res.body.status).to.equal('Success');
    const patch = (k: string) => {
      const p = res.body[k] as { patchType: string; patch: string } | undefined;
      return p && { patchType: p.patchType, ops: decodePatchBytes(p.patch) };
    };
    expect(patch('machinePatch')).to.deep.equal({
      patchType: 'JSONPatch',
      ops: [{ op: 'replace', path: '/spec/version', value: 'v1.31.2' }],
    });
    expect(patch('infrastructureMachinePatch')).to.deep.equal({
      patchType: 'JSONPatch',
      ops: [{ op: 'replace', path: IMAGE, value: 'kindest/node:v1.31.2' }],
    });
    expect(patch('bootstrapConfigPatch')).to.equal(undefined);
    expect(res.body.message).to.match(/not covered: BootstrapConfig \/spec\/files/);
  });

  it('CanUpdateMachineSet: the same covers apply to spec.template.spec of the templates', async () => {
    const res = await post(ext, `${PREFIX}/canupdatemachineset/can-update-machineset`, fixture('can-update-machineset-request.json', ns));
    expect(res.body.status).to.equal('Success');
    expect(res.body['machineSetPatch']).to.equal(undefined);
    const p = res.body['infrastructureMachineTemplatePatch'] as { patch: string };
    expect(decodePatchBytes(p.patch)).to.deep.equal([{ op: 'replace', path: `/spec/template${IMAGE}`, value: 'kindest/node:v1.31.2' }]);
  });

  /** Plays Cluster API's part: writes the desired specs, marks the machine in update, returns the UpdateMachine request. */
  async function startCapiUpdate(machine: string, version: string, image: string, ntp?: object): Promise<unknown> {
    const m = (await env.client.get<
      KubeObject & { spec: { infrastructureRef: { name: string }; bootstrap: { configRef: { name: string } } } }
    >(Machines, ns, machine))!;
    const updated = await env.client.patch<KubeObject>(
      Machines,
      ns,
      machine,
      { metadata: { annotations: { [Annotations.capiUpdateInProgress]: '' } }, spec: { version } },
      { type: 'merge' },
    );
    const infra = await env.client.patch<KubeObject>(
      DevMachines,
      ns,
      m.spec.infrastructureRef.name,
      { spec: { backend: { docker: { customImage: image } } } },
      { type: 'merge' },
    );
    const boot = ntp
      ? await env.client.patch<KubeObject>(KubeadmConfigs, ns, m.spec.bootstrap.configRef.name, { spec: { ntp } }, { type: 'merge' })
      : (await env.client.get<KubeObject>(KubeadmConfigs, ns, m.spec.bootstrap.configRef.name))!;
    return {
      apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1',
      kind: 'UpdateMachineRequest',
      desired: { machine: cleaned(updated), infrastructureMachine: cleaned(infra), bootstrapConfig: cleaned(boot) },
    };
  }

  const callUntilDone = (req: unknown): Promise<Answer> =>
    waitFor(
      async () => {
        const res = await post(ext, `${PREFIX}/updatemachine/update-machine`, req);
        return res.body.retryAfterSeconds === 0 ? res.body : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'UpdateMachine to answer Done or Failure' },
    );

  it('UpdateMachine: the first call creates the MachineUpdate, the updaters run through the task controller, later calls answer Done', async () => {
    const machine = machines[0]!;
    const req = await startCapiUpdate(machine, 'v1.30.1', 'kindest/node:v1.30.1');
    const first = await post(ext, `${PREFIX}/updatemachine/update-machine`, req);
    expect(first.body).to.include({ kind: 'UpdateMachineResponse', status: 'Success', retryAfterSeconds: 1 });
    const done = await callUntilDone(req);
    expect(done).to.include({ status: 'Success', retryAfterSeconds: 0 });
    const mus = (
      await env.client.list<KubeObject & MachineUpdate>(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${machine}` })
    ).items;
    expect(mus).to.have.length(1);
    const mu = mus[0]!;
    expect(mu.metadata.ownerReferences?.[0]).to.include({ kind: 'Machine', name: machine, controller: true });
    expect(mu.status?.updateStatus).to.equal('updated');
    // The ntp updater covers a field the desired KubeadmConfig does not have: it does not run.
    expect(mu.spec.updaters.map((u) => u.name)).to.deep.equal(['kubernetes', 'os']);
    expect(mu.status?.tasks?.map((t) => [t.updater, t.updateStatus])).to.deep.equal([
      ['kubernetes', 'updated'],
      ['os', 'updated'],
    ]);
    // Idempotent: another call of the same update answers Done from the same MachineUpdate.
    expect((await post(ext, `${PREFIX}/updatemachine/update-machine`, req)).body).to.include({ status: 'Success', retryAfterSeconds: 0 });
    expect((await env.client.list(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${machine}` })).items).to.have.length(1);
  });

  it("UpdateMachine: a request whose desired values are not the cluster's is refused, and nothing is created", async () => {
    const machine = machines[1]!;
    const req = (await startCapiUpdate(machine, 'v1.30.1', 'kindest/node:v1.30.1')) as {
      desired: { machine: { spec: { version: string } } };
    };
    const forged = structuredClone(req);
    forged.desired.machine.spec.version = 'v1.99.0';
    const res = await post(ext, `${PREFIX}/updatemachine/update-machine`, forged);
    expect(res.body).to.include({ status: 'Failure', retryAfterSeconds: 0 });
    expect(res.body.message).to.match(/desired values differ from the cluster's objects \(Machine .* \/spec\/version\)/);
    expect((await env.client.list(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${machine}` })).items).to.have.length(0);
  });

  it("UpdateMachine: a failing updater gives a Failure carrying the updater's own message", async () => {
    const machine = machines[1]!;
    const req = await startCapiUpdate(machine, 'v1.30.1', 'kindest/node:v1.30.1', { enabled: true, servers: ['time.example.com'] });
    const res = await callUntilDone(req);
    expect(res.status).to.equal('Failure');
    expect(res.message).to.contain('ntp: no server reachable');

    // Retry, as docs/hooks.md says: fix the updater, delete the failed MachineUpdate; the next calls create a new one
    // (same name: its tasks replace the failed ones) and end Done.
    await env.client.patch(InPlaceUpdaters, ns, 'ntp', { spec: { parameters: { failWith: null, durationSeconds: 0 } } }, { type: 'merge' });
    await waitFor(() => {
      const u = mgr.informer<KubeObject & { spec: { parameters?: Record<string, unknown> } }>(InPlaceUpdaters).store.peek(ns, 'ntp');
      return u && u.spec.parameters?.['failWith'] === undefined;
    });
    const failed = (await env.client.list(MachineUpdates, ns, { labelSelector: `${Labels.machineName}=${machine}` })).items;
    expect(failed).to.have.length(1);
    await env.client.delete(MachineUpdates, ns, failed[0]!.metadata.name!);
    const retried = await waitFor(
      async () => {
        const r = (await post(ext, `${PREFIX}/updatemachine/update-machine`, req)).body;
        return r.status === 'Success' && r.retryAfterSeconds === 0 ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'the retried update to answer Done' },
    );
    expect(retried.message).to.match(/updated in place/);
  });
});
