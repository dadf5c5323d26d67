// The dashboard's server: informers over campaigns, plans and (optionally) MachineUpdates — one list+watch each for
// every viewer together, never a request to the API server per page — and Server-Sent Events that push each changed
// campaign (or namespace of standalone plans) to the pages allowed to see it. Changes are coalesced for `flushMs`, so
// a wave of hundreds of plan updates costs one view per campaign per flush. Read-only: GET and HEAD only, anything
// else is 405, and no handler calls a writing method of the client (TokenReviews and SubjectAccessReviews are asks).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CampaignLabels,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  Labels,
  MachineUpdates,
  type KubeObject,
  type ResourceType,
} from '../api/index.js';
import { createInformer, noopLogger, type KubeClient, type Logger, type SharedInformer } from '../runtime/index.js';
import { localAccess, type Authenticator, type Viewer } from './access.js';
import {
  appendPoint,
  campaignView,
  machinesView,
  planView,
  progressPoint,
  type CampaignObject,
  type MachineUpdateObject,
  type PlanObject,
  type ProgressPoint,
} from './view.js';

/** Options of the dashboard server. */
export interface DashboardOptions {
  client: KubeClient;
  /** Port (default 0: any free port). */
  port?: number;
  /** Address to listen on (default 127.0.0.1: the local dashboard is not for the network). */
  host?: string;
  /** Who may see what (default: everyone sees everything, for local use with the user's kubeconfig). */
  access?: Authenticator;
  /** Serve HTTPS with this key and certificate. */
  tls?: { key: string; cert: string };
  /** Watch only this namespace (default: every namespace). */
  namespace?: string;
  /** Watch MachineUpdates to show each plan's machines (default true). */
  machines?: boolean;
  log?: Logger;
  /** How long changes are coalesced before pages are told (default 100 ms). */
  flushMs?: number;
  /** Points kept per campaign plot (default 1000; older points are thinned, never the shape). */
  historyPoints?: number;
}

/** A running dashboard. */
export interface Dashboard {
  url: string;
  /** Resolves once every informer listed. */
  synced(): Promise<void>;
  /** Pages connected now. */
  readonly viewers: number;
  close(): Promise<void>;
}

interface Page {
  res: http.ServerResponse;
  viewer: Viewer;
  /** Campaign keys and standalone-plan namespaces this page was sent (so that a lost access or a deletion is told). */
  campaigns: Set<string>;
  standalone: Set<string>;
  /** Per campaign: the history epoch and the points sent, so only new points go out. */
  points: Map<string, { epoch: number; sent: number }>;
  /** Sends are chained: an access check per update must not reorder a page's events. */
  queue: Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
/**
 * The page's files: beside this module in the sources and in the image (the Dockerfile copies them into dist); the
 * CLI bundle (bin/inplace.mjs, dist/cli/) serves them from the sources two levels up, a local `npm run build` (tsc
 * copies no HTML) three levels up from dist/src/dashboard.
 */
const STATIC_DIR =
  [
    join(HERE, 'static'),
    join(HERE, '..', '..', 'src', 'dashboard', 'static'),
    join(HERE, '..', '..', '..', 'src', 'dashboard', 'static'),
  ].find((d) => existsSync(join(d, 'index.html'))) ?? join(HERE, 'static');
const require = createRequire(import.meta.url);
/** uPlot's dist folder, served under /vendor/ (the pinned package from node_modules, never a CDN). */
const UPLOT_DIR = dirname(require.resolve('uplot'));

const FILES: Record<string, { path: string; type: string }> = {
  '/': { path: join(STATIC_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.mjs': { path: join(STATIC_DIR, 'app.mjs'), type: 'text/javascript; charset=utf-8' },
  '/style.css': { path: join(STATIC_DIR, 'style.css'), type: 'text/css; charset=utf-8' },
  '/vendor/uPlot.iife.min.js': { path: join(UPLOT_DIR, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  '/vendor/uPlot.min.css': { path: join(UPLOT_DIR, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
};

const keyOf = (ns: string | undefined, name: string | undefined): string => `${ns ?? ''}/${name ?? ''}`;
const splitKey = (k: string): [string, string] => {
  const i = k.indexOf('/');
  return [k.slice(0, i), k.slice(i + 1)];
};

/** The informers every page reads from (one list+watch each). */
interface Informers {
  campaigns: SharedInformer<CampaignObject>;
  plans: SharedInformer<PlanObject>;
  /** Undefined when the dashboard does not watch MachineUpdates. */
  mus: SharedInformer<MachineUpdateObject> | undefined;
}

function createInformers(o: DashboardOptions, log: Logger): Informers {
  const inf = <T extends KubeObject>(res: ResourceType): SharedInformer<T> =>
    createInformer<T>(o.client, res, { log, ...(o.namespace ? { namespace: o.namespace } : {}) });
  return {
    campaigns: inf<CampaignObject>(InPlaceUpdateCampaigns),
    plans: inf<PlanObject>(InPlaceUpdatePlans),
    mus: o.machines === false ? undefined : inf<MachineUpdateObject>(MachineUpdates),
  };
}

const send = (page: Page, event: string, data: unknown): void => {
  page.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
};

const answer = (res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...SECURITY_HEADERS, ...headers });
  res.end(body);
};

/**
 * The connected pages and what changed since they were last told: informer changes mark campaigns and standalone
 * namespaces dirty, and every `flushMs` each page is sent the ones it may see (its sends chained in order).
 */
class Broadcast {
  readonly pages = new Set<Page>();
  private readonly history = new Map<string, { epoch: number; points: ProgressPoint[] }>();
  private readonly dirtyCampaigns = new Set<string>();
  private readonly dirtyStandalone = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly inf: Informers,
    private readonly log: Logger,
    private readonly flushMs: number,
    private readonly maxPoints: number,
  ) {
    inf.campaigns.onChange((c, _old, type) => this.campaignChanged(c, type === 'delete'));
    inf.plans.onChange((p) => this.planChanged(p));
    // A machine's change is told as its plan's: the page re-reads the machines of the plans it has open.
    inf.mus?.onChange((m) => {
      const plan = inf.plans.store.peek(m.metadata.namespace, m.spec.planName);
      if (plan) this.planChanged(plan);
    });
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => this.flush(), this.flushMs);
  }

  private campaignChanged(c: CampaignObject, deleted: boolean): void {
    const k = keyOf(c.metadata.namespace, c.metadata.name);
    if (deleted) this.history.delete(k);
    else {
      const h = this.history.get(k) ?? { epoch: 0, points: [] };
      // The plot starts at the campaign's start: a dashboard started mid-campaign still shows where it began.
      if (h.points.length === 0 && c.status?.startTime)
        h.points.push({ t: Date.parse(c.status.startTime), machinesUpdated: 0, clustersDone: 0, clustersFailed: 0 });
      const next = appendPoint(h.points, progressPoint(c, Date.now()), this.maxPoints);
      this.history.set(k, { epoch: next.length < h.points.length ? h.epoch + 1 : h.epoch, points: next });
    }
    this.dirtyCampaigns.add(k);
    this.schedule();
  }

  private planChanged(p: PlanObject): void {
    const owner = p.metadata.labels?.[CampaignLabels.campaign];
    if (owner) this.dirtyCampaigns.add(keyOf(p.metadata.namespace, owner));
    else this.dirtyStandalone.add(p.metadata.namespace ?? '');
    this.schedule();
  }

  /** Tells one page about one campaign (or that it is gone or no longer visible to it). */
  private async pushCampaign(page: Page, key: string, now: Date): Promise<void> {
    const [ns, name] = splitKey(key);
    const c = this.inf.campaigns.store.peek(ns, name);
    if (!c || !(await page.viewer.canList(ns, 'campaigns'))) {
      if (page.campaigns.delete(key)) send(page, 'campaign-removed', { key });
      page.points.delete(key);
      return;
    }
    const own = (await page.viewer.canList(ns, 'plans')) ? this.inf.plans.store.byLabel(CampaignLabels.campaign, name, ns) : [];
    const h = this.history.get(key) ?? { epoch: 0, points: [] };
    const at = page.points.get(key);
    const fresh = !at || at.epoch !== h.epoch;
    const points = fresh ? h.points : h.points.slice(at.sent);
    page.points.set(key, { epoch: h.epoch, sent: h.points.length });
    page.campaigns.add(key);
    send(page, 'campaign', {
      key,
      view: campaignView(c, own, now),
      points,
      replacePoints: fresh,
      plansVisible: own.length > 0 || (await page.viewer.canList(ns, 'plans')),
    });
  }

  /** Tells one page about the standalone plans (no campaign) of one namespace. */
  private async pushStandalone(page: Page, ns: string): Promise<void> {
    const list = (await page.viewer.canList(ns, 'plans'))
      ? this.inf.plans.store.list(ns).filter((p) => !p.metadata.labels?.[CampaignLabels.campaign])
      : [];
    if (list.length === 0) {
      if (page.standalone.delete(ns)) send(page, 'plans', { namespace: ns, plans: [] });
      return;
    }
    page.standalone.add(ns);
    send(page, 'plans', { namespace: ns, plans: list.map(planView).sort((a, b) => a.name.localeCompare(b.name)) });
  }

  private async pushAll(page: Page, keys: Iterable<string>, namespaces: Iterable<string>): Promise<void> {
    const now = new Date();
    for (const k of keys) await this.pushCampaign(page, k, now);
    for (const ns of namespaces) await this.pushStandalone(page, ns);
  }

  private enqueue(page: Page, f: () => Promise<void>): void {
    page.queue = page.queue.then(f).catch((e: unknown) => {
      this.log.info(
        { viewer: page.viewer.name, err: (e as Error).message },
        'dashboard: could not update a page; closing it (it reconnects)',
      );
      page.res.end();
    });
  }

  private flush(): void {
    this.timer = undefined;
    const keys = [...this.dirtyCampaigns];
    const nss = [...this.dirtyStandalone];
    this.dirtyCampaigns.clear();
    this.dirtyStandalone.clear();
    for (const page of this.pages) this.enqueue(page, () => this.pushAll(page, keys, nss));
  }

  private allKeys(): { keys: string[]; namespaces: string[] } {
    return {
      keys: this.inf.campaigns.store.list().map((c) => keyOf(c.metadata.namespace, c.metadata.name)),
      namespaces: [
        ...new Set(
          this.inf.plans.store
            .list()
            .filter((p) => !p.metadata.labels?.[CampaignLabels.campaign])
            .map((p) => p.metadata.namespace ?? ''),
        ),
      ],
    };
  }

  /** Opens an event stream for a viewer: everything it may see once the informers listed, then the changes. */
  open(req: http.IncomingMessage, res: http.ServerResponse, viewer: Viewer): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', ...SECURITY_HEADERS });
    if (req.method === 'HEAD') return void res.end();
    res.write(': inplace dashboard\n\n');
    const page: Page = { res, viewer, campaigns: new Set(), standalone: new Set(), points: new Map(), queue: Promise.resolve() };
    this.pages.add(page);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    res.on('close', () => {
      clearInterval(ping);
      this.pages.delete(page);
    });
    send(page, 'hello', { viewer: viewer.name, machines: this.inf.mus !== undefined });
    this.enqueue(page, async () => {
      await Promise.all([this.inf.campaigns.synced(), this.inf.plans.synced()]);
      const { keys, namespaces } = this.allKeys();
      await this.pushAll(page, keys, namespaces);
      send(page, 'synced', {});
    });
  }

  /** Stops telling pages and ends every stream. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const p of this.pages) p.res.end();
  }
}

/** What a request is answered from. */
interface Routes {
  inf: Informers;
  access: Authenticator;
  broadcast: Broadcast;
  ready: () => boolean;
}

/** Answers one request: health, the page's files to anyone, the data endpoints to an allowed viewer only. */
async function handle(r: Routes, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  // No write path at all: only reads are answered.
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    // Drained (never read): an unread body would make Node drop the connection before the client reads the answer.
    req.resume();
    return answer(res, 405, 'the dashboard is read-only\n', { Allow: 'GET, HEAD', Connection: 'close' });
  }
  const url = new URL(req.url ?? '/', 'http://dashboard');
  if (url.pathname === '/healthz') return answer(res, 200, 'ok\n');
  if (url.pathname === '/readyz') return r.ready() ? answer(res, 200, 'ok\n') : answer(res, 503, 'informers not synced yet\n');
  const file = FILES[url.pathname];
  if (file) {
    // The page and its code hold no data: served to anyone, the data endpoints below check the viewer.
    const body = await readFile(file.path);
    res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-cache', ...SECURITY_HEADERS });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (url.pathname !== '/api/events' && url.pathname !== '/api/machines') return answer(res, 404, 'not found\n');
  const decision = await r.access(req.headers.authorization);
  if (!decision.ok)
    return answer(res, decision.status, `${decision.reason}\n`, decision.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {});
  if (url.pathname === '/api/machines') return serveMachines(r.inf, url, res, decision.viewer);
  r.broadcast.open(req, res, decision.viewer);
}

/** /api/machines: the MachineUpdates of one plan, when the viewer may list them in its namespace. */
async function serveMachines(inf: Informers, url: URL, res: http.ServerResponse, viewer: Viewer): Promise<void> {
  const ns = url.searchParams.get('namespace') ?? '';
  const plan = url.searchParams.get('plan') ?? '';
  if (!ns || !plan) return answer(res, 400, 'namespace and plan are required\n');
  if (!inf.mus) return answer(res, 404, 'this dashboard does not watch MachineUpdates (started with --no-machines)\n');
  if (!(await viewer.canList(ns, 'machineupdates')))
    return answer(res, 403, `Forbidden: user "${viewer.name}" may not list machineupdates in namespace "${ns}"\n`);
  const body = JSON.stringify(machinesView(inf.mus.store.byLabel(Labels.planName, plan, ns).filter((m) => m.spec.planName === plan)));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...SECURITY_HEADERS });
  res.end(body);
}

/** Starts the dashboard: informers, then the HTTP(S) server. */
export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const log = o.log ?? noopLogger;
  const inf = createInformers(o, log);
  const { campaigns, plans, mus } = inf;
  const broadcast = new Broadcast(inf, log, o.flushMs ?? 100, o.historyPoints ?? 1000);
  let ready = false;
  const routes: Routes = { inf, access: o.access ?? localAccess(), broadcast, ready: () => ready };
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    handle(routes, req, res).catch((e: unknown) => {
      log.error({ err: (e as Error).message }, 'dashboard request failed');
      if (!res.headersSent) answer(res, 500, 'internal error\n');
      else res.end();
    });
  };
  const server = o.tls ? https.createServer({ key: o.tls.key, cert: o.tls.cert }, listener) : http.createServer(listener);

  for (const i of [campaigns, plans, mus]) i?.start();
  void Promise.all([campaigns.synced(), plans.synced(), mus?.synced()]).then(() => (ready = true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `${o.tls ? 'https' : 'http'}://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${addr.port}/`;
  return {
    url,
    synced: async () => {
      await Promise.all([campaigns.synced(), plans.synced(), mus?.synced()]);
    },
    get viewers() {
      return broadcast.pages.size;
    },
    async close() {
      broadcast.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await Promise.all([campaigns.stop(), plans.stop(), mus?.stop()]);
    },
  };
}
