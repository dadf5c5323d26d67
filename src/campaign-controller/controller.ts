// The campaign controller (docs/operations.md "Fleet campaigns"): reconciles InPlaceUpdateCampaigns. Per reconcile:
// snapshot (scope.ts over the informer stores: Clusters, MachineDeployments, plans, campaigns — never a Machine
// informer; prestart.ts samples one machine per target for the clusters not started yet) ->
// decideCampaign (pure, decide.ts) -> act once: abort / pause / resume the campaign's plans, create the next wave's
// plans -> the one status write through /status (status.ts) -> Events and metrics.
import type { AlertGatePolicy, InPlaceUpdateCampaign, InPlaceUpdateCampaignStatus, ResourceType } from '../api/index.js';
import {
  API_VERSION,
  CampaignLabels,
  Clusters,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  MachineDeployments,
  UpdatePhase,
} from '../api/index.js';
import { clusterLabel, mdClusterName } from '../api/capi/index.js';
import { toKubeTime } from '../runtime/pure/conditions.js';
import { isAlreadyExists, isNotFound, RetryableError } from '../runtime/pure/errors.js';
import { forEachLimit } from '../runtime/parallel.js';
import { jsonEqual, mergePatchDiff } from '../runtime/patch.js';
import type { Controller, KubeClient, Logger, Manager, ObjectKey, Store } from '../runtime/pure/types.js';
import type { KindRead } from '../rules/inputs.js';
import { Action } from '../runtime/pure/types.js';
import type { CampaignDecision } from './decide.js';
import { decideCampaign } from './decide.js';
import type { CampaignMetrics } from './metrics.js';
import { campaignMetricsFor } from './metrics.js';
import type { CampaignObject, CampaignReader, PlanObject } from './scope.js';
import { buildCampaignScope, campaignFinished, campaignOf } from './scope.js';
import { campaignEvents, campaignStatus } from './status.js';
import { CampaignPrestart } from './prestart.js';
import { templateRefsOf } from '../rules/inputs.js';

/** Name of the controller (also its event source and field manager). */
export const CONTROLLER_NAME = 'campaign-controller';
const FIELD_MANAGER = CONTROLLER_NAME;
/** Plan writes in flight at once (a wave of hundreds of clusters is hundreds of creates). */
const WRITES_IN_FLIGHT = 16;
/** Re-check period of an invalid or waiting campaign (a template kind may appear without an event we watch). */
const RECHECK_MS = 15_000;
/** The least rest between two reconciles of a campaign (see withCooldown below). */
const MIN_REST_MS = 250;
/** How long a created plan is assumed to exist before the informer shows it. */
const EXPECTATION_TTL_MS = 30_000;

/** How long a control plane kind's first list may take before the campaign reports it unreadable. */
const CONTROL_PLANE_SYNC_MS = 10_000;

/** Built once in setup; what reconcile and its phases need. */
export interface CampaignDeps {
  mgr: Manager;
  /** The controller (to add the control plane kinds' watches at run time). */
  ctrl: () => Controller;
  client: KubeClient;
  campaigns: Store<CampaignObject>;
  plans: Store<PlanObject>;
  clusters: Store;
  machineDeployments: Store;
  metrics: CampaignMetrics;
  /** The plan's pre-start check per cluster not started yet (template objects, uncovered drift, dry-run), memoised. */
  prestart: CampaignPrestart;
  /** Plans created but not yet seen by the informer, per campaign key: no wave started twice on a stale cache. */
  expectations: Map<string, Map<string, { plan: PlanObject; at: number }>>;
  /** The operator's alert-gate policy: a campaign's gate must pass it (absent: every gate refused). */
  alertGatePolicy?: AlertGatePolicy;
  /** Kinds read by readWatched whose watch is added and synced (by resource key): later reads peek the cache at once. */
  watchedKinds?: Set<string>;
}

const keyOf = (ns: string, name: string): string => `${ns}/${name}`;

/** The unfinished campaigns of a namespace (every one of them may care about a Cluster or a foreign plan). */
const activeCampaigns = (deps: CampaignDeps, ns: string | undefined): ObjectKey[] =>
  deps.campaigns
    .list(ns)
    .filter((c) => !campaignFinished(c) || c.status?.observedGeneration !== c.metadata.generation)
    .map((c) => ({ namespace: c.metadata.namespace, name: c.metadata.name! }));

/** Registers the campaign controller with the manager. */
export function setupCampaignController(mgr: Manager, opts: { alertGatePolicy?: AlertGatePolicy } = {}): Controller {
  const campaigns = mgr.informer<CampaignObject>(InPlaceUpdateCampaigns).store;
  // eslint-disable-next-line prefer-const -- assigned once the builder returns, read only by reconciles after that
  let ctrl: Controller | undefined;
  const deps: CampaignDeps = {
    mgr,
    ctrl: () => ctrl!,
    client: mgr.client,
    campaigns,
    plans: mgr.informer<PlanObject>(InPlaceUpdatePlans).store,
    clusters: mgr.informer(Clusters).store,
    machineDeployments: mgr.informer(MachineDeployments).store,
    metrics: campaignMetricsFor(mgr, campaigns),
    // Template objects from a watch of their kind (added on first use, as for control planes): a template created or
    // fixed wakes the namespace's campaigns.
    prestart: new CampaignPrestart(mgr.client, { template: (ns, g, k, n) => readWatched(deps, ns, g, k, n) }),
    expectations: new Map(),
    ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
  };
  ctrl = mgr
    .controller<CampaignObject>(CONTROLLER_NAME)
    .for(InPlaceUpdateCampaigns)
    // A campaign's own plans wake it; a plan no campaign owns wakes the namespace's campaigns (the overlap rule).
    .watches<PlanObject>(InPlaceUpdatePlans, (p) => {
      const owner = campaignOf(p);
      return owner ? [{ namespace: p.metadata.namespace, name: owner }] : activeCampaigns(deps, p.metadata.namespace);
    })
    // A campaign that finishes releases its clusters to newer campaigns of the namespace.
    .watches<CampaignObject>(InPlaceUpdateCampaigns, (c) => (campaignFinished(c) ? activeCampaigns(deps, c.metadata.namespace) : []))
    .watches(Clusters, (c) => activeCampaigns(deps, c.metadata.namespace))
    // MachineDeployments decide a not-yet-started cluster's targets; only their appearance, labels or strategy matter.
    .watches(MachineDeployments, (md) => ((mdClusterName(md) ?? clusterLabel(md)) ? activeCampaigns(deps, md.metadata.namespace) : []))
    .withConcurrency(2)
    // A reconcile is O(clusters + plans of the namespace) and every plan's progress is an event: at a thousand
    // clusters, resting twice the CPU the last run used keeps the campaign from competing with the plan controller.
    // At least MIN_REST_MS: events never stop during a wave, so a cheaper reconcile only ran more often (same CPU);
    // a wave's start waits at most this long for its last plan's completion, and the status' progress is 4 Hz at most.
    .withCooldown((_wallMs, cpuMs) => Math.min(Math.max(2 * cpuMs, MIN_REST_MS), 1000))
    .reconcile((key, ctx) => reconcile(deps, key, ctx.log));
  return ctrl;
}

/** The campaign controller's CampaignReader: the informer stores, and discovery for the template kinds. */
function storeReader(deps: CampaignDeps, key: string): CampaignReader {
  return {
    now: () => toKubeTime(new Date()),
    clusters: (ns) => deps.clusters.list(ns),
    machineDeployments: (ns) => deps.machineDeployments.list(ns),
    plans: (ns) => {
      const listed = deps.plans.list(ns);
      const exp = deps.expectations.get(key);
      if (!exp) return listed;
      const seen = new Set(listed.map((p) => p.metadata.name));
      const now = Date.now();
      for (const [name, e] of exp) if (seen.has(name) || now - e.at > EXPECTATION_TTL_MS) exp.delete(name);
      return [...listed, ...[...exp.values()].map((e) => e.plan)];
    },
    campaigns: (ns) => deps.campaigns.list(ns),
    templateProblems: (c) => templateProblems(deps, c),
    controlPlane: (ns, apiGroup, kind, name) => readWatched(deps, ns, apiGroup, kind, name),
    async clusterChecks(c, clusters) {
      const ns = c.metadata.namespace ?? '';
      const refs = clusters.flatMap((x) => templateRefsOf(x.plan));
      const templates = await deps.prestart.templates(ns, refs);
      const checks = await deps.prestart.check(ns, `${c.metadata.uid ?? ''}/${c.metadata.generation ?? 0}`, templates, clusters);
      return { templates, checks };
    },
  };
}

/**
 * An object of a kind named at run time (a Cluster's control plane, an updater template) from a watch of its kind,
 * added the first time a campaign needs it (as the plan controller does): a kind never listed in time is reported
 * unreadable, not waited for, so the worker never hangs.
 */
async function readWatched(deps: CampaignDeps, ns: string, apiGroup: string, kind: string, name: string): Promise<KindRead> {
  let res: ResourceType;
  try {
    res = await deps.client.resolve(apiGroup, kind);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return { notServed: (err as Error).message };
  }
  // A thousand pending clusters each read their control plane on every reconcile: once the kind's watch is added and
  // synced, a read is a cache lookup (no promise race, no timer).
  const kindKey = `${res.group}/${res.version}/${res.plural}`;
  if (deps.watchedKinds?.has(kindKey)) {
    const object = deps.mgr.informer(res).store.peek(ns, name);
    return object ? { object } : {};
  }
  // A control plane's version change or a template's appearance can make a pending cluster valid or invalid: it wakes
  // the namespace's campaigns.
  const synced = deps.ctrl().watch(res, (o) => activeCampaigns(deps, o.metadata.namespace));
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([
    synced.then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), CONTROL_PLANE_SYNC_MS))),
  ]).finally(() => clearTimeout(timer));
  if (!inTime)
    return {
      unreadable: `${res.plural}.${res.group} could not be listed within ${CONTROL_PLANE_SYNC_MS / 1000}s (is it in the campaign controller's provider list? see docs/operations.md)`,
    };
  (deps.watchedKinds ??= new Set()).add(kindKey);
  const object = deps.mgr.informer(res).store.peek(ns, name);
  return object ? { object } : {};
}

/** The updater template kinds the template names must be served (the plan checks each template object itself). */
async function templateProblems(deps: CampaignDeps, c: InPlaceUpdateCampaign): Promise<string[]> {
  const t = c.spec.template;
  const refs = [...(t.controlPlane?.updaters ?? []), ...(t.machineDeployments ?? []).flatMap((g) => g.updaters ?? [])]
    .map((u) => u.updaterUpdateTemplateRef)
    .filter((r): r is NonNullable<typeof r> => !!r);
  const problems = new Set<string>();
  for (const ref of refs) {
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0]! : '';
    try {
      await deps.client.resolve(group, ref.kind);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      problems.add(`updater template kind ${ref.kind} (${ref.apiVersion}) is not served by the API server`);
    }
  }
  return [...problems];
}

/** Reconciles one campaign (level-based: everything derives from the current state). */
export async function reconcile(deps: CampaignDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const ns = key.namespace ?? '';
  const k = keyOf(ns, key.name);
  const cached = deps.campaigns.peek(ns, key.name);
  if (!cached || cached.metadata.deletionTimestamp) {
    deps.expectations.delete(k);
    return Action.awaitChange();
  }
  const campaign = structuredClone(cached);
  const snap = await buildCampaignScope(campaign, storeReader(deps, k));
  if (deps.alertGatePolicy) snap.alertGatePolicy = deps.alertGatePolicy;
  const d = decideCampaign(snap);
  await actOnPlans(deps, campaign, d, log);
  await createPlans(deps, campaign, d, k, log);
  const next = campaignStatus(campaign, d, snap.plans, new Date());
  const written = await reconcileStatus(deps, campaign, next);
  recordEvents(deps, written ?? campaign, cached.status, next, d);
  // A campaign with windows that is not finished wakes when the window changes (status, Event, the next wave).
  const untilWindow =
    d.window.state && !['updated', 'aborted', 'failed'].includes(d.updateStatus)
      ? Math.max(1, d.window.state.nextChange.getTime() - Date.now())
      : undefined;
  const after = Math.min(d.requeueAfterMs ?? Infinity, untilWindow ?? Infinity);
  if (after !== Infinity) return Action.requeue(Math.max(1, after));
  if (d.problems.length > 0 || d.phase === 'Waiting') return Action.requeue(RECHECK_MS);
  return Action.awaitChange();
}

/** Abort, pause and resume the campaign's running plans (one merge patch per plan). */
async function actOnPlans(deps: CampaignDeps, c: CampaignObject, d: CampaignDecision, log: Logger): Promise<void> {
  const ns = c.metadata.namespace ?? '';
  const patches: [string, Record<string, unknown>][] = [
    ...d.abort.map((n): [string, Record<string, unknown>] => [n, { spec: { updatePhase: UpdatePhase.aborting } }]),
    ...d.pause.map((n): [string, Record<string, unknown>] => [
      n,
      { metadata: { annotations: { [CampaignLabels.pausedByCampaign]: c.metadata.name } }, spec: { paused: true } },
    ]),
    ...d.resume.map((n): [string, Record<string, unknown>] => [
      n,
      { metadata: { annotations: { [CampaignLabels.pausedByCampaign]: null } }, spec: { paused: false } },
    ]),
  ];
  await forEachLimit(patches, WRITES_IN_FLIGHT, async ([name, body]) => {
    try {
      await deps.client.patch(InPlaceUpdatePlans, ns, name, body, { type: 'merge', fieldManager: FIELD_MANAGER });
    } catch (err) {
      if (!isNotFound(err)) throw new RetryableError(`patch plan ${ns}/${name}`, err);
    }
  });
  if (patches.length > 0) log.info({ abort: d.abort.length, pause: d.pause.length, resume: d.resume.length }, 'propagated to plans');
}

/** Creates the next wave's plans: ordinary InPlaceUpdatePlans with a controller ownerReference to the campaign. */
async function createPlans(deps: CampaignDeps, c: CampaignObject, d: CampaignDecision, key: string, log: Logger): Promise<void> {
  if (d.create.length === 0) return;
  const ns = c.metadata.namespace ?? '';
  const exp = deps.expectations.get(key) ?? new Map<string, { plan: PlanObject; at: number }>();
  deps.expectations.set(key, exp);
  await forEachLimit(d.create, WRITES_IN_FLIGHT, async (p) => {
    const plan: PlanObject = {
      apiVersion: API_VERSION,
      kind: 'InPlaceUpdatePlan',
      metadata: {
        name: p.name,
        namespace: ns,
        labels: { [CampaignLabels.campaign]: c.metadata.name!, [CampaignLabels.wave]: String(p.wave) },
        ownerReferences: [
          { apiVersion: API_VERSION, kind: 'InPlaceUpdateCampaign', name: c.metadata.name!, uid: c.metadata.uid!, controller: true },
        ],
      },
      spec: { ...p.spec, ...(c.spec.paused ? { paused: true } : {}) },
    };
    try {
      const created = await deps.client.create(InPlaceUpdatePlans, plan, { fieldManager: FIELD_MANAGER });
      exp.set(p.name, { plan: created, at: Date.now() });
      deps.metrics.plansCreated.inc();
    } catch (err) {
      // Deterministic names: an existing plan means an earlier reconcile (or process) created it.
      if (!isAlreadyExists(err)) throw new RetryableError(`create plan ${ns}/${p.name}`, err);
    }
  });
  log.info({ wave: d.create[0]!.wave, clusters: d.create.length }, 'wave started');
}

/** The one status write, through /status, only when something changed. Returns the campaign as written. */
async function reconcileStatus(
  deps: CampaignDeps,
  c: CampaignObject,
  next: InPlaceUpdateCampaignStatus,
): Promise<CampaignObject | undefined> {
  const prev = c.status ?? {};
  // Times that only restate "now" must not make every reconcile a write.
  if (jsonEqual(JSON.parse(JSON.stringify(prev)) as never, JSON.parse(JSON.stringify(next)) as never)) return undefined;
  try {
    return await deps.client.patch<CampaignObject>(
      InPlaceUpdateCampaigns,
      c.metadata.namespace,
      c.metadata.name!,
      // A merge patch of the difference: a field the new status leaves out (soakUntil after the soak) is removed.
      {
        metadata: { resourceVersion: c.metadata.resourceVersion },
        status: mergePatchDiff(prev as Record<string, unknown>, next as Record<string, unknown>),
      },
      { type: 'merge', subresource: 'status', fieldManager: FIELD_MANAGER },
    );
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Events and metrics, once the status that reports them is written. */
function recordEvents(
  deps: CampaignDeps,
  c: CampaignObject,
  prev: InPlaceUpdateCampaign['status'],
  next: InPlaceUpdateCampaignStatus,
  d: CampaignDecision,
): void {
  // A status that did not change (nothing written) records nothing new either: the Events compare against the previous one.
  for (const e of campaignEvents(prev, next, d)) deps.mgr.events.event(c, e.type, e.reason, e.message);
}
