// The RBAC of the synthesized manifests against what each component actually calls: every component and sample
// updater runs with a recording client through a whole plan (and its deletion), and every recorded call must be
// allowed by the rules its ServiceAccount is bound to in the synthesized YAML — in the default (cluster-scoped)
// manifests, and in the namespace-scoped ones where each call must be allowed in the namespace it was made in (the
// components run scoped to one namespace, as `--namespace-scoped` deploys them). A new API call without a rule fails here.
// The dashboard (`--dashboard`) is held to more: its rules allow exactly the calls it makes, none unused.
import http from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  API_VERSION,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  type InPlaceUpdateCampaign,
  type InPlaceUpdatePlan,
  type KubeObject,
  type ResourceType,
} from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs, startCapiSimulator, type CapiSimulator } from '../../tools/capi-sim/index.js';
import { COMPONENT_LOADERS } from '../../src/cli/run.js';
import { applyFile } from '../../src/cli/install.js';
import { projectRoot } from '../../src/cli/procs.js';
import { createManager, noopLogger, type RuntimeManager } from '../../src/runtime/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { allows, normalizeRules } from '../../cdk8s/rbac.js';
import { startDashboard } from '../../src/dashboard/server.js';
import { kubeAccess } from '../../src/dashboard/access.js';
import { callerNamespaces } from '../../cdk8s/charts.js';
import { installNamespace, sampleUpdaterWorkloads, synthesize } from '../../cdk8s/synth.js';
import { allowed, grantsOf, parseDocs } from '../security/rbac.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';
import { docsOf, effectiveRules } from './manifests.js';

/** One API call as RBAC sees it. */
interface Call {
  verb: string;
  group: string;
  resource: string;
  /** The namespace of the call; undefined for a cluster-wide call or a cluster-scoped kind. */
  namespace: string | undefined;
}

/** Wraps a client so that every call is recorded with its RBAC verb and (sub)resource. */
function recording(client: KubeClient, calls: Call[]): KubeClient {
  const rec = (verb: string, res: ResourceType, ns: string | undefined, sub?: string): void =>
    void calls.push({
      verb,
      group: res.group,
      resource: sub ? `${res.plural}/${sub}` : res.plural,
      namespace: res.namespaced ? ns : undefined,
    });
  return {
    get: (res, ns, name) => (rec('get', res, ns), client.get(res, ns, name)),
    list: (res, ns, o) => (rec('list', res, ns), client.list(res, ns, o)),
    create: (res, obj, o) => (rec('create', res, obj.metadata.namespace, o?.subresource), client.create(res, obj, o)),
    update: (res, obj, o) => (rec('update', res, obj.metadata.namespace, o?.subresource), client.update(res, obj, o)),
    patch: (res, ns, name, body, o) => (rec('patch', res, ns, o.subresource), client.patch(res, ns, name, body, o)),
    delete: (res, ns, name, o) => (rec('delete', res, ns), client.delete(res, ns, name, o)),
    watch: (res, ns, o, on) => (rec('watch', res, ns), client.watch(res, ns, o, on)),
    // Discovery is open to every authenticated user (system:discovery); no rule needed.
    resolve: (g, k) => client.resolve(g, k),
  };
}

describe('RBAC of the synthesized manifests covers what each component calls', function () {
  this.timeout(180_000);
  let env: TestEnv;
  let ns: string;
  const calls = new Map<string, Call[]>();
  const managers: RuntimeManager[] = [];
  const stops: (() => Promise<void>)[] = [];
  let sim: CapiSimulator | undefined;
  let planName = '';

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('rbac');
    await applyInventory(
      env.client,
      buildInventory({
        namespace: ns,
        clusterName: 'cluster1',
        version: 'v1.29.5',
        controlPlane: { name: 'cluster1-cp', replicas: 1 },
        machineDeployments: [
          { name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 },
          { name: 'cluster1-md-1', replicas: 1, maxUnavailable: 0 },
        ],
        mhc: { name: 'cluster1-mhc', inPlaceUpdateTimeout: '10m' },
      }),
    );
    sim = await startCapiSimulator({ client: env.client, namespace: ns, log: noopLogger });
    for (const [name, u] of Object.entries(sampleUpdaters)) {
      const c: Call[] = [];
      calls.set(`updater-${name}`, c);
      stops.push((await u.start({ client: recording(env.client, c), namespace: ns, ...(u.generic ? { catchAll: true } : {}) })).stop);
    }
    for (const [name, load] of Object.entries(COMPONENT_LOADERS)) {
      const c: Call[] = [];
      calls.set(name, c);
      const mgr = createManager({
        client: recording(env.client, c),
        name,
        namespace: ns,
        log: noopLogger,
        leaderElection: {
          enabled: true,
          leaseName: `inplace-${name}`,
          leaseNamespace: ns,
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 200,
        },
      });
      // Any free port for the runtime extension: its default (9443) may be taken on a shared machine.
      await (await load(name === 'runtime-extension' ? { extensionPort: 0 } : undefined)).setup(mgr);
      await mgr.start();
      managers.push(mgr);
    }
    // The example names fleet-a; run it in this test's namespace instead.
    const applied = await applyFile(env.client, join(projectRoot(), 'examples', 'plan.yaml'), ns, true);
    const appliedPlan = applied.find((o) => o.kind === 'InPlaceUpdatePlan')! as InPlaceUpdatePlan & KubeObject;
    planName = appliedPlan.metadata.name!;
    // A paused campaign over the same cluster with the plan's updaters: its per-cluster pre-start check (template
    // objects, one machine per target, the dry-runs on the three kinds) makes its calls; it creates nothing.
    await env.client.create(InPlaceUpdateCampaigns, {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdateCampaign',
      metadata: { name: 'rbac', namespace: ns },
      spec: {
        clusterNames: ['cluster1'],
        paused: true,
        template: {
          controlPlane: { sequence: 1, updaters: appliedPlan.spec.controlPlane!.updaters },
          machineDeployments: [{ sequence: 2, updaters: appliedPlan.spec.controlPlane!.updaters }],
        },
      },
    } as KubeObject);
    await waitFor(
      async () =>
        (calls.get('campaign-controller') ?? []).some((c) => c.verb === 'patch' && c.resource === 'devmachines') &&
        (await env.client.get<InPlaceUpdateCampaign & KubeObject>(InPlaceUpdateCampaigns, ns, 'rbac'))?.status?.conditions?.some(
          (c) => c.type === 'Valid',
        ),
      { timeoutMs: 60_000, intervalMs: 100, message: "the campaign's pre-start check" },
    );
    await waitFor(
      async () =>
        (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, planName))?.status?.updateStatus === 'updated',
      {
        timeoutMs: 120_000,
        intervalMs: 100,
        message: `plan ${planName} to be updated`,
      },
    );
    // Deleting the plan exercises the finalizer path.
    await env.client.delete(InPlaceUpdatePlans, ns, planName);
    await waitFor(async () => (await env.client.get(InPlaceUpdatePlans, ns, planName)) === undefined, {
      timeoutMs: 30_000,
      message: 'plan deletion',
    });
  });

  after(async () => {
    for (const m of managers) await m.stop();
    for (const s of stops) await s();
    await sim?.stop();
    await env?.stop();
  });

  const ext = { runtimeExtension: { callerNamespaceSelector: callerNamespaces(['capi-system']) }, updaters: sampleUpdaterWorkloads() };
  const docs = docsOf(synthesize(ext));
  for (const name of [...Object.keys(COMPONENT_LOADERS), ...Object.keys(sampleUpdaters).map((u) => `updater-${u}`)]) {
    it(`${name}: every call it made is allowed`, () => {
      const made = calls.get(name) ?? [];
      expect(made.length, 'no calls recorded').to.be.greaterThan(0);
      const rules = effectiveRules(docs, name);
      const denied = [
        ...new Set(
          made.filter((c) => !allows(rules, c.verb, c.group, c.resource)).map((c) => `${c.verb} ${c.resource}.${c.group || 'core'}`),
        ),
      ];
      expect(denied, `${name} made calls its ClusterRole/Role do not allow`).to.deep.equal([]);
    });
  }

  describe('namespace-scoped manifests (--namespace-scoped): every call is allowed in the namespace it was made in', () => {
    let scoped: ReturnType<typeof parseDocs> | undefined;
    for (const name of [...Object.keys(COMPONENT_LOADERS), ...Object.keys(sampleUpdaters).map((u) => `updater-${u}`)]) {
      it(`${name}: no call needs a cluster-wide grant of a namespaced kind`, () => {
        // The namespace is known once before() ran; synthesized once for every component.
        scoped ??= parseDocs(synthesize({ ...ext, watchNamespace: ns }).map((f) => f.content));
        // The controllers run in the install namespace of that watched namespace (inplace-<ns>), where their Lease is.
        const INSTALL = installNamespace({ watchNamespace: ns });
        const grants = grantsOf(scoped, INSTALL, `inplace-${name}`);
        const made = calls.get(name) ?? [];
        expect(made.length, 'no calls recorded').to.be.greaterThan(0);
        // The Lease lives where the pod runs (POD_NAMESPACE); this test ran the components with their Lease in `ns`.
        const where = (c: Call): string | undefined => (c.resource === 'leases' ? INSTALL : c.namespace);
        const denied = [
          ...new Set(
            made
              .filter((c) => !allowed(grants, c.verb, c.group, c.resource, where(c)))
              .map((c) => `${c.verb} ${c.resource}.${c.group || 'core'} in ${where(c) ?? 'the cluster'}`),
          ),
        ];
        expect(denied, `${name} made calls its Roles in ${ns} do not allow`).to.deep.equal([]);
      });
    }
  });

  it('the recorded calls include status writes, leases and events', () => {
    const all = [...calls.values()].flat();
    expect(all.some((c) => c.resource.endsWith('/status'))).to.equal(true);
    expect(all.some((c) => c.resource === 'leases')).to.equal(true);
    expect(all.some((c) => c.resource === 'events')).to.equal(true);
  });
});

/**
 * Answers TokenReviews (every token is the user "viewer") and SubjectAccessReviews (allowed) as an API server's
 * authenticator and authorizer would: the embedded API server has neither. Every other call reaches the server.
 */
function reviewing(client: KubeClient): KubeClient {
  const create: KubeClient['create'] = (res, obj, o) => {
    if (res.plural === 'tokenreviews')
      return Promise.resolve({ ...obj, status: { authenticated: true, user: { username: 'viewer', groups: ['system:authenticated'] } } });
    if (res.plural === 'subjectaccessreviews') return Promise.resolve({ ...obj, status: { allowed: true } });
    return client.create(res, obj, o);
  };
  return new Proxy(client, { get: (t, k) => (k === 'create' ? create : Reflect.get(t, k)) });
}

/** GET `url` with a bearer token; the status code. */
const getStatus = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    http
      .get(url, { headers: { Authorization: 'Bearer viewer-token' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', reject);
  });

describe('RBAC of the synthesized dashboard (--dashboard) allows exactly what it calls', function () {
  this.timeout(120_000);
  let env: TestEnv;
  let ns = '';
  /** Calls of a dashboard over every namespace, and of one started with --namespace (namespace-scoped manifests). */
  const calls: Call[] = [];
  const scopedCalls: Call[] = [];

  before(async () => {
    env = await startTestEnv({ crds: PROJECT_CRDS });
    ns = await env.newNamespace('rbac-dash');
    for (const [made, namespace] of [
      [calls, undefined],
      [scopedCalls, ns],
    ] as const) {
      const client = recording(reviewing(env.client), made);
      const dash = await startDashboard({ client, access: kubeAccess(client), log: noopLogger, ...(namespace ? { namespace } : {}) });
      try {
        await dash.synced();
        // A viewer's request: a TokenReview for the token, a SubjectAccessReview for the MachineUpdates it asks for.
        expect(await getStatus(`${dash.url}api/machines?namespace=${ns}&plan=none`)).to.equal(200);
      } finally {
        await dash.close();
      }
    }
  });
  after(async () => env?.stop());

  const rulesOf = (o: Parameters<typeof synthesize>[0]): ReturnType<typeof parseDocs> =>
    parseDocs(synthesize({ ...o, dashboard: true }).map((f) => f.content));
  const show = (c: Call): string => `${c.verb} ${c.resource}.${c.group || 'core'}`;

  it('every call it made is allowed, and every rule it is granted was used (no unused grant)', () => {
    const rules = effectiveRules(docsOf(synthesize({ dashboard: true })), 'dashboard');
    expect(calls.length, 'no calls recorded').to.be.greaterThan(0);
    expect([...new Set(calls.filter((c) => !allows(rules, c.verb, c.group, c.resource)).map(show))]).to.deep.equal([]);
    const granted = normalizeRules(rules).flatMap((r) => r.verbs.map((v) => `${v} ${r.resource}.${r.apiGroup || 'core'}`));
    const used = new Set(calls.map(show));
    expect(granted.filter((g) => !used.has(g))).to.deep.equal([]);
  });

  it('makes no write but the reviews (questions to the API server, never stored)', () => {
    const writes = [...new Set(calls.filter((c) => !['get', 'list', 'watch'].includes(c.verb)).map(show))].sort();
    expect(writes).to.deep.equal(['create subjectaccessreviews.authorization.k8s.io', 'create tokenreviews.authentication.k8s.io']);
  });

  it('namespace-scoped (--namespace-scoped NS, run with --namespace NS): every call is allowed in the namespace it was made in', () => {
    const grants = grantsOf(rulesOf({ watchNamespace: ns }), installNamespace({ watchNamespace: ns }), 'inplace-dashboard');
    expect(scopedCalls.length, 'no calls recorded').to.be.greaterThan(0);
    expect(scopedCalls.filter((c) => c.namespace === undefined && c.verb !== 'create').map(show), 'cluster-wide reads').to.deep.equal([]);
    const denied = scopedCalls
      .filter((c) => !allowed(grants, c.verb, c.group, c.resource, c.namespace))
      .map((c) => `${show(c)} in ${c.namespace ?? 'the cluster'}`);
    expect([...new Set(denied)]).to.deep.equal([]);
  });
});
