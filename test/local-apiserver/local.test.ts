/* eslint-disable @typescript-eslint/no-explicit-any -- raw API JSON is asserted structurally */
// Local-only behaviour of the embedded API server: persistence across restarts, the watch window, fault injection,
// plain HTTP, the CLI verb, the real Cluster API CRDs, and CRD lifecycle details.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startLocalApiServer } from '../../tools/local-apiserver/index.js';
import { RESPONSE_SLICE_BYTES } from '../../tools/local-apiserver/server.js';
import { CRD_NAME, GROUP, widget, widgetCrd, widgetPath } from './fixtures.js';
import { eventually, targetFromKubeconfig, type Target } from './target.js';
import { requireRealCapiCrds } from '../support/real-capi-crds.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MERGE = { 'Content-Type': 'application/merge-patch+json' };

async function local(opts: Parameters<typeof startLocalApiServer>[0] = {}): Promise<Target> {
  const server = await startLocalApiServer(opts);
  return targetFromKubeconfig(server.kubeconfigYaml(), true, server);
}

async function installWidgets(t: Target): Promise<void> {
  const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd());
  expect(r.status, r.text).to.equal(201);
}

describe('local API server (local-only behaviour)', function () {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'las-local-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('persistence', function () {
    it('restores objects, CRDs and the resourceVersion counter after a restart', async function () {
      const file = join(dir, 'state.jsonl');
      let t = await local({ persistFile: file });
      await installWidgets(t);
      const w = await t.raw('POST', widgetPath('default'), widget('default', 'keep', { size: 5 }));
      expect(w.status).to.equal(201);
      await t.raw('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gone' } });
      await t.raw('DELETE', '/api/v1/namespaces/default/configmaps/gone');
      const lastRv = Number((await t.raw('GET', '/api/v1/namespaces')).json.metadata.resourceVersion);
      await t.close();

      t = await local({ persistFile: file });
      try {
        const again = await t.raw('GET', widgetPath('default', 'keep'));
        expect(again.status).to.equal(200);
        expect(again.json.metadata.uid).to.equal(w.json.metadata.uid);
        expect(again.json.spec.size).to.equal(5);
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps/gone')).status).to.equal(404);
        const crd = await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
        expect(crd.status).to.equal(200);
        const next = await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'after' },
        });
        expect(Number(next.json.metadata.resourceVersion)).to.be.greaterThan(lastRv);
        const ns = await t.raw('GET', '/api/v1/namespaces');
        expect(ns.json.items.filter((n: any) => n.metadata.name === 'default')).to.have.length(1);
        const old = await t.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${lastRv - 1}`);
        await old.ended;
        expect(old.events[0].object.code, 'history before the restart is not replayable').to.equal(410);
      } finally {
        await t.close();
      }
    });

    it('ignores a torn last line of the log', async function () {
      const file = join(dir, 'torn.jsonl');
      let t = await local({ persistFile: file });
      await t.raw('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } });
      await t.close();
      const { appendFile } = await import('node:fs/promises');
      await appendFile(file, '{"op":"put","gr":"/configmaps","key":"default/b","obj":{"meta');
      t = await local({ persistFile: file });
      try {
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps/a')).status).to.equal(200);
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps/b')).status).to.equal(404);
      } finally {
        await t.close();
      }
    });
  });

  describe('watch window', function () {
    it('replays every event since a resourceVersion the history holds, and 410 before the history started', async function () {
      const t = await local();
      try {
        const from = (await t.raw('GET', '/api/v1/namespaces/default/configmaps')).json.metadata.resourceVersion;
        for (const name of ['a', 'b']) {
          const r = await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name },
          });
          expect(r.status, r.text).to.equal(201);
        }
        await t.raw('DELETE', '/api/v1/namespaces/default/configmaps/a');
        const w = await t.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${from}`);
        try {
          expect(w.status).to.equal(200);
          const evs = await w.until((e) => e.length >= 3);
          expect(evs.map((e) => [e.type, e.object.metadata.name])).to.deep.equal([
            ['ADDED', 'a'],
            ['ADDED', 'b'],
            ['DELETED', 'a'],
          ]);
        } finally {
          w.stop();
        }
        // The history starts once the server is up (after the system namespaces), as a real watch cache's does:
        // nothing was written between the start and the first list, so it started at that list's resourceVersion.
        const old = await t.watch('/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1');
        await old.ended;
        expect(old.events.map((e) => [e.type, e.object.code, e.object.message])).to.deep.equal([
          ['ERROR', 410, `too old resource version: 1 (${from})`],
        ]);
        // A custom resource's history starts when its CRD is first served (the CRD's create).
        const created = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', widgetCrd());
        const crdRv = Number(created.json.metadata.resourceVersion);
        const before = await t.watch(`${widgetPath('default')}?watch=1&resourceVersion=${crdRv - 1}`);
        await before.ended;
        expect(before.events.map((e) => [e.type, e.object.message])).to.deep.equal([
          ['ERROR', `too old resource version: ${crdRv - 1} (${crdRv})`],
        ]);
      } finally {
        await t.close();
      }
    });

    it('answers 410 Expired for a resourceVersion older than the retained window and replays newer ones', async function () {
      const t = await local({ watchCacheSize: 5 });
      try {
        const rvs: number[] = [];
        for (let i = 0; i < 10; i++) {
          const r = await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `c${i}` },
          });
          rvs.push(Number(r.json.metadata.resourceVersion));
        }
        const old = await t.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rvs[2]}`);
        await old.ended;
        expect(old.events).to.have.length(1);
        expect(old.events[0]).to.deep.equal({
          type: 'ERROR',
          object: {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            // kube-apiserver's watch cache names one less than the oldest event it still holds.
            message: `too old resource version: ${rvs[2]} (${rvs[5]! - 1})`,
            reason: 'Expired',
            code: 410,
          },
        });
        const recent = await t.watch(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rvs[6]}`);
        try {
          const evs = await recent.until((e) => e.length >= 3);
          expect(evs.map((e) => e.object.metadata.name)).to.deep.equal(['c7', 'c8', 'c9']);
          expect(evs.every((e) => e.type === 'ADDED')).to.equal(true);
        } finally {
          recent.stop();
        }
      } finally {
        await t.close();
      }
    });

    it('sends initial events and a bookmark marking their end for sendInitialEvents=true', async function () {
      const t = await local();
      try {
        await t.raw('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
        const w = await t.watch(
          '/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan',
        );
        try {
          const evs = await w.until((e) => e.some((x) => x.type === 'BOOKMARK'));
          expect(evs[0]).to.include({ type: 'ADDED' });
          const b = evs.find((x) => x.type === 'BOOKMARK');
          expect(b.object.metadata.annotations).to.deep.equal({ 'k8s.io/initial-events-end': 'true' });
        } finally {
          w.stop();
        }
      } finally {
        await t.close();
      }
    });

    it('works with client-node Watch, including bookmarks', async function () {
      const t = await local({ bookmarkIntervalMs: 50 });
      try {
        const seen: string[] = [];
        const watch = new Watch(t.kc);
        let done: (() => void) | undefined;
        const finished = new Promise<void>((r) => (done = r));
        const rv = (await t.raw('GET', '/api/v1/namespaces/default/configmaps')).json.metadata.resourceVersion;
        const req = await watch.watch(
          '/api/v1/namespaces/default/configmaps',
          { allowWatchBookmarks: true, resourceVersion: rv },
          (type, obj) => {
            seen.push(`${type}:${obj?.metadata?.name ?? ''}`);
            if (seen.includes('ADDED:cw') && seen.some((s) => s.startsWith('BOOKMARK'))) done!();
          },
          () => done!(),
        );
        await t.raw('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cw' } });
        await finished;
        req.abort();
        expect(seen).to.include('ADDED:cw');
        expect(seen.some((s) => s.startsWith('BOOKMARK'))).to.equal(true);
      } finally {
        await t.close();
      }
    });
  });

  describe('fault injection', function () {
    it('fails non-watch requests with the configured codes and real Status bodies, for the configured verbs only', async function () {
      const t = await local();
      try {
        t.server!.setFaults({ errorRate: 1, errorCodes: [500, 429, 409], verbs: ['create'] });
        const codes = new Set<number>();
        for (let i = 0; i < 30; i++) {
          const r = await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `f${i}` },
          });
          codes.add(r.status);
          expect(r.json.kind).to.equal('Status');
          expect(r.json.code).to.equal(r.status);
          if (r.status === 429) expect(r.headers['retry-after']).to.equal('1');
        }
        expect([...codes].sort()).to.deep.equal([409, 429, 500]);
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps')).status, 'list is not a faulty verb here').to.equal(200);
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps')).json.items).to.have.length(0);
        t.server!.setFaults({ latencyMs: 20 });
        expect(
          (
            await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: 'slow' },
            })
          ).status,
        ).to.equal(201);
        t.server!.setFaults(undefined);
        expect((await t.raw('GET', '/api/v1/namespaces/default/configmaps/slow')).status).to.equal(200);
      } finally {
        await t.close();
      }
    });

    it('drops open watch connections periodically', async function () {
      const t = await local({ faults: { dropWatchesEveryMs: 100 } });
      try {
        const w = await t.watch('/api/v1/namespaces/default/configmaps?watch=1');
        await w.ended;
        expect(w.status).to.equal(200);
      } finally {
        await t.close();
      }
    });
  });

  describe('transport', function () {
    it('sends a list larger than a response slice whole over TLS, with the length it announced', async function () {
      this.timeout(60_000);
      const t = await local();
      try {
        // 40 ConfigMaps of ~8 KiB each, with multi-byte characters that a slice boundary may cut through.
        const value = (i: number): string => `${i}:${'ä€'.repeat(1400)}${'x'.repeat(4000)}`;
        for (let i = 0; i < 40; i++) {
          const r = await t.raw('POST', '/api/v1/namespaces/default/configmaps', {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `big-${String(i).padStart(2, '0')}` },
            data: { v: value(i) },
          });
          expect(r.status, r.text).to.equal(201);
        }
        const list = await t.raw('GET', '/api/v1/namespaces/default/configmaps');
        expect(list.status).to.equal(200);
        expect(Buffer.byteLength(list.text)).to.be.above(4 * RESPONSE_SLICE_BYTES);
        expect(Number(list.headers['content-length'])).to.equal(Buffer.byteLength(list.text));
        const big = (list.json.items as any[]).filter((c) => String(c.metadata.name).startsWith('big-'));
        expect(big.map((c) => c.data.v)).to.deep.equal(Array.from({ length: 40 }, (_, i) => value(i)));
      } finally {
        await t.close();
      }
    });

    it('serves plain HTTP with a token-only kubeconfig that client-node uses', async function () {
      const server = await startLocalApiServer({ https: false, token: 'tok' });
      try {
        expect(server.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(server.caData).to.equal(undefined);
        expect(server.kubeconfigYaml()).to.not.contain('certificate-authority-data');
        expect(server.kubeconfigYaml()).to.contain('token: tok');
        const kc = new KubeConfig();
        kc.loadFromString(server.kubeconfigYaml());
        const list = await kc.makeApiClient(CoreV1Api).listNamespace();
        expect(list.items.map((n) => n.metadata?.name)).to.include.members(['default', 'kube-system']);
        const http = await import('node:http');
        const get = (headers: Record<string, string>): Promise<number> =>
          new Promise((res) =>
            http.get(`${server.url}/api/v1/namespaces`, { headers }, (r) => {
              r.resume();
              res(r.statusCode ?? 0);
            }),
          );
        expect(await get({ Authorization: 'Bearer wrong' }), 'a wrong token is rejected even over http').to.equal(401);
        expect(await get({}), 'kubectl sends no token over http, so none is needed').to.equal(200);
      } finally {
        await server.close();
      }
    });

    it('serves HTTPS with the generated CA in the kubeconfig and writes it to a file', async function () {
      const server = await startLocalApiServer();
      try {
        expect(server.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
        const path = join(dir, 'kc.yaml');
        await server.writeKubeconfig(path);
        const kc = new KubeConfig();
        kc.loadFromFile(path);
        expect(kc.getCurrentCluster()?.caData).to.equal(server.caData);
        const ns = await kc.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' });
        expect(ns.status?.phase).to.equal('Active');
      } finally {
        await server.close();
      }
    });

    it('runs as the CLI verb: prints the kubeconfig path and stops on SIGTERM', async function () {
      const out = join(dir, 'cli-kubeconfig');
      const child = spawn(process.execPath, [join(ROOT, 'bin/inplace.mjs'), 'local-apiserver', '--http', '--kubeconfig-out', out], {
        cwd: ROOT,
        env: { ...process.env, INPLACE_FROM_SOURCE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (c) => (stdout += c));
      const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)));
      try {
        await eventually(async () => stdout.includes('\n'), 30_000, 'kubeconfig path printed');
        expect(stdout.trim()).to.equal(out);
        const t = await targetFromKubeconfig(await readFile(out, 'utf8'), true);
        expect((await t.raw('GET', '/api/v1/namespaces/default')).status).to.equal(200);
        await t.close();
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).to.equal(0);
    });
  });

  describe('CRD lifecycle', function () {
    it('rejects a CRD whose CEL rule is outside the supported subset, naming the rule', async function () {
      const t = await local();
      try {
        const crd = widgetCrd();
        crd.spec.versions[0].schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'] = [{ rule: 'self.size.quantity() > 1' }];
        const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
        expect(r.status).to.equal(422);
        expect(r.json.details.causes[0].field).to.equal(
          'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule',
        );
        expect(r.json.message).to.contain("undeclared reference to 'quantity'");
        expect((await t.raw('GET', `/apis/${GROUP}/v1`)).status).to.equal(404);
      } finally {
        await t.close();
      }
    });

    it('rejects a CRD whose name is not plural.group, or without exactly one storage version', async function () {
      const t = await local();
      try {
        const bad = widgetCrd();
        bad.metadata.name = 'wrong.example.com';
        expect((await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', bad)).status).to.equal(422);
        const two = widgetCrd();
        two.spec.versions[1].storage = true;
        const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', two);
        expect(r.status).to.equal(422);
        expect(r.json.details.causes[0].field).to.equal('spec.versions');
      } finally {
        await t.close();
      }
    });

    it('deleting a CRD deletes its objects and stops serving the resource', async function () {
      const t = await local();
      try {
        await installWidgets(t);
        await t.raw('POST', widgetPath('default'), widget('default', 'w'));
        const w = await t.watch(`${widgetPath('default')}?watch=1&resourceVersion=0`);
        const d = await t.raw('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
        expect(d.status).to.equal(200);
        await w.until((e) => e.some((x) => x.type === 'DELETED'));
        await eventually(
          async () => (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`)).status === 404,
          10_000,
          'CRD gone',
        );
        expect((await t.raw('GET', widgetPath('default'))).status).to.equal(404);
        await installWidgets(t);
        await eventually(async () => (await t.raw('GET', widgetPath('default'))).status === 200, 10_000, 'served again');
        expect((await t.raw('GET', widgetPath('default'))).json.items).to.deep.equal([]);
      } finally {
        await t.close();
      }
    });

    it('keeps serving objects stored before a storage-version change in every served version', async function () {
      const t = await local();
      try {
        await installWidgets(t);
        await t.raw('POST', widgetPath('default'), widget('default', 'old'));
        const cur = (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`)).json;
        cur.spec.versions[0].storage = false;
        cur.spec.versions[1].storage = true;
        expect((await t.raw('PUT', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`, cur)).status).to.equal(200);
        const crd = (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`)).json;
        expect(crd.status.storedVersions).to.deep.equal(['v1', 'v1beta1']);
        expect((await t.raw('GET', widgetPath('default', 'old'))).json.apiVersion).to.equal(`${GROUP}/v1`);
        expect((await t.raw('GET', widgetPath('default', 'old', undefined, 'v1beta1'))).json.apiVersion).to.equal(`${GROUP}/v1beta1`);
        const list = (await t.raw('GET', widgetPath('default', undefined, undefined, 'v1beta1'))).json;
        expect(list.items[0].apiVersion).to.equal(`${GROUP}/v1beta1`);
      } finally {
        await t.close();
      }
    });

    it('updates the schema of a registered CRD (new fields stop being pruned)', async function () {
      const t = await local();
      try {
        await installWidgets(t);
        const before = await t.raw('POST', widgetPath('default'), widget('default', 'a', { later: 'x' }));
        expect(before.json.spec).to.not.have.property('later');
        const cur = (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`)).json;
        cur.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.later = { type: 'string' };
        const u = await t.raw('PUT', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`, cur);
        expect(u.status, u.text).to.equal(200);
        expect(u.json.metadata.generation).to.equal(2);
        const after = await t.raw('POST', widgetPath('default'), widget('default', 'b', { later: 'x' }));
        expect(after.json.spec.later).to.equal('x');
      } finally {
        await t.close();
      }
    });
  });

  describe('bad input', function () {
    it('answers every malformed request with a 4xx Status and never stores anything', async function () {
      const t = await local({ maxBodyBytes: 65536 });
      try {
        await installWidgets(t);
        await t.raw('POST', widgetPath('default'), widget('default', 'exists'));
        const before = (await t.raw('GET', '/apis/' + GROUP + '/v1/widgets')).json.items.length;
        const cms = (await t.raw('GET', '/api/v1/configmaps')).json.items.length;
        const J = { 'Content-Type': 'application/json' };
        const cases: Array<[string, string, unknown, Record<string, string>?]> = [
          ['POST', widgetPath('default'), '[1,2]'],
          ['POST', widgetPath('default'), '"str"'],
          ['POST', widgetPath('default'), 'null'],
          ['POST', widgetPath('default'), '42'],
          ['POST', widgetPath('default'), '{"apiVersion":'],
          ['POST', widgetPath('default'), ''],
          ['POST', widgetPath('default'), '\u0000\u0001binary'],
          ['POST', widgetPath('default'), '{' + '"a":{'.repeat(200) + '}'.repeat(201)],
          ['POST', widgetPath('default'), 'x'.repeat(70000)],
          ['POST', widgetPath('default'), JSON.stringify({ ...widget('default', 'm1'), metadata: 'nope' })],
          ['POST', widgetPath('default'), JSON.stringify({ ...widget('default', 'm2'), kind: 7 })],
          ['POST', widgetPath('default'), JSON.stringify(widget('default', 'Upper_Case'))],
          ['POST', widgetPath('default'), JSON.stringify(widget('default', 'a'.repeat(300)))],
          [
            'POST',
            widgetPath('default'),
            JSON.stringify({ ...widget('default', 'm3'), metadata: { name: 'm3', labels: { 'bad key!': 'v' } } }),
          ],
          ['POST', widgetPath('default'), JSON.stringify({ ...widget('default', 'm4'), metadata: { name: 'm4', labels: ['x'] } })],
          ['POST', widgetPath('default'), JSON.stringify({ ...widget('default', 'm5'), metadata: {} })],
          ['POST', widgetPath('default'), 'a: [b', { 'Content-Type': 'application/yaml' }],
          ['POST', widgetPath('default'), JSON.stringify(widget('default', 'm6')), { 'Content-Type': 'text/plain' }],
          [
            'POST',
            widgetPath('default'),
            Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x02]),
            { 'Content-Type': 'application/vnd.kubernetes.protobuf' },
          ],
          ['PATCH', widgetPath('default', 'exists'), '{"op":"add"}', { 'Content-Type': 'application/json-patch+json' }],
          [
            'PATCH',
            widgetPath('default', 'exists'),
            '[{"op":"frobnicate","path":"/spec"}]',
            { 'Content-Type': 'application/json-patch+json' },
          ],
          [
            'PATCH',
            widgetPath('default', 'exists'),
            '[{"op":"replace","path":"/spec/nope/deeper","value":1}]',
            { 'Content-Type': 'application/json-patch+json' },
          ],
          ['PATCH', widgetPath('default', 'exists'), '[1]', MERGE],
          ['PATCH', widgetPath('default', 'exists'), '{"spec":{"size":"x"}}', MERGE],
          ['PATCH', widgetPath('default', 'exists'), '{"metadata":{"name":"other"}}', MERGE],
          ['PATCH', widgetPath('default', 'exists'), 'spec: {size: 3}', { 'Content-Type': 'application/apply-patch+yaml' }],
          ['PATCH', widgetPath('default', 'exists'), '{"spec":{}}', { 'Content-Type': 'application/x-unknown' }],
          ['PUT', widgetPath('default', 'exists'), JSON.stringify(widget('default', 'different'))],
          [
            'PUT',
            widgetPath('default', 'missing'),
            JSON.stringify({ ...widget('default', 'missing'), metadata: { name: 'missing', resourceVersion: '1' } }),
          ],
          ['DELETE', widgetPath('default', 'exists'), '{"propagationPolicy":"Sideways"}'],
          ['DELETE', widgetPath('default', 'exists'), '[]'],
          ['GET', widgetPath('default') + '?labelSelector=' + encodeURIComponent('a in ('), undefined],
          ['GET', widgetPath('default') + '?fieldSelector=spec.size%3D1', undefined],
          ['GET', widgetPath('default') + '?continue=%25%25%25', undefined],
          ['GET', widgetPath('default') + '?watch=1&resourceVersion=abc', undefined],
          ['POST', widgetPath('default') + '?fieldValidation=Loose', JSON.stringify(widget('default', 'm7'))],
          ['POST', widgetPath('default') + '?dryRun=Some', JSON.stringify(widget('default', 'm8'))],
          ['GET', '/apis/' + GROUP + '/v1/namespaces/default/widgets/exists/scale', undefined],
          ['GET', '/api/v1/namespaces/default/%zz', undefined],
          ['GET', '/apis/' + GROUP + '/v9/widgets', undefined],
          [
            'POST',
            '/api/v1/namespaces/default/configmaps',
            JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: ['x'] }),
          ],
          ['POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'c' } })],
          [
            'POST',
            '/api/v1/namespaces/default/secrets',
            JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'not base64!' } }),
          ],
          ['TRACE', widgetPath('default'), undefined],
        ];
        for (const [method, path, body, headers] of cases) {
          const r = await t.raw(method, path, body, headers ?? (body !== undefined ? J : {}));
          const what = `${method} ${path.slice(0, 80)} ${String(body).slice(0, 60)} -> ${r.status} ${r.text.slice(0, 200)}`;
          if (path.includes('watch=1')) {
            expect(r.status, what).to.equal(200);
            expect(JSON.parse(r.text.split('\n')[0]!).object.code, what).to.equal(400);
            continue;
          }
          expect(r.status, what).to.be.within(400, 499);
          expect(r.json, what).to.deep.include({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: r.status });
        }
        expect((await t.raw('GET', '/apis/' + GROUP + '/v1/widgets')).json.items.length).to.equal(before);
        expect((await t.raw('GET', '/api/v1/configmaps')).json.items.length).to.equal(cms);
        expect((await t.raw('GET', '/api/v1/secrets')).json.items.length).to.equal(0);
        expect((await t.raw('GET', widgetPath('default', 'exists'))).json.metadata.generation).to.equal(1);
      } finally {
        await t.close();
      }
    });
  });

  describe('validation order (issue 19)', function () {
    it('answers a plan with schema and rule errors as kube-apiserver does: the schema errors and the fieldless notice only', async function () {
      const t = await local();
      try {
        for (const doc of parseAllDocuments(await readFile(join(ROOT, 'crds/inplace.cluster.x-k8s.io_inplaceupdateplans.yaml'), 'utf8'))) {
          const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', doc.toJS());
          expect(r.status, r.text).to.equal(201);
        }
        await t.raw('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } });
        const upd = (selectResource: string, path: string) => [
          { name: 'v', sequence: 1, responsibilities: [{ selectResource, path, value: 'v1.30.1' }] },
        ];
        const plan = (cp: unknown, md: unknown) => ({
          apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
          kind: 'InPlaceUpdatePlan',
          metadata: { name: 'p', namespace: 'demo' },
          spec: { clusterName: 'c1', controlPlane: cp, machineDeployments: [md] },
        });
        const path = '/apis/inplace.cluster.x-k8s.io/v1alpha1/namespaces/demo/inplaceupdateplans';
        // A path without a leading / (pattern: not blocking), an unknown selectResource (enum: blocking), and the
        // control-plane sequence not below the MachineDeployment's (the CEL rule, not evaluated).
        const r = await t.raw(
          'POST',
          path,
          plan(
            { name: 'c1-cp', sequence: 2, updaters: upd('Machine', 'spec/version') },
            { name: 'c1-md-0', sequence: 1, updaters: upd('Node', '/spec/version') },
          ),
        );
        expect(r.status).to.equal(422);
        expect(r.json.details.causes.map((c: any) => [c.reason, c.field])).to.deep.equal([
          ['FieldValueInvalid', 'spec.controlPlane.updaters[0].responsibilities[0].path'],
          ['FieldValueNotSupported', 'spec.machineDeployments[0].updaters[0].responsibilities[0].selectResource'],
          ['FieldValueInvalid', '<nil>'],
        ]);
        expect(r.json.message).to.contain(
          '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
        );
        expect(r.text).to.not.contain('version-skew');
        // With the enum fixed, the pattern error no longer blocks: the rule is evaluated and reported next to it.
        const next = await t.raw(
          'POST',
          path,
          plan(
            { name: 'c1-cp', sequence: 2, updaters: upd('Machine', 'spec/version') },
            { name: 'c1-md-0', sequence: 1, updaters: upd('Machine', '/spec/version') },
          ),
        );
        expect(next.status).to.equal(422);
        expect(next.json.details.causes.map((c: any) => c.field)).to.deep.equal([
          'spec.controlPlane.updaters[0].responsibilities[0].path',
          'spec',
        ]);
        expect(next.json.details.causes[1].message).to.contain(
          'every control-plane sequence must be lower than every MachineDeployment sequence',
        );
      } finally {
        await t.close();
      }
    });
  });

  describe('validation ratcheting', function () {
    it('lets an update keep a value that a tightened schema now rejects, but not change it to another invalid one', async function () {
      const t = await local();
      try {
        await installWidgets(t);
        expect((await t.raw('POST', widgetPath('default'), widget('default', 'r', { size: 8, mode: 'fast' }))).status).to.equal(201);
        const cur = (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`)).json;
        for (const v of cur.spec.versions) {
          v.schema.openAPIV3Schema.properties.spec.properties.size.maximum = 5;
          v.schema.openAPIV3Schema.properties.spec['x-kubernetes-validations'].push({
            rule: "self.mode != 'fast'",
            message: 'fast is retired',
          });
        }
        expect((await t.raw('PUT', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`, cur)).status).to.equal(200);
        const label = await t.raw('PATCH', widgetPath('default', 'r'), { metadata: { labels: { touched: 'yes' } } }, MERGE);
        expect(label.status, label.text).to.equal(200);
        const other = await t.raw('PATCH', widgetPath('default', 'r'), { spec: { size: 9 } }, MERGE);
        expect(other.status).to.equal(422);
        expect(other.json.details.causes.map((c: any) => c.field)).to.include('spec.size');
        expect(other.json.message, 'the spec changed, so its CEL rules run again').to.contain('fast is retired');
        const fixed = await t.raw('PATCH', widgetPath('default', 'r'), { spec: { size: 4, mode: 'slow' } }, MERGE);
        expect(fixed.status, fixed.text).to.equal(200);
      } finally {
        await t.close();
      }
    });
  });

  describe('the real Cluster API v1beta2 CRDs', function () {
    const capiDir = process.env['CAPI_CRDS_DIR'] ? resolve(process.env['CAPI_CRDS_DIR']) : resolve(ROOT, '../shared/reference/capi-crds');
    let t: Target;
    before(async function () {
      requireRealCapiCrds(this, capiDir);
      t = await local();
      for (const f of (await readdir(capiDir)).filter((x) => x.endsWith('.yaml')).sort()) {
        for (const doc of parseAllDocuments(await readFile(join(capiDir, f), 'utf8'))) {
          const crd = doc.toJS();
          if (crd?.kind !== 'CustomResourceDefinition') continue;
          const r = await t.raw('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
          expect(r.status, `${f}: ${r.text.slice(0, 500)}`).to.equal(201);
        }
      }
      await t.raw('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } });
    });
    after(async () => {
      await t?.close();
    });

    const machine = (name: string, spec: Record<string, unknown> = {}): any => ({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: { name, namespace: 'demo', labels: { 'cluster.x-k8s.io/cluster-name': 'c1' } },
      spec: {
        clusterName: 'c1',
        bootstrap: { dataSecretName: 's1' },
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachine', name },
        version: 'v1.30.1',
        ...spec,
      },
    });

    it('registers every CRD as Established and serves both Machine versions', async function () {
      const crds = (await t.raw('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).json.items;
      expect(crds.length).to.be.greaterThan(5);
      for (const c of crds)
        expect(c.status.conditions.find((x: any) => x.type === 'Established')?.status, c.metadata.name).to.equal('True');
      const rl = await t.raw('GET', '/apis/cluster.x-k8s.io/v1beta2');
      expect(rl.json.resources.find((r: any) => r.name === 'machines').shortNames).to.deep.equal(['ma']);
      expect((await t.raw('GET', '/apis/cluster.x-k8s.io/v1beta1/namespaces/demo/machines')).status).to.equal(200);
    });

    it('creates a Machine, pruning unknown fields', async function () {
      const r = await t.raw(
        'POST',
        '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machines',
        machine('m1', { bogus: 1, bootstrap: { dataSecretName: 's1', junk: 'x' } }),
      );
      expect(r.status, r.text).to.equal(201);
      expect(r.json.spec).to.not.have.property('bogus');
      expect(r.json.spec.bootstrap).to.deep.equal({ dataSecretName: 's1' });
      expect(String(r.headers.warning)).to.contain('unknown field \\"spec.bogus\\"');
    });

    it('rejects a wrongly typed field with the exact 422 body kube-apiserver sends', async function () {
      const r = await t.raw('POST', '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machines', machine('m2', { version: 1 }));
      expect(r.status).to.equal(422);
      expect(r.json).to.deep.equal({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'Machine.cluster.x-k8s.io "m2" is invalid: spec.version: Invalid value: "integer": spec.version in body must be of type string: "integer"',
        reason: 'Invalid',
        details: {
          name: 'm2',
          group: 'cluster.x-k8s.io',
          kind: 'Machine',
          causes: [
            {
              reason: 'FieldValueTypeInvalid',
              message: 'Invalid value: "integer": spec.version in body must be of type string: "integer"',
              field: 'spec.version',
            },
          ],
        },
        code: 422,
      });
    });

    it('renders the Machine printer columns like kube-apiserver', async function () {
      const r = await t.raw('GET', '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machines', undefined, {
        Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
      });
      expect(r.json.columnDefinitions.map((c: any) => c.name)).to.deep.equal([
        'Name',
        'Cluster',
        'Node Name',
        'Provider ID',
        'Failure domain',
        'Ready',
        'Available',
        'Up-to-date',
        'Internal-IP',
        'External-IP',
        'OS-Image',
        'Paused',
        'Phase',
        'Age',
        'Version',
      ]);
      const row = r.json.rows.find((x: any) => x.cells[0] === 'm1');
      expect(row.cells.slice(0, 3)).to.deep.equal(['m1', 'c1', null]);
      expect(row.cells[14]).to.equal('v1.30.1');
    });

    it('serves the scale subresource of a MachineDeployment (autoscaling/v1 Scale)', async function () {
      const md = {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'MachineDeployment',
        metadata: { name: 'md1', namespace: 'demo' },
        spec: {
          clusterName: 'c1',
          replicas: 2,
          selector: { matchLabels: { md: 'md1' } },
          template: {
            metadata: { labels: { md: 'md1' } },
            spec: {
              clusterName: 'c1',
              bootstrap: { dataSecretName: 's' },
              infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 't' },
            },
          },
        },
      };
      const c = await t.raw('POST', '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machinedeployments', md);
      expect(c.status, c.text).to.equal(201);
      await t.raw(
        'PATCH',
        '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machinedeployments/md1/status',
        { status: { replicas: 2, selector: 'md=md1' } },
        MERGE,
      );
      const path = '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machinedeployments/md1/scale';
      const g = await t.raw('GET', path);
      expect(g.json).to.deep.include({
        kind: 'Scale',
        apiVersion: 'autoscaling/v1',
        spec: { replicas: 2 },
        status: { replicas: 2, selector: 'md=md1' },
      });
      const p = await t.raw('PATCH', path, { spec: { replicas: 5 } }, MERGE);
      expect(p.status, p.text).to.equal(200);
      expect(p.json.spec.replicas).to.equal(5);
      const after = await t.raw('GET', '/apis/cluster.x-k8s.io/v1beta2/namespaces/demo/machinedeployments/md1');
      expect(after.json.spec.replicas).to.equal(5);
      expect(after.json.metadata.generation).to.equal(2);
      const bad = await t.raw('PUT', path, { ...g.json, spec: { replicas: -1 } });
      expect(bad.status).to.equal(422);
      const rl = await t.raw('GET', '/apis/cluster.x-k8s.io/v1beta2');
      expect(rl.json.resources.find((r: any) => r.name === 'machinedeployments/scale')).to.deep.include({
        kind: 'Scale',
        group: 'autoscaling',
        version: 'v1',
      });
    });

    it('evaluates the KubeadmConfig CEL rules (exists_one, filter, matches)', async function () {
      const base = { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2', kind: 'KubeadmConfig', metadata: { name: 'k1', namespace: 'demo' } };
      const dup = await t.raw('POST', '/apis/bootstrap.cluster.x-k8s.io/v1beta2/namespaces/demo/kubeadmconfigs', {
        ...base,
        spec: {
          clusterConfiguration: {
            apiServer: {
              extraArgs: [
                { name: 'a', value: '1' },
                { name: 'a', value: '2' },
              ],
            },
          },
        },
      });
      expect(dup.status).to.equal(422);
      expect(dup.json.message).to.contain('extraArgs name must be unique');
      const ok = await t.raw('POST', '/apis/bootstrap.cluster.x-k8s.io/v1beta2/namespaces/demo/kubeadmconfigs', {
        ...base,
        spec: {
          clusterConfiguration: {
            apiServer: {
              extraArgs: [
                { name: 'a', value: '1' },
                { name: 'b', value: '2' },
              ],
            },
          },
        },
      });
      expect(ok.status, ok.text).to.equal(201);
    });
  });

  describe('client-node informer-style use over the same connection pool', function () {
    it('lists then watches from the list resourceVersion and sees every change exactly once', async function () {
      const t = await local();
      try {
        await installWidgets(t);
        const list = await t.raw('GET', widgetPath('default'));
        const w = await t.watch(
          `${widgetPath('default')}?watch=1&resourceVersion=${list.json.metadata.resourceVersion}&allowWatchBookmarks=true`,
        );
        try {
          for (let i = 0; i < 20; i++) await t.raw('POST', widgetPath('default'), widget('default', `w${i}`));
          for (let i = 0; i < 20; i++) await t.raw('PATCH', widgetPath('default', `w${i}`), { spec: { size: 3 } }, MERGE);
          const evs = await w.until((e) => e.filter((x) => x.type === 'MODIFIED').length === 20);
          expect(evs.filter((x) => x.type === 'ADDED')).to.have.length(20);
          const rvs = evs.filter((x) => x.type !== 'BOOKMARK').map((x) => Number(x.object.metadata.resourceVersion));
          expect(new Set(rvs).size).to.equal(40);
        } finally {
          w.stop();
        }
      } finally {
        await t.close();
      }
    });
  });
});
