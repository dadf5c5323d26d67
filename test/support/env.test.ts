// The test environment on a "real" cluster (INPLACE_TEST_KUBECONFIG): played here by a separate local API server that
// already holds objects the tests did not create. The environment must leave them exactly as they were.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CustomResourceDefinitions, Finalizers, InPlaceUpdatePlans, Namespaces, type KubeObject } from '../../src/api/index.js';
import { startLocalApiServer, type LocalApiServer } from '../../tools/local-apiserver/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../../src/runtime/client.js';
import { ExistingCrdMismatchError } from './crds.js';
import { PROJECT_CRDS, readCrds, startTestEnv } from './env.js';
import { waitFor } from './wait.js';
import { planObject, refUpdater } from '../e2e/harness.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'providers', 'fixtures', 'example-provider.yaml');

describe('test env on a real cluster (INPLACE_TEST_KUBECONFIG) touches only what it created', function () {
  this.timeout(60_000);
  let server: LocalApiServer;
  let admin: RestClient;
  let dir: string;
  const saved = process.env['INPLACE_TEST_KUBECONFIG'];

  // A fresh "cluster" per test: each starts from what someone else left there.
  beforeEach(async function () {
    // Against a real cluster this suite would itself create and change CRDs: it only makes sense locally.
    if (saved) {
      console.log(
        '    (skipped on INPLACE_TEST_KUBECONFIG: plays a real cluster with its own embedded API server, and would change CRDs on yours)',
      );
      this.skip();
    }
    server = await startLocalApiServer({});
    dir = await mkdtemp(join(tmpdir(), 'inplace-env-test-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await server.writeKubeconfig(kubeconfig);
    admin = createClient(loadKubeConfig(kubeconfig), { userAgent: 'env-test' });
    process.env['INPLACE_TEST_KUBECONFIG'] = kubeconfig;
  });
  afterEach(async () => {
    if (saved === undefined) delete process.env['INPLACE_TEST_KUBECONFIG'];
    else process.env['INPLACE_TEST_KUBECONFIG'] = saved;
    admin?.close();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Creates a CRD as "someone else" and returns it once Established (the status write bumps resourceVersion). */
  async function preexisting(crd: KubeObject): Promise<KubeObject> {
    await admin.create(CustomResourceDefinitions, crd);
    return waitFor(
      async () => {
        const c = await admin.get(CustomResourceDefinitions, undefined, crd.metadata.name!);
        const conds = (c?.['status'] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
        return conds.some((x) => x.type === 'Established' && x.status === 'True') ? c : undefined;
      },
      { timeoutMs: 30_000, message: `CRD ${crd.metadata.name} Established` },
    );
  }

  const [machines, templates, controlPlanes] = [0, 1, 2];

  it('creates absent CRDs, uses an identical existing one without writing it, and deletes only its own namespaces', async () => {
    const crds = await readCrds([FIXTURE]);
    const pre = await preexisting(crds[machines]!);
    await admin.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'someone-elses' } });

    const env = await startTestEnv({ crds: [FIXTURE] });
    expect(env.isRealCluster).to.equal(true);
    const ns = await env.newNamespace('mine');
    const after = await admin.get(CustomResourceDefinitions, undefined, pre.metadata.name!);
    expect(after?.metadata.resourceVersion, 'the existing CRD was written').to.equal(pre.metadata.resourceVersion);
    expect(await admin.get(CustomResourceDefinitions, undefined, crds[templates]!.metadata.name!)).to.not.equal(undefined);
    await env.stop();

    await waitFor(
      async () =>
        (await admin.get(Namespaces, undefined, ns)) === undefined ||
        (await admin.get<KubeObject>(Namespaces, undefined, ns))?.metadata.deletionTimestamp !== undefined,
      { timeoutMs: 30_000, message: `namespace ${ns} deleted` },
    );
    const theirs = await admin.get<KubeObject>(Namespaces, undefined, 'someone-elses');
    expect(theirs?.metadata.deletionTimestamp, 'a namespace the tests did not create was deleted').to.equal(undefined);
  });

  it("lets a later suite use the project's CRDs an earlier suite created (compared in the form the server stores)", async () => {
    // Issue 24: crds/samples have `status.properties: {}`, which a real server drops when it stores the CRD; every
    // suite after the first failed with "schema differs".
    const first = await startTestEnv({ crds: PROJECT_CRDS });
    await first.stop();
    const second = await startTestEnv({ crds: PROJECT_CRDS });
    await second.stop();
    const templates = (await readCrds(PROJECT_CRDS)).filter((c) =>
      c.metadata.name!.endsWith('updatetasktemplates.samples.inplace.cluster.x-k8s.io'),
    );
    expect(templates).to.have.length(2);
    for (const c of templates) {
      const stored = await admin.get<
        KubeObject & { spec: { versions: { schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }[] } }
      >(CustomResourceDefinitions, undefined, c.metadata.name!);
      expect(stored!.spec.versions[0]!.schema.openAPIV3Schema.properties.status, c.metadata.name).to.deep.equal({ type: 'object' });
    }
  });

  it('fails, naming the CRD and the difference, when an existing CRD differs, and leaves it as it was', async () => {
    const crds = await readCrds([FIXTURE]);
    const theirs = structuredClone(crds[controlPlanes]!) as KubeObject & {
      spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] };
    };
    theirs.spec.versions[0]!.schema.openAPIV3Schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    const pre = await preexisting(theirs);

    let caught: unknown;
    try {
      await startTestEnv({ crds: [FIXTURE] });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(ExistingCrdMismatchError);
    expect((caught as Error).message).to.match(/examplecontrolplanes\.controlplane\.example\.dev: version v1alpha1: schema differs/);
    const now = await admin.get(CustomResourceDefinitions, undefined, pre.metadata.name!);
    expect(now?.metadata.resourceVersion).to.equal(pre.metadata.resourceVersion);
  });

  it("after a suite's cluster-wide controllers stop, frees only the other test namespaces being deleted that they held", async () => {
    // The platform's plan kind; the namespaces play: an earlier suite's, being deleted, whose plan a cluster-wide
    // controller took a finalizer on after that suite had released it; a live suite's; someone else's, being deleted.
    const earlier = await startTestEnv({ crds: PROJECT_CRDS });
    const live = await startTestEnv();
    const [gone, running] = [await earlier.newNamespace('earlier'), await live.newNamespace('live')];
    await admin.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'someone-elses' } });
    const held = (ns: string): KubeObject => {
      const plan = planObject(ns, 'p1', { cp: { name: 'c1-cp', sequence: 1, updaters: [refUpdater()] } });
      return { ...plan, metadata: { ...plan.metadata, finalizers: [Finalizers.plan] } };
    };
    for (const ns of [gone, running, 'someone-elses']) await admin.create(InPlaceUpdatePlans, held(ns));
    for (const ns of [gone, 'someone-elses']) await admin.delete(Namespaces, undefined, ns);
    const terminating = async (ns: string): Promise<boolean> =>
      (await admin.get<KubeObject>(Namespaces, undefined, ns))?.metadata.deletionTimestamp !== undefined;
    expect(await terminating(gone), 'held by the plan').to.equal(true);

    const wide = await startTestEnv();
    await wide.releaseTerminatingTestNamespaces();
    await waitFor(async () => (await admin.get(Namespaces, undefined, gone)) === undefined, {
      timeoutMs: 30_000,
      message: `namespace ${gone} gone`,
    });
    expect((await admin.get<KubeObject>(InPlaceUpdatePlans, running, 'p1'))?.metadata.finalizers).to.deep.equal([Finalizers.plan]);
    expect(await terminating('someone-elses'), 'a namespace the tests did not create').to.equal(true);
    expect((await admin.get<KubeObject>(InPlaceUpdatePlans, 'someone-elses', 'p1'))?.metadata.finalizers).to.deep.equal([Finalizers.plan]);
    for (const e of [wide, live, earlier]) await e.stop();
  });
});
