// The dashboard in a real headless Chromium (Debian's, through puppeteer-core) against the embedded API server with the
// campaign controller, the plan controller, the machine task controller and the CAPI simulator running (the campaign
// scenarios' fleet): the page shows a campaign as its waves progress, a failed cluster's message, a closed window's
// reason; it has no write path; and a viewer sees only the namespaces their RBAC lets them list.
import http from 'node:http';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { InPlaceUpdateCampaigns, InPlaceUpdatePlans, type KubeObject, type ResourceType } from '../../src/api/index.js';
import { kubeAccess } from '../../src/dashboard/access.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';
import type { KubeClient, PolicyRule } from '../../src/runtime/pure/types.js';
import { allows } from '../../cdk8s/rbac.js';
import { fleetOf } from '../../tools/capi-sim/index.js';
import { CP, dailyUtcWindow, planObject, refUpdater } from '../e2e/harness.js';
import { campaignObject, FLEET_LABEL, manualUpdater, useFleetEnv, waitManualTasks } from '../campaign-controller/fleet.js';
import { chromiumMissing, launch, screenshot, textOf } from './browser.js';

/** Waits in the page until `selector` matches an element whose text matches `re` (any of them). */
async function waitText(page: Page, selector: string, re: RegExp, timeout = 60_000): Promise<string> {
  const h = await page.waitForFunction(
    (sel: string, src: string, flags: string) => {
      const r = new RegExp(src, flags);
      // Runs in the page (the test's TypeScript has no DOM library).
      const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ textContent: string | null }> } })
        .document;
      for (const el of doc.querySelectorAll(sel)) if (r.test(el.textContent ?? '')) return el.textContent;
      return false;
    },
    { timeout, polling: 'mutation' },
    selector,
    re.source,
    re.flags,
  );
  return String(await h.jsonValue());
}

/** A plain request to the dashboard (status code and body). */
function request(url: string, method: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(method === 'GET' || method === 'HEAD' ? undefined : '{}');
  });
}

/**
 * A client that answers TokenReviews and SubjectAccessReviews as an API server with these users and their namespaced
 * RBAC rules would (the embedded API server has no authenticator); every other call reaches the real server.
 */
function reviewingClient(client: KubeClient, users: Record<string, { user: string; grants: Record<string, PolicyRule[]> }>): KubeClient {
  const create = async <T extends KubeObject>(res: ResourceType, obj: T): Promise<T> => {
    const spec = (obj as unknown as { spec: Record<string, unknown> }).spec;
    if (res.plural === 'tokenreviews') {
      const u = users[String(spec['token'])];
      return {
        ...obj,
        status: u ? { authenticated: true, user: { username: u.user, groups: ['system:authenticated'] } } : { authenticated: false },
      };
    }
    if (res.plural === 'subjectaccessreviews') {
      const a = spec['resourceAttributes'] as { namespace: string; verb: string; group: string; resource: string };
      const u = Object.values(users).find((x) => x.user === spec['user']);
      const rules = u?.grants[a.namespace] ?? [];
      return { ...obj, status: { allowed: allows(rules, a.verb, a.group, a.resource) } };
    }
    return client.create(res, obj);
  };
  return new Proxy(client, { get: (t, k) => (k === 'create' ? create : (t as unknown as Record<string | symbol, unknown>)[k]) });
}

describe('dashboard in a real browser', function () {
  this.timeout(300_000);
  const { env, start } = useFleetEnv();
  let browser: Browser | undefined;
  let dash: Dashboard | undefined;

  before(async function () {
    const missing = chromiumMissing();
    if (missing) {
      console.log(`    skipped: ${missing}`);
      this.skip();
    }
    browser = await launch();
  });
  after(async () => browser?.close());
  afterEach(async () => {
    await dash?.close();
    dash = undefined;
  });

  const openPage = async (url: string, token?: string): Promise<Page> => {
    const page = await browser!.newPage();
    if (token) await page.setExtraHTTPHeaders({ Authorization: `Bearer ${token}` });
    await page.goto(url);
    return page;
  };

  it('follows a campaign from the canary through the waves; shows the failed cluster and its message, then its machines', async () => {
    const p = await env().platform();
    const fleet = await start(
      p,
      fleetOf(4, 'd', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    dash = await startDashboard({ client: env().client, namespace: p.ns });
    const page = await openPage(dash.url);
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'edge', {
        updater: manualUpdater(),
        rollout: { canary: { count: 1 }, maxConcurrentClusters: 1, failureBudget: 0 },
      }),
    );
    const card = `[data-campaign="${p.ns}/edge"]`;
    await page.waitForSelector(card);
    // The canary runs: its chip in the canary wave, updating.
    await waitManualTasks(p, 'd-000');
    await page.waitForSelector(`${card} [data-wave="0"] .cluster[data-cluster="d-000"][data-state="updating"]`);
    await screenshot(page, 'dashboard-canary');
    await fleet.finishManual('d-000', 'updated');
    await page.waitForSelector(`${card} [data-wave="0"] .cluster[data-cluster="d-000"][data-state="updated"]`);
    // Wave 1 appears with the next cluster once the canary is done.
    await waitManualTasks(p, 'd-001');
    await page.waitForSelector(`${card} [data-wave="1"] .cluster[data-cluster="d-001"][data-state="updating"]`);
    expect(await textOf(page, `${card} [data-wave="0"] h3`)).to.match(/^canary: 1 clusters, 1 updated/);
    await fleet.finishManual('d-001', 'failed');
    // The failure, with the updater's message, and the halt.
    expect(await waitText(page, `${card} .failures li[data-cluster="d-001"]`, /disk full on d-001/)).to.match(/wave 1/);
    await page.waitForSelector(`${card} .cluster[data-cluster="d-001"][data-state="failed"]`);
    await waitText(page, `${card} .gate`, /halted/);
    expect(await page.$(`${card} .cluster[data-cluster="d-002"]`)).to.equal(null);
    expect(await textOf(page, `${card} .summary`)).to.match(/clusters 2\/4 done \(1 updated, 0 at target, 1 failed of a budget of 0/);
    // Open the failed cluster: its plan, target, failure and machines.
    await page.click(`${card} .cluster[data-cluster="d-001"]`);
    await waitText(page, `${card} .detail .msg`, /disk full on d-001/);
    await page.waitForSelector(`${card} .detail tr[data-machine] .badge[data-state="failed"]`);
    // The plot has drawn (uPlot's canvas) with the campaign's points.
    await page.waitForSelector(`${card} .chart canvas`);
    await screenshot(page, 'dashboard-failed');
    await page.close();
  });

  it("shows a closed window's reason on the campaign", async () => {
    const p = await env().platform();
    await start(
      p,
      fleetOf(2, 'w', FLEET_LABEL).map((c) => ({ ...c, shape: 'single-node' as const })),
    );
    dash = await startDashboard({ client: env().client, namespace: p.ns });
    await p.client.create(
      InPlaceUpdateCampaigns,
      campaignObject(p.ns, 'win', { maintenanceWindows: [dailyUtcWindow(6, 1)], rollout: { maxConcurrentClusters: 2 } }),
    );
    const page = await openPage(dash.url);
    const gate = await waitText(page, `[data-campaign="${p.ns}/win"] [data-gate="campaign"]`, /closed until/);
    expect(gate).to.match(/^held: window closed until \w{3} \d\d:\d\d UTC/);
    await screenshot(page, 'dashboard-window');
    await page.close();
  });

  it('has no write path: anything but GET and HEAD is refused with 405, from the browser too', async () => {
    dash = await startDashboard({ client: env().client });
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const path of ['', 'api/events', 'api/machines?namespace=a&plan=b']) {
        const r = await request(`${dash.url}${path}`, m);
        expect(r.status, `${m} /${path}`).to.equal(405);
      }
    }
    expect((await request(dash.url, 'GET')).status).to.equal(200);
    const page = await openPage(dash.url);
    const status = await page.evaluate(async () => (await fetch('/api/events', { method: 'POST', body: '{}' })).status);
    expect(status).to.equal(405);
    await page.close();
  });

  it('shows each status write of a plan (measures the write-to-DOM latency through the browser)', async () => {
    // No controller in this namespace: the test writes the plan's status itself, as the plan controller would.
    const p = await env().platform();
    const name = 'latency';
    await p.client.create(InPlaceUpdatePlans, planObject(p.ns, name, { cp: { name: CP, sequence: 1, updaters: [refUpdater()] } }));
    dash = await startDashboard({ client: env().client, namespace: p.ns });
    const page = await openPage(dash.url);
    const chip = `[data-plan="${p.ns}/${name}"]`;
    await page.waitForSelector(chip);
    const n = 20;
    const latencies: number[] = [];
    for (let i = 1; i <= n; i++) {
      // The page notes when the chip first shows i/n (a MutationObserver installed before the write, in the page's
      // clock: the same host clock as the test's).
      await page.evaluate(
        (sel: string, want: string) => {
          const g = globalThis as unknown as {
            seenAt?: number;
            document: { querySelector(s: string): { textContent: string | null } | null; body: object };
            MutationObserver: new (cb: () => void) => { observe(n: object, o: object): void; disconnect(): void };
          };
          g.seenAt = undefined;
          const mo = new g.MutationObserver(() => {
            if ((g.document.querySelector(sel)?.textContent ?? '').includes(want)) {
              mo.disconnect();
              g.seenAt = Date.now();
            }
          });
          mo.observe(g.document.body, { subtree: true, childList: true, characterData: true });
        },
        chip,
        `${i}/${n}`,
      );
      const t0 = Date.now();
      await p.client.patch(
        InPlaceUpdatePlans,
        p.ns,
        name,
        { status: { updateStatus: 'updating', machines: n, updatedMachines: i, progress: `${i}/${n}` } },
        { type: 'merge', subresource: 'status' },
      );
      const seen = await page.waitForFunction(() => (globalThis as unknown as { seenAt?: number }).seenAt, { polling: 'mutation' });
      latencies.push(Number(await seen.jsonValue()) - t0);
    }
    expect(latencies).to.have.length(n);
    const sorted = [...latencies].sort((a, b) => a - b);
    const q = (f: number): number => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))]!;
    console.log(
      `    status write -> DOM, ${n} writes: median ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${sorted[sorted.length - 1]} ms (flush 100 ms)`,
    );
    await page.close();
  });

  it('shows a viewer only the namespaces RBAC lets them list (TokenReview + SubjectAccessReview); no token, no data', async () => {
    const a = await env().platform();
    const b = await env().platform();
    for (const p of [a, b])
      await p.client.create(
        InPlaceUpdatePlans,
        planObject(p.ns, `plan-in-${p.ns}`, { cp: { name: CP, sequence: 1, updaters: [refUpdater()] } }),
      );
    const read: PolicyRule[] = [
      {
        apiGroups: ['inplace.cluster.x-k8s.io'],
        resources: ['inplaceupdatecampaigns', 'inplaceupdateplans', 'machineupdates'],
        verbs: ['get', 'list', 'watch'],
      },
    ];
    const client = reviewingClient(env().client, {
      'alice-token': { user: 'alice', grants: { [a.ns]: read } },
      'root-token': { user: 'root', grants: { '': read } },
    });
    dash = await startDashboard({ client, access: kubeAccess(client) });

    // Without a token: 401, the page asks for one, no data.
    expect((await request(`${dash.url}api/events`, 'GET')).status).to.equal(401);
    const anon = await openPage(dash.url);
    await anon.waitForSelector('#login:not([hidden])');
    expect(await anon.$$('.cluster')).to.have.length(0);
    await anon.close();

    const alice = await openPage(dash.url, 'alice-token');
    await alice.waitForSelector('body[data-synced="true"]');
    await alice.waitForSelector(`[data-plan="${a.ns}/plan-in-${a.ns}"]`);
    expect(await alice.$(`[data-plan="${b.ns}/plan-in-${b.ns}"]`)).to.equal(null);
    expect(await textOf(alice, '#viewer')).to.equal('viewing as alice');
    const forbidden = await alice.evaluate(async (ns: string) => (await fetch(`/api/machines?namespace=${ns}&plan=x`)).status, b.ns);
    expect(forbidden).to.equal(403);
    await alice.close();

    // A viewer allowed cluster-wide sees both.
    const root = await openPage(dash.url, 'root-token');
    await root.waitForSelector(`[data-plan="${a.ns}/plan-in-${a.ns}"]`);
    await root.waitForSelector(`[data-plan="${b.ns}/plan-in-${b.ns}"]`);
    await root.close();
  });
});
