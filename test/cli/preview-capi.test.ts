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
import { API_VERSION, InPlaceUpdaters, KubeadmControlPlanes, MachineDeployments, Machines, type KubeObject } from '../../src/api/index.js';
import type { CapiPreview } from '../../src/cli/preview-capi-decide.js';
import { DevMachineTemplates, applyInventory, buildInventory, startCapiSimulator, type Machine } from '../../tools/capi-sim/index.js';
import { useE2eEnv } from '../e2e/env.js';
import type { Platform } from '../e2e/harness.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const CLUSTER = 'cluster1';
const CP = 'cluster1-cp';
const MD = 'cluster1-md-0';
const IMAGE_PATH = '/spec/backend/docker/customImage';

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
    expect(r.out).to.contain('not covered: maxSurge 1');
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
