// The plan controller (docs/design.md §4.1): reconciles InPlaceUpdatePlans. Per reconcile: snapshot (scope.ts buildScope over
// the informer stores) -> decidePlan (pure, decide.ts + status.ts) -> act once through the phases reconcileSupersede,
// reconcileFinalizer, owners (owners-act.ts), reconcileMachines, reconcileSurge, reconcileClones -> reconcileStatus, the one status patch
// through /status with optimistic concurrency -> recordEvents (events and metrics) -> nextAction (when to look again).
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, ResourceType, WritePolicy } from '../api/index.js';
import {
  API_VERSION,
  Annotations,
  Clusters,
  Secrets,
  CustomResourceDefinitions,
  Finalizers,
  InPlaceUpdatePlans,
  Labels,
  MachineDeployments,
  MachineHealthChecks,
  MachineSets,
  MachineUpdates,
  Machines,
  PlanAnnotations,
  UpdatePhase,
  isTerminal,
} from '../api/index.js';
import { toKubeTime } from '../runtime/pure/conditions.js';
import { ConflictError, isAlreadyExists, isNotFound, KubeApiError, RetryableError } from '../runtime/pure/errors.js';
import { encodePointer } from '../runtime/pure/jsonpointer.js';
import { restoreSkipRemediationOps } from '../api/skip-remediation.js';
import { forEachLimit, settlesWithin } from '../runtime/parallel.js';
import { snapshot as patchSnapshot } from '../runtime/patch.js';
import type { Controller, KubeClient, Logger, Manager, ObjectKey, Store } from '../runtime/pure/types.js';
import { Action } from '../runtime/pure/types.js';
import {
  clusterLabel,
  machineBootstrapRef,
  machineInfraRef,
  mdClusterName,
  ownerBootstrapTemplateRef,
  ownerInfraTemplateRef,
  type ContractRef,
  type Machine,
  type MachineHealthCheck,
} from '../api/capi/index.js';
import type { MachineLabelIntent, MachineUpdateIntent, PlanDecision } from './decide.js';
import { decidePlan } from './decide.js';
import { PlanCache, decideThroughCache } from './cache/decide.js';
import type { PlanMetrics } from './metrics.js';
import { planMetricsFor } from './metrics.js';
import { labelValue, machineUpdateName } from './decide/names.js';
import { labelPatch } from './decide/label.js';
import { prestartCheck } from '../effects/prestart.js';
import { actOwners, blockedTargets, ownersNeedRecheck, type OwnerDeps } from './owners/owners-act.js';
import type { OwnerOutcome } from '../rules/owners.js';
import { metricDeltas, settleOwnersStatus } from './status.js';
import { crdName } from '../contract/index.js';
import { previousValues, referencedKinds, type RefLookup } from '../rules/at-target.js';
import { AtTargetMemo, atTargetThrough } from './cache/at-target.js';
import type { PlanSnapshot, ScopeReader } from './scope.js';
import type { PrestartResult } from '../rules/inputs.js';
import { buildScope, ownedBy } from './scope.js';
import { readAlerts, type GateSecret } from './alerts.js';
import { type AlertsRead } from '../rules/inputs.js';
import type { AlertGatePolicy } from '../api/alert-gate-policy.js';
import { ALERTS_POLL_MS, BOOT_ID_BEFORE_ANNOTATION, bootIdBefore, gateFailureDeltas } from '../rules/gates.js';
import { planMayAct, plansToWake, type WakeView } from './wake.js';
import { collectClones } from './owners/clones-act.js';
import { finishedAt } from './history/history.js';
import { countedBaseline, countedRows, isActionEvent, statusWriteDelay, type CountedRows } from './decide/status-write.js';
import { ReconcileTiming, type ReconcileClock } from './timing.js';
import type { Registry } from 'prom-client';

/** Name of the controller (also its event source and field manager). */
export const CONTROLLER_NAME = 'plan-controller';
/** Field manager of every write. */
const FIELD_MANAGER = CONTROLLER_NAME;
/** Re-validation period of an invalid plan (objects it names may appear without an event we watch, e.g. a CRD). */
const INVALID_RECHECK_MS = 15_000;
/**
 * Writes of one kind in flight at once within a reconcile. One plan is one key, so its reconciles are serial; with
 * one await per write, starting 500 machines at 10k cost 1,000 sequential round trips and the plan fell behind.
 */
const WRITES_IN_FLIGHT = 16;
/** How long a pre-start check that found problems stands before it runs again (a passing one stands for the generation). */
const PRESTART_RECHECK_MS = 60_000;
/** How long a created MachineUpdate is assumed to exist before the informer shows it. */
const EXPECTATION_TTL_MS = 30_000;

/**
 * How long a reconcile waits for the first list of a kind named at run time (control plane, template). A list that is
 * forbidden (the kind is not granted) is retried by the informer forever; the plan reports it instead of hanging.
 */
const CONTROL_PLANE_SYNC_MS = 10_000;

/** Built once in setup; what reconcile and its phases need. */
export interface PlanDeps {
  mgr: Manager;
  client: KubeClient;
  ctrl: () => Controller;
  plans: Store<InPlaceUpdatePlan & KubeObject>;
  machineUpdates: Store<MachineUpdate & KubeObject>;
  machines: Store;
  machineDeployments: Store;
  /** MachineSets (owner alignment reads the ones owning a target's machines from here). */
  machineSets: Store;
  /**
   * MachineHealthChecks: the label patch that starts a machine's update also protects it from remediation when one the
   * MHC extension acts on selects it (decide/label.ts). Read at the start only: MHC events wake no plan.
   */
  mhcs?: Store;
  clusters: Store;
  metrics: PlanMetrics;
  /** Task kinds' CRDs as last looked up, by kind.group (see lookupTaskCrd). */
  taskCrds: Map<string, { crd?: KubeObject; at: number }>;
  /** MachineUpdates created but not yet seen by the informer, per plan key (no double start on a stale cache). */
  expectations: Map<string, Map<string, { mu: MachineUpdate; at: number }>>;
  /** The write policy plans are validated against (`--write-policy`). */
  writePolicy?: WritePolicy;
  /** The operator's alert-gate policy (`--alert-gate-policy`); absent: every alert gate is refused. */
  alertGatePolicy?: AlertGatePolicy;
  /** Provider kinds (Kind.group) whose informer could not be started, with when: not waited for again until REF_KIND_RETRY_MS. */
  refKindFailures: Map<string, number>;
  /** Pre-start check results per plan key: once per plan generation, not every reconcile (reads and dry-runs). */
  prestart: Map<string, { uid: string; generation: number; at: number; result: PrestartResult }>;
  /** Machines-at-target memo per plan key (at-target.ts), while the plan is active; dropped with the plan. */
  atTarget: Map<string, { uid: string; memo: AtTargetMemo }>;
  /**
   * Decision cache per plan key (cache/plan-cache.ts), while the plan is active: a reconcile re-derives only the targets whose
   * objects changed. A pure cache (a restart, with none, decides the same); dropped with the plan or once it ended.
   */
  decide: Map<string, { uid: string; memo: PlanCache }>;
  /**
   * The last read of each plan's alert gate, per plan key, with its time and what it read (uid, url, Secret): reused
   * until ALERTS_POLL_MS later, so the endpoint is read once per interval whatever wakes the plan meanwhile. Kept
   * here, at the edge: the decision sees only the result and its time.
   */
  alertReads: Map<string, { key: string; at: number; result: AlertsRead }>;
  /** When each plan's status was last written (per plan key): a progress-only change waits for PROGRESS_WRITE_MS after it. */
  statusWrittenAt: Map<string, number>;
  /** Per plan key: the target rows last counted into the machines updated/failed metrics (decide/status-write.ts). */
  counted: Map<string, CountedRows>;
  /** The reconcile cycle's clock (timing.ts); none in tests that build deps by hand. */
  timing?: ReconcileTiming;
}

/** Options of setupPlanController. */
export interface PlanSetupOptions {
  /** The write policy responsibilities must pass (default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** Which alert endpoints and Secrets plans may use (`--alert-gate-policy`; default none: every alert gate refused). */
  alertGatePolicy?: AlertGatePolicy;
}

const keyOfPlan = (ns: string, name: string): string => `${ns}/${name}`;

/** Maps a CAPI object to the plans of its cluster (by its cluster-name label) that may still act (wake.ts). */
const byClusterOf =
  (deps: WakeView) =>
  (o: KubeObject): ObjectKey[] =>
    plansToWake(deps, o.metadata.namespace, clusterLabel(o));

/** Registers the plan controller with the manager. */
export function setupPlanController(mgr: Manager, opts: PlanSetupOptions = {}): Controller {
  const plans = mgr.informer<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans).store;
  const holder: { ctrl?: Controller } = {};
  const deps: PlanDeps = {
    mgr,
    client: mgr.client,
    ctrl: () => holder.ctrl!,
    plans,
    machineUpdates: mgr.informer<MachineUpdate & KubeObject>(MachineUpdates).store,
    machines: mgr.informer(Machines).store,
    machineDeployments: mgr.informer(MachineDeployments).store,
    machineSets: mgr.informer(MachineSets).store,
    mhcs: mgr.informer(MachineHealthChecks).store,
    clusters: mgr.informer(Clusters).store,
    metrics: planMetricsFor(mgr, plans),
    expectations: new Map(),
    prestart: new Map(),
    atTarget: new Map(),
    decide: new Map(),
    statusWrittenAt: new Map(),
    counted: new Map(),
    alertReads: new Map(),
    timing: new ReconcileTiming(
      (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry,
      mgr.log.child({ controller: CONTROLLER_NAME }),
    ),
    ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
    ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
    taskCrds: new Map(),
    refKindFailures: new Map(),
  };
  const byCluster = byClusterOf(deps);
  holder.ctrl = mgr
    .controller<InPlaceUpdatePlan & KubeObject>(CONTROLLER_NAME)
    .for(InPlaceUpdatePlans)
    // One active plan per cluster: a plan's change (e.g. reaching a terminal status) wakes the other plans of its cluster.
    // Cluster-wide events wake only the plans that may still act (wake.ts): kept finished plans cost nothing.
    .watches<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, (p) => plansToWake(deps, p.metadata.namespace, p.spec?.clusterName))
    .owns(MachineUpdates)
    .watches(Machines, byCluster)
    .watches(MachineDeployments, (md) => plansToWake(deps, md.metadata.namespace, mdClusterName(md) ?? clusterLabel(md)))
    .watches(Clusters, (c) => plansToWake(deps, c.metadata.namespace, c.metadata.name))
    .watches(MachineSets, byCluster)
    // No static watch of a control-plane kind: buildSnapshot watches the kind each Cluster's controlPlaneRef names,
    // so a fleet whose RBAC grants another control-plane kind (and not KubeadmControlPlane) still starts.
    .withConcurrency(2)
    // Every machine's progress is an event: at 10,000 machines back-to-back reconciles kept the process at 100% CPU and
    // its watches fell seconds behind. Resting as long as the CPU the last run used (the events it handled meanwhile
    // included) bounds a plan to half a core (waits on writes cost no rest: small fleets keep their pace); the events
    // meanwhile collapse into the next run, at most 1 s later. It was twice the CPU while a reconcile made ten passes
    // over every machine; measured at 10,003 machines (timing.ts) that rest was about half of the cycle, and the
    // cycle is what a freed slot waits for at maxUnavailable 1.
    .withCooldown((_wallMs, cpuMs, key) => {
      const ms = Math.min(cpuMs, 1000);
      deps.timing?.cooldown(key, ms);
      return ms;
    })
    .reconcile((key, ctx) => reconcile(deps, key, ctx.log));
  warmProviderKinds(deps).catch((err: unknown) =>
    mgr.log.info({ err: (err as Error).message }, 'provider kinds not watched ahead; a plan starts their watches itself'),
  );
  return holder.ctrl;
}

/**
 * Starts, once the machines are listed, the watches of the provider kinds they and their MachineDeployments reference
 * (InfraMachine, BootstrapConfig and their templates), with the mappers a plan's first reconcile would give them.
 * Started lazily, a plan's first reconcile listed them (its pre-start check reads every InfraMachine and
 * BootstrapConfig): ~0.4 s of 10,003-machine lists before its first machine. The watches are kept once a plan started
 * them anyway, so this moves that cost to the controller's start. A kind that is not served or may not be listed is
 * not watched ahead: the plan that needs it handles it as before.
 */
async function warmProviderKinds(deps: PlanDeps): Promise<void> {
  await deps.mgr.informer(Machines).synced();
  await deps.mgr.informer(MachineDeployments).synced();
  const machineKinds = new Map<string, ContractRef>();
  for (const m of deps.machines.list())
    for (const r of [machineInfraRef(m), machineBootstrapRef(m)]) if (r) machineKinds.set(`${r.apiGroup}/${r.kind}`, r);
  const templateKinds = new Map<string, ContractRef>();
  for (const md of deps.machineDeployments.list())
    for (const r of [ownerInfraTemplateRef(md), ownerBootstrapTemplateRef(md)]) if (r) templateKinds.set(`${r.apiGroup}/${r.kind}`, r);
  const watched: string[] = [];
  const watch = async (ref: ContractRef, mapper: (o: KubeObject) => ObjectKey[]): Promise<void> => {
    try {
      const res = await deps.client.resolve(ref.apiGroup, ref.kind);
      // One object first: an informer retries a list it may not make forever and keeps /readyz at 503, so a kind this
      // controller is not granted is left to the plan that needs it, which names the problem (refLookup, cachedKind).
      await deps.client.list(res, deps.mgr.namespace, { limit: 1 });
      await deps.ctrl().watch(res, mapper);
      watched.push(`${res.plural}.${res.group}`);
    } catch {
      // Not served, not granted, or the API server failed the probe: the plan starts the watch itself.
    }
  };
  // Machine-referenced kinds as refLookup watches them (their objects carry the cluster label), templates as
  // cachedKind does.
  await Promise.all([
    ...[...machineKinds.values()].map((r) => watch(r, byClusterOf(deps))),
    ...[...templateKinds.values()].map((r) => watch(r, namespacePlansOf(deps))),
  ]);
  // Once every kind that could be listed is: from here a plan's first reconcile lists nothing.
  deps.mgr.log.info({ kinds: watched.sort() }, 'provider kinds watched ahead of plans');
}

/** Reconciles one plan (level-based: everything derives from the current state). */
export async function reconcile(deps: PlanDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const ns = key.namespace ?? '';
  const cached = deps.plans.peek(ns, key.name);
  if (!cached) {
    deps.timing?.drop(keyOfPlan(ns, key.name));
    deps.statusWrittenAt.delete(keyOfPlan(ns, key.name));
    deps.counted.delete(keyOfPlan(ns, key.name));
    deps.expectations.delete(keyOfPlan(ns, key.name));
    deps.prestart.delete(keyOfPlan(ns, key.name));
    deps.atTarget.delete(keyOfPlan(ns, key.name));
    deps.decide.delete(keyOfPlan(ns, key.name));
    deps.alertReads.delete(keyOfPlan(ns, key.name));
    return Action.awaitChange();
  }
  const clock = deps.timing?.start(keyOfPlan(ns, key.name));
  try {
    return await reconcileTimed(deps, cached, log, clock);
  } finally {
    clock?.end(log);
  }
}

async function reconcileTimed(
  deps: PlanDeps,
  cached: InPlaceUpdatePlan & KubeObject,
  log: Logger,
  clock: ReconcileClock | undefined,
): Promise<Action> {
  const plan = structuredClone(cached);
  const snap = await buildSnapshot(deps, plan);
  clock?.mark('snapshot');
  const cache = decideMemo(deps, plan);
  const d = cache ? decideThroughCache(snap, cache) : decidePlan(snap);
  clock?.mark('decide');
  // Act once, in this order: supersede, finalizer, owners (paused before a target's first machine starts, docs/design.md §11),
  // machines, surge; a failed effect stops the ones after it (each depends on the one before), yet the status is written
  // from what is known either way, so it never freezes while machines finish. Events and metrics once it is written.
  let latest = plan;
  let outcomes: OwnerOutcome[] = [];
  let failure: unknown;
  try {
    await reconcileSupersede(deps, plan, d, log);
    clock?.mark('supersede');
    latest = await reconcileFinalizer(deps, plan, d);
    clock?.mark('finalizer');
    outcomes = await actOwners(ownerDeps(deps), snap, d, log);
    clock?.mark('owners');
    await reconcileMachines(deps, latest, d, log, { blocked: blockedTargets(outcomes), refs: snap.refObjects });
    clock?.mark('machines');
    await reconcileSurge(deps, latest, d, log);
    clock?.mark('surge');
    await reconcileClones(deps, snap, d, log);
    clock?.mark('clones');
  } catch (err) {
    failure = err;
    log.info({ err: (err as Error).message }, 'an effect failed; status written from what is known, retrying');
  }
  settleOwnersStatus(plan.status ?? {}, d, outcomes, plan.metadata.generation, new Date(snap.now));
  if (failure !== undefined && d.finalizer === 'remove') d.finalizer = undefined;
  const planKey = keyOfPlan(plan.metadata.namespace ?? '', plan.metadata.name ?? '');
  // Live progress alone waits for the next write (at most PROGRESS_WRITE_MS after the last one): the next reconcile,
  // and the slot it refills, is not held for it. Its events and metric deltas wait with it (they diff the written status).
  const wait = statusWriteDelay({
    prev: latest.status,
    next: d.status,
    events: d.events.filter((e) => !isActionEvent(e.reason)).length,
    finalizer: d.finalizer !== undefined,
    failed: failure !== undefined,
    lastWriteAt: deps.statusWrittenAt.get(planKey),
    nowMs: Date.now(),
  });
  // Metric deltas from the written status and what was counted since (a waiting write must not lose a count that rose
  // and fell before it); an ended plan's decision counts nothing.
  if (!isTerminal(plan.status?.updateStatus)) {
    d.metrics = { ...d.metrics, ...metricDeltas(countedBaseline(plan.status ?? {}, deps.counted.get(planKey)), d.status.targets ?? [], d) };
    deps.counted.set(planKey, countedRows(d.status.targets ?? []));
  } else deps.counted.delete(planKey);
  if (wait > 0) {
    clock?.mark('status');
    // This reconcile's own actions and its metric deltas are reported now; transitions (none here) wait for the write.
    recordEvents(deps, latest, d);
    deps.metrics.recordHolds(latest, d.gatesHolding ?? []);
    const next = nextAction(snap, d, outcomes, failure);
    return next.kind === 'requeue' && next.afterMs <= wait ? next : Action.requeue(wait);
  }
  const gateFailures = gateFailureDeltas(plan.status, d.status);
  const written = await reconcileStatus(deps, latest, d);
  if (written !== latest) deps.statusWrittenAt.set(planKey, Date.now());
  latest = written;
  clock?.mark('status');
  recordEvents(deps, latest, d);
  for (const [gate, n] of gateFailures) deps.metrics.gateFailures.inc({ gate }, n);
  deps.metrics.recordHolds(latest, d.gatesHolding ?? []);
  return nextAction(snap, d, outcomes, failure);
}

/** When the plan is reconciled again, besides on a change of what it watches. */
function nextAction(snap: PlanSnapshot, d: PlanDecision, outcomes: readonly OwnerOutcome[], failure: unknown): Action {
  // A failed request or writes left: the next reconcile continues from what the objects show (no growing backoff: each
  // reconcile makes progress, and its requests are bounded).
  if (failure !== undefined) return Action.requeue(EFFECT_RETRY_MS);
  if (outcomes.some((o) => o.pending !== undefined)) return Action.requeue(OWNER_CONTINUE_MS);
  const recheck =
    d.problems.length > 0 || snap.templates.some((t) => t.error) || snap.controlPlane?.error || ownersNeedRecheck(d)
      ? INVALID_RECHECK_MS
      : Infinity;
  // A maintenance window opens or closes, a soak ends, the alert gate is due: by the clock alone. Wake up then, just
  // after the instant (so it has passed: the alert gate's last read is then older than its interval), at most once a
  // second.
  const atWindow = d.requeueAt ? Math.max(1000, Date.parse(d.requeueAt) - Date.now() + CLOCK_WAKE_SLACK_MS) : Infinity;
  const after = Math.min(recheck, atWindow);
  return Number.isFinite(after) ? Action.requeue(after) : Action.awaitChange();
}

/** How long after a clock-driven instant (requeueAt) the plan wakes: late enough that the instant has passed. */
const CLOCK_WAKE_SLACK_MS = 50;
/** How long after a failed effect the plan is reconciled again. */
const EFFECT_RETRY_MS = 2_000;
/** How soon an owner alignment with writes left (or a failed one) continues. */
const OWNER_CONTINUE_MS = 500;
/** Most InfraMachine annotations one reconcile writes (the rest in the next ones): bounded requests per reconcile. */
const MAX_INFRA_WRITES = 128;

/** What owner alignment needs: the client for writes, the informer caches for every read. */
function ownerDeps(deps: PlanDeps): OwnerDeps {
  return {
    client: deps.client,
    fieldManager: FIELD_MANAGER,
    writesInFlight: WRITES_IN_FLIGHT,
    maxInfraWrites: MAX_INFRA_WRITES,
    reads: {
      async ref(ns, ref) {
        const { res, store, typed } = await cachedKind(deps, ref);
        const obj = typed(store.peek(ns, ref.name));
        return { res, ...(obj ? { obj } : {}), byName: (n: string) => typed(store.peek(ns, n)) };
      },
      machineSet: (ns, name) => {
        const ms = deps.machineSets.peek(ns, name);
        return ms ? { ...ms, kind: MachineSets.kind, apiVersion: `${MachineSets.group}/${MachineSets.version}` } : undefined;
      },
    },
  };
}

/**
 * The informer store of a provider kind (InfraMachine, BootstrapConfig, their templates), started on first use. A kind
 * not served throws (404 resolve); one not listed within CONTROL_PLANE_SYNC_MS throws a 403-like error naming it.
 */
async function cachedKind(
  deps: PlanDeps,
  ref: { apiGroup: string; kind: string },
): Promise<{ res: ResourceType; store: Store; typed: (o: KubeObject | undefined) => KubeObject | undefined }> {
  const res = await deps.client.resolve(ref.apiGroup, ref.kind);
  // They wake the plans of their namespace that may still act (an alignment or a check may wait on them).
  if (!(await settlesWithin(deps.ctrl().watch(res, namespacePlansOf(deps)), CONTROL_PLANE_SYNC_MS)))
    throw new KubeApiError(
      `list ${res.plural}.${res.group}`,
      403,
      undefined,
      new Error(`not listed within ${CONTROL_PLANE_SYNC_MS / 1000}s (is it granted to the plan controller?)`),
    );
  const apiVersion = res.group ? `${res.group}/${res.version}` : res.version;
  // List items may omit kind and apiVersion; a clone copies them from its source, the checks compare kinds.
  const typed = (o: KubeObject | undefined): KubeObject | undefined => (o ? { ...o, kind: res.kind, apiVersion } : undefined);
  return { res, store: deps.mgr.informer(res).store, typed };
}

/** Maps an object to the plans of its namespace that may still act (wake.ts). */
const namespacePlansOf =
  (deps: PlanDeps) =>
  (o: KubeObject): ObjectKey[] =>
    deps.plans
      .list(o.metadata.namespace)
      .filter((p) => planMayAct(p, deps))
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name! }));

/** The plan controller's ScopeReader: the informer stores, and for kinds named at run time discovery plus a watch. */
function storeReader(deps: PlanDeps): ScopeReader {
  const mapToNamespacePlans = namespacePlansOf(deps);
  const controlPlanePlans = (cp: KubeObject): ObjectKey[] =>
    deps.plans
      .list(cp.metadata.namespace)
      .filter((p) => p.spec?.controlPlane?.name === cp.metadata.name && planMayAct(p, deps))
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name! }));
  return {
    now: () => toKubeTime(new Date()),
    cluster: async (ns, name) => deps.clusters.peek(ns, name),
    machineDeployments: async (ns, names) => names.map((n) => deps.machineDeployments.peek(ns, n)).filter((o): o is KubeObject => !!o),
    machines: async (ns, clusterName) => sharedByLabel(deps.machines, Labels.clusterName, clusterName, ns),
    machineUpdates: async (ns, planLabel) => sharedByLabel(deps.machineUpdates, Labels.planName, planLabel, ns),
    plans: async (ns, clusterName) => deps.plans.list(ns).filter((p) => p.spec?.clusterName === clusterName),
    async read(ns, apiGroup, kind, name, purpose) {
      let res: ResourceType;
      try {
        res = await deps.client.resolve(apiGroup, kind);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return { notServed: (err as Error).message };
      }
      // A kind the plan controller may not list must not block the worker: the plan reports it instead of hanging.
      if (
        !(await settlesWithin(
          deps.ctrl().watch(res, purpose === 'controlPlane' ? controlPlanePlans : mapToNamespacePlans),
          CONTROL_PLANE_SYNC_MS,
        ))
      ) {
        const hint = purpose === 'controlPlane' ? "is it in the plan controller's provider list?" : 'is it granted to the plan controller?';
        return {
          unreadable: `${res.plural}.${res.group} could not be listed within ${CONTROL_PLANE_SYNC_MS / 1000}s (${hint} see docs/operations.md)`,
        };
      }
      const object = deps.mgr.informer(res).store.peek(ns, name);
      return object ? { object } : {};
    },
    taskCrd: async (group, kind) => (await lookupTaskCrd(deps, group, kind)).crd,
  };
}

/**
 * The store's shared, frozen list of a label's objects (store.ts byLabelView: no copy, the same array while the bucket
 * is unchanged), or a copy from a store without it. Frozen: a caller that sorted or pushed into it would throw.
 */
function sharedByLabel<T extends KubeObject>(store: Store<T>, key: string, value: string, ns: string): T[] {
  const view = (store as { byLabelView?: (k: string, v: string, n?: string) => readonly T[] }).byLabelView;
  return (view ? view.call(store, key, value, ns) : store.byLabel(key, value, ns)) as T[];
}

/** Reads everything the decision needs from the informer stores (and discovery for kinds named at run time). */
async function buildSnapshot(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject): Promise<PlanSnapshot> {
  const snap = await buildScope(plan, storeReader(deps), decideMemo(deps, plan)?.ownFilter);
  // The store may lag behind our own creates; a created MachineUpdate counts until the informer shows it.
  snap.machineUpdates = withExpectations(deps, plan, snap.machineUpdates);
  if (deps.writePolicy) snap.writePolicy = deps.writePolicy;
  if (deps.alertGatePolicy) snap.alertGatePolicy = deps.alertGatePolicy;
  const planKey = keyOfPlan(plan.metadata.namespace ?? '', plan.metadata.name ?? '');
  if (plan.spec.rerunMachinesAtTarget !== true && !isTerminal(plan.status?.updateStatus)) {
    const refs = await refLookup(deps, plan, snap.machines, byClusterOf(deps));
    const memo = atTargetMemo(deps, planKey, plan.metadata.uid ?? '');
    // The memo keeps the set of names with an update, patched for the updates that are new objects.
    snap.atTarget = atTargetThrough(plan, snap.machines, refs.lookup, memo.excluded(snap.machineUpdates), { memo, stamp: refs.stamp });
    snap.refObjects = refs.lookup;
  } else deps.atTarget.delete(planKey);
  const prestart = await prestartFor(deps, snap);
  if (prestart) snap.prestart = prestart;
  // spec.alertGate: the endpoint is read once per ALERTS_POLL_MS per active plan (alerts.ts; bounded by its timeout),
  // once the operator's policy allows its url and Secret (readAlerts refuses before any read or request otherwise).
  if (plan.spec.alertGate && !isTerminal(plan.status?.updateStatus)) snap.alerts = await gateRead(deps, planKey, plan, plan.spec.alertGate);
  else deps.alertReads.delete(planKey);
  return snap;
}

/**
 * The plan's alert-gate result: the last read while it is younger than ALERTS_POLL_MS and read the same thing (plan
 * uid, url, Secret), else a new read. A reconcile woken by anything else (a machine, a task, its own status write)
 * reuses it: the endpoint and the Secret are read at the documented interval, not per reconcile.
 */
async function gateRead(
  deps: PlanDeps,
  planKey: string,
  plan: InPlaceUpdatePlan & KubeObject,
  gate: NonNullable<InPlaceUpdatePlan['spec']['alertGate']>,
): Promise<AlertsRead> {
  const key = JSON.stringify([plan.metadata.uid ?? '', gate.url, gate.secretRef?.name ?? null]);
  const nowMs = Date.now();
  const hit = deps.alertReads.get(planKey);
  if (hit && hit.key === key && nowMs - hit.at >= 0 && nowMs - hit.at < ALERTS_POLL_MS) return hit.result;
  const read = await readAlerts(
    (ns, name) => deps.client.get<KubeObject & GateSecret>(Secrets, ns, name),
    plan.metadata.namespace ?? '',
    gate,
    deps.alertGatePolicy,
  );
  // Timed from the start of the read: a slow endpoint does not stretch the interval.
  const result: AlertsRead = { ...read, at: new Date(nowMs).toISOString() };
  deps.alertReads.set(planKey, { key, at: nowMs, result });
  return result;
}

/** The plan's decision memo (a new one for a plan recreated under the same name); none once the plan ended. */
function decideMemo(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject): PlanCache | undefined {
  const planKey = keyOfPlan(plan.metadata.namespace ?? '', plan.metadata.name ?? '');
  // An ended plan reconciles rarely (cleanup, its finalizer): the memo's lists of the cluster's machines would be held
  // for nothing.
  if (isTerminal(plan.status?.updateStatus)) {
    deps.decide.delete(planKey);
    return undefined;
  }
  const uid = plan.metadata.uid ?? '';
  let e = deps.decide.get(planKey);
  if (!e || e.uid !== uid) deps.decide.set(planKey, (e = { uid, memo: new PlanCache() }));
  return e.memo;
}

/** The plan's machines-at-target memo (a new one for a plan recreated under the same name). */
function atTargetMemo(deps: PlanDeps, planKey: string, uid: string): AtTargetMemo {
  let e = deps.atTarget.get(planKey);
  if (!e || e.uid !== uid) deps.atTarget.set(planKey, (e = { uid, memo: new AtTargetMemo() }));
  return e.memo;
}

/**
 * The pre-start check of this plan generation: run while the plan has started no machine (a passing result stands for
 * the generation; one with problems is re-run after PRESTART_RECHECK_MS, the cluster may have been fixed), then kept.
 */
async function prestartFor(deps: PlanDeps, snap: PlanSnapshot): Promise<PrestartResult | undefined> {
  const { plan } = snap;
  const key = keyOfPlan(plan.metadata?.namespace ?? '', plan.metadata?.name ?? '');
  const uid = plan.metadata?.uid ?? '';
  const generation = plan.metadata?.generation ?? 0;
  const cached = deps.prestart.get(key);
  const fresh = cached && cached.uid === uid && cached.generation === generation ? cached : undefined;
  const started =
    snap.machineUpdates.length > 0 ||
    !!plan.status?.startTime ||
    !!plan.metadata?.deletionTimestamp ||
    plan.spec.updatePhase === UpdatePhase.aborting ||
    isTerminal(plan.status?.updateStatus);
  if (started || !snap.cluster) return fresh?.result;
  const passed =
    fresh && fresh.result.schemaProblems.length === 0 && (fresh.result.uncovered.length === 0 || plan.spec.acceptUncoveredChanges === true);
  if (fresh && (passed || Date.now() - fresh.at < PRESTART_RECHECK_MS)) return fresh.result;
  // Reads from the informer caches: the check costs its dry-runs only (a kind that cannot be cached is listed).
  const result = await prestartCheck(deps.client, snap, {
    async list(ns, ref) {
      try {
        const { store, typed } = await cachedKind(deps, ref);
        return store.list(ns).map((o) => typed(o)!);
      } catch (err) {
        if (isNotFound(err) || (err instanceof KubeApiError && err.code === 403)) return undefined;
        throw err;
      }
    },
  });
  deps.prestart.set(key, { uid, generation, at: Date.now(), result });
  return result;
}

/** A number per store instance (a restarted informer's new store never shares a stamp with the old one). */
const storeIds = new WeakMap<object, number>();
let nextStoreId = 0;
const storeId = (store: object): number => {
  let id = storeIds.get(store);
  if (id === undefined) storeIds.set(store, (id = ++nextStoreId));
  return id;
};

/** How long a provider kind whose list did not sync is not waited for again (its machines are then not at target). */
const REF_KIND_RETRY_MS = 60_000;

/**
 * The InfraMachines / BootstrapConfigs the plan's values live on, from informers of the kinds the machines reference
 * (watched at run time, like templates). A kind that is not served or cannot be listed makes its machines "not at
 * target": their updaters run, as before this check existed.
 */
async function refLookup(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  mapper: (o: KubeObject) => ObjectKey[],
): Promise<{ lookup: RefLookup; stamp?: string }> {
  const stores = new Map<string, Store>();
  for (const ref of referencedKinds(plan, machines)) {
    const key = `${ref.kind}.${ref.apiGroup}`;
    const failedAt = deps.refKindFailures.get(key);
    if (failedAt !== undefined && Date.now() - failedAt < REF_KIND_RETRY_MS) continue;
    let res: ResourceType;
    try {
      res = await deps.client.resolve(ref.apiGroup, ref.kind);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      deps.refKindFailures.set(key, Date.now());
      continue;
    }
    if (!(await settlesWithin(deps.ctrl().watch(res, mapper), CONTROL_PLANE_SYNC_MS))) {
      deps.refKindFailures.set(key, Date.now());
      continue;
    }
    deps.refKindFailures.delete(key);
    stores.set(`${ref.apiGroup}/${ref.kind}`, deps.mgr.informer(res).store);
  }
  const lookup: RefLookup = (ns, ref) => stores.get(`${ref.apiGroup}/${ref.kind}`)?.peek(ns, ref.name);
  // The referenced kinds' stores and their change counts (store.ts): unchanged, no answer that read them can change.
  const counts: string[] = [];
  for (const [k, store] of stores) {
    const changes = (store as { changes?: unknown }).changes;
    if (typeof changes !== 'number') return { lookup };
    counts.push(`${k}=${storeId(store)}:${changes}`);
  }
  return { lookup, stamp: counts.join(',') };
}

/** How long a task kind's CRD lookup is reused (CRDs change rarely; a plan reconciles often). */
const TASK_CRD_TTL_MS = 15_000;

/** The CRD of a task kind (crd absent when the kind is not served or has no CRD), cached for TASK_CRD_TTL_MS. */
async function lookupTaskCrd(deps: PlanDeps, group: string, kind: string): Promise<{ crd?: KubeObject }> {
  const key = `${kind}.${group}`;
  const hit = deps.taskCrds.get(key);
  if (hit && Date.now() - hit.at < TASK_CRD_TTL_MS) return hit.crd ? { crd: hit.crd } : {};
  let crd: KubeObject | undefined;
  try {
    const res = await deps.client.resolve(group, kind);
    crd = await deps.client.get(CustomResourceDefinitions, undefined, crdName(res.plural, res.group));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  deps.taskCrds.set(key, { ...(crd ? { crd } : {}), at: Date.now() });
  return crd ? { crd } : {};
}

/** The plan's MachineUpdates with those it created that the informer does not show yet (within EXPECTATION_TTL_MS). */
function withExpectations(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject, fromStore: MachineUpdate[]): MachineUpdate[] {
  const ns = plan.metadata.namespace ?? '';
  const planKey = keyOfPlan(ns, plan.metadata.name ?? '');
  const exp = deps.expectations.get(planKey);
  if (!exp) return fromStore;
  // Seen = in the store as this plan's own (as buildScope keeps them): one lookup per expectation, not a set of every
  // MachineUpdate of the plan per reconcile.
  let out: MachineUpdate[] | undefined;
  for (const [name, e] of exp) {
    const cached = deps.machineUpdates.peek(ns, name);
    const seen = cached !== undefined && cached.spec?.planName === plan.metadata.name && ownedBy(cached, plan);
    if (seen || Date.now() - e.at > EXPECTATION_TTL_MS) exp.delete(name);
    else (out ??= [...fromStore]).push(e.mu);
  }
  if (exp.size === 0) deps.expectations.delete(planKey);
  return out ?? fromStore;
}

/** Supersede: moves every older active plan of the cluster to aborting, naming this plan. */
export async function reconcileSupersede(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: PlanDecision,
  log: Logger,
): Promise<void> {
  const ns = plan.metadata.namespace ?? '';
  const name = plan.metadata.name ?? '';
  for (const other of d.supersede) {
    await ignoreNotFound(
      deps.client.patch(
        InPlaceUpdatePlans,
        ns,
        other,
        { metadata: { annotations: { [PlanAnnotations.supersededBy]: name } }, spec: { updatePhase: UpdatePhase.aborting } },
        { type: 'merge', fieldManager: FIELD_MANAGER },
      ),
    );
    log.info({ superseded: other }, 'superseded an older plan of the cluster');
  }
}

/** Finalizer: added before anything is touched, so that a deletion can always undo what the plan did. Returns the plan as written. */
export async function reconcileFinalizer(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: PlanDecision,
): Promise<InPlaceUpdatePlan & KubeObject> {
  if (d.finalizer !== 'add') return plan;
  const ph = patchSnapshot(plan);
  plan.metadata.finalizers = [...(plan.metadata.finalizers ?? []), Finalizers.plan];
  return ph.apply(deps.client, InPlaceUpdatePlans, plan, { fieldManager: FIELD_MANAGER });
}

/** Machines: label then start each machine (in parallel across machines), then aborts to propagate, then labels to remove. */
export async function reconcileMachines(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: PlanDecision,
  log: Logger,
  around: { blocked?: ReadonlySet<string>; refs?: RefLookup | undefined } = {},
): Promise<void> {
  const { blocked = new Set<string>(), refs } = around;
  const ns = plan.metadata.namespace ?? '';
  const name = plan.metadata.name ?? '';
  // A target whose owner could not be paused starts none of its machines in this reconcile (docs/design.md §11); past
  // MAX_STARTS_PER_RECONCILE the rest start in the next reconcile (bounded requests per reconcile).
  const held = new Set(d.create.filter((c) => blocked.has(`${c.target.kind}/${c.target.name}`)).map((c) => c.machine));
  const allowed = d.create.filter((c) => !held.has(c.machine));
  for (const c of allowed.slice(MAX_STARTS_PER_RECONCILE)) held.add(c.machine);
  if (allowed.length > MAX_STARTS_PER_RECONCILE) deps.ctrl().enqueue({ namespace: ns, name });
  // Each write is independent: one failure does not stop the others (under a flaky API server that would cap a
  // reconcile's progress at a handful of writes); the failures are reported once all ran.
  const failures: unknown[] = [];
  // Label first: the label patch carries the MHC protection (decide/label.ts), and the machine task controller acts on
  // a MachineUpdate only once its machine carries the plan's label (contract C9). Per machine,
  // not per phase: each MachineUpdate is created as soon as its own label landed, so a freed slot is refilled after two
  // round trips rather than after every label of the reconcile and then every create (the step latency at
  // maxUnavailable 1, where one reconcile refills a slot in each of hundreds of targets).
  const labels = new Map(d.label.filter((l) => !held.has(l.machine)).map((l) => [l.machine, l]));
  const creates = d.create.filter((c) => !held.has(c.machine));
  const starting = new Set(creates.map((c) => c.machine));
  const relabels = [...labels.values()].filter((l) => !starting.has(l.machine));
  // The namespace's MachineHealthChecks, read once for every label patch of this reconcile.
  const mhcs = labels.size > 0 ? ((deps.mhcs?.list(ns) ?? []) as MachineHealthCheck[]) : [];
  const jobs: (() => Promise<void>)[] = [
    ...creates.map((c) => async () => {
      const l = labels.get(c.machine);
      // Only machines whose label landed start: no machine is in update without its label.
      if (l && !(await labelMachine(deps, plan, l, mhcs, failures))) return;
      await startMachine(deps, plan, c, log, refs);
    }),
    ...relabels.map((l) => async () => void (await labelMachine(deps, plan, l, mhcs, failures))),
    // Aborts and unlabels in the same pool, after the starts: they depend on nothing above, and a stage of their own
    // held the status write and the next reconcile (the next freed slot) for one more round trip.
    ...d.abort.map((muName) => async () => {
      await ignoreNotFound(
        deps.client.patch(
          MachineUpdates,
          ns,
          muName,
          { spec: { updatePhase: UpdatePhase.aborting } },
          { type: 'merge', fieldManager: FIELD_MANAGER },
        ),
      );
    }),
    ...d.unlabel.map((machine) => async () => unlabelMachine(deps, ns, machine, labelValue(plan.metadata.name ?? ''))),
  ];
  await eachSettled(jobs, failures, (job) => job());
  if (failures.length > 0) throw failures[0];
}

/**
 * Labels a machine in update by this plan (label and start time, and the protection of the namespace's `mhcs` that
 * select it); false (the error in `failures`) when it did not land.
 */
async function labelMachine(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  l: MachineLabelIntent,
  mhcs: readonly MachineHealthCheck[],
  failures: unknown[],
): Promise<boolean> {
  const ns = plan.metadata.namespace ?? '';
  const m = deps.machines.peek(ns, l.machine) as Machine | undefined;
  if (!m) return true;
  // The MHC extension's protection rides on this patch when an MHC it acts on selects the machine (decide/label.ts).
  const planName = plan.metadata.name ?? '';
  const p = labelPatch(m, labelValue(planName), l.startedAt, machineUpdateName(planName, l.machine), mhcs);
  try {
    await ignoreNotFound(
      p.type === 'merge'
        ? deps.client.patch(Machines, ns, l.machine, p.body, { type: 'merge', fieldManager: FIELD_MANAGER })
        : deps.client.patch(Machines, ns, l.machine, p.ops, { type: 'json', fieldManager: FIELD_MANAGER }),
    );
    return true;
  } catch (err) {
    // A failed guard (the annotations or the machine moved since the cache): the start is decided again on fresh state.
    failures.push(
      p.protectedBy !== undefined && err instanceof KubeApiError && (err.code === 409 || err.code === 422)
        ? new ConflictError(`label Machine ${ns}/${l.machine}`, err)
        : err,
    );
    return false;
  }
}

/** The MachineUpdate that starts one machine's update, owned by the plan. */
function machineUpdateFor(
  plan: InPlaceUpdatePlan & KubeObject,
  c: MachineUpdateIntent,
  machine: KubeObject | undefined,
  refs: RefLookup | undefined,
): MachineUpdate & KubeObject {
  const bootId = bootIdBefore(machine);
  // The values the commit will overwrite, from the caches the machines-at-target check read (contract C8: a
  // one-object commit still at them needs no journal write). Without those caches only the Machine's are recorded.
  const previous = previousValues(machine, c.updaters, refs);
  const name = plan.metadata.name ?? '';
  return {
    apiVersion: API_VERSION,
    kind: MachineUpdates.kind,
    metadata: {
      name: c.name,
      namespace: plan.metadata.namespace ?? '',
      labels: {
        [Labels.clusterName]: plan.spec.clusterName,
        [Labels.planName]: labelValue(name),
        [Labels.machineName]: labelValue(c.machine),
        [Labels.targetName]: labelValue(c.target.name),
      },
      // The node's boot before the update, for an updater's verify.reboot (gates.ts).
      ...(bootId !== undefined ? { annotations: { [BOOT_ID_BEFORE_ANNOTATION]: bootId } } : {}),
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: InPlaceUpdatePlans.kind,
          name,
          uid: plan.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      planName: name,
      clusterName: plan.spec.clusterName,
      target: c.target,
      machineRef: { name: c.machine },
      updatePhase: UpdatePhase.updating,
      updaters: c.updaters,
      ...(previous ? { previous } : {}),
    },
  };
}

/** Creates a machine's MachineUpdate (adopting our own existing one) and expects it until the informer shows it. */
async function startMachine(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  c: MachineUpdateIntent,
  log: Logger,
  refs: RefLookup | undefined,
): Promise<void> {
  const { client } = deps;
  const ns = plan.metadata.namespace ?? '';
  const mu = machineUpdateFor(plan, c, deps.machines.peek(ns, c.machine), refs);
  let created: MachineUpdate = mu;
  try {
    created = await client.create(MachineUpdates, mu, { fieldManager: FIELD_MANAGER });
    // Counted here, not after the status write: a later conflict must not lose a start that happened.
    deps.metrics.machinesStarted.inc();
  } catch (err) {
    // Deterministic names: an existing record means an earlier reconcile (or process) already started this machine.
    if (!isAlreadyExists(err)) throw new RetryableError(`create MachineUpdate ${ns}/${c.name}`, err);
    const existing = await client.get<MachineUpdate & KubeObject>(MachineUpdates, ns, c.name);
    // Another plan's record under this name (e.g. of a deleted plan not yet collected) is not ours: retried later.
    if (existing && !ownedBy(existing, plan)) {
      log.info({ machineUpdate: c.name }, 'MachineUpdate name held by another plan; not adopted');
      return;
    }
    if (existing) created = existing;
  }
  const planKey = keyOfPlan(ns, plan.metadata.name ?? '');
  if (!deps.expectations.has(planKey)) deps.expectations.set(planKey, new Map());
  deps.expectations.get(planKey)!.set(c.name, { mu: created, at: Date.now() });
}

/** Removes this plan's label and start time from a machine no longer in update. */
async function unlabelMachine(deps: PlanDeps, ns: string, machine: string, planLabel: string): Promise<void> {
  const m = deps.machines.peek(ns, machine);
  if (!m) return;
  // Guarded by the label itself (a JSON patch test), not the resourceVersion: the label may belong to a newer plan by
  // the time this lands, but the MHC extension's annotation write at the same moment (the update ended) is no conflict.
  // The MHC extension leaves the end-of-update restore of skip-remediation to this patch (one write, not two); its ops
  // test what they read and come before the start time's removal (they may test the whole annotation map).
  const ops: unknown[] = [
    { op: 'test', path: `/metadata/labels/${encodePointer([Labels.planName]).slice(1)}`, value: planLabel },
    ...restoreSkipRemediationOps(m.metadata.annotations),
    { op: 'remove', path: `/metadata/labels/${encodePointer([Labels.planName]).slice(1)}` },
  ];
  if (m.metadata.annotations?.[Annotations.updateStartedAt] !== undefined)
    ops.push({ op: 'remove', path: `/metadata/annotations/${encodePointer([Annotations.updateStartedAt]).slice(1)}` });
  // A failed test (422) means the label is no longer this plan's, or the cache was stale: decided again on fresh state.
  await ignoreNotFound(deps.client.patch(Machines, ns, machine, ops, { type: 'json', fieldManager: FIELD_MANAGER }));
}

/** Most machines one reconcile starts (labels + MachineUpdates); the rest start in the next one, right after. */
const MAX_STARTS_PER_RECONCILE = 1000;

/** Runs `fn` on every item, WRITES_IN_FLIGHT at once, to the end; the errors are collected in `failures`. */
async function eachSettled<T>(items: readonly T[], failures: unknown[], fn: (item: T) => Promise<void>): Promise<void> {
  await forEachLimit(items, WRITES_IN_FLIGHT, async (item) => {
    try {
      await fn(item);
    } catch (err) {
      failures.push(err);
    }
  });
}

/** Surge: scales a MachineDeployment up by one for maxUnavailable 0, or restores it (guarded by resourceVersion). */
export async function reconcileSurge(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject, d: PlanDecision, log: Logger): Promise<void> {
  const ns = plan.metadata.namespace ?? '';
  for (const s of d.scale) {
    const body: Record<string, unknown> = {
      metadata: { ...(s.resourceVersion ? { resourceVersion: s.resourceVersion } : {}), annotations: s.annotations },
    };
    if (s.replicas !== undefined) body['spec'] = { replicas: s.replicas };
    await ignoreNotFound(deps.client.patch(MachineDeployments, ns, s.name, body, { type: 'merge', fieldManager: FIELD_MANAGER }));
    log.info(
      { machineDeployment: s.name, replicas: s.replicas, kind: s.kind },
      s.kind === 'surge' ? 'surged MachineDeployment' : 'restored MachineDeployment',
    );
  }
}

/**
 * Template clones: once a deleted plan has nothing left to undo (its finalizer is released in this reconcile), the
 * cluster's clones whose plan is gone and that nothing refers to are deleted (clones.ts), before the finalizer goes.
 */
export async function reconcileClones(deps: PlanDeps, snap: PlanSnapshot, d: PlanDecision, log: Logger): Promise<void> {
  if (d.finalizer !== 'remove') return;
  const ns = snap.plan.metadata?.namespace ?? '';
  // A plan of the cluster in flight may be about to name a clone an older plan created (names are content-addressed):
  // the history reconciler sweeps once the cluster is quiet.
  const inFlight = deps.plans
    .list(ns)
    .some((p) => p.spec?.clusterName === snap.plan.spec.clusterName && !p.metadata.deletionTimestamp && finishedAt(p) === undefined);
  if (inFlight) return;
  const livePlans = new Set(
    deps.plans
      .list(ns)
      .filter((p) => !p.metadata.deletionTimestamp)
      .map((p) => p.metadata.name ?? ''),
  );
  const cp = snap.controlPlane?.object;
  await collectClones(
    { client: deps.client },
    {
      namespace: ns,
      clusterName: snap.plan.spec.clusterName,
      livePlans,
      owners: [...deps.machineDeployments.list(ns), ...(cp ? [cp] : [])],
      machines: snap.machines,
    },
    log,
  );
}

/** The one status write (and the finalizer release, last, once deletion has nothing left to undo). Returns the plan as written. */
export async function reconcileStatus(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: PlanDecision,
): Promise<InPlaceUpdatePlan & KubeObject> {
  const ph = patchSnapshot(plan);
  // A shallow copy (nothing below mutates it): apply diffs it against the snapshot once and sends nothing when nothing
  // changed, instead of a deep copy of the plan and a check that computed the same diff first (300 targets' rows).
  const next: InPlaceUpdatePlan & KubeObject = { ...plan, status: d.status };
  if (d.finalizer === 'remove')
    next.metadata = { ...plan.metadata, finalizers: (plan.metadata.finalizers ?? []).filter((f) => f !== Finalizers.plan) };
  const written = await ph.apply(deps.client, InPlaceUpdatePlans, next, { fieldManager: FIELD_MANAGER });
  // Unchanged: the plan as read (the caller tells a write by identity).
  return written === next ? plan : written;
}

/** Events and metrics, once the status that reports the transitions is written. */
export function recordEvents(deps: PlanDeps, plan: InPlaceUpdatePlan & KubeObject, d: PlanDecision): void {
  for (const e of d.events) {
    const target = e.plan ? deps.plans.get(plan.metadata.namespace, e.plan) : plan;
    // An Event on another plan (superseded, pruned) names the plan that acted on it as related.
    if (target) deps.mgr.events.event(target, e.type, e.reason, e.message, target === plan ? undefined : plan);
  }
  deps.metrics.machinesUpdated.inc(d.metrics.updated);
  deps.metrics.machinesFailed.inc(d.metrics.failed);
}

async function ignoreNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
