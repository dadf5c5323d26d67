// The plan controller (docs/design.md §4.1): reconciles InPlaceUpdatePlans. This file is its wiring (the watches) and
// the reconcile's phase list; each phase lives in its own module:
//   snapshot  snapshot/build.ts   the informer stores through scope.ts's builder, plus the plan's state (plan-state.ts)
//   decide    decide.ts           pure: the decision, never edited afterwards
//   act       supersede, finalizer (act/plan.ts), owners (owners/owners-act.ts), machines (machines/start.ts),
//             surge and clones (act/deployments.ts): each returns its outcome, a failure stops the ones after it
//   report    act/report.ts       the status to write, from the decision plus the outcomes (a deferred status patch)
//   publish   act/report.ts       the one status patch (or its wait), then events and metrics
//   next      nextAction          when to look again
import type { InPlaceUpdatePlan, KubeObject, WritePolicy } from '../api/index.js';
import { Clusters, InPlaceUpdatePlans, MachineDeployments, MachineHealthChecks, MachineSets } from '../api/index.js';
import type { AlertGatePolicy } from '../api/alert-gate-policy.js';
import { clusterLabel, mdClusterName } from '../api/capi/index.js';
import type { Controller, Logger, Manager, ObjectKey } from '../runtime/pure/types.js';
import { Action } from '../runtime/pure/types.js';
import type { OwnerOutcome } from '../rules/owners.js';
import type { Registry } from 'prom-client';
import { decidePlan, type PlanDecision } from './decide.js';
import { decideThroughCache } from './cache/decide.js';
import type { PlanDeps } from './deps.js';
import { planMetricsFor } from './metrics.js';
import { actOwners, blockedTargets, ownersNeedRecheck } from './owners/owners-act.js';
import type { PlanSnapshot } from './scope.js';
import { ReconcileTiming, type ReconcileClock } from './timing.js';
import { CONTROLLER_NAME } from './act/writes.js';
import { reconcileFinalizer, reconcileSupersede } from './act/plan.js';
import { reconcileClones, reconcileSurge } from './act/deployments.js';
import { ownerDeps } from './act/owners.js';
import { publishStatus, statusReport, type Acted } from './act/report.js';
import { reconcileMachines } from './machines/start.js';
import { buildSnapshot } from './snapshot/build.js';
import { decideMemo, planKey, PlanStates, type PlanState } from './snapshot/plan-state.js';
import { byClusterOf, warmProviderKinds } from './snapshot/reader.js';
import { planMayAct, plansOfCluster, plansToWake } from './snapshot/wake.js';
import { clusterScopesOf, heldReady } from './snapshot/cluster-scopes.js';
import { ownerMapper } from '../runtime/controller.js';

export { CONTROLLER_NAME } from './act/writes.js';

/** Re-validation period of an invalid plan (objects it names may appear without an event we watch, e.g. a CRD). */
const INVALID_RECHECK_MS = 15_000;
/** How long after a clock-driven instant (requeueAt) the plan wakes: late enough that the instant has passed. */
const CLOCK_WAKE_SLACK_MS = 50;
/** How long after a failed effect the plan is reconciled again. */
const EFFECT_RETRY_MS = 2_000;
/** How soon an owner alignment with writes left (or a failed one) continues. */
const OWNER_CONTINUE_MS = 500;

/** Options of setupPlanController. */
export interface PlanSetupOptions {
  /** The write policy responsibilities must pass (default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** Which alert endpoints and Secrets plans may use (`--alert-gate-policy`; default none: every alert gate refused). */
  alertGatePolicy?: AlertGatePolicy;
}

/** Registers the plan controller with the manager. */
export function setupPlanController(mgr: Manager, opts: PlanSetupOptions = {}): Controller {
  const plans = mgr.informer<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans).store;
  const holder: { ctrl?: Controller } = {};
  const timing = new ReconcileTiming(
    (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry,
    mgr.log.child({ controller: CONTROLLER_NAME }),
  );
  // Machines, MachineUpdates and the kinds machines reference are cached per cluster while its plans need them.
  const scopes = clusterScopesOf(mgr);
  const deps: PlanDeps = {
    mgr,
    client: mgr.client,
    ctrl: () => holder.ctrl!,
    plans,
    machineUpdates: scopes.machineUpdates.store,
    machines: scopes.machines.store,
    scopes,
    machineDeployments: mgr.informer(MachineDeployments).store,
    machineSets: mgr.informer(MachineSets).store,
    mhcs: mgr.informer(MachineHealthChecks).store,
    clusters: mgr.informer(Clusters).store,
    metrics: planMetricsFor(mgr, plans),
    // The reconcile clock's per-plan entry goes with the plan's state.
    states: new PlanStates((key) => timing.drop(key)),
    timing,
    ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
    ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
    taskCrds: new Map(),
    refKindFailures: new Map(),
  };
  const byCluster = byClusterOf(deps);
  // A cluster's caches stay while a plan of it may act (its events wake that plan); the rest go once idle.
  scopes.keepWhile((ns, cluster) => plansOfCluster(plans, ns, cluster).some((p) => planMayAct(p, deps)));
  holder.ctrl = mgr
    .controller<InPlaceUpdatePlan & KubeObject>(CONTROLLER_NAME)
    .for(InPlaceUpdatePlans)
    // One active plan per cluster: a plan's change (e.g. reaching a terminal status) wakes the other plans of its cluster.
    // Cluster-wide events wake only the plans that may still act (wake.ts): kept finished plans cost nothing.
    .watches<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, (p) => plansToWake(deps, p.metadata.namespace, p.spec?.clusterName))
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
  // The per-cluster caches' events: a MachineUpdate wakes its plan (as owns would), the rest the cluster's plans.
  holder.ctrl.watchScoped(scopes.machineUpdates, ownerMapper(InPlaceUpdatePlans));
  holder.ctrl.watchScoped(scopes.machines, byCluster);
  scopes.onKindCache((cache) => holder.ctrl!.watchScoped(cache, byCluster));
  warmProviderKinds(deps).catch((err: unknown) =>
    mgr.log.info({ err: (err as Error).message }, 'provider kinds not watched ahead; a plan starts their watches itself'),
  );
  return holder.ctrl;
}

/** Reconciles one plan (level-based: everything derives from the current state). */
export async function reconcile(deps: PlanDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const ns = key.namespace ?? '';
  const cached = deps.plans.peek(ns, key.name);
  if (!cached) {
    // The one place a plan's memory goes: everything kept for it lives in its state.
    deps.states.drop(planKey(ns, key.name));
    return Action.awaitChange();
  }
  const clock = deps.timing?.start(planKey(ns, key.name));
  // The plan's cluster is held (its caches listed and kept) for the whole reconcile.
  const cluster = cached.spec?.clusterName;
  const hold = cluster ? deps.scopes?.enter(ns, cluster) : undefined;
  try {
    if (hold) await heldReady(hold, ns, cluster!);
    return await reconcilePhases(deps, cached, log, clock);
  } finally {
    hold?.end();
    clock?.end(log);
  }
}

/** The phases of one reconcile: snapshot, decide, act, report, publish, next. */
async function reconcilePhases(
  deps: PlanDeps,
  cached: InPlaceUpdatePlan & KubeObject,
  log: Logger,
  clock: ReconcileClock | undefined,
): Promise<Action> {
  const plan = structuredClone(cached);
  const state = deps.states.of(plan);
  const snap = await buildSnapshot(deps, state, plan);
  clock?.mark('snapshot');
  const cache = decideMemo(state, plan);
  const d: Readonly<PlanDecision> = cache ? decideThroughCache(snap, cache) : decidePlan(snap);
  clock?.mark('decide');
  const acted = await act(deps, { plan, state, snap, d, log, clock });
  const report = statusReport(state, snap, d, acted);
  const wait = await publishStatus(deps, state, acted, report, clock);
  const next = nextAction(snap, d, acted);
  return wait > 0 && !(next.kind === 'requeue' && next.afterMs <= wait) ? Action.requeue(wait) : next;
}

/** What acting on one decision is given. */
interface ActInput {
  /** The plan as read (a copy of the cached one: the finalizer's add edits it). */
  plan: InPlaceUpdatePlan & KubeObject;
  state: PlanState;
  snap: PlanSnapshot;
  d: Readonly<PlanDecision>;
  log: Logger;
  clock: ReconcileClock | undefined;
}

/**
 * Acts once, in this order: supersede, finalizer, owners (paused before a target's first machine starts,
 * docs/design.md §11), machines, surge, clones. A failed effect stops the ones after it (each depends on the one
 * before), yet the status is written from what is known either way, so it never freezes while machines finish.
 */
async function act(deps: PlanDeps, { plan, state, snap, d, log, clock }: ActInput): Promise<Acted> {
  let latest = plan;
  let owners: OwnerOutcome[] = [];
  // Owner alignment records its events on the decision it is given: a copy, so the decision stays as decided.
  const events = [...d.events];
  try {
    await reconcileSupersede(deps, plan, d, log);
    clock?.mark('supersede');
    latest = await reconcileFinalizer(deps, plan, d);
    clock?.mark('finalizer');
    owners = await actOwners(
      ownerDeps(deps, { namespace: plan.metadata.namespace ?? '', cluster: plan.spec.clusterName }),
      snap,
      { ...d, events },
      log,
    );
    clock?.mark('owners');
    const around = { blocked: blockedTargets(owners), refs: snap.refObjects, expectations: state.expectations };
    await reconcileMachines(deps, latest, d, log, around);
    clock?.mark('machines');
    await reconcileSurge(deps, latest, d, log);
    clock?.mark('surge');
    await reconcileClones(deps, snap, d, log);
    clock?.mark('clones');
  } catch (failure) {
    log.info({ err: (failure as Error).message }, 'an effect failed; status written from what is known, retrying');
    return { latest, owners, events, failure };
  }
  return { latest, owners, events };
}

/** When the plan is reconciled again, besides on a change of what it watches. */
function nextAction(snap: PlanSnapshot, d: Readonly<PlanDecision>, acted: Acted): Action {
  // A failed request or writes left: the next reconcile continues from what the objects show (no growing backoff: each
  // reconcile makes progress, and its requests are bounded).
  if ('failure' in acted) return Action.requeue(EFFECT_RETRY_MS);
  if (acted.owners.some((o) => o.pending !== undefined)) return Action.requeue(OWNER_CONTINUE_MS);
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
