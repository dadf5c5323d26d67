/* eslint-disable @typescript-eslint/no-explicit-any -- raw API JSON is asserted structurally, as a client sees it */
// Conformance suite: the same scenarios run against the local API server and, when INPLACE_TEST_KUBECONFIG is set,
// against a real cluster. Assertions follow what kube-apiserver answers (see ../shared/reference/kube-apiserver-traces).
import { expect } from 'chai';
import { CoreV1Api, CustomObjectsApi, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { CRD_NAME, GROUP, PLURAL, widget, widgetCrd, widgetPath } from './fixtures.js';
import { eventually, existingCrd, startTarget, uniq, waitCrdGone, type Target } from './target.js';
import { crdDifferences, ExistingCrdMismatchError } from '../support/crds.js';

const MERGE = { 'Content-Type': 'application/merge-patch+json' };
const JSONPATCH = { 'Content-Type': 'application/json-patch+json' };

/**
 * How long a garbage-collection outcome may take. A real garbage collector watches a CRD's kind only after its discovery
 * resync (every 30 s in kube-controller-manager) and works through a queue that earlier suites' namespace deletions may
 * have filled: seconds after the suite's CRD was created, 20 s was not enough. The wait ends as soon as the outcome shows.
 */
const GC_WAIT_MS = 90_000;
describe('local API server conformance (also runs against INPLACE_TEST_KUBECONFIG)', function () {
  let t: Target;
  let ns = '';
  let createdCrd = false;
  let core: CoreV1Api;
  let objects: KubernetesObjectApi;
  let custom: CustomObjectsApi;

  before(async function () {
    this.timeout(180_000);
    t = await startTarget({ bookmarkIntervalMs: 100 });
    core = t.kc.makeApiClient(CoreV1Api);
    objects = KubernetesObjectApi.makeApiClient(t.kc);
    custom = t.kc.makeApiClient(CustomObjectsApi);
    // One being deleted (e.g. by the kubectl suite on a shared cluster) is waited out rather than taken as present.
    const existing = await existingCrd(t, CRD_NAME);
    // On a real cluster an existing CRD is never updated (nor deleted afterwards): used when it is the same, else the suite fails naming it.
    if (existing && !t.local) {
      const differences = crdDifferences(existing, widgetCrd());
      if (differences.length > 0) throw new ExistingCrdMismatchError([{ name: CRD_NAME, differences }]);
    } else if (existing) {
      const crd = widgetCrd();
      crd.metadata.resourceVersion = existing.metadata.resourceVersion;
      expect((await t.raw('PUT', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`, crd)).status).to.equal(200);
    } else {
      const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd());
      expect(r.status, r.text).to.equal(201);
      createdCrd = true;
    }
    await eventually(
      async () => {
        const r = await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
        return r.json?.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True');
      },
      30_000,
      'CRD Established',
    );
    await eventually(async () => (await t.raw('GET', `/apis/${GROUP}/v1`)).status === 200, 30_000, 'group served');
    const name = uniq('conf');
    await core.createNamespace({ body: { metadata: { name } } });
    ns = name;
  });

  after(async function () {
    this.timeout(180_000);
    if (!t) return;
    // Only what this run created: its namespace, and the CRD when it was not there before.
    if (ns) await t.raw('DELETE', `/api/v1/namespaces/${ns}`);
    if (!t.local && createdCrd) {
      // Gone before the next suite looks for it: a terminating CRD would pass for present and then vanish.
      await t.raw('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
      await waitCrdGone(t, CRD_NAME);
    }
    await t.close();
  });

  describe('health, version and discovery', function () {
    it('answers /healthz, /readyz, /livez with ok and /version with major/minor', async function () {
      for (const p of ['/healthz', '/readyz', '/livez']) {
        const r = await t.raw('GET', p);
        expect(r.status).to.equal(200);
        expect(r.text).to.equal('ok');
      }
      const v = await t.raw('GET', '/version');
      expect(v.json).to.include.keys('major', 'minor', 'gitVersion', 'platform');
    });

    it('serves legacy discovery for /api, /apis and group-version resource lists', async function () {
      const api = await t.raw('GET', '/api');
      expect(api.json.kind).to.equal('APIVersions');
      expect(api.json.versions).to.include('v1');
      const apis = await t.raw('GET', '/apis');
      expect(apis.json.kind).to.equal('APIGroupList');
      const g = apis.json.groups.find((x: any) => x.name === GROUP);
      expect(g.preferredVersion.version).to.equal('v1');
      expect(g.versions.map((v: any) => v.version)).to.have.members(['v1', 'v1beta1']);
      const rl = await t.raw('GET', `/apis/${GROUP}/v1`);
      expect(rl.json.kind).to.equal('APIResourceList');
      const main = rl.json.resources.find((r: any) => r.name === PLURAL);
      expect(main).to.include({ singularName: 'widget', namespaced: true, kind: 'Widget' });
      expect(main.verbs).to.include.members(['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
      expect(main.shortNames).to.deep.equal(['wd']);
      const status = rl.json.resources.find((r: any) => r.name === `${PLURAL}/status`);
      expect(status.verbs).to.have.members(['get', 'patch', 'update']);
      const v1 = await t.raw('GET', '/api/v1');
      const names = v1.json.resources.map((r: any) => r.name);
      expect(names).to.include.members(['namespaces', 'configmaps', 'secrets', 'events', 'serviceaccounts', 'nodes', 'namespaces/status']);
    });

    it('serves aggregated discovery v2 with its content type when kubectl asks for it', async function () {
      const accept =
        'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
      const r = await t.raw('GET', '/apis', undefined, { Accept: accept });
      expect(r.headers['content-type']).to.equal('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
      expect(r.json.kind).to.equal('APIGroupDiscoveryList');
      const item = r.json.items.find((i: any) => i.metadata.name === GROUP);
      const v1 = item.versions.find((v: any) => v.version === 'v1');
      const res = v1.resources.find((x: any) => x.resource === PLURAL);
      expect(res).to.deep.include({
        scope: 'Namespaced',
        singularResource: 'widget',
        responseKind: { group: GROUP, version: 'v1', kind: 'Widget' },
      });
      expect(res.subresources[0].subresource).to.equal('status');
      const core = await t.raw('GET', '/api', undefined, { Accept: accept });
      expect(core.json.items[0].versions[0].version).to.equal('v1');
      expect(core.json.items[0].versions[0].resources.map((x: any) => x.resource)).to.include('configmaps');
    });

    it('publishes OpenAPI v3 for the CRD group-version with the schema and its GVK', async function () {
      // A real server publishes a new CRD's group-version a few seconds after it is Established: poll for it.
      const entry = await eventually(
        async () => (await t.raw('GET', '/openapi/v3')).json?.paths?.[`apis/${GROUP}/v1`],
        30_000,
        'OpenAPI v3 entry',
      );
      expect(entry.serverRelativeURL).to.match(new RegExp(`^/openapi/v3/apis/${GROUP}/v1\\?hash=[0-9A-F]+$`));
      const doc = await t.raw('GET', entry.serverRelativeURL);
      const schema = doc.json.components.schemas[`dev.inplace.conformance.v1.Widget`];
      expect(schema['x-kubernetes-group-version-kind']).to.deep.equal([{ group: GROUP, kind: 'Widget', version: 'v1' }]);
      expect(schema.properties.spec.properties.size.type).to.equal('integer');
    });
  });

  describe('CRUD on a built-in kind through client-node', function () {
    it('creates, reads, updates, patches and deletes a ConfigMap with uid, creationTimestamp and a growing resourceVersion', async function () {
      const created = await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'cm1', labels: { app: 'a' } }, data: { k: 'v' } },
      });
      expect(created.metadata?.uid).to.match(/^[0-9a-f-]{36}$/);
      expect(created.metadata?.creationTimestamp).to.be.instanceOf(Date);
      const rv1 = Number(created.metadata?.resourceVersion);
      const got = await core.readNamespacedConfigMap({ name: 'cm1', namespace: ns });
      expect(got.data).to.deep.equal({ k: 'v' });
      got.data = { k: 'v2' };
      const updated = await core.replaceNamespacedConfigMap({ name: 'cm1', namespace: ns, body: got });
      expect(Number(updated.metadata?.resourceVersion)).to.be.greaterThan(rv1);
      const merged = await t.raw('PATCH', `/api/v1/namespaces/${ns}/configmaps/cm1`, { data: { extra: 'x' } }, MERGE);
      expect(merged.json.data).to.deep.equal({ k: 'v2', extra: 'x' });
      const jp = await t.raw(
        'PATCH',
        `/api/v1/namespaces/${ns}/configmaps/cm1`,
        [
          { op: 'remove', path: '/data/extra' },
          { op: 'add', path: '/metadata/labels/b', value: 'c' },
        ],
        JSONPATCH,
      );
      expect(jp.json.data).to.deep.equal({ k: 'v2' });
      expect(jp.json.metadata.labels).to.deep.equal({ app: 'a', b: 'c' });
      const smp = await t.raw(
        'PATCH',
        `/api/v1/namespaces/${ns}/configmaps/cm1`,
        { data: { s: 't' } },
        { 'Content-Type': 'application/strategic-merge-patch+json' },
      );
      expect(smp.status).to.equal(200);
      expect(smp.json.data.s).to.equal('t');
      await core.deleteNamespacedConfigMap({ name: 'cm1', namespace: ns });
      const gone = await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/cm1`);
      expect(gone.status).to.equal(404);
    });

    it('drops unknown top-level fields of a built-in kind, warning about them or rejecting them under Strict', async function () {
      const w = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'unk' },
        data: { a: 'b' },
        spec: { x: 1 },
      });
      expect(w.status).to.equal(201);
      expect(w.json).to.not.have.property('spec');
      expect(String(w.headers.warning)).to.contain('unknown field \\"spec\\"');
      const s = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps?fieldValidation=Strict`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'unk2' },
        spec: { x: 1 },
      });
      expect(s.status).to.equal(400);
      expect(s.json.message).to.contain('strict decoding error: unknown field "spec"');
      const bad = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'unk3' },
        data: { a: 1 },
      });
      expect(bad.status, 'a non-string data value does not decode').to.equal(400);
    });

    it('generates names from generateName', async function () {
      const r = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { generateName: 'gen-' },
      });
      expect(r.status).to.equal(201);
      expect(r.json.metadata.name).to.match(/^gen-[a-z0-9]{5}$/);
    });

    it('stores Secrets (stringData folded into base64 data), ServiceAccounts, Leases, Events and Jobs', async function () {
      const s = await t.raw('POST', `/api/v1/namespaces/${ns}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's1' },
        stringData: { a: 'b' },
      });
      expect(s.status).to.equal(201);
      expect(s.json.data).to.deep.equal({ a: Buffer.from('b').toString('base64') });
      expect(s.json.type).to.equal('Opaque');
      expect(
        (
          await t.raw('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
            apiVersion: 'v1',
            kind: 'ServiceAccount',
            metadata: { name: 'sa1' },
          })
        ).status,
      ).to.equal(201);
      const lease = await t.raw('POST', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'l1' },
        spec: { holderIdentity: 'me', leaseDurationSeconds: 15 },
      });
      expect(lease.status).to.equal(201);
      expect(lease.json.spec.holderIdentity).to.equal('me');
      const ev = await t.raw('POST', `/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'e1' },
        involvedObject: { kind: 'ConfigMap', name: 'x', namespace: ns },
        reason: 'Test',
        message: 'hello',
        type: 'Normal',
      });
      expect(ev.status).to.equal(201);
      const ev2 = await t.raw('POST', `/apis/events.k8s.io/v1/namespaces/${ns}/events`, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: 'e2' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'test/x',
        reportingInstance: 'x-1',
        action: 'Testing',
        reason: 'Test',
        type: 'Normal',
        regarding: { kind: 'ConfigMap', name: 'x', namespace: ns },
        note: 'hi',
      });
      expect(ev2.status, ev2.text).to.equal(201);
      const job = await t.raw('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j1' },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
      });
      expect(job.status, job.text).to.equal(201);
      expect(job.json.metadata.generation).to.equal(1);
    });

    it('serves core/v1 and events.k8s.io/v1 Events from one storage, as kubectl describe and kubectl events read them', async function () {
      const name = uniq('ev');
      const cm = `cm-${name}`;
      const eventsV1 = `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
      const created = await t.raw('POST', eventsV1, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'example.com/recorder',
        reportingInstance: 'recorder-1',
        action: 'Testing',
        reason: 'Tested',
        type: 'Warning',
        regarding: { apiVersion: 'v1', kind: 'ConfigMap', name: cm, namespace: ns },
        note: 'first',
      });
      expect(created.status, created.text).to.equal(201);
      expect(created.json).to.include({ apiVersion: 'events.k8s.io/v1', note: 'first', action: 'Testing' });
      expect(created.json.regarding.name).to.equal(cm);

      const core = await t.raw('GET', `/api/v1/namespaces/${ns}/events/${name}`);
      expect(core.status, core.text).to.equal(200);
      expect(core.json).to.include({ apiVersion: 'v1', message: 'first', reason: 'Tested', type: 'Warning', action: 'Testing' });
      // Upstream's conversion keeps the controller (core/v1 names it reportingComponent), the instance and the action.
      expect(core.json.reportingComponent).to.equal('example.com/recorder');
      expect(core.json.reportingInstance).to.equal('recorder-1');
      expect(core.json.involvedObject).to.include({ kind: 'ConfigMap', name: cm });
      expect(core.json.metadata.uid).to.equal(created.json.metadata.uid);
      expect(core.json).not.to.have.property('note');

      // kubectl describe lists core/v1 Events by involvedObject; kubectl get events.events.k8s.io by regarding.
      const byInvolved = await t.raw(
        'GET',
        `/api/v1/namespaces/${ns}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${cm}`)}`,
      );
      expect(byInvolved.json.items.map((e: any) => e.metadata.name)).to.deep.equal([name]);
      const byRegarding = await t.raw('GET', `${eventsV1}?fieldSelector=${encodeURIComponent(`regarding.name=${cm}`)}`);
      expect(byRegarding.json.items.map((e: any) => [e.metadata.name, e.note])).to.deep.equal([[name, 'first']]);

      const repeated = await t.raw(
        'PATCH',
        `${eventsV1}/${name}`,
        { series: { count: 2, lastObservedTime: '2026-01-01T00:00:05.000000Z' } },
        MERGE,
      );
      expect(repeated.status, repeated.text).to.equal(200);
      const again = await t.raw('GET', `/api/v1/namespaces/${ns}/events/${name}`);
      expect(again.json.series).to.deep.equal({ count: 2, lastObservedTime: '2026-01-01T00:00:05.000000Z' });
      expect(again.json.metadata.resourceVersion).to.equal(repeated.json.metadata.resourceVersion);

      const legacy = uniq('ev-core');
      const coreCreated = await t.raw('POST', `/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: legacy },
        involvedObject: { kind: 'ConfigMap', name: cm, namespace: ns },
        reason: 'Legacy',
        message: 'from core',
        type: 'Normal',
        count: 3,
      });
      expect(coreCreated.status, coreCreated.text).to.equal(201);
      const viaV1 = await t.raw('GET', `${eventsV1}/${legacy}`);
      expect(viaV1.status, viaV1.text).to.equal(200);
      expect(viaV1.json).to.include({ apiVersion: 'events.k8s.io/v1', note: 'from core', deprecatedCount: 3 });
      // Empty in a legacy Event, and omitted when empty in events.k8s.io/v1.
      expect(viaV1.json).to.not.have.any.keys('reportingController', 'reportingInstance', 'action');
      expect(viaV1.json.regarding.name).to.equal(cm);

      const bad = await t.raw('POST', eventsV1, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: uniq('ev-bad') },
        reason: 'Tested',
        type: 'Normal',
        regarding: { kind: 'ConfigMap', name: cm, namespace: ns },
      });
      // Without eventTime an Event is an "old" one: only eventTime is missing (kube-apiserver's legacyValidateEvent
      // asks for the reporting fields only of an Event with eventTime).
      expect(bad.status, bad.text).to.equal(422);
      const fieldsOf = (r: { json: any }): string[] =>
        [...new Set((r.json.details.causes as { field: string }[]).map((c) => c.field))].sort();
      expect(fieldsOf(bad)).to.deep.equal(['eventTime']);
      const unreported = await t.raw('POST', eventsV1, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: uniq('ev-bad') },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reason: 'Tested',
        type: 'Normal',
        regarding: { kind: 'ConfigMap', name: cm, namespace: ns },
      });
      expect(unreported.status, unreported.text).to.equal(422);
      expect(fieldsOf(unreported)).to.deep.equal(['action', 'reportingController', 'reportingInstance']);
      // Through core/v1 the same Event is checked the same way, the controller under its core/v1 name.
      const coreUnreported = await t.raw('POST', `/api/v1/namespaces/${ns}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: uniq('ev-bad') },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reason: 'Tested',
        type: 'Normal',
        involvedObject: { kind: 'ConfigMap', name: cm, namespace: ns },
      });
      expect(coreUnreported.status, coreUnreported.text).to.equal(422);
      expect(fieldsOf(coreUnreported)).to.deep.equal(['action', 'reportingComponent', 'reportingInstance']);
      const all = await t.raw('GET', `/api/v1/namespaces/${ns}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${cm}`)}`);
      expect(all.json.items.map((e: any) => e.metadata.name).sort()).to.deep.equal([name, legacy].sort());
    });
  });

  describe('Status errors', function () {
    it('returns NotFound with the real Status body', async function () {
      const r = await t.raw('GET', widgetPath(ns, 'nope'));
      expect(r.status).to.equal(404);
      expect(r.json).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `${PLURAL}.${GROUP} "nope" not found`,
        reason: 'NotFound',
        details: { name: 'nope', group: GROUP, kind: PLURAL },
        code: 404,
      });
    });

    it('returns AlreadyExists on a duplicate create', async function () {
      const name = uniq('dup');
      expect((await t.raw('POST', widgetPath(ns), widget(ns, name))).status).to.equal(201);
      const r = await t.raw('POST', widgetPath(ns), widget(ns, name));
      expect(r.status).to.equal(409);
      expect(r.json).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `${PLURAL}.${GROUP} "${name}" already exists`,
        reason: 'AlreadyExists',
        details: { name, group: GROUP, kind: PLURAL },
        code: 409,
      });
    });

    it('returns Conflict for a stale resourceVersion on update and on patch', async function () {
      const name = uniq('cfl');
      const c = await t.raw('POST', widgetPath(ns), widget(ns, name));
      const stale = c.json;
      expect((await t.raw('PATCH', widgetPath(ns, name), { metadata: { labels: { x: 'y' } } }, MERGE)).status).to.equal(200);
      const r = await t.raw('PUT', widgetPath(ns, name), stale);
      expect(r.status).to.equal(409);
      expect(r.json).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `Operation cannot be fulfilled on ${PLURAL}.${GROUP} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        reason: 'Conflict',
        details: { name, group: GROUP, kind: PLURAL },
        code: 409,
      });
      const p = await t.raw(
        'PATCH',
        widgetPath(ns, name),
        { metadata: { resourceVersion: stale.metadata.resourceVersion }, spec: { size: 3 } },
        MERGE,
      );
      expect(p.status).to.equal(409);
      expect(p.json.reason).to.equal('Conflict');
    });

    it('returns 404 for a create in a namespace that does not exist', async function () {
      const r = await t.raw('POST', '/api/v1/namespaces/does-not-exist-xyz/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a' },
      });
      expect(r.status).to.equal(404);
      expect(r.json.reason).to.equal('NotFound');
      expect(r.json.details).to.deep.include({ name: 'does-not-exist-xyz', kind: 'namespaces' });
    });

    it('returns 404 for unknown resources and groups', async function () {
      expect((await t.raw('GET', '/apis/nope.example.com/v1/things')).status).to.equal(404);
      expect((await t.raw('GET', `/apis/${GROUP}/v1/namespaces/${ns}/gadgets`)).status).to.equal(404);
      expect((await t.raw('GET', '/apis/nope.example.com/v1')).status).to.equal(404);
    });

    it('returns 400 BadRequest for malformed JSON and never stores anything', async function () {
      const r = await t.raw('POST', widgetPath(ns), '{"apiVersion": "x", ');
      expect(r.status).to.equal(400);
      expect(r.json.kind).to.equal('Status');
      expect(r.json.reason).to.equal('BadRequest');
      const y = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, 'a: [b\n  c: d: e', { 'Content-Type': 'application/yaml' });
      expect(y.status).to.equal(400);
    });

    it('returns 422 Invalid for a wrong kind and 400 for a wrong apiVersion of a custom resource, storing nothing', async function () {
      const r = await t.raw('POST', widgetPath(ns), { ...widget(ns, 'x1'), kind: 'Gadget' });
      expect(r.status, r.text).to.equal(422);
      expect(r.json.reason).to.equal('Invalid');
      expect(r.json.details.causes).to.deep.include({
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "Gadget": must be Widget',
        field: 'kind',
      });
      const v = await t.raw('POST', widgetPath(ns), { ...widget(ns, 'x2'), apiVersion: 'other.example.com/v1' });
      expect(v.status, v.text).to.equal(400);
      expect(v.json.reason).to.equal('BadRequest');
      for (const n of ['x1', 'x2']) expect((await t.raw('GET', widgetPath(ns, n))).status).to.equal(404);
    });

    it('returns 415 for an unsupported content type and for strategic merge on a custom resource', async function () {
      const name = uniq('smp');
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      const r = await t.raw(
        'PATCH',
        widgetPath(ns, name),
        { spec: { size: 3 } },
        { 'Content-Type': 'application/strategic-merge-patch+json' },
      );
      expect(r.status).to.equal(415);
      expect(r.json).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
        reason: 'UnsupportedMediaType',
        code: 415,
      });
      const c = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, 'x=y', { 'Content-Type': 'application/x-www-form-urlencoded' });
      expect(c.status).to.equal(415);
    });

    it("creates a custom resource POSTed to an object's path, and answers 405 for a built-in kind", async function () {
      const name = uniq('posted');
      const r = await t.raw('POST', widgetPath(ns, name), widget(ns, name));
      expect(r.status, r.text).to.equal(201);
      expect((await t.raw('GET', widgetPath(ns, name))).json.spec.size).to.equal(2);
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'posted' }, data: { k: 'v' } };
      const b = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps/posted`, cm);
      expect(b.status).to.equal(405);
      expect((await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/posted`)).status).to.equal(404);
    });

    it('returns 413 for a body over the limit', async function () {
      const big = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { x: 'a'.repeat(3 * 1024 * 1024 + 10) } };
      const r = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, big);
      expect(r.status).to.equal(413);
      expect((await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/big`)).status).to.equal(404);
    });

    it('returns 401 Unauthorized for a bad token', async function () {
      const url = new URL(t.kc.getCurrentCluster()!.server);
      const https = await import('node:https');
      const http = await import('node:http');
      const ca = t.kc.getCurrentCluster()!.caData;
      const r = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const mod = url.protocol === 'https:' ? https : http;
        const req = mod.request(
          {
            hostname: url.hostname,
            port: url.port,
            path: '/api/v1/namespaces',
            headers: { Authorization: 'Bearer wrong-token' },
            ...(ca ? { ca: Buffer.from(ca, 'base64') } : {}),
          },
          (res) => {
            let s = '';
            res.on('data', (c) => (s += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(s) }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(r.status).to.equal(401);
      expect(r.body).to.deep.include({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    });
  });

  describe('CRD storage', function () {
    it('stores a CRD as kube-apiserver does: empty optional fields dropped, names and conversion defaulted', async function () {
      this.timeout(180_000);
      const suffix = uniq('s')
        .slice(2)
        .replace(/[^a-z]/g, 'x');
      const kind = `Stored${suffix[0]!.toUpperCase()}${suffix.slice(1)}`;
      const plural = kind.toLowerCase() + 's';
      const name = `${plural}.${GROUP}`;
      const schema = {
        type: 'object',
        properties: {
          spec: {
            type: 'object',
            description: '',
            nullable: false,
            required: [],
            properties: {
              size: { type: 'integer', minimum: 0, format: '', 'x-kubernetes-validations': [] },
              free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              // A real server refuses `x-kubernetes-preserve-unknown-fields: false` ("must be true or undefined"),
              // so the pointer field kept at its zero value here is `maximum`.
              kept: { type: 'integer', maximum: 0, exclusiveMaximum: false },
            },
          },
          status: { type: 'object', properties: {} },
        },
      };
      const crd = {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name },
        spec: {
          group: GROUP,
          scope: 'Namespaced',
          names: { plural, kind },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: schema },
              additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size', priority: 0, description: '' }],
            },
          ],
        },
      };
      const created = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      expect(created.status, created.text).to.equal(201);
      try {
        const got = (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)).json;
        expect(got.spec.names).to.include({ plural, kind, singular: kind.toLowerCase(), listKind: `${kind}List` });
        expect(got.spec.conversion).to.deep.equal({ strategy: 'None' });
        const stored = got.spec.versions[0].schema.openAPIV3Schema;
        expect(stored.properties.status).to.deep.equal({ type: 'object' });
        expect(stored.properties.spec).to.not.have.any.keys('description', 'nullable', 'required');
        expect(stored.properties.spec.properties.size).to.deep.equal({ type: 'integer', minimum: 0 });
        expect(stored.properties.spec.properties.free).to.deep.equal({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
        // A pointer field keeps its zero value.
        expect(stored.properties.spec.properties.kept).to.deep.equal({ type: 'integer', maximum: 0 });
        expect(got.spec.versions[0].additionalPrinterColumns).to.deep.equal([{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }]);
        // The test environment's comparison takes the file and the stored form for the same CRD.
        expect(crdDifferences(got, crd)).to.deep.equal([]);
      } finally {
        await t.raw('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        await waitCrdGone(t, name);
      }
    });
  });

  describe('CRD deletion', function () {
    it('keeps a deleted CRD while one of its objects holds a finalizer, and removes both once it is released', async function () {
      this.timeout(180_000);
      const suffix = uniq('d')
        .slice(2)
        .replace(/[^a-z]/g, 'x');
      const kind = `Doomed${suffix[0]!.toUpperCase()}${suffix.slice(1)}`;
      const plural = kind.toLowerCase() + 's';
      const name = `${plural}.${GROUP}`;
      const crd = widgetCrd();
      crd.metadata.name = name;
      crd.spec.names = { plural, kind, singular: kind.toLowerCase(), listKind: `${kind}List` };
      const created = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      expect(created.status, created.text).to.equal(201);
      const path = `/apis/${GROUP}/v1/namespaces/${ns}/${plural}`;
      try {
        await eventually(async () => (await t.raw('GET', path)).status === 200, 30_000, `${plural} served`);
        const obj = {
          ...widget(ns, 'held'),
          kind,
          metadata: { name: 'held', namespace: ns, finalizers: ['conformance.inplace.dev/hold'] },
        };
        const r = await t.raw('POST', path, obj);
        expect(r.status, r.text).to.equal(201);
        await t.raw('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        // The object is being deleted but held: it and the CRD stay.
        const held = await eventually(
          async () => {
            const o = await t.raw('GET', `${path}/held`);
            return o.status === 200 && o.json.metadata.deletionTimestamp ? o.json : undefined;
          },
          60_000,
          'the object to be marked for deletion',
        );
        const c = await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        expect(c.status).to.equal(200);
        expect(c.json.metadata.deletionTimestamp).to.be.a('string');
        const release = await t.raw(
          'PATCH',
          `${path}/held`,
          { metadata: { resourceVersion: held.metadata.resourceVersion, finalizers: null } },
          MERGE,
        );
        expect(release.status, release.text).to.equal(200);
        await waitCrdGone(t, name);
      } finally {
        // Whatever failed above, leave nothing behind.
        await t.raw('PATCH', `${path}/held`, { metadata: { finalizers: null } }, MERGE);
        await t.raw('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        await waitCrdGone(t, name);
      }
    });
  });

  describe('custom resources: structural schema', function () {
    it('rejects schema violations with 422 Invalid and a cause per field', async function () {
      const r = await t.raw(
        'POST',
        widgetPath(ns),
        widget(ns, 'bad1', { size: 'big', color: 'purple', code: 'TOOLONG1', when: 'yesterday', tags: ['a', 'b', 'c', 'd'], port: true }),
      );
      expect(r.status).to.equal(422);
      expect(r.json.reason).to.equal('Invalid');
      expect(r.json.details).to.deep.include({ name: 'bad1', group: GROUP, kind: 'Widget' });
      const byField = new Map<string, string[]>();
      for (const c of r.json.details.causes) byField.set(c.field, [...(byField.get(c.field) ?? []), c.reason]);
      expect(byField.get('spec.size')).to.include('FieldValueTypeInvalid');
      expect(byField.get('spec.color')).to.include('FieldValueNotSupported');
      // A too-long string gets only TooLong (no pattern error); a bad format is a type error.
      expect(byField.get('spec.code')).to.deep.equal(['FieldValueTooLong']);
      expect(byField.get('spec.when')).to.deep.equal(['FieldValueTypeInvalid']);
      expect(byField.get('spec.tags')).to.include('FieldValueTooMany');
      expect(byField.get('spec.port')).to.include('FieldValueTypeInvalid');
      expect((await t.raw('GET', widgetPath(ns, 'bad1'))).status).to.equal(404);
    });

    it('reports the type error message in the format kube-apiserver uses', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, 'bad2', { size: 'big' }));
      const cause = r.json.details.causes.find((c: any) => c.field === 'spec.size');
      expect(cause).to.deep.equal({
        reason: 'FieldValueTypeInvalid',
        message: 'Invalid value: "string": spec.size in body must be of type integer: "string"',
        field: 'spec.size',
      });
    });

    it('requires required fields and checks minimum/maximum', async function () {
      const w = widget(ns, 'bad3');
      delete w.spec.size;
      const r = await t.raw('POST', widgetPath(ns), w);
      expect(r.status).to.equal(422);
      expect(r.json.details.causes).to.deep.include({ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.size' });
      const m = await t.raw('POST', widgetPath(ns), widget(ns, 'bad4', { size: 11 }));
      expect(m.json.details.causes[0].field).to.equal('spec.size');
      expect(m.json.details.causes[0].message).to.contain('less than or equal to 10');
    });

    it('rejects duplicate keys of a list-type map and duplicate set items with Duplicate value', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, 'bad5', { parts: [{ name: 'a' }, { name: 'a' }] }));
      expect(r.status).to.equal(422);
      expect(r.json.details.causes).to.deep.include({
        reason: 'FieldValueDuplicate',
        message: 'Duplicate value: map[string]interface {}{"name":"a"}',
        field: 'spec.parts[1]',
      });
      const s = await t.raw('POST', widgetPath(ns), widget(ns, 'bad6', { tags: ['x', 'x'] }));
      expect(s.status).to.equal(422);
      expect(s.json.details.causes[0]).to.include({ reason: 'FieldValueDuplicate', field: 'spec.tags[1]' });
    });

    it('accepts int-or-string, nullable, preserve-unknown-fields and embedded resources', async function () {
      const name = uniq('ok');
      const r = await t.raw(
        'POST',
        widgetPath(ns),
        widget(ns, name, {
          port: 'http',
          note: null,
          when: '2026-01-02T03:04:05Z',
          extra: { anything: { goes: [1, 2] } },
          template: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'inner', labels: { a: 'b' } }, data: { x: 'y' } },
        }),
      );
      expect(r.status, r.text).to.equal(201);
      expect(r.json.spec.port).to.equal('http');
      expect(r.json.spec.note).to.equal(null);
      expect(r.json.spec.extra).to.deep.equal({ anything: { goes: [1, 2] } });
      expect(r.json.spec.template.metadata).to.deep.equal({ name: 'inner', labels: { a: 'b' } });
      const n = await t.raw('POST', widgetPath(ns), widget(ns, uniq('ok'), { port: 8080 }));
      expect(n.status).to.equal(201);
    });

    it('requires apiVersion and kind on an embedded resource', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, 'bad7', { template: { metadata: { name: 'x' } } }));
      expect(r.status).to.equal(422);
      const fields = r.json.details.causes.map((c: any) => c.field);
      expect(fields).to.include.members(['spec.template.apiVersion', 'spec.template.kind']);
    });

    it('prunes unknown fields, with a Warning header per field under fieldValidation=Warn (the default)', async function () {
      const name = uniq('prune');
      const r = await t.raw('POST', widgetPath(ns), {
        ...widget(ns, name, { bogus: 1, nested: { level: 'x', junk: true } }),
        topLevel: 'x',
      });
      expect(r.status).to.equal(201);
      expect(r.json.spec).to.not.have.property('bogus');
      expect(r.json.spec.nested).to.not.have.property('junk');
      expect(r.json).to.not.have.property('topLevel');
      const warning = String(r.headers.warning);
      expect(warning).to.contain('299 - "unknown field \\"spec.bogus\\""');
      expect(warning).to.contain('unknown field \\"spec.nested.junk\\"');
      const stored = await t.raw('GET', widgetPath(ns, name));
      expect(stored.json.spec).to.not.have.property('bogus');
    });

    it('rejects unknown fields under fieldValidation=Strict with 400 on create and 422 on patch', async function () {
      const name = uniq('strict');
      const r = await t.raw('POST', `${widgetPath(ns)}?fieldValidation=Strict`, widget(ns, name, { bogus: 1 }));
      expect(r.status).to.equal(400);
      expect(r.json.reason).to.equal('BadRequest');
      expect(r.json.message).to.contain('strict decoding error: unknown field "spec.bogus"');
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      const p = await t.raw('PATCH', `${widgetPath(ns, name)}?fieldValidation=Strict`, { spec: { bogus: 1 } }, MERGE);
      expect(p.status).to.equal(422);
      expect(p.json.reason).to.equal('Invalid');
      expect(p.json.details.causes[0].field).to.equal('patch');
      expect(p.json.message).to.contain('strict decoding error: unknown field "spec.bogus"');
    });

    it('drops unknown fields silently under fieldValidation=Ignore', async function () {
      const r = await t.raw('POST', `${widgetPath(ns)}?fieldValidation=Ignore`, widget(ns, uniq('ign'), { bogus: 1 }));
      expect(r.status).to.equal(201);
      expect(r.headers.warning).to.equal(undefined);
      expect(r.json.spec).to.not.have.property('bogus');
    });

    it('applies defaults, including nested objects and array items', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, uniq('def'), { parts: [{ name: 'a' }, { name: 'b', count: 5 }] }));
      expect(r.status).to.equal(201);
      expect(r.json.spec.color).to.equal('red');
      expect(r.json.spec.nested).to.deep.equal({ level: 'info', depth: 3 });
      expect(r.json.spec.parts).to.deep.equal([
        { name: 'a', count: 1 },
        { name: 'b', count: 5 },
      ]);
    });
  });

  describe('custom resources: CEL x-kubernetes-validations', function () {
    it('evaluates create-time rules with their message', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, 'cel1', { mode: 'turbo' }));
      expect(r.status).to.equal(422);
      expect(r.json.details.causes).to.deep.include({
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "object": mode must be fast or slow',
        field: 'spec',
      });
      const a = await t.raw('POST', widgetPath(ns), widget(ns, 'cel2', { parts: [{ name: 'a', count: -1 }] }));
      expect(a.status).to.equal(422);
      expect(a.json.message).to.contain('part counts are never negative');
    });

    it("refuses a CRD whose rule's estimated cost exceeds the budget (no maxItems / maxLength above it)", async function () {
      const crd = widgetCrd();
      crd.metadata.name = `costlies.${GROUP}`;
      crd.spec.names = { plural: 'costlies', singular: 'costly', kind: 'Costly', listKind: 'CostlyList' };
      for (const v of crd.spec.versions) {
        const parts = v.schema.openAPIV3Schema.properties.spec.properties.parts;
        delete parts.maxItems;
        delete parts.items.properties.phase.maxLength;
      }
      const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      expect(r.status, r.text).to.equal(422);
      // Both versions share one schema: the real server validates it once, as spec.validation.
      const rulePath =
        'spec.validation.openAPIV3Schema.properties[spec].properties[parts].items.properties[phase].x-kubernetes-validations[0].rule';
      expect(r.json.details.causes).to.deep.include({
        reason: 'FieldValueForbidden',
        message:
          'Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)',
        field: rulePath,
      });
      expect((await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/costlies.${GROUP}`)).status).to.equal(404);
    });

    it('skips the rules after a type, required, enum or size error and says so with a fieldless cause', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, uniq('order'), { color: 'purple', mode: 'turbo' }));
      expect(r.status).to.equal(422);
      expect(r.json.details.causes).to.deep.equal([
        {
          reason: 'FieldValueNotSupported',
          message: 'Unsupported value: "purple": supported values: "red", "green", "blue"',
          field: 'spec.color',
        },
        {
          reason: 'FieldValueInvalid',
          message:
            'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
          field: '<nil>',
        },
      ]);
      expect(r.json.message).to.equal(
        `Widget.${GROUP} "${r.json.details.name}" is invalid: [spec.color: Unsupported value: "purple": supported values: "red", "green", "blue", <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
      );
      expect(r.text).to.not.contain('mode must be fast or slow');
    });

    it('still evaluates the rules after a pattern or range error (not blocking)', async function () {
      const r = await t.raw('POST', widgetPath(ns), widget(ns, uniq('order'), { code: 'A1', mode: 'turbo' }));
      expect(r.status).to.equal(422);
      const fields = r.json.details.causes.map((c: any) => c.field);
      expect(fields).to.deep.equal(['spec.code', 'spec']);
      expect(r.json.details.causes[1].message).to.equal('Invalid value: "object": mode must be fast or slow');
    });

    it('evaluates transition rules (oldSelf) on update only', async function () {
      const name = uniq('cel');
      const c = await t.raw('POST', widgetPath(ns), widget(ns, name, { color: 'blue', parts: [{ name: 'p', phase: 'new' }] }));
      expect(c.status, c.text).to.equal(201);
      const r = await t.raw('PATCH', widgetPath(ns, name), { spec: { color: 'green' } }, MERGE);
      expect(r.status).to.equal(422);
      expect(r.json.details.causes).to.deep.include({
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "object": color is immutable',
        field: 'spec',
      });
      const ok = await t.raw('PATCH', widgetPath(ns, name), { spec: { parts: [{ name: 'p', phase: 'running' }] } }, MERGE);
      expect(ok.status, ok.text).to.equal(200);
      const back = await t.raw('PATCH', widgetPath(ns, name), { spec: { parts: [{ name: 'p', phase: 'new' }] } }, MERGE);
      expect(back.status).to.equal(422);
      expect(back.json.details.causes[0]).to.include({ field: 'spec.parts[0].phase' });
      const added = await t.raw(
        'PATCH',
        widgetPath(ns, name),
        {
          spec: {
            parts: [
              { name: 'p', phase: 'running' },
              { name: 'q', phase: 'done' },
            ],
          },
        },
        MERGE,
      );
      expect(added.status, 'a new list-map item has no old value, so its transition rule is skipped').to.equal(200);
    });
  });

  describe('custom resources: status subresource and generation', function () {
    it('drops status on create, ignores status on main-resource writes and everything but status on /status', async function () {
      const name = uniq('st');
      const c = await t.raw('POST', widgetPath(ns), { ...widget(ns, name), status: { phase: 'Sneaky' } });
      expect(c.json).to.not.have.property('status');
      expect(c.json.metadata.generation).to.equal(1);
      const s = await t.raw(
        'PATCH',
        widgetPath(ns, name, 'status'),
        { status: { phase: 'Running' }, spec: { size: 9 }, metadata: { labels: { ignored: 'yes' } } },
        MERGE,
      );
      expect(s.status).to.equal(200);
      expect(s.json.status.phase).to.equal('Running');
      expect(s.json.spec.size).to.equal(2);
      expect(s.json.metadata.labels?.ignored).to.equal(undefined);
      expect(s.json.metadata.generation).to.equal(1);
      const m = await t.raw('PATCH', widgetPath(ns, name), { status: { phase: 'Hacked' }, metadata: { labels: { l: 'v' } } }, MERGE);
      expect(m.json.status.phase).to.equal('Running');
      expect(m.json.metadata.generation, 'metadata-only change').to.equal(1);
      const sp = await t.raw('PATCH', widgetPath(ns, name), { spec: { size: 4 } }, MERGE);
      expect(sp.json.metadata.generation).to.equal(2);
      const full = sp.json;
      full.status = { phase: 'Ignored' };
      const put = await t.raw('PUT', widgetPath(ns, name), full);
      expect(put.json.status.phase).to.equal('Running');
      expect(put.json.metadata.generation).to.equal(2);
      const getStatus = await t.raw('GET', widgetPath(ns, name, 'status'));
      expect(getStatus.json.status.phase).to.equal('Running');
    });

    it('requires metadata.resourceVersion on a custom resource PUT', async function () {
      const name = uniq('norv');
      const c = await t.raw('POST', widgetPath(ns), widget(ns, name));
      delete c.json.metadata.resourceVersion;
      const r = await t.raw('PUT', widgetPath(ns, name), c.json);
      expect(r.status).to.equal(422);
      expect(r.json.details.causes[0].field).to.equal('metadata.resourceVersion');
    });

    it('does not bump resourceVersion for a no-op patch', async function () {
      const name = uniq('noop');
      const c = await t.raw('POST', widgetPath(ns), widget(ns, name));
      const p = await t.raw('PATCH', widgetPath(ns, name), { spec: { size: 2 } }, MERGE);
      expect(p.json.metadata.resourceVersion).to.equal(c.json.metadata.resourceVersion);
    });
  });

  describe('versions', function () {
    it('serves every served version over the storage version (conversion None rewrites apiVersion)', async function () {
      const name = uniq('ver');
      const c = await t.raw('POST', widgetPath(ns, undefined, undefined, 'v1beta1'), widget(ns, name, {}, 'v1beta1'));
      expect(c.status, c.text).to.equal(201);
      expect(c.json.apiVersion).to.equal(`${GROUP}/v1beta1`);
      const v1 = await t.raw('GET', widgetPath(ns, name));
      expect(v1.json.apiVersion).to.equal(`${GROUP}/v1`);
      const list = await t.raw('GET', widgetPath(ns, undefined, undefined, 'v1beta1'));
      expect(list.json.apiVersion).to.equal(`${GROUP}/v1beta1`);
      expect(list.json.items.every((i: any) => i.apiVersion === `${GROUP}/v1beta1`)).to.equal(true);
    });
  });

  describe('list: selectors and paging', function () {
    let lns = '';
    before(async function () {
      const name = uniq('list');
      await core.createNamespace({ body: { metadata: { name } } });
      lns = name;
      const specs: Array<[string, Record<string, string>]> = [
        ['a', { tier: 'web', env: 'prod' }],
        ['b', { tier: 'web', env: 'dev' }],
        ['c', { tier: 'db', env: 'prod' }],
        ['d', { tier: 'cache' }],
        ['e', {}],
      ];
      for (const [n, labels] of specs) {
        await objects.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n, namespace: lns, labels } } as KubernetesObject);
      }
    });
    after(async function () {
      if (lns) await t.raw('DELETE', `/api/v1/namespaces/${lns}`);
    });

    const names = async (q: string): Promise<string[]> => {
      const r = await t.raw('GET', `/api/v1/namespaces/${lns}/configmaps?${q}`);
      expect(r.status, r.text).to.equal(200);
      return r.json.items.map((i: any) => i.metadata.name).filter((n: string) => n.length === 1);
    };

    for (const [sel, want] of [
      ['tier=web', ['a', 'b']],
      ['tier==web', ['a', 'b']],
      ['tier!=web', ['c', 'd', 'e']],
      ['tier in (web,db)', ['a', 'b', 'c']],
      ['tier notin (web,db)', ['d', 'e']],
      ['env', ['a', 'b', 'c']],
      ['!env', ['d', 'e']],
      ['tier=web,env=prod', ['a']],
    ] as Array<[string, string[]]>) {
      it(`selects labels with "${sel}"`, async function () {
        expect(await names(`labelSelector=${encodeURIComponent(sel)}`)).to.deep.equal(want);
      });
    }

    it('rejects an unparsable label selector with 400', async function () {
      const r = await t.raw('GET', `/api/v1/namespaces/${lns}/configmaps?labelSelector=${encodeURIComponent('a in (b')}`);
      expect(r.status).to.equal(400);
    });

    it('selects fields metadata.name and metadata.namespace, and rejects unsupported fields', async function () {
      expect(await names('fieldSelector=metadata.name%3Dc')).to.deep.equal(['c']);
      expect(await names('fieldSelector=metadata.name!%3Dc')).to.deep.equal(['a', 'b', 'd', 'e']);
      const all = await t.raw('GET', `/api/v1/configmaps?fieldSelector=metadata.namespace%3D${lns}`);
      expect(all.json.items.map((i: any) => i.metadata.name).filter((n: string) => n.length === 1)).to.deep.equal([
        'a',
        'b',
        'c',
        'd',
        'e',
      ]);
      const bad = await t.raw('GET', `/api/v1/namespaces/${lns}/configmaps?fieldSelector=spec.bogus%3Dx`);
      expect(bad.status).to.equal(400);
    });

    it('pages with limit and continue, in name order, with the list resourceVersion', async function () {
      const first = await t.raw('GET', `/api/v1/namespaces/${lns}/configmaps?labelSelector=tier&limit=2`);
      expect(first.json.items.map((i: any) => i.metadata.name)).to.deep.equal(['a', 'b']);
      expect(first.json.metadata.continue).to.be.a('string');
      expect(first.json.metadata.resourceVersion).to.match(/^\d+$/);
      // A real server fills a selector's page from etcd pages, so the last matching page may still carry a continue
      // token (then an empty page follows); the embedded server never does. Clients page until continue is empty.
      const rest: string[] = [];
      let cont: string = first.json.metadata.continue;
      for (let pages = 0; cont; pages++) {
        expect(pages, 'pages').to.be.below(5);
        const r = await t.raw(
          'GET',
          `/api/v1/namespaces/${lns}/configmaps?labelSelector=tier&limit=2&continue=${encodeURIComponent(cont)}`,
        );
        expect(r.status, r.text).to.equal(200);
        expect(r.json.items.length).to.be.at.most(2);
        rest.push(...r.json.items.map((i: any) => i.metadata.name));
        cont = r.json.metadata.continue ?? '';
      }
      expect(rest).to.deep.equal(['c', 'd']);
    });

    it('lists across namespaces and through CustomObjectsApi', async function () {
      const w = (await custom.listNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: PLURAL })) as any;
      expect(w.kind).to.equal('WidgetList');
      expect(w.items.length).to.be.greaterThan(0);
      const all = await t.raw('GET', `/apis/${GROUP}/v1/${PLURAL}`);
      expect(all.json.items.some((i: any) => i.metadata.namespace === ns)).to.equal(true);
    });
  });

  describe('tables', function () {
    const TABLE = {
      Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
    };

    it('renders printer columns with jsonPath filters and priority for a CRD', async function () {
      const name = uniq('tbl');
      await t.raw('POST', widgetPath(ns), widget(ns, name, { size: 7 }));
      await t.raw(
        'PATCH',
        widgetPath(ns, name, 'status'),
        {
          status: {
            conditions: [
              { type: 'Ready', status: 'False', reason: 'Waiting' },
              { type: 'Other', status: 'True' },
            ],
          },
        },
        MERGE,
      );
      const r = await t.raw('GET', `${widgetPath(ns)}?fieldSelector=metadata.name%3D${name}`, undefined, TABLE);
      expect(r.json.kind).to.equal('Table');
      expect(r.json.apiVersion).to.equal('meta.k8s.io/v1');
      expect(r.json.columnDefinitions.map((c: any) => [c.name, c.type, c.priority])).to.deep.equal([
        ['Name', 'string', 0],
        ['Size', 'integer', 0],
        ['Ready', 'string', 0],
        ['Reason', 'string', 1],
        ['Age', 'date', 0],
      ]);
      const row = r.json.rows[0];
      expect(row.cells.slice(0, 4)).to.deep.equal([name, 7, 'False', 'Waiting']);
      expect(row.cells[4]).to.match(/^\d+s$/);
      expect(row.object.kind).to.equal('PartialObjectMetadata');
      expect(row.object.metadata.name).to.equal(name);
    });

    it('renders Name and Age at least for a built-in kind', async function () {
      await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'tblcm' },
        data: { a: '1', b: '2' },
      });
      const r = await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/tblcm`, undefined, TABLE);
      const cols = r.json.columnDefinitions.map((c: any) => c.name);
      expect(cols[0]).to.equal('Name');
      expect(cols).to.include('Age');
      expect(r.json.rows[0].cells[0]).to.equal('tblcm');
    });
  });

  describe('watch', function () {
    it('streams ADDED/MODIFIED/DELETED from a resourceVersion, as JSON lines', async function () {
      const name = uniq('w');
      const list = await t.raw('GET', widgetPath(ns));
      const w = await t.watch(`${widgetPath(ns)}?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`);
      try {
        await t.raw('POST', widgetPath(ns), widget(ns, name));
        await t.raw('PATCH', widgetPath(ns, name), { spec: { size: 5 } }, MERGE);
        await t.raw('PATCH', widgetPath(ns, name, 'status'), { status: { phase: 'Up' } }, MERGE);
        await t.raw('DELETE', widgetPath(ns, name));
        const evs = await w.until((e) => e.some((x) => x.type === 'DELETED' && x.object.metadata.name === name));
        const mine = evs.filter((e) => e.object.metadata.name === name);
        expect(mine.map((e) => e.type)).to.deep.equal(['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED']);
        expect(mine[1].object.spec.size).to.equal(5);
        expect(mine[2].object.status.phase).to.equal('Up');
        const rvs = mine.map((e) => Number(e.object.metadata.resourceVersion));
        expect([...rvs].sort((a, b) => a - b)).to.deep.equal(rvs);
      } finally {
        w.stop();
      }
    });

    it('starts with ADDED for existing objects when resourceVersion is absent or "0"', async function () {
      const name = uniq('w0');
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      for (const q of ['', '&resourceVersion=0']) {
        const w = await t.watch(`${widgetPath(ns)}?watch=true${q}&fieldSelector=metadata.name%3D${name}`);
        try {
          const evs = await w.until((e) => e.length >= 1);
          expect(evs[0].type).to.equal('ADDED');
          expect(evs[0].object.metadata.name).to.equal(name);
        } finally {
          w.stop();
        }
      }
    });

    it('filters by label selector and turns label transitions into ADDED/DELETED', async function () {
      const name = uniq('wl');
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      const rv = (await t.raw('GET', widgetPath(ns))).json.metadata.resourceVersion;
      const w = await t.watch(`${widgetPath(ns)}?watch=1&resourceVersion=${rv}&labelSelector=pick%3Dyes`);
      try {
        await t.raw('PATCH', widgetPath(ns, name), { metadata: { labels: { pick: 'yes' } } }, MERGE);
        await t.raw('PATCH', widgetPath(ns, name), { spec: { size: 3 } }, MERGE);
        await t.raw('PATCH', widgetPath(ns, name), { metadata: { labels: { pick: 'no' } } }, MERGE);
        const evs = await w.until((e) => e.some((x) => x.type === 'DELETED'));
        expect(evs.filter((e) => e.object.metadata.name === name).map((e) => e.type)).to.deep.equal(['ADDED', 'MODIFIED', 'DELETED']);
      } finally {
        w.stop();
      }
    });

    it('sends BOOKMARK events when allowed, carrying only the resourceVersion', async function () {
      if (!t.local) {
        console.log(
          '    (skipped on INPLACE_TEST_KUBECONFIG: needs the embedded API server, a real kube-apiserver sends bookmarks about once a minute)',
        );
        this.skip();
      }
      const rv = (await t.raw('GET', widgetPath(ns))).json.metadata.resourceVersion;
      const w = await t.watch(`${widgetPath(ns)}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`);
      try {
        const evs = await w.until((e) => e.some((x) => x.type === 'BOOKMARK'));
        const b = evs.find((x) => x.type === 'BOOKMARK');
        expect(b.object).to.deep.equal({
          apiVersion: `${GROUP}/v1`,
          kind: 'Widget',
          metadata: { resourceVersion: b.object.metadata.resourceVersion },
        });
      } finally {
        w.stop();
      }
    });

    it('ends the stream after timeoutSeconds', async function () {
      const rv = (await t.raw('GET', widgetPath(ns))).json.metadata.resourceVersion;
      const w = await t.watch(`${widgetPath(ns)}?watch=1&timeoutSeconds=1&resourceVersion=${rv}`);
      await w.ended;
      expect(w.status).to.equal(200);
    });

    it('answers a watch from a resourceVersion older than its watch cache with 200 and one ERROR event, 410 Expired', async function () {
      // kube-apiserver serves watches from its watch cache, whose history starts when the cache listed (at server
      // start for built-ins, when a CRD is first served for custom resources); resourceVersion 1 is older on any
      // server. Informers relist on it (src/runtime/informer.ts).
      const w = await t.watch(`/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=1&timeoutSeconds=5`);
      await w.ended;
      expect(w.status).to.equal(200);
      expect(w.events).to.have.length(1);
      expect(w.events[0].type).to.equal('ERROR');
      expect(w.events[0].object).to.include({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 });
      expect(w.events[0].object.message).to.match(/^too old resource version: 1 \(\d+\)$/);
      // From the resourceVersion of a list, the watch is served.
      const listed = (await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps`)).json.metadata.resourceVersion;
      const ok = await t.watch(`/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${listed}&timeoutSeconds=1`);
      await ok.ended;
      expect(ok.events.filter((e) => e.type === 'ERROR')).to.deep.equal([]);
    });
  });

  describe('deletion: finalizers, preconditions, propagation, garbage collection', function () {
    it('keeps an object with finalizers (deletionTimestamp set) until the finalizers are removed', async function () {
      const name = uniq('fin');
      await t.raw('POST', widgetPath(ns), { ...widget(ns, name), metadata: { name, namespace: ns, finalizers: ['example.com/hold'] } });
      const d = await t.raw('DELETE', widgetPath(ns, name));
      expect(d.status).to.equal(200);
      const held = await t.raw('GET', widgetPath(ns, name));
      expect(held.json.metadata.deletionTimestamp).to.be.a('string');
      const add = await t.raw('PATCH', widgetPath(ns, name), { metadata: { finalizers: ['example.com/hold', 'example.com/new'] } }, MERGE);
      expect(add.status, 'no new finalizers while deleting').to.equal(422);
      const rm = await t.raw('PATCH', widgetPath(ns, name), [{ op: 'remove', path: '/metadata/finalizers' }], JSONPATCH);
      expect(rm.status).to.equal(200);
      expect((await t.raw('GET', widgetPath(ns, name))).status).to.equal(404);
    });

    it('fails delete preconditions with 409 Conflict', async function () {
      const name = uniq('pre');
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      const r = await t.raw('DELETE', widgetPath(ns, name), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
      });
      expect(r.status).to.equal(409);
      expect(r.json.reason).to.equal('Conflict');
      const rv = await t.raw('DELETE', widgetPath(ns, name), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        preconditions: { resourceVersion: '1' },
      });
      expect(rv.status).to.equal(409);
      expect((await t.raw('GET', widgetPath(ns, name))).status).to.equal(200);
    });

    it('does not persist dryRun=All creates, updates or deletes', async function () {
      const name = uniq('dry');
      const c = await t.raw('POST', `${widgetPath(ns)}?dryRun=All`, widget(ns, name));
      expect(c.status).to.equal(201);
      expect((await t.raw('GET', widgetPath(ns, name))).status).to.equal(404);
      await t.raw('POST', widgetPath(ns), widget(ns, name));
      const p = await t.raw('PATCH', `${widgetPath(ns, name)}?dryRun=All`, { spec: { size: 9 } }, MERGE);
      expect(p.json.spec.size).to.equal(9);
      expect((await t.raw('GET', widgetPath(ns, name))).json.spec.size).to.equal(2);
      expect((await t.raw('DELETE', `${widgetPath(ns, name)}?dryRun=All`)).status).to.equal(200);
      expect((await t.raw('GET', widgetPath(ns, name))).status).to.equal(200);
    });

    it('deletes a collection by label selector', async function () {
      for (const n of ['dc1', 'dc2', 'dc3'])
        await t.raw('POST', widgetPath(ns), {
          ...widget(ns, n),
          metadata: { name: n, namespace: ns, labels: { batch: n === 'dc3' ? 'keep' : 'drop' } },
        });
      const r = await t.raw('DELETE', `${widgetPath(ns)}?labelSelector=batch%3Ddrop`);
      expect(r.status).to.equal(200);
      const left = await t.raw('GET', `${widgetPath(ns)}?labelSelector=batch`);
      expect(left.json.items.map((i: any) => i.metadata.name)).to.deep.equal(['dc3']);
    });

    const owned = async (owner: any, name: string, block = false): Promise<any> => {
      const r = await t.raw('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name,
          ownerReferences: [
            {
              apiVersion: `${GROUP}/v1`,
              kind: 'Widget',
              name: owner.metadata.name,
              uid: owner.metadata.uid,
              ...(block ? { blockOwnerDeletion: true } : {}),
            },
          ],
        },
      });
      expect(r.status, r.text).to.equal(201);
      return r.json;
    };

    it('garbage-collects dependents after a background delete of the owner', async function () {
      this.timeout(2 * GC_WAIT_MS);
      const owner = (await t.raw('POST', widgetPath(ns), widget(ns, uniq('owner')))).json;
      const dep = uniq('dep');
      await owned(owner, dep);
      await t.raw('DELETE', widgetPath(ns, owner.metadata.name), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Background',
      });
      await eventually(
        async () => (await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/${dep}`)).status === 404,
        GC_WAIT_MS,
        'dependent collected',
      );
    });

    it('deletes dependents first under foreground deletion, then the owner', async function () {
      this.timeout(3 * GC_WAIT_MS);
      const owner = (await t.raw('POST', widgetPath(ns), widget(ns, uniq('fg')))).json;
      const dep = uniq('fgdep');
      await owned(owner, dep, true);
      const d = await t.raw('DELETE', widgetPath(ns, owner.metadata.name), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Foreground',
      });
      expect(d.status).to.be.oneOf([200, 202]);
      expect(d.json.metadata.finalizers).to.include('foregroundDeletion');
      await eventually(
        async () => (await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/${dep}`)).status === 404,
        GC_WAIT_MS,
        'dependent deleted',
      );
      await eventually(async () => (await t.raw('GET', widgetPath(ns, owner.metadata.name))).status === 404, GC_WAIT_MS, 'owner deleted');
    });

    it('orphans dependents (removing the ownerReference) under Orphan propagation', async function () {
      this.timeout(2 * GC_WAIT_MS);
      const owner = (await t.raw('POST', widgetPath(ns), widget(ns, uniq('orph')))).json;
      const dep = uniq('orphdep');
      await owned(owner, dep);
      await t.raw('DELETE', widgetPath(ns, owner.metadata.name), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Orphan' });
      await eventually(async () => (await t.raw('GET', widgetPath(ns, owner.metadata.name))).status === 404, GC_WAIT_MS, 'owner deleted');
      const left = await t.raw('GET', `/api/v1/namespaces/${ns}/configmaps/${dep}`);
      expect(left.status).to.equal(200);
      expect(left.json.metadata.ownerReferences ?? []).to.deep.equal([]);
    });

    it('removes every object of a namespace when the namespace is deleted', async function () {
      const dns = uniq('nsdel');
      await core.createNamespace({ body: { metadata: { name: dns } } });
      await t.raw('POST', widgetPath(dns), widget(dns, 'x'));
      await t.raw('POST', `/api/v1/namespaces/${dns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'y' } });
      const d = await t.raw('DELETE', `/api/v1/namespaces/${dns}`);
      expect(d.status).to.equal(200);
      expect(d.json.status.phase).to.equal('Terminating');
      const blocked = await t.raw('POST', `/api/v1/namespaces/${dns}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'z' },
      });
      expect([403, 404]).to.include(blocked.status);
      await eventually(async () => (await t.raw('GET', `/api/v1/namespaces/${dns}`)).status === 404, 60_000, 'namespace gone');
      expect((await t.raw('GET', widgetPath(dns, 'x'))).status).to.equal(404);
    });
  });

  describe('server-side apply', function () {
    const APPLY = (mgr: string, force = false): string => `?fieldManager=${mgr}${force ? '&force=true' : ''}`;
    const YAML = { 'Content-Type': 'application/apply-patch+yaml' };

    it('creates an object from an apply configuration and records the Apply manager', async function () {
      const name = uniq('ssa');
      const body = JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name, namespace: ns }, spec: { size: 3 } });
      const r = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('mgr-a')}`, body, YAML);
      expect(r.status, r.text).to.equal(201);
      expect(r.json.spec.size).to.equal(3);
      const entry = r.json.metadata.managedFields.find((m: any) => m.manager === 'mgr-a');
      expect(entry.operation).to.equal('Apply');
      expect(entry.fieldsV1['f:spec']).to.have.property('f:size');
    });

    it('conflicts with another applier unless forced, and removes fields a manager stops applying', async function () {
      const name = uniq('ssa');
      const cfg = (spec: object): string =>
        JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name, namespace: ns }, spec });
      expect((await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('mgr-a')}`, cfg({ size: 3, mode: 'fast' }), YAML)).status).to.equal(201);
      const c = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('mgr-b')}`, cfg({ size: 4 }), YAML);
      expect(c.status).to.equal(409);
      expect(c.json.reason).to.equal('Conflict');
      expect(c.json.message).to.contain('conflict with "mgr-a"');
      const f = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('mgr-b', true)}`, cfg({ size: 4 }), YAML);
      expect(f.status).to.equal(200);
      expect(f.json.spec.size).to.equal(4);
      const shrink = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('mgr-a')}`, cfg({ size: 4 }), YAML);
      expect(shrink.status, shrink.text).to.equal(200);
      expect(shrink.json.spec).to.not.have.property('mode');
    });

    /** The managedFields entries of an object, by manager and operation (and subresource). */
    const entriesOf = (o: any): Record<string, any> =>
      Object.fromEntries(
        (o.metadata.managedFields ?? []).map((e: any) => [`${e.manager} ${e.operation}${e.subresource ? ` ${e.subresource}` : ''}`, e]),
      );

    it('creates, updates and patches record their manager (Update entries, per subresource); a change moves a field to its writer', async function () {
      const name = uniq('mf');
      const c = await t.raw('POST', `${widgetPath(ns)}?fieldManager=creator`, widget(ns, name, { size: 3, mode: 'fast' }));
      expect(c.status, c.text).to.equal(201);
      const created = entriesOf(c.json)['creator Update'];
      expect(created, JSON.stringify(c.json.metadata.managedFields)).to.include({
        operation: 'Update',
        apiVersion: `${GROUP}/v1`,
        fieldsType: 'FieldsV1',
      });
      // With the schema's defaults, which are the creator's too.
      expect(created.fieldsV1['f:spec']).to.include.keys('.', 'f:size', 'f:mode');

      const p = await t.raw('PATCH', `${widgetPath(ns, name)}?fieldManager=resizer`, { spec: { size: 4 } }, MERGE);
      expect(p.status, p.text).to.equal(200);
      const e = entriesOf(p.json);
      expect(e['resizer Update'].fieldsV1).to.deep.equal({ 'f:spec': { 'f:size': {} } });
      // The field it changed is no longer the creator's; the rest stays the creator's.
      expect(e['creator Update'].fieldsV1['f:spec']).to.include.keys('.', 'f:mode').and.not.have.property('f:size');

      // The same value again is no change: the entry is not moved back.
      const same = await t.raw('PATCH', `${widgetPath(ns, name)}?fieldManager=creator`, { spec: { size: 4 } }, MERGE);
      expect(entriesOf(same.json)['resizer Update'].fieldsV1).to.deep.equal({ 'f:spec': { 'f:size': {} } });

      const st = await t.raw('PATCH', `${widgetPath(ns, name, 'status')}?fieldManager=reporter`, { status: { phase: 'Ready' } }, MERGE);
      expect(st.status, st.text).to.equal(200);
      const s2 = entriesOf(st.json)['reporter Update status'];
      expect(s2, JSON.stringify(st.json.metadata.managedFields)).to.not.equal(undefined);
      expect(s2.fieldsV1).to.deep.equal({ 'f:status': { '.': {}, 'f:phase': {} } });

      // An entry left with nothing goes; a field removed by a write leaves every entry, the writer's too.
      const take = await t.raw('PATCH', `${widgetPath(ns, name)}?fieldManager=other`, { spec: { size: 5 } }, MERGE);
      expect(take.status, take.text).to.equal(200);
      expect(entriesOf(take.json)).to.not.have.property('resizer Update');
      const rm = await t.raw('PATCH', `${widgetPath(ns, name)}?fieldManager=other`, { spec: { mode: null } }, MERGE);
      expect(rm.status, rm.text).to.equal(200);
      const e3 = entriesOf(rm.json);
      expect(e3['other Update'].fieldsV1).to.deep.equal({ 'f:spec': { 'f:size': {} } });
      expect(e3['creator Update'].fieldsV1['f:spec']).to.include.keys('.').and.not.have.any.keys('f:size', 'f:mode');
    });

    it('list-type map items are fields by key: a writer owns the items it adds and the item fields it changes', async function () {
      const name = uniq('mfc');
      expect((await t.raw('POST', widgetPath(ns), widget(ns, name))).status).to.equal(201);
      const status = (conditions: object[]): object => ({ status: { conditions } });
      const a = await t.raw(
        'PATCH',
        `${widgetPath(ns, name, 'status')}?fieldManager=reporter-a`,
        status([{ type: 'Ready', status: 'False' }]),
        MERGE,
      );
      expect(a.status, a.text).to.equal(200);
      const ready = 'k:{"type":"Ready"}';
      expect(entriesOf(a.json)['reporter-a Update status'].fieldsV1['f:status']['f:conditions']).to.deep.equal({
        '.': {},
        [ready]: { '.': {}, 'f:type': {}, 'f:status': {} },
      });
      const b = await t.raw(
        'PATCH',
        `${widgetPath(ns, name, 'status')}?fieldManager=reporter-b`,
        status([
          { type: 'Ready', status: 'True' },
          { type: 'Synced', status: 'True' },
        ]),
        MERGE,
      );
      expect(b.status, b.text).to.equal(200);
      const e = entriesOf(b.json);
      expect(e['reporter-b Update status'].fieldsV1['f:status']['f:conditions']).to.deep.equal({
        [ready]: { 'f:status': {} },
        'k:{"type":"Synced"}': { '.': {}, 'f:type': {}, 'f:status': {} },
      });
      expect(e['reporter-a Update status'].fieldsV1['f:status']['f:conditions']).to.deep.equal({
        '.': {},
        [ready]: { '.': {}, 'f:type': {} },
      });
    });

    it('a write without fieldManager is recorded under its User-Agent, up to the first "/"', async function () {
      const name = uniq('mfua');
      const c = await t.raw('POST', widgetPath(ns), widget(ns, name), { 'User-Agent': 'agent-x/1.2.3 (linux/amd64)' });
      expect(c.status, c.text).to.equal(201);
      expect(Object.keys(entriesOf(c.json))).to.deep.equal(['agent-x Update']);
    });

    it('an apply conflicts with a field an updater owns with another value, not with the same value', async function () {
      const name = uniq('mfssa');
      const cfg = (spec: object): string =>
        JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name, namespace: ns }, spec });
      expect((await t.raw('POST', `${widgetPath(ns)}?fieldManager=editor`, widget(ns, name, { size: 3 }))).status).to.equal(201);
      const c = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('gitops')}`, cfg({ size: 5 }), YAML);
      expect(c.status, c.text).to.equal(409);
      expect(c.json.message).to.contain('conflict with "editor"');
      const same = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('gitops')}`, cfg({ size: 3 }), YAML);
      expect(same.status, same.text).to.equal(200);
      // Shared: both keep it.
      expect(entriesOf(same.json)['editor Update'].fieldsV1['f:spec']).to.have.property('f:size');
      expect(entriesOf(same.json)['gitops Apply'].fieldsV1['f:spec']).to.have.property('f:size');
      const forced = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('gitops', true)}`, cfg({ size: 5 }), YAML);
      expect(forced.status, forced.text).to.equal(200);
      expect(forced.json.spec.size).to.equal(5);
      expect(entriesOf(forced.json)['editor Update']?.fieldsV1?.['f:spec'] ?? {}).to.not.have.property('f:size');
    });

    it('yaml apply configurations are accepted', async function () {
      const name = uniq('ssay');
      const yaml = `apiVersion: ${GROUP}/v1\nkind: Widget\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  size: 6\n`;
      const r = await t.raw('PATCH', `${widgetPath(ns, name)}${APPLY('y')}`, yaml, YAML);
      expect(r.status, r.text).to.equal(201);
      expect(r.json.spec.size).to.equal(6);
    });
  });
});
