// A plan's task templates are judged before anything starts, on the real path (the embedded API server, the plan
// controller's informers): a template too large to become a task, and one whose content cannot be judged (no
// spec.template.spec, docs/contract.md), leave the plan Valid=False naming why, its owner unpaused, no MachineUpdate
// created (issue 42, item 10). Validation fails closed: what it could not measure is never taken as small.
import { expect } from 'chai';
import {
  API_VERSION,
  Annotations,
  InPlaceUpdatePlans,
  KubeadmControlPlanes,
  MachineUpdates,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../../src/api/index.js';
import { openTaskKindCrd } from '../support/crds.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { createPlanController } from '../../src/plan-controller/index.js';
import { createManager, noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const SAMPLES = 'samples.inplace.cluster.x-k8s.io';
const GROUP = 'judged.inplace-test.example.com';

/** A task kind of GROUP that keeps any field; `contract` labels it as a kind of the updater contract. */
const crd = (kind: string, contract: boolean): KubeObject => openTaskKindCrd(GROUP, kind, contract) as KubeObject;

describe('plan controller: task templates judged before anything starts (fail closed)', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let ns = '';
  let mgr: RuntimeManager | undefined;

  const planOf = (name: string, templateRef: { apiVersion: string; kind: string; name: string }): KubeObject => ({
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name, namespace: ns },
    spec: {
      clusterName: 'c1',
      controlPlane: {
        name: 'c1-cp',
        sequence: 1,
        updaters: [
          {
            name: 'u',
            sequence: 1,
            updaterUpdateTemplateRef: templateRef,
            responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
          },
        ],
      },
    },
  });

  /** The plan's Valid condition once the controller decided it (not Unknown). */
  const decided = (name: string): Promise<{ status?: string; message?: string }> =>
    waitFor(
      async () => {
        const p = await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, name);
        const v = p?.status?.conditions?.find((c) => c.type === 'Valid');
        return v && v.status !== 'Unknown' ? v : undefined;
      },
      { timeoutMs: 30_000, message: `plan ${name} validated` },
    );

  /** Nothing started: no MachineUpdate of the plan, the control plane not paused. */
  const nothingStarted = async (plan: string): Promise<void> => {
    const mus = (await env.client.list(MachineUpdates, ns)).items.filter((m) => (m['spec'] as { planName?: string }).planName === plan);
    expect(mus.map((m) => m.metadata.name)).to.deep.equal([]);
    const kcp = await env.client.get(KubeadmControlPlanes, ns, 'c1-cp');
    expect(kcp?.metadata.annotations?.[Annotations.paused], 'control plane not paused').to.equal(undefined);
  };

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('judged');
    // Through the environment: labelled as the tests' own, so a run against a real cluster removes them afterwards.
    await env.installCrdObjects([crd('JudgedTask', true), crd('JudgedTaskTemplate', false)]);
    await applyInventory(
      env.client,
      buildInventory({
        namespace: ns,
        clusterName: 'c1',
        version: 'v1.30.0',
        controlPlane: { name: 'c1-cp', replicas: 1 },
        machineDeployments: [],
      }),
    );
    mgr = createManager({ client: env.client, name: 'plan-controller', namespace: ns, log: noopLogger });
    await createPlanController().setup(mgr);
    await mgr.start();
  });
  after(async () => {
    await mgr?.stop();
    await env?.stop();
  });

  it('a 2.9 MiB OSImageUpdateTaskTemplate (just under the request limit): Valid=False naming the 262144-byte limit', async () => {
    const res = await env.client.resolve(SAMPLES, 'OSImageUpdateTaskTemplate');
    // A real server stores at most etcd's request size (1.5 MiB by default; a larger object is a 500 from etcd):
    // there, the largest template that can exist is what the check must see.
    const blob = 'x'.repeat(Math.floor((env.isRealCluster ? 1.4 : 2.9) * 1024 * 1024));
    await env.client.create(res, {
      apiVersion: `${SAMPLES}/v1alpha1`,
      kind: 'OSImageUpdateTaskTemplate',
      metadata: { name: 'huge', namespace: ns },
      spec: { template: { spec: { imageRepository: blob } } },
    } as KubeObject);
    await env.client.create(
      InPlaceUpdatePlans,
      planOf('huge', { apiVersion: `${SAMPLES}/v1alpha1`, kind: 'OSImageUpdateTaskTemplate', name: 'huge' }),
    );
    const v = await decided('huge');
    expect(v.status).to.equal('False');
    expect(v.message).to.match(/template OSImageUpdateTaskTemplate huge is \d+ bytes, more than the 262144 a task may have/);
    await nothingStarted('huge');
  });

  it('a template without spec.template.spec (its content cannot be judged): Valid=False saying so, nothing started', async () => {
    const res = await env.client.resolve(GROUP, 'JudgedTaskTemplate');
    // Small, and nothing a task could be made from: measuring it as small would take it for valid.
    await env.client.create(res, {
      apiVersion: `${GROUP}/v1`,
      kind: 'JudgedTaskTemplate',
      metadata: { name: 'hollow', namespace: ns },
      spec: { note: 'no template here' },
    } as KubeObject);
    await env.client.create(
      InPlaceUpdatePlans,
      planOf('hollow', { apiVersion: `${GROUP}/v1`, kind: 'JudgedTaskTemplate', name: 'hollow' }),
    );
    const v = await decided('hollow');
    expect(v.status, v.message).to.equal('False');
    expect(v.message).to.match(/template JudgedTaskTemplate hollow: cannot be judged: it has no spec\.template\.spec/);
    await nothingStarted('hollow');
  });
});
