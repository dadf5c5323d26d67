// The runtime extension's availability answer, scope and bad input against the shared test env, over HTTPS as Cluster
// API's runtime client calls it: upstream-shaped CanUpdate requests (v1beta2 objects, as Cluster API v1.13+ sends
// them) answered with `affectsAvailability` only for a caller that declares v1.15 in its ExtensionConfig settings,
// false only when every covering updater declares false; InPlaceUpdaters scoped to clusters or provider kinds that do
// not match are as if absent ("nothing covered": Cluster API behaves as without the extension); requests it cannot
// read are answered with the problem named and nothing created.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  API_VERSION,
  Annotations,
  Clusters,
  InPlaceUpdaters,
  MachineUpdates,
  Machines,
  type InPlaceUpdater,
  type KubeObject,
} from '../../src/api/index.js';
import { postHook, postRaw } from './hook-client.js';
import { createRuntimeExtension, decodePatchBytes, type RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';
import { createManager, type RuntimeManager } from '../../src/runtime/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const PREFIX = '/hooks.runtime.cluster.x-k8s.io/v1alpha1';
const CAN_MACHINE = `${PREFIX}/canupdatemachine/can-update-machine`;
const CAN_SET = `${PREFIX}/canupdatemachineset/can-update-machineset`;
const UPDATE = `${PREFIX}/updatemachine/update-machine`;
const IMAGE = '/spec/backend/docker/customImage';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- request fixtures are edited by path
type Answer = Json & { status: string; message?: string };

const post = (ext: RuntimeExtensionComponent, path: string, body: unknown): Promise<{ code: number; body: Answer }> =>
  postHook<Answer>(ext, path, body);
const postText = (ext: RuntimeExtensionComponent, path: string, text: string): Promise<{ code: number; body: Answer }> =>
  postRaw<Answer>(ext, path, text);

describe('runtime extension: affectsAvailability, scope and bad input (integration)', function () {
  let env: TestEnv;
  let ns: string;
  let mgr: RuntimeManager;
  let ext: RuntimeExtensionComponent;

  const fixture = (name: string): Json => JSON.parse(readFileSync(join(fixtures, name), 'utf8').replaceAll('NAMESPACE', ns)) as Json;
  /** The CanUpdateMachine fixture with only the BootstrapConfig files changed (version and image as current). */
  const filesOnly = (settings?: Record<string, string>): Json => {
    const r = fixture('can-update-machine-request.json');
    r['desired'].machine.spec.version = r['current'].machine.spec.version;
    r['desired'].infrastructureMachine.spec = r['current'].infrastructureMachine.spec;
    if (settings) r['settings'] = settings;
    else delete r['settings'];
    return r;
  };
  const updaterSpec = (
    name: string,
    sequence: number,
    covers: { selectResource: string; path: string }[],
    extra: object = {},
  ): KubeObject =>
    ({
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdater',
      metadata: { name, namespace: ns },
      spec: { sequence, covers, parameters: { durationSeconds: 0 }, ...extra },
    }) as KubeObject;
  const waitUpdaters = (n: number) =>
    waitFor(async () => (mgr.informer<InPlaceUpdater & KubeObject>(InPlaceUpdaters).store.list(ns).length === n ? true : undefined), {
      timeoutMs: 30_000,
    });

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('rtx-av');
    await applyInventory(
      env.client,
      buildInventory({ namespace: ns, clusterName: 'c1', version: 'v1.30.0', machineDeployments: [{ name: 'md0', replicas: 1 }] }),
    );
    await env.client.create(InPlaceUpdaters, updaterSpec('kubernetes', 1, [{ selectResource: 'Machine', path: '/spec/version' }]));
    await env.client.create(
      InPlaceUpdaters,
      updaterSpec('os', 2, [{ selectResource: 'InfraMachine', path: IMAGE }], { affectsAvailability: true }),
    );
    await env.client.create(
      InPlaceUpdaters,
      updaterSpec('motd', 3, [{ selectResource: 'BootstrapConfig', path: '/spec/files' }], { affectsAvailability: false }),
    );
    mgr = createManager({ client: env.client, name: 'rtx-av-test', namespace: ns });
    ext = createRuntimeExtension({ port: 0, bindAddress: '127.0.0.1', retryAfterSeconds: 1 });
    await ext.setup(mgr);
    await mgr.start();
    await Promise.all([InPlaceUpdaters, MachineUpdates].map((r) => mgr.informer(r).synced()));
    await waitUpdaters(3);
  });
  after(async () => {
    await mgr?.stop();
    await ext?.close();
    await env?.stop();
  });

  describe('affectsAvailability', () => {
    it('a v1.15 caller is told false when every covering updater declares false', async () => {
      const res = await post(ext, CAN_MACHINE, filesOnly({ clusterAPIVersion: 'v1.15.0' }));
      expect(res.body.status).to.equal('Success');
      expect(decodePatchBytes(res.body['bootstrapConfigPatch'].patch)).to.deep.equal([
        { op: 'replace', path: '/spec/files', value: [{ path: '/etc/motd', content: 'hello, v1.31' }] },
      ]);
      expect(res.body['affectsAvailability']).to.equal(false);
    });

    it('the same change for a caller that does not declare v1.15 (v1.12 to v1.14, or no settings): the field is omitted', async () => {
      for (const settings of [undefined, { clusterAPIVersion: 'v1.14.2' }, { owner: 'platform-team' }] as (
        Record<string, string> | undefined
      )[]) {
        const res = await post(ext, CAN_MACHINE, filesOnly(settings));
        expect(res.body.status, JSON.stringify(settings)).to.equal('Success');
        expect(res.body['bootstrapConfigPatch'], JSON.stringify(settings)).to.not.equal(undefined);
        expect(res.body, JSON.stringify(settings)).to.not.have.property('affectsAvailability');
      }
    });

    it('one disruptive updater (declared true, or unset) among the covering ones makes it true', async () => {
      const r = fixture('can-update-machine-request.json');
      r['settings'] = { clusterAPIVersion: '1.15.1' };
      const res = await post(ext, CAN_MACHINE, r);
      expect(res.body['machinePatch']).to.not.equal(undefined);
      expect(res.body['affectsAvailability']).to.equal(true);
      // The image alone: covered by os, declared true.
      const img = filesOnly({ clusterAPIVersion: 'v1.16.0' });
      img['desired'].infrastructureMachine.spec = fixture('can-update-machine-request.json')['desired'].infrastructureMachine.spec;
      img['desired'].bootstrapConfig.spec = img['current'].bootstrapConfig.spec;
      const only = await post(ext, CAN_MACHINE, img);
      expect(only.body['infrastructureMachinePatch']).to.not.equal(undefined);
      expect(only.body['affectsAvailability']).to.equal(true);
    });

    it('nothing covered: no affectsAvailability either (Cluster API rolls out)', async () => {
      const r = filesOnly({ clusterAPIVersion: 'v1.15.0' });
      r['desired'].bootstrapConfig.spec.format = 'ignition';
      r['desired'].bootstrapConfig.spec.files = r['current'].bootstrapConfig.spec.files;
      const res = await post(ext, CAN_MACHINE, r);
      expect(res.body.status).to.equal('Success');
      expect(res.body).to.not.have.property('bootstrapConfigPatch');
      expect(res.body).to.not.have.property('affectsAvailability');
    });

    it('CanUpdateMachineSet answers the same way for the templates', async () => {
      const r = fixture('can-update-machineset-request.json');
      r['settings'] = { clusterAPIVersion: 'v1.15.0' };
      const res = await post(ext, CAN_SET, r);
      expect(res.body['infrastructureMachineTemplatePatch']).to.not.equal(undefined);
      expect(res.body['affectsAvailability']).to.equal(true);
      delete r['settings'];
      expect((await post(ext, CAN_SET, r)).body).to.not.have.property('affectsAvailability');
    });
  });

  describe('scope', () => {
    it('an updater scoped to other infrastructure kinds is ignored: its change is not covered', async () => {
      await env.client.delete(InPlaceUpdaters, ns, 'os');
      await env.client.create(
        InPlaceUpdaters,
        updaterSpec('os', 2, [{ selectResource: 'InfraMachine', path: IMAGE }], { scope: { infrastructureKinds: ['DockerMachine'] } }),
      );
      await waitFor(
        async () => (mgr.informer<InPlaceUpdater & KubeObject>(InPlaceUpdaters).store.get(ns, 'os')?.spec.scope ? true : undefined),
        { timeoutMs: 30_000 },
      );
      const res = await post(ext, CAN_MACHINE, fixture('can-update-machine-request.json'));
      expect(res.body.status).to.equal('Success');
      expect(res.body).to.not.have.property('infrastructureMachinePatch');
      expect(res.body.message).to.match(/not covered: .*InfraMachine \/spec\/backend\/docker\/customImage/);
      // MachineSets are matched by the template kind without its Template suffix (DevMachineTemplate → DevMachine).
      expect((await post(ext, CAN_SET, fixture('can-update-machineset-request.json'))).body).to.not.have.property(
        'infrastructureMachineTemplatePatch',
      );
    });

    it('an updater scoped by clusterSelector serves only Clusters with matching labels (read live)', async () => {
      await env.client.delete(InPlaceUpdaters, ns, 'os');
      await env.client.create(
        InPlaceUpdaters,
        updaterSpec('os', 2, [{ selectResource: 'InfraMachine', path: IMAGE }], {
          scope: { clusterSelector: { matchLabels: { 'fleet.example.com/tier': 'inplace' } }, infrastructureKinds: ['DevMachine'] },
        }),
      );
      await waitFor(
        async () =>
          mgr.informer<InPlaceUpdater & KubeObject>(InPlaceUpdaters).store.get(ns, 'os')?.spec.scope?.clusterSelector ? true : undefined,
        {
          timeoutMs: 30_000,
        },
      );
      const before = await post(ext, CAN_MACHINE, fixture('can-update-machine-request.json'));
      expect(before.body).to.not.have.property('infrastructureMachinePatch');
      expect(before.body['machinePatch']).to.not.equal(undefined); // the unscoped kubernetes updater still serves
      await env.client.patch(Clusters, ns, 'c1', { metadata: { labels: { 'fleet.example.com/tier': 'inplace' } } }, { type: 'merge' });
      const after = await post(ext, CAN_MACHINE, fixture('can-update-machine-request.json'));
      expect(decodePatchBytes(after.body['infrastructureMachinePatch'].patch)).to.deep.equal([
        { op: 'replace', path: IMAGE, value: 'kindest/node:v1.31.2' },
      ]);
      // A request about a Cluster that does not exist: not served by the selecting updater.
      const other = fixture('can-update-machine-request.json');
      for (const side of ['current', 'desired']) other[side].machine.spec.clusterName = 'c-missing';
      expect((await post(ext, CAN_MACHINE, other)).body).to.not.have.property('infrastructureMachinePatch');
    });
  });

  describe('bad input: a clear answer, nothing changed', () => {
    it('a v1beta1 Machine or KubeadmConfig is refused naming the object; a v1beta1 provider object of another group is read', async () => {
      const r = fixture('can-update-machine-request.json');
      r['desired'].machine.apiVersion = 'cluster.x-k8s.io/v1beta1';
      r['current'].bootstrapConfig.apiVersion = 'bootstrap.cluster.x-k8s.io/v1beta1';
      const res = await post(ext, CAN_MACHINE, r);
      expect(res.code).to.equal(200);
      expect(res.body.status).to.equal('Failure');
      expect(res.body.kind).to.equal('CanUpdateMachineResponse');
      expect(res.body.message).to.include('bad CanUpdateMachine request, nothing done');
      expect(res.body.message).to.include('desired.machine is cluster.x-k8s.io/v1beta1 (Machine)');
      expect(res.body.message).to.include('current.bootstrapConfig is bootstrap.cluster.x-k8s.io/v1beta1 (KubeadmConfig)');
      expect(res.body).to.not.have.property('machinePatch');
      const infra = fixture('can-update-machine-request.json');
      infra['current'].infrastructureMachine.apiVersion = 'infrastructure.cluster.x-k8s.io/v1beta1';
      expect((await post(ext, CAN_MACHINE, infra)).body.status).to.equal('Success');
    });

    it('UpdateMachine with a v1beta1 Machine: Failure, retryAfterSeconds 0, no MachineUpdate created', async () => {
      const machine = (await env.client.list(Machines, ns)).items[0]!;
      await env.client.patch(
        Machines,
        ns,
        machine.metadata.name!,
        { metadata: { annotations: { [Annotations.capiUpdateInProgress]: '' } } },
        { type: 'merge' },
      );
      const live = (await env.client.get<KubeObject>(Machines, ns, machine.metadata.name!))!;
      const body = {
        apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1',
        kind: 'UpdateMachineRequest',
        desired: {
          machine: {
            apiVersion: 'cluster.x-k8s.io/v1beta1',
            kind: 'Machine',
            metadata: { name: live.metadata.name, namespace: ns },
            spec: (live as KubeObject & { spec: unknown }).spec,
          },
        },
      };
      const res = await post(ext, UPDATE, body);
      expect(res.body).to.deep.include({ kind: 'UpdateMachineResponse', status: 'Failure', retryAfterSeconds: 0 });
      expect(res.body.message).to.include('desired.machine is cluster.x-k8s.io/v1beta1 (Machine)');
      expect((await env.client.list(MachineUpdates, ns)).items).to.deep.equal([]);
    });

    it('a malformed body, another request kind, or a side that is not an object: Failure naming it', async () => {
      const broken = await postText(ext, CAN_MACHINE, '{"apiVersion": "hooks.runtime.cluster.x-k8s.io/v1alpha1", "current": ');
      expect(broken.code).to.equal(200);
      expect(broken.body).to.deep.include({ kind: 'CanUpdateMachineResponse', status: 'Failure' });
      expect(broken.body.message).to.match(/^bad CanUpdateMachine request, nothing done: the body is not JSON/);
      const wrongKind = fixture('can-update-machineset-request.json');
      const res = await post(ext, CAN_MACHINE, wrongKind);
      expect(res.body.status).to.equal('Failure');
      expect(res.body.message).to.include('kind "CanUpdateMachineSetRequest" is not CanUpdateMachineRequest');
      const side = await post(ext, CAN_SET, { kind: 'CanUpdateMachineSetRequest', current: [], desired: { machineSet: 'x' } });
      expect(side.body.message).to.include('current is not an object');
      expect(side.body.message).to.include('desired.machineSet is not an object');
      const version = await post(ext, CAN_MACHINE, {
        ...fixture('can-update-machine-request.json'),
        apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha2',
      });
      expect(version.body.message).to.include(
        'apiVersion "hooks.runtime.cluster.x-k8s.io/v1alpha2" is not hooks.runtime.cluster.x-k8s.io/v1alpha1',
      );
    });

    it('an unknown hook API version in the path: 404 naming the version served (as upstream, no handler registered)', async () => {
      const res = await post(ext, '/hooks.runtime.cluster.x-k8s.io/v1alpha2/canupdatemachine/can-update-machine', {});
      expect(res.code).to.equal(404);
      expect(res.body.message).to.include(
        'hook API version v1alpha2 is not served; this extension serves hooks.runtime.cluster.x-k8s.io/v1alpha1',
      );
    });
  });
});
