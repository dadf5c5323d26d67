// A plan cannot reach into another namespace: its template reference has no namespace field (the API server prunes
// one that is written), a template that exists only in another namespace is "not found" (Valid=False, nothing
// started), and when both namespaces hold a template of that name the task is built from the plan's own namespace.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  API_VERSION,
  InPlaceUpdatePlans,
  MachineUpdates,
  OSImageUpdateTaskTemplates,
  OSImageUpdateTasks,
  UpdaterUpdateTasks,
  apiVersionOf,
  type KubeObject,
} from '../../src/api/index.js';
import { ROOT } from '../../bench/lib/procs.js';
import { waitFor } from '../support/wait.js';
import { startProcs, startWorld, stopWorld, type World } from '../reliability/harness.js';

type Obj = Record<string, unknown>;

const templateRefSchema = (): Obj => {
  const crd = parse(readFileSync(join(ROOT, 'crds', 'inplace.cluster.x-k8s.io_inplaceupdateplans.yaml'), 'utf8')) as Obj;
  const spec = ((((crd['spec'] as Obj)['versions'] as Obj[])[0]!['schema'] as Obj)['openAPIV3Schema'] as Obj)['properties'] as Obj;
  const cp = ((spec['spec'] as Obj)['properties'] as Obj)['controlPlane'] as Obj;
  const updaters = (cp['properties'] as Obj)['updaters'] as Obj;
  return ((updaters['items'] as Obj)['properties'] as Obj)['updaterUpdateTemplateRef'] as Obj;
};

describe('security: no cross-namespace template references', function () {
  this.timeout(120_000);
  let w: World | undefined;
  let other = '';
  const tmpl = (ns: string, repo: string): KubeObject => ({
    apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
    kind: OSImageUpdateTaskTemplates.kind,
    metadata: { name: 'os-image', namespace: ns },
    spec: { template: { spec: { imageRepository: repo } } },
  });
  const planWith = (name: string, ref: Obj): KubeObject => ({
    apiVersion: API_VERSION,
    kind: InPlaceUpdatePlans.kind,
    metadata: { name, namespace: w!.ns },
    spec: {
      clusterName: 'c1',
      machineDeployments: [
        {
          name: 'c1-md-0',
          sequence: 2,
          updaters: [
            {
              name: 'os',
              sequence: 1,
              updaterUpdateTemplateRef: ref,
              responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'ubuntu-24.04' }],
            },
          ],
        },
      ],
    },
  });
  const ref = (o: Obj = {}): Obj => ({
    apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
    kind: OSImageUpdateTaskTemplates.kind,
    name: 'os-image',
    ...o,
  });

  before(async () => {
    w = await startWorld({ clusterName: 'c1', version: 'v1.30.0', workers: 2, mdSize: 2, maxUnavailable: 1 }, 'xns');
    other = await w.env.newNamespace('xns-other');
    await w.client.create(OSImageUpdateTaskTemplates, tmpl(other, 'registry.other-namespace.example/os'));
    const kc = w.env.kubeconfigPath;
    const procs = startProcs(w, [
      { name: 'plan-controller', inplace: ['run', 'plan-controller', '--kubeconfig', kc] },
      { name: 'machine-task-controller', inplace: ['run', 'machine-task-controller', '--kubeconfig', kc] },
    ]);
    await Promise.all(procs.map((p) => p.waitReady()));
  });
  after(async () => stopWorld(w));

  it('the CRD gives the template reference no namespace field', () => {
    const s = templateRefSchema();
    expect(Object.keys(s['properties'] as Obj).sort()).to.deep.equal(['apiVersion', 'kind', 'name']);
    expect(s['x-kubernetes-preserve-unknown-fields']).to.not.equal(true);
  });

  it('a namespace written into the reference is pruned, and a template only in another namespace is not found', async () => {
    const created = await w!.client.create(InPlaceUpdatePlans, planWith('xns-1', ref({ namespace: other })));
    const stored = (((created['spec'] as Obj)['machineDeployments'] as Obj[])[0]!['updaters'] as Obj[])[0]![
      'updaterUpdateTemplateRef'
    ] as Obj;
    expect(stored).to.not.have.property('namespace');
    const msg = await waitFor(
      async () => {
        const p = await w!.client.get(InPlaceUpdatePlans, w!.ns, 'xns-1');
        const valid = (
          (p?.['status'] as Obj | undefined)?.['conditions'] as { type: string; status: string; message?: string }[] | undefined
        )?.find((c) => c.type === 'Valid');
        return valid?.status === 'False' ? valid.message : undefined;
      },
      { timeoutMs: 30_000, message: 'Valid=False on plan xns-1' },
    );
    expect(msg).to.match(new RegExp(`OSImageUpdateTaskTemplate ${w!.ns}/os-image not found`));
    expect((await w!.client.list(MachineUpdates, w!.ns)).items).to.have.length(0);
    for (const ns of [w!.ns, other]) {
      expect((await w!.client.list(OSImageUpdateTasks, ns)).items, `tasks in ${ns}`).to.have.length(0);
      expect((await w!.client.list(UpdaterUpdateTasks, ns)).items, `tasks in ${ns}`).to.have.length(0);
    }
  });

  it("with a same-named template in both namespaces, the task is built from the plan's namespace only", async () => {
    await w!.client.create(OSImageUpdateTaskTemplates, tmpl(w!.ns, 'registry.own-namespace.example/os'));
    await w!.client.create(InPlaceUpdatePlans, planWith('xns-2', ref({ namespace: other })));
    const task = await waitFor(async () => (await w!.client.list(OSImageUpdateTasks, w!.ns)).items[0], {
      timeoutMs: 30_000,
      message: 'an OSImageUpdateTask in the plan namespace',
    });
    expect((task['spec'] as Obj)['imageRepository']).to.equal('registry.own-namespace.example/os');
    expect((await w!.client.list(OSImageUpdateTasks, other)).items).to.have.length(0);
    await w!.client.patch(InPlaceUpdatePlans, w!.ns, 'xns-2', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
  });
});
