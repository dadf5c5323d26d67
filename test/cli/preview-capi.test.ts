// `inplace preview` of a proposed Cluster API change (issue 29 item 3): on the embedded API server with a simulated
// cluster (3 control-plane machines, 3 workers) and two InPlaceUpdaters (Machine /spec/version, the DevMachine image),
// it says per machine whether Cluster API would update it in place (by which updaters, in which order) or replace it
// (which changed fields no updater covers), exits 1 when anything would be replaced, and refuses bad input with exit 2
// without changing anything.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import {
  API_VERSION,
  Clusters,
  DevMachines,
  InPlaceUpdaters,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  Machines,
  type KubeObject,
} from '../../src/api/index.js';
import type { CapiPreview } from '../../src/cli/preview-capi-decide.js';
import {
  DevMachineTemplates,
  applyInventory,
  buildInventory,
  deleteWorkloadNodes,
  startCapiSimulator,
  type CapiSimulator,
  type Machine,
} from '../../tools/capi-sim/index.js';
import { ExtensionConfigs, type ExtensionConfig } from '../../tools/capi-sim/extension-client.js';
import { UPDATE_IN_PROGRESS_ANNOTATION } from '../../tools/capi-sim/inplace.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { createRuntimeExtension, type RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';
import { useE2eEnv } from '../e2e/env.js';
import type { Platform } from '../e2e/harness.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const CLUSTER = 'cluster1';
const CP = 'cluster1-cp';
const MD = 'cluster1-md-0';
const IMAGE_PATH = '/spec/backend/docker/customImage';
const imageOf = (d: KubeObject | undefined): unknown =>
  ((d?.['spec'] as { backend?: { docker?: { customImage?: unknown } } } | undefined)?.backend?.docker ?? {}).customImage;

describe('inplace preview of a Cluster API change (KubeadmControlPlane / MachineDeployment)', function () {
  this.timeout(180_000);
  const env = useE2eEnv();
  let p: Platform;
  let kc: string[];
  let dir: string;

  before(async function () {
    p = await env().platform();
    kc = ['--kubeconfig', env().kubeconfigPath, '-n', p.ns];
    dir = mkdtempSync(join(tmpdir(), 'inplace-preview-capi-'));
    await applyInventory(
      p.client,
      buildInventory({
        namespace: p.ns,
        clusterName: CLUSTER,
        version: 'v1.30.0',
        image: 'img-a',
        controlPlane: { name: CP, replicas: 3 },
        machineDeployments: [{ name: MD, replicas: 3, maxUnavailable: 1, maxSurge: 0 }],
      }),
    );
    // The simulator makes the machines (and their DevMachines / KubeadmConfigs); it is stopped before any preview.
    const sim = await startCapiSimulator({ client: p.client, namespace: p.ns, readyDelayMs: 20 });
    try {
      await waitFor(
        async () => {
          const ms = (await p.client.list<Machine>(Machines, p.ns)).items;
          return ms.length === 6 && ms.every((m) => m.status?.phase === 'Running') ? true : undefined;
        },
        { timeoutMs: 90_000, message: 'the six machines running' },
      );
    } finally {
      await sim.stop();
    }
    const updater = (name: string, sequence: number, selectResource: string, path: string) =>
      p.client.create(InPlaceUpdaters, {
        apiVersion: API_VERSION,
        kind: 'InPlaceUpdater',
        metadata: { name, namespace: p.ns },
        spec: { sequence, covers: [{ selectResource, path }] },
      } as KubeObject);
    // Registered in reverse order of their sequence: the preview orders them by sequence, as the MachineUpdate does.
    await updater('os', 2, 'InfraMachine', IMAGE_PATH);
    await updater('kubernetes', 1, 'Machine', '/spec/version');
  });

  const json = (out: string): CapiPreview => JSON.parse(out) as CapiPreview;
  const writeYaml = (name: string, docs: KubeObject[]): string => {
    const f = join(dir, name);
    writeFileSync(f, docs.map((d) => stringify(d)).join('---\n'));
    return f;
  };
  const resourceVersions = async (): Promise<string[]> => [
    (await p.client.get(KubeadmControlPlanes, p.ns, CP))!.metadata.resourceVersion ?? '',
    (await p.client.get(MachineDeployments, p.ns, MD))!.metadata.resourceVersion ?? '',
    ...(await p.client.list(Machines, p.ns)).items.map((m) => m.metadata.resourceVersion ?? ''),
  ];

  it('a KCP version change with maxSurge 0: every control-plane machine in place by the kubernetes updater, exit 0', async () => {
    const r = await cli(
      'preview',
      `kcp/${CP}`,
      '--version',
      'v1.30.1',
      '--set',
      'spec.rollout.strategy.rollingUpdate.maxSurge=0',
      '-o',
      'json',
      ...kc,
    );
    expect(r.code, r.err).to.equal(0);
    const pv = json(r.out);
    expect(pv).to.include({ kind: 'KubeadmControlPlane', name: CP, replaces: false, surgeReplaced: 0 });
    expect(pv.machines).to.have.length(3);
    for (const m of pv.machines) {
      expect(m.verdict, m.name).to.equal('in-place');
      expect(m.updaters).to.deep.equal([{ name: 'kubernetes', sequence: 1, fields: ['Machine /spec/version'] }]);
    }
  });

  it("with KCP's default maxSurge 1 the surge machine replaces one old machine: exit 1 as a CI gate", async () => {
    const r = await cli('preview', `kubeadmcontrolplane/${CP}`, '--version', 'v1.30.1', ...kc);
    expect(r.code, r.out + r.err).to.equal(1);
    expect(r.out).to.contain('2 in place, 1 replaced, 0 unchanged');
    expect(r.out).to.contain('replaced: maxSurge 1');
    expect(r.out).to.contain('Result: NOT IN PLACE');
  });

  it('a MachineDeployment pointed at a new template (in the same file) with a new image: in place by the os updater', async () => {
    const md = (await p.client.get<KubeObject>(MachineDeployments, p.ns, MD))!;
    const tpl = (await p.client.get<KubeObject>(DevMachineTemplates, p.ns, MD))!;
    const newTpl = {
      apiVersion: tpl.apiVersion,
      kind: tpl.kind,
      metadata: { name: `${MD}-img-b`, namespace: p.ns },
      spec: { template: { spec: { backend: { docker: { customImage: 'img-b' } } } } },
    } as KubeObject;
    const proposed = {
      apiVersion: md.apiVersion,
      kind: 'MachineDeployment',
      metadata: { name: MD },
      spec: { template: { spec: { infrastructureRef: { name: `${MD}-img-b` } } } },
    } as KubeObject;
    const before = await resourceVersions();
    const r = await cli('preview', '-f', writeYaml('md.yaml', [newTpl, proposed]), '-o', 'json', ...kc);
    expect(r.code, r.err).to.equal(0);
    const pv = json(r.out);
    expect(pv.machines.map((m) => m.verdict)).to.deep.equal(['in-place', 'in-place', 'in-place']);
    expect(pv.machines[0]!.updaters).to.deep.equal([
      { name: 'os', sequence: 2, fields: [`DevMachineTemplate /spec/template/spec/backend/docker/customImage`] },
    ]);
    // The template was not created and nothing changed.
    expect(await p.client.get(DevMachineTemplates, p.ns, `${MD}-img-b`)).to.equal(undefined);
    expect(await resourceVersions()).to.deep.equal(before);
  });

  it('a version and image change together run both updaters in sequence order; an uncovered field means replaced, named', async () => {
    const tpl = (await p.client.get<KubeObject>(DevMachineTemplates, p.ns, MD))!;
    const mk = (name: string, docker: Record<string, unknown>): KubeObject =>
      ({
        apiVersion: tpl.apiVersion,
        kind: tpl.kind,
        metadata: { name, namespace: p.ns },
        spec: { template: { spec: { backend: { docker } } } },
      }) as KubeObject;
    const both = await cli(
      'preview',
      '-f',
      writeYaml('tpl-b.yaml', [
        mk('tpl-b', { customImage: 'img-b' }),
        {
          apiVersion: 'cluster.x-k8s.io/v1beta2',
          kind: 'MachineDeployment',
          metadata: { name: MD },
          spec: { template: { spec: { infrastructureRef: { name: 'tpl-b' } } } },
        } as KubeObject,
      ]),
      '--version',
      'v1.30.1',
      '-o',
      'json',
      ...kc,
    );
    expect(both.code, both.err).to.equal(0);
    expect(json(both.out).machines[0]!.updaters.map((u) => u.name)).to.deep.equal(['kubernetes', 'os']);

    const uncovered = await cli(
      'preview',
      '-f',
      writeYaml('tpl-c.yaml', [
        mk('tpl-c', { customImage: 'img-b', preLoadImages: ['busybox'] }),
        {
          apiVersion: 'cluster.x-k8s.io/v1beta2',
          kind: 'MachineDeployment',
          metadata: { name: MD },
          spec: { template: { spec: { infrastructureRef: { name: 'tpl-c' } } } },
        } as KubeObject,
      ]),
      ...kc,
    );
    expect(uncovered.code, uncovered.err).to.equal(1);
    expect(uncovered.out).to.contain('0 in place, 3 replaced, 0 unchanged');
    expect(uncovered.out).to.contain('not covered: DevMachineTemplate /spec/template/spec/backend/docker/preLoadImages');
  });

  it("the extension's scope: an updater whose clusterSelector does not match the cluster is as if not registered", async () => {
    const tpl = (await p.client.get<KubeObject>(DevMachineTemplates, p.ns, MD))!;
    const file = writeYaml('scoped.yaml', [
      {
        apiVersion: tpl.apiVersion,
        kind: tpl.kind,
        metadata: { name: 'tpl-scoped', namespace: p.ns },
        spec: { template: { spec: { backend: { docker: { customImage: 'img-c' } } } } },
      } as KubeObject,
      {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'MachineDeployment',
        metadata: { name: MD },
        spec: { template: { spec: { infrastructureRef: { name: 'tpl-scoped' } } } },
      } as KubeObject,
    ]);
    const scope = (clusterSelector: unknown) =>
      p.client.patch(InPlaceUpdaters, p.ns, 'os', { spec: { scope: clusterSelector ? { clusterSelector } : null } }, { type: 'merge' });
    await scope({ matchLabels: { tier: 'gold' } });
    try {
      const off = await cli('preview', '-f', file, ...kc);
      expect(off.code, off.out + off.err).to.equal(1);
      expect(off.out).to.contain('not covered: DevMachineTemplate /spec/template/spec/backend/docker/customImage');
      await p.client.patch(Clusters, p.ns, CLUSTER, { metadata: { labels: { tier: 'gold' } } }, { type: 'merge' });
      const on = await cli('preview', '-f', file, ...kc);
      expect(on.code, on.out + on.err).to.equal(0);
      expect(on.out).to.contain('3 in place, 0 replaced');
    } finally {
      await scope(undefined);
    }
  });

  it('an unchanged owner: every machine unchanged, exit 0', async () => {
    const r = await cli('preview', `md/${MD}`, '--version', 'v1.30.0', ...kc);
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.contain('0 in place, 0 replaced, 3 unchanged');
  });

  it('bad input gets a clear error, exit 2, and changes nothing', async () => {
    const before = await resourceVersions();
    const missing = await cli('preview', 'md/no-such-md', '--version', 'v1.30.1', ...kc);
    expect(missing.code).to.equal(2);
    expect(missing.err).to.contain(`MachineDeployment ${p.ns}/no-such-md does not exist`);

    const other = await cli(
      'preview',
      '-f',
      writeYaml('cm.yaml', [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } as KubeObject]),
      ...kc,
    );
    expect(other.code).to.equal(2);
    expect(other.err).to.contain(
      'contains no InPlaceUpdatePlan, InPlaceUpdateCampaign, KubeadmControlPlane or MachineDeployment (found: ConfigMap)',
    );

    const path = await cli('preview', `kcp/${CP}`, '--set', 'spec.machineTemplate.spec.imageName=x', ...kc);
    expect(path.code).to.equal(2);
    expect(path.err).to.match(
      /--set spec\.machineTemplate\.spec\.imageName: unknown path for KubeadmControlPlane: spec\.machineTemplate\.spec has no field "imageName"/,
    );

    const noTemplate = await cli('preview', `md/${MD}`, '--set', 'spec.template.spec.infrastructureRef.name=nope', ...kc);
    expect(noTemplate.code).to.equal(2);
    expect(noTemplate.err).to.contain('DevMachineTemplate nope (spec.template.spec.infrastructureRef) not found');

    const nothing = await cli('preview', `md/${MD}`, ...kc);
    expect(nothing.code).to.equal(2);
    expect(nothing.err).to.contain('nothing to preview');
    expect(await resourceVersions()).to.deep.equal(before);
  });
});

// The preview against what the simulated Cluster API then does (InPlaceUpdates gate, the platform's runtime extension
// registered): a change it calls in place is updated in place, one it calls replaced is rolled out.
describe('inplace preview of a Cluster API change agrees with what Cluster API then does (capi-sim, InPlaceUpdates)', function () {
  this.timeout(240_000);
  const env = useE2eEnv();
  let sim: CapiSimulator | undefined;
  let ext: RuntimeExtensionComponent | undefined;
  let ecName = '';
  let simNs = '';

  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
    if (simNs) await deleteWorkloadNodes(env().client, simNs);
    if (ecName)
      await env()
        .client.delete(ExtensionConfigs, undefined, ecName)
        .catch(() => undefined);
    await ext?.close();
    ext = undefined;
  });

  it('an image change previewed in place is updated in place; a version change no updater covers is previewed and done as a replacement', async () => {
    const p = await env().platform();
    const kc = ['--kubeconfig', env().kubeconfigPath, '-n', p.ns];
    const client = p.client;
    await applyInventory(
      client,
      buildInventory({
        namespace: p.ns,
        clusterName: CLUSTER,
        version: 'v1.30.0',
        image: 'img-a',
        controlPlane: { name: CP, replicas: 1 },
        machineDeployments: [{ name: MD, replicas: 2, maxUnavailable: 1, maxSurge: 0 }],
      }),
    );
    await client.create(InPlaceUpdaters, {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdater',
      metadata: { name: 'os', namespace: p.ns },
      spec: { sequence: 1, covers: [{ selectResource: 'InfraMachine', path: IMAGE_PATH }], parameters: { durationSeconds: 0.05 } },
    } as KubeObject);
    simNs = p.ns;
    sim = await startCapiSimulator({ client, namespace: p.ns, readyDelayMs: 20, inPlaceUpdates: true });
    const live = async (): Promise<Machine[]> =>
      (await client.list<Machine>(Machines, p.ns)).items.filter((m) => !m.metadata.deletionTimestamp);
    await waitFor(
      async () => ((await live()).length === 3 && (await live()).every((m) => m.status?.phase === 'Running') ? true : undefined),
      {
        timeoutMs: 60_000,
        message: 'three machines running',
      },
    );
    ext = createRuntimeExtension({ port: 0, bindAddress: '127.0.0.1', retryAfterSeconds: 1 });
    await p.startComponent(ext);
    await p.startComponent(machineTaskController);
    await p.startSampleUpdaters(['reference']);
    ecName = `inplace-${p.ns}`;
    await client.create(ExtensionConfigs, {
      apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
      kind: 'ExtensionConfig',
      metadata: { name: ecName },
      spec: { clientConfig: { url: ext.url, caBundle: Buffer.from(ext.caBundle).toString('base64') } },
    } as ExtensionConfig);
    await waitFor(() => (sim!.handlers().length === 3 ? true : undefined), {
      timeoutMs: 30_000,
      message: 'the simulator knows the handlers',
    });

    // The MachineDeployment onto a new template with another image: previewed in place, then done in place.
    const tpl = (await client.get<KubeObject>(DevMachineTemplates, p.ns, MD))!;
    await client.create(DevMachineTemplates, {
      apiVersion: tpl.apiVersion,
      kind: tpl.kind,
      metadata: { name: 'img-b', namespace: p.ns },
      spec: { template: { spec: { backend: { docker: { customImage: 'img-b' } } } } },
    } as KubeObject);
    const workers = async (): Promise<Machine[]> => (await live()).filter((m) => m.metadata.labels?.[Labels.deploymentName] === MD);
    const before = (await workers()).map((m) => m.metadata.uid).sort();
    const md = await cli('preview', `md/${MD}`, '--set', 'spec.template.spec.infrastructureRef.name=img-b', ...kc);
    expect(md.code, md.out + md.err).to.equal(0);
    expect(md.out).to.contain('2 in place, 0 replaced');
    await client.patch(
      MachineDeployments,
      p.ns,
      MD,
      { spec: { template: { spec: { infrastructureRef: { name: 'img-b' } } } } },
      { type: 'merge' },
    );
    await waitFor(
      async () => {
        const now = await workers();
        if (now.length !== 2 || now.some((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined)) return undefined;
        const images = await Promise.all(now.map((m) => client.get(DevMachines, p.ns, m.spec.infrastructureRef.name)));
        return images.every((d) => imageOf(d) === 'img-b') ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'both workers at img-b' },
    );
    expect((await workers()).map((m) => m.metadata.uid).sort(), 'the same workers: updated in place').to.deep.equal(before);

    // A KCP version change no InPlaceUpdater covers: previewed as a replacement (exit 1), then rolled out.
    const cpBefore = (await live()).filter((m) => m.metadata.labels?.[Labels.controlPlaneName] === CP).map((m) => m.metadata.uid);
    const cp = await cli('preview', `kcp/${CP}`, '--version', 'v1.30.1', ...kc);
    expect(cp.code, cp.out + cp.err).to.equal(1);
    expect(cp.out).to.contain('0 in place, 1 replaced');
    expect(cp.out).to.contain('not covered: Machine /spec/version');
    await client.patch(KubeadmControlPlanes, p.ns, CP, { spec: { version: 'v1.30.1' } }, { type: 'merge' });
    const replaced = await waitFor(
      async () => {
        const now = (await live()).filter((m) => m.metadata.labels?.[Labels.controlPlaneName] === CP);
        return now.length === 1 && now[0]!.spec.version === 'v1.30.1' && now[0]!.status?.phase === 'Running' ? now[0]! : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'the control-plane machine at v1.30.1' },
    );
    expect(cpBefore, 'the control-plane machine was replaced').to.not.include(replaced.metadata.uid);
  });
});
