// Hostile-input bounds: input that is valid but unbounded (hundreds of missing targets with long names, many
// failures with long messages) must still produce a status the API server accepts; input nested absurdly deep or
// absurdly large must get a 4xx from the API server and never a 500 or a crash; an updater's message with terminal
// escape sequences must not reach the operator's terminal through `inplace status`. Runs against the local API
// server, or a real cluster when INPLACE_TEST_KUBECONFIG is set.
import * as http from 'node:http';
import * as https from 'node:https';
import { expect } from 'chai';
import {
  API_VERSION,
  Clusters,
  Events,
  InPlaceUpdatePlans,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
  MachineUpdates,
  Machines,
  PlanEventReasons,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
  type ResourceType,
} from '../../src/api/index.js';
import { resourcePath } from '../../src/runtime/index.js';
import { fleetPlan } from '../../bench/lib/fleet.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { platformSpecs, startProcs, startWorld, stopWorld, waitPlan, type World } from './harness.js';
import { waitPlanInvalid } from '../support/plans.js';

type Plan = InPlaceUpdatePlan & KubeObject;
const CONDITION_LIMIT = 32768;
const bytes = (s: string | undefined): number => Buffer.byteLength(s ?? '');

/** Sends a raw body (the client's own JSON.stringify cannot even serialise 100,000 levels). */
async function raw(
  w: World,
  method: string,
  path: string,
  body: string | Buffer,
  contentType: string,
): Promise<{ code: number; body: string }> {
  const url = new URL(path, w.env.client.server);
  const opts: https.RequestOptions = { method, headers: { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) } };
  await w.env.kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      const done = (): void => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', done);
      // A server that answers before reading the whole body (413) may then close the connection: the answer counts.
      res.on('error', done);
      res.on('close', done);
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (answered && (e.code === 'EPIPE' || e.code === 'ECONNRESET')) return;
      reject(e);
    });
    // Sent in pieces, and no more once the server has answered: a server that answers 413 before reading the body
    // and closes would otherwise make the rest of the write fail (EPIPE) before the answer is read.
    const data = Buffer.from(body);
    let offset = 0;
    const pump = (): void => {
      while (offset < data.length && !answered) {
        const piece = data.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        if (!req.write(piece)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

const nested = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

async function capiVersions(w: World): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const kinds: ResourceType[] = [Clusters, KubeadmControlPlanes, MachineDeployments, MachineSets, Machines];
  for (const r of kinds)
    for (const o of (await w.client.list(r, w.ns)).items) out.set(`${r.kind}/${o.metadata.name}`, o.metadata.resourceVersion ?? '');
  return out;
}

const ESCAPES = `\x1b[31mFAILED\x1b[0m\x1b]0;owned-title\x07\x1b]52;c;ZWNobyBvd25lZA==\x1b\\\x1b[2J\r`;
const FAIL_WITH = `${ESCAPES}disk full: ${'x'.repeat(2048)}`;

describe('reliability: hostile input stays bounded (status size, nesting depth, body size, terminal output)', function () {
  this.timeout(300_000);
  let w: World | undefined;
  let rvBefore = new Map<string, string>();
  const missing = Array.from({ length: 200 }, (_, i) => `missing-${String(i).padStart(3, '0')}-${'n'.repeat(230)}`);

  before(async () => {
    w = await startWorld({ clusterName: 'c1', version: 'v1.30.0', cpReplicas: 1, workers: 20, mdSize: 20, maxUnavailable: 10 }, 'bounds');
    const procs = startProcs(w, platformSpecs(w.env.kubeconfigPath, w.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
    rvBefore = await capiVersions(w);
  });
  after(async () => stopWorld(w));

  describe('a plan naming 200 missing MachineDeployments with long names', () => {
    let plan: Plan | undefined;

    it('gets Valid=False under 32 KiB, naming the first ones and how many more', async () => {
      await w!.client.create(InPlaceUpdatePlans, {
        apiVersion: API_VERSION,
        kind: InPlaceUpdatePlans.kind,
        metadata: { name: 'many-missing', namespace: w!.ns },
        spec: {
          clusterName: 'c1',
          machineDeployments: missing.map((name) => ({
            name,
            sequence: 2,
            updaters: [
              { name: 'ref', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] },
            ],
          })),
        },
      } as KubeObject);
      plan = (await waitPlanInvalid(w!.client, w!.ns, 'many-missing', 60_000)).plan;
      const valid = plan.status!.conditions!.find((c) => c.type === 'Valid')!;
      expect(bytes(valid.message)).to.be.below(CONDITION_LIMIT);
      expect(valid.message)
        .to.contain(missing[0])
        .and.to.match(/\.\.\. and \d+ more/);
      for (const c of plan.status!.conditions!) expect(bytes(c.message), c.type).to.be.below(CONDITION_LIMIT);
      expect(plan.status!.updateStatus ?? 'pending').to.equal('pending');
    });

    it('starts nothing: no MachineUpdate, and its Invalid Event is at most 1 KiB', async () => {
      const mus = (await w!.client.list(MachineUpdates, w!.ns)).items.filter(
        (m) => (m as unknown as MachineUpdate).spec.planName === 'many-missing',
      );
      expect(mus).to.have.length(0);
      const ev = await waitFor(
        async () =>
          (await w!.client.list(Events, w!.ns)).items.find(
            (e) => (e['involvedObject'] as { name?: string }).name === 'many-missing' && e['reason'] === PlanEventReasons.invalid,
          ),
        { timeoutMs: 30_000, intervalMs: 200, message: 'the Invalid Event of plan many-missing' },
      );
      expect(bytes(ev['message'] as string)).to.be.at.most(1024);
      expect(ev['message']).to.contain(missing[0]!.slice(0, 40));
    });

    it('changed no CAPI object', async () => {
      await new Promise((r) => setTimeout(r, 1500)); // give the controllers time to act, if they (wrongly) would
      const now = await capiVersions(w!);
      expect([...rvBefore].filter(([k, v]) => now.get(k) !== v).map(([k]) => k)).to.deep.equal([]);
    });
  });

  describe('nesting depth and body size', () => {
    const plans = (): string => resourcePath(InPlaceUpdatePlans, w!.ns);
    const body = (name: string, parameters: string): string =>
      `{"apiVersion":"${API_VERSION}","kind":"InPlaceUpdatePlan","metadata":{"name":"${name}"},"spec":{"clusterName":"ghost","machineDeployments":[{"name":"md","sequence":2,"updaters":[{"name":"u","sequence":1,"responsibilities":[{"selectResource":"Machine","path":"/spec/version","value":"v1"}],"parameters":${parameters}}]}]}}`;

    before(async () => {
      const r = await raw(w!, 'POST', plans(), body('shallow', '{"a":1}'), 'application/json');
      expect(r.code, r.body).to.equal(201);
    });

    it('a value nested 100,000 levels deep is refused with a 4xx (not a 500), and the server keeps serving', async () => {
      const r = await raw(w!, 'POST', plans(), body('deep-create', nested(100_000)), 'application/json');
      expect(r.code, r.body.slice(0, 300)).to.be.within(400, 499);
      expect(await w!.client.get(InPlaceUpdatePlans, w!.ns, 'deep-create')).to.equal(undefined);
      expect((await w!.client.list(InPlaceUpdatePlans, w!.ns)).items.map((p) => p.metadata.name)).to.include('shallow');
    });

    it('the same nesting as YAML is refused with a 4xx', async () => {
      const yaml = `apiVersion: ${API_VERSION}\nkind: InPlaceUpdatePlan\nmetadata:\n  name: deep-yaml\nspec:\n  clusterName: ghost\n  x: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
      const r = await raw(w!, 'POST', plans(), yaml, 'application/yaml');
      expect(r.code, r.body.slice(0, 300)).to.be.within(400, 499);
    });

    it('a merge patch nesting a value 10,000 levels deep is refused with a 4xx', async () => {
      const r = await raw(
        w!,
        'PATCH',
        resourcePath(InPlaceUpdatePlans, w!.ns, 'shallow'),
        `{"metadata":{"annotations":{"x":"y"}},"spec":{"machineDeployments":[{"name":"md","sequence":2,"updaters":[{"name":"u","sequence":1,"responsibilities":[{"selectResource":"Machine","path":"/spec/version","value":"v1"}],"parameters":${nested(10_000)}}]}]}}`,
        'application/merge-patch+json',
      );
      expect(r.code, r.body.slice(0, 300)).to.be.within(400, 499);
    });

    it('a JSON patch adding a value 10,000 levels deep is refused with a 4xx', async () => {
      const r = await raw(
        w!,
        'PATCH',
        resourcePath(InPlaceUpdatePlans, w!.ns, 'shallow'),
        `[{"op":"add","path":"/spec/machineDeployments/0/updaters/0/parameters/b","value":${nested(10_000)}}]`,
        'application/json-patch+json',
      );
      expect(r.code, r.body.slice(0, 300)).to.be.within(400, 499);
      const after = await w!.client.get<Plan>(InPlaceUpdatePlans, w!.ns, 'shallow');
      expect(after?.spec.machineDeployments?.[0]?.updaters[0]?.parameters).to.deep.equal({ a: 1 });
    });

    it('a 4 MiB body is refused with 413 RequestEntityTooLarge', async () => {
      const r = await raw(w!, 'POST', plans(), body('huge', `{"pad":"${'x'.repeat(4 * 1024 * 1024)}"}`), 'application/json');
      expect(r.code, r.body.slice(0, 300)).to.equal(413);
    });

    it('a plan whose updater parameters nest 500 levels deep is accepted by the server, then made invalid: nothing starts', async () => {
      const md = w!.fleet.mdNames[0]!;
      const r = await raw(
        w!,
        'POST',
        plans(),
        body('deep-params', nested(500)).replace('"clusterName":"ghost"', '"clusterName":"c1"').replace('"name":"md"', `"name":"${md}"`),
        'application/json',
      );
      expect(r.code, r.body.slice(0, 300)).to.equal(201);
      const { plan: p } = await waitPlanInvalid(w!.client, w!.ns, 'deep-params');
      expect(p.status!.conditions!.find((c) => c.type === 'Valid')!.message).to.match(/nested deeper than 64 levels/);
      const mus = (await w!.client.list<MachineUpdate & KubeObject>(MachineUpdates, w!.ns)).items.filter(
        (m) => m.spec.planName === 'deep-params',
      );
      expect(mus).to.have.length(0);
    });

    it('leaves every platform process running and the server answering', async () => {
      expect(w!.procs.filter((p) => !p.running).map((p) => `${p.name}:\n${p.tail(10)}`)).to.deep.equal([]);
      const r = await raw(w!, 'POST', plans(), body('after-deep', '{"ok":true}'), 'application/json');
      expect(r.code, r.body.slice(0, 300)).to.equal(201);
    });
  });

  describe('failurePolicy Continue: 20 machines fail with 2 KB messages carrying terminal escapes', () => {
    let plan: Plan | undefined;

    before(async () => {
      const p = fleetPlan(w!.fleet, {
        name: 'many-failures',
        toVersion: 'v1.30.1',
        durationSeconds: 0,
        failurePolicy: 'Continue',
        noControlPlane: true,
      });
      for (const md of p.spec.machineDeployments ?? [])
        for (const u of md.updaters) u.parameters = { durationSeconds: 0, failWith: FAIL_WITH };
      await w!.client.create(InPlaceUpdatePlans, p);
      plan = await waitPlan(w!, 'many-failures', ['failed'], 180_000);
    });

    it('the plan reaches failed with bounded messages and the counts', () => {
      const st = plan!.status!;
      const row = (st.targets ?? []).find((t) => t.kind === 'MachineDeployment');
      expect(row).to.include({ updateStatus: 'failed', machines: 20, failed: 20 });
      for (const c of st.conditions ?? []) expect(bytes(c.message), c.type).to.be.below(CONDITION_LIMIT);
      for (const t of st.targets ?? []) expect(bytes(t.message), t.name).to.be.at.most(8192);
      const ready = st.conditions!.find((c) => c.type === 'Ready')!;
      expect(ready.status).to.equal('False');
      expect(ready.message).to.contain('disk full').and.to.match(/0\/20/);
      expect(bytes(JSON.stringify(st))).to.be.below(128 * 1024);
    });

    it("every MachineUpdate carries the updater's message, bounded", async () => {
      const mus = (await w!.client.list<MachineUpdate & KubeObject>(MachineUpdates, w!.ns)).items.filter(
        (m) => m.spec.planName === 'many-failures',
      );
      expect(mus).to.have.length(20);
      for (const mu of mus) {
        expect(mu.status?.updateStatus).to.equal('failed');
        expect(mu.status?.message).to.contain('disk full');
        expect(bytes(mu.status?.message)).to.be.at.most(4096);
      }
    });

    it('every Event of the run is at most 1 KiB', async () => {
      const evs = (await w!.client.list(Events, w!.ns)).items;
      expect(evs.length).to.be.greaterThan(0);
      for (const e of evs) expect(bytes(e['message'] as string), String(e['reason'])).to.be.at.most(1024);
    });

    it('`inplace status` prints the failure without any escape sequence or control character', async () => {
      const r = await cli('status', 'many-failures', '-n', w!.ns, '--kubeconfig', w!.env.kubeconfigPath);
      expect(r.err).to.equal('');
      expect(r.code).to.equal(0);
      expect(r.out).to.contain('disk full').and.to.contain('FAILED');
      expect(r.out.includes('\x1b'), 'ESC in the output').to.equal(false);
      // eslint-disable-next-line no-control-regex -- what must not reach the terminal
      expect(r.out).to.not.match(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    });
  });
});
