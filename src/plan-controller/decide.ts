// The plan controller's decisions: from a snapshot, what to create, patch and report. Pure (no client, no clock):
// the reconcile reads a snapshot, calls decidePlan once, and carries out the result. The status language (conditions,
// Ready reasons, Events, metric deltas) is status.ts.
import type {
  InPlaceUpdatePlan,
  InPlaceUpdatePlanStatus,
  KubeObject,
  MachineUpdate,
  PlanUpdater,
  TargetKind,
  TargetStatus,
} from '../api/index.js';
import {
  Annotations,
  ConditionTypes,
  Finalizers,
  Labels,
  MessageBudget,
  PlanAnnotations,
  Reasons,
  UpdatePhase,
  UpdateStatus,
  boundMessage,
  isTerminal,
  orderedUpdaters,
  summarizeList,
} from '../api/index.js';
import { controlPlaneNameOf, cpReplicas, deploymentNameOf, isDeleting, isMachineReady, mdReplicas, nameOf } from '../api/capi/index.js';
import { mdConcurrency } from './concurrency.js';
import { parameterDepthProblems } from './bounds.js';
import { ALERTS_POLL_MS, alertGate, alertGateEvents, soakGate, windowEvents, windowGate, windowStatus } from './gates.js';
import { labelValue, machineUpdateName } from './names.js';
import type { PlanSnapshot } from './scope.js';
import type { MetricDeltas, PlanEvent } from './status.js';
import {
  alreadyAtTargetEvents,
  eventsFor,
  invalidVerdict,
  metricDeltas,
  nameList,
  readyCondition,
  setPlanConditions,
  unreportedTaskNotes,
} from './status.js';
import type { NamedTarget } from './validate.js';
import { targetsOf, validatePlan } from './validate.js';

/** A MachineUpdate to create: the start of one machine's update. */
export interface MachineUpdateIntent {
  name: string;
  machine: string;
  target: { kind: TargetKind; name: string };
  /** The target's updaters, ordered by sequence (then name). */
  updaters: PlanUpdater[];
}

/** A Machine to label as in update by this plan (label plan-name + annotation update-started-at). */
export interface MachineLabelIntent {
  machine: string;
  startedAt: string;
}

/** A MachineDeployment replicas/annotations change (surge by one for maxUnavailable 0, or its restore). */
export interface ScaleIntent {
  name: string;
  replicas?: number;
  /** Annotations to set (string) or remove (null). */
  annotations: Record<string, string | null>;
  /** resourceVersion the decision was made on (optimistic concurrency: a stale decision conflicts). */
  resourceVersion?: string;
  kind: 'surge' | 'restore';
}

export type { MetricDeltas, PlanEvent } from './status.js';

/** Everything one reconcile of a plan does. */
export interface PlanDecision {
  /** Validation problems (empty = valid). */
  problems: string[];
  /** The plan's new status (conditions merged with CAPI lastTransitionTime semantics). */
  status: InPlaceUpdatePlanStatus;
  /** MachineUpdates to create. */
  create: MachineUpdateIntent[];
  /** MachineUpdates whose spec.updatePhase is to become aborting. */
  abort: string[];
  /** Machines to label as in update. */
  label: MachineLabelIntent[];
  /** Machines whose plan-name label and update-started-at annotation are to be removed. */
  unlabel: string[];
  /** Older plans of the same cluster to move to aborting (superseded by this one). */
  supersede: string[];
  /** MachineDeployment surge / restore patches. */
  scale: ScaleIntent[];
  /** Events to record. */
  events: PlanEvent[];
  /** Finalizer change on the plan. */
  finalizer?: 'add' | 'remove';
  /** Metric increments. */
  metrics: MetricDeltas;
  /** When the decision changes by the clock alone (a maintenance window opens or closes): reconcile again then. */
  requeueAt?: string;
  /** The machine gates (soak, verification) holding a slot now, for the gate metrics. */
  gatesHolding?: string[];
}

type Status = TargetStatus['updateStatus'];
type Mode = 'rollout' | 'hold' | 'stop';

/** How a machine of a target stands in this plan. */
type MachineState = 'notStarted' | 'inFlight' | 'updated' | 'failed' | 'aborted';

/** One target evaluated against the snapshot. */
interface TargetEval {
  row: TargetStatus;
  reason: string;
  starts: string[];
  scale?: ScaleIntent;
  inFlight: number;
  started: boolean;
  /** Machines counted as updated because they were already at target (no MachineUpdate). */
  skipped: string[];
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Orders plans oldest first: creationTimestamp, then name (the supersede order). */
export const planAge = (a: InPlaceUpdatePlan, b: InPlaceUpdatePlan): number =>
  byName(a.metadata?.creationTimestamp ?? '', b.metadata?.creationTimestamp ?? '') ||
  byName(a.metadata?.name ?? '', b.metadata?.name ?? '');

/** The state of a MachineUpdate as the plan counts it. */
export function machineState(mu: MachineUpdate | undefined): MachineState {
  if (!mu) return 'notStarted';
  switch (mu.status?.updateStatus) {
    case UpdateStatus.updated:
      return 'updated';
    case UpdateStatus.failed:
      return 'failed';
    case UpdateStatus.aborted:
      return 'aborted';
    default:
      return 'inFlight';
  }
}

/** Key of a target in the per-target indexes. */
export const targetKey = (kind: TargetKind, name: string): string => `${kind}/${name}`;

/** The target a Machine belongs to by its CAPI labels (control plane first), if any. */
export function targetOfMachine(m: KubeObject): string | undefined {
  const cp = controlPlaneNameOf(m);
  if (cp !== undefined) return targetKey('ControlPlane', cp);
  const md = deploymentNameOf(m);
  return md !== undefined ? targetKey('MachineDeployment', md) : undefined;
}

/** Machines of a cluster grouped by target, each group sorted by name (one pass, whatever the number of targets). */
export function machinesByTarget(clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> {
  const out = new Map<string, KubeObject[]>();
  for (const m of machines) {
    if (m.metadata.labels?.[Labels.clusterName] !== clusterName) continue;
    const k = targetOfMachine(m);
    if (k === undefined) continue;
    let list = out.get(k);
    if (!list) out.set(k, (list = []));
    list.push(m);
  }
  for (const list of out.values()) list.sort((a, b) => byName(nameOf(a), nameOf(b)));
  return out;
}

/** The machines of a target (deleting ones included): CP machines by control-plane-name, MD machines by deployment-name. */
export function machinesOfTarget(kind: TargetKind, name: string, clusterName: string, machines: readonly KubeObject[]): KubeObject[] {
  return machinesByTarget(clusterName, machines).get(targetKey(kind, name)) ?? [];
}

interface Ctx {
  snap: PlanSnapshot;
  /** Machines per target key. */
  machines: Map<string, KubeObject[]>;
  /** This plan's MachineUpdates per target key. */
  targetMus: Map<string, MachineUpdate[]>;
  planName: string;
  planLabel: string;
  halt: boolean;
  mus: Map<string, MachineUpdate>;
  /** Machines already at target that count as updated (empty when the plan re-runs them or may not start). */
  atTarget: ReadonlySet<string>;
}

const inUpdateByOther = (ctx: Ctx, m: KubeObject): string | undefined => {
  const v = m.metadata.labels?.[Labels.planName];
  return v !== undefined && v !== ctx.planLabel ? v : undefined;
};

// Messages below are built from unbounded input (machine names, updaters' messages, many targets): each list is
// summarised under a budget so that the status write never exceeds the schema's limits, however many fail.
const failureNote = (ctx: Ctx, names: string[]): string =>
  summarizeList(
    names.map((n) => {
      const msg = ctx.mus.get(n)?.status?.message;
      return msg ? `${n}: ${msg}` : n;
    }),
    { maxBytes: MessageBudget.status, itemMaxBytes: MessageBudget.item },
  );

function evalTarget(ctx: Ctx, t: NamedTarget, mode: Mode, reached: boolean): TargetEval {
  const { snap } = ctx;
  const key = targetKey(t.kind, t.target.name);
  const all = ctx.machines.get(key) ?? [];
  const current = all.filter((m) => !isDeleting(m));
  const groups: Record<MachineState, string[]> = { notStarted: [], inFlight: [], updated: [], failed: [], aborted: [] };
  const skipped: string[] = [];
  for (const m of current) {
    const st = machineState(ctx.mus.get(nameOf(m)));
    // Already at target (issue 15): updated without running updaters; its own record, if any, decides instead.
    if (st === 'notStarted' && ctx.atTarget.has(nameOf(m))) {
      groups.updated.push(nameOf(m));
      skipped.push(nameOf(m));
    } else groups[st].push(nameOf(m));
  }
  const started = (ctx.targetMus.get(key) ?? []).length > 0 || skipped.length > 0;
  const unsuccessful = groups.failed.length + groups.aborted.length;
  const inFlight = groups.inFlight.length;
  // Failures are the target's history: a failed machine the MHC has since replaced still counts (its replacement
  // would otherwise restart the rollout). Updates we aborted because their machine went away do not.
  const currentNames = new Set(current.map(nameOf));
  const failed = (ctx.targetMus.get(key) ?? [])
    .filter((mu) => machineState(mu) === 'failed')
    .filter((mu) => currentNames.has(mu.spec.machineRef.name) || mu.spec.updatePhase !== UpdatePhase.aborting)
    .map((mu) => mu.spec.machineRef.name);
  const everFailed = failed.length + groups.aborted.length;

  const md = t.kind === 'MachineDeployment' ? snap.machineDeployments.find((o) => nameOf(o) === t.target.name) : undefined;
  const desired =
    t.kind === 'ControlPlane'
      ? snap.controlPlane?.object
        ? cpReplicas(snap.controlPlane.object)
        : undefined
      : md
        ? mdReplicas(md)
        : undefined;
  // Halt stops at the first failure. Continue goes on, but not forever: once as many updates failed as the target has
  // machines the failure is systematic, and remediated replacements would otherwise fail and be replaced in a loop.
  const breaker = Math.max(1, desired ?? current.length);
  const halted = ctx.halt ? everFailed > 0 : failed.length >= breaker;

  const surgeOwner = md?.metadata.annotations?.[Annotations.surgePlan];
  const surgeOrig = md?.metadata.annotations?.[Annotations.surgeOriginalReplicas];
  const surged = surgeOrig !== undefined && (surgeOwner === undefined || surgeOwner === ctx.planName);
  // A paused owner (the plan pauses it for its target, docs/design.md §11) acts on no replica count, as CAPI's controllers
  // skip paused objects: waiting for its size would wait forever. The machines that exist are the target; those it
  // creates once unpaused are born from the templates the plan aligned.
  const owner = t.kind === 'ControlPlane' ? snap.controlPlane?.object : md;
  const sized = desired !== undefined && owner?.metadata.annotations?.[Annotations.paused] === undefined;
  const allCreated = !sized || current.length >= desired;
  // Updated means the target settled at its desired size: a scale-down (e.g. after the surge) is still in progress.
  const settled = !sized || current.length === desired;
  const allDone = groups.notStarted.length === 0 && inFlight === 0;

  // A target whose object does not exist (an invalid plan) has no machines: "0/0 updated" would be a lie.
  const missing = t.kind === 'ControlPlane' ? !snap.controlPlane?.object : !md;

  let status: Status;
  let reason: string;
  let message = '';
  if (missing && !started) {
    [status, reason, message] = ['pending', Reasons.pending, `${t.kind} ${t.target.name} not found`];
  } else if (mode === 'stop') {
    if (inFlight > 0)
      [status, reason, message] = [
        'aborting',
        Reasons.aborting,
        `waiting for ${inFlight} machine(s) to stop: ${nameList(groups.inFlight)}`,
      ];
    else if (allDone && unsuccessful === 0 && allCreated && started) [status, reason] = ['updated', Reasons.updated];
    else if (failed.length > 0) [status, reason, message] = ['failed', Reasons.failed, `failed: ${failureNote(ctx, failed)}`];
    else [status, reason] = ['aborted', Reasons.aborted];
  } else if (allDone && unsuccessful === 0 && settled && !surged) {
    [status, reason] = ['updated', Reasons.updated];
  } else if (inFlight === 0 && everFailed > 0 && (halted || (groups.notStarted.length === 0 && allCreated))) {
    const why = halted
      ? ctx.halt
        ? 'halted (failurePolicy Halt); '
        : `halted: ${failed.length} updates failed, as many as the target has machines; `
      : '';
    [status, reason, message] = [
      'failed',
      Reasons.failed,
      `${why}${failed.length ? `failed: ${failureNote(ctx, failed)}` : ''}${groups.aborted.length ? `${failed.length ? '; ' : ''}aborted: ${nameList(groups.aborted)}` : ''}`,
    ];
  } else if (started || surged) {
    [status, reason] = ['updating', Reasons.updating];
  } else {
    [status, reason] = ['pending', reached ? Reasons.pending : Reasons.waitingForSequence];
    if (!reached) message = `waiting for the targets with a lower sequence than ${t.target.sequence} to be updated`;
  }

  const ev: TargetEval = {
    row: {
      kind: t.kind,
      name: t.target.name,
      sequence: t.target.sequence,
      updateStatus: status,
      machines: current.length,
      updated: groups.updated.length,
      ...(skipped.length > 0 ? { skipped: skipped.length } : {}),
      updating: inFlight,
      failed: failed.length,
      aborted: groups.aborted.length,
    },
    reason,
    starts: [],
    inFlight,
    started,
    skipped,
  };

  if (mode === 'rollout' && reached && status !== 'updated' && status !== 'failed') {
    const policy = ctx.halt
      ? 'failurePolicy Halt'
      : `failurePolicy Continue: ${failed.length} updates failed, as many as the target has machines`;
    if (halted)
      message = `halted (${policy}) after the failure of ${failureNote(ctx, failed.length ? failed : groups.aborted)}; waiting for ${inFlight} machine(s) in flight`;
    else if (groups.notStarted.length > 0) {
      const r =
        t.kind === 'ControlPlane'
          ? startControlPlane(ctx, all, current, groups, desired)
          : startMachineDeployment(ctx, md, current, groups, surged, surgeOrig);
      ev.starts = r.starts;
      if (r.scale) ev.scale = r.scale;
      // The status answers the state this reconcile leaves behind: machines started now are in flight.
      if (r.starts.length > 0 || r.scale) {
        ev.row.updateStatus = 'updating';
        ev.reason = Reasons.updating;
        ev.row.updating = inFlight + r.starts.length;
        ev.inFlight = inFlight + r.starts.length;
        ev.started = true;
      }
      message = r.message;
      if (r.reason) ev.reason = r.reason;
    } else if (!allCreated) message = `waiting for ${desired! - current.length} machine(s) to be created`;
    else if (!settled)
      message = `waiting for ${current.length - desired!} machine(s) to be removed (${current.length} of ${desired} replicas)`;
    else if (inFlight > 0) message = `${inFlight} machine(s) in update: ${nameList(groups.inFlight)}`;
  } else if (mode === 'hold' && status !== 'updated' && status !== 'failed' && inFlight > 0) {
    message = `no new machines start; ${inFlight} machine(s) in update: ${nameList(groups.inFlight)}`;
  }

  // Restore the surge once nothing more will start in this target and nothing is in flight.
  if (md && surged && inFlight === 0 && (mode === 'stop' || groups.notStarted.length === 0 || halted) && !ev.scale) {
    const orig = Number(surgeOrig);
    const restore: ScaleIntent = {
      name: t.target.name,
      annotations: { [Annotations.surgeOriginalReplicas]: null, [Annotations.surgePlan]: null },
      kind: 'restore',
    };
    if (Number.isInteger(orig) && mdReplicas(md) === orig + 1) restore.replicas = orig;
    if (md.metadata.resourceVersion) restore.resourceVersion = md.metadata.resourceVersion;
    ev.scale = restore;
    if (ev.row.updateStatus === 'updated') ev.row.updateStatus = 'updating';
    message = `restoring ${t.target.name} to ${orig} replicas after the surge`;
  }
  if (message) ev.row.message = boundMessage(message, MessageBudget.status);
  return ev;
}

interface StartResult {
  starts: string[];
  message: string;
  reason?: string;
  scale?: ScaleIntent;
}

// Control plane: one machine at a time, and only when the whole control plane is healthy and settled.
function startControlPlane(
  ctx: Ctx,
  all: KubeObject[],
  current: KubeObject[],
  groups: Record<MachineState, string[]>,
  desired: number | undefined,
): StartResult {
  const problems: string[] = [];
  for (const m of all) if (isDeleting(m)) problems.push(`machine ${nameOf(m)} is being deleted`);
  for (const m of current) if (!isMachineReady(m)) problems.push(`machine ${nameOf(m)} is not Ready`);
  for (const n of groups.inFlight) problems.push(`machine ${n} is in update`);
  for (const m of current) {
    const other = inUpdateByOther(ctx, m);
    if (other) problems.push(`machine ${nameOf(m)} is in update by plan ${other}`);
  }
  if (desired !== undefined && current.length !== desired) problems.push(`${current.length} of ${desired} control-plane machines exist`);
  if (problems.length > 0)
    return {
      starts: [],
      message: `preflight: ${summarizeList(problems, { maxBytes: MessageBudget.status / 2 })}`,
      reason: groups.inFlight.length ? Reasons.updating : Reasons.preflightFailed,
    };
  const next = groups.notStarted[0]!;
  return { starts: [next], message: `updating ${next} (one control-plane machine at a time)` };
}

// MachineDeployment: machines in update and machines not Ready are unavailable; maxUnavailable bounds them.
// maxUnavailable 0 means no machine may go down: surge by one, wait for it, then update one at a time.
function startMachineDeployment(
  ctx: Ctx,
  md: KubeObject | undefined,
  current: KubeObject[],
  groups: Record<MachineState, string[]>,
  surged: boolean,
  surgeOrig: string | undefined,
): StartResult {
  if (!md) return { starts: [], message: 'MachineDeployment not found' };
  const replicas = mdReplicas(md);
  const orig = surged ? Number(surgeOrig) : replicas;
  const fp = mdConcurrency(md, Number.isInteger(orig) ? orig : replicas);
  if (!fp.ok) return { starts: [], message: fp.error };
  const inFlight = new Set(groups.inFlight);
  const unavailable = current.filter((m) => !isMachineReady(m) || inFlight.has(nameOf(m)) || inUpdateByOther(ctx, m) !== undefined);
  const notStarted = new Set(groups.notStarted);
  const candidates = current
    .filter((m) => notStarted.has(nameOf(m)) && isMachineReady(m) && inUpdateByOther(ctx, m) === undefined)
    .map(nameOf);
  const candidateSet = new Set(candidates);
  let budget: number;
  let why: string;
  if (fp.surge) {
    if (!surged) {
      const scale: ScaleIntent = {
        name: nameOf(md),
        replicas: replicas + 1,
        annotations: { [Annotations.surgeOriginalReplicas]: String(replicas), [Annotations.surgePlan]: ctx.planName },
        kind: 'surge',
      };
      if (md.metadata.resourceVersion) scale.resourceVersion = md.metadata.resourceVersion;
      return {
        starts: [],
        scale,
        reason: Reasons.surging,
        message: `maxUnavailable resolves to 0: surging ${nameOf(md)} from ${replicas} to ${replicas + 1} replicas`,
      };
    }
    if (current.length < orig + 1)
      return {
        starts: [],
        reason: Reasons.surging,
        message: `surge: waiting for the extra machine (${current.length} of ${orig + 1} exist)`,
      };
    budget = 1 - unavailable.length;
    why = `surge (maxUnavailable 0): one at a time with ${orig + 1} machines`;
  } else {
    budget = fp.max - unavailable.length;
    why = `maxUnavailable=${fp.max}`;
  }
  const starts = candidates.slice(0, Math.max(0, budget));
  if (starts.length > 0) return { starts, message: `${why}; starting ${nameList(starts)}` };
  const notReady = groups.notStarted.filter((n) => !candidateSet.has(n));
  const unavailableNote = unavailable.length
    ? `${unavailable.length} machine(s) unavailable (${nameList(unavailable.map(nameOf))})`
    : 'no machine unavailable';
  return { starts: [], message: `${why}; ${unavailableNote}${notReady.length ? `; waiting for ${nameList(notReady)} to be Ready` : ''}` };
}

/**
 * Decides one reconcile of a plan: validation, supersede/wait, sequence groups, the next machines of each target,
 * abort propagation, surge/restore, machine labels, status aggregation, events and the finalizer.
 * Terminal plans keep their status and only clean up (labels, surge, finalizer).
 */
export function decidePlan(snap: PlanSnapshot): PlanDecision {
  const plan = snap.plan;
  const planName = plan.metadata?.name ?? '';
  const prev = plan.status ?? {};
  const now = new Date(snap.now);
  const generation = plan.metadata?.generation;
  const deleting = !!plan.metadata?.deletionTimestamp;
  const phase = plan.spec.updatePhase ?? UpdatePhase.updating;
  const paused = plan.spec.paused === true;
  const terminal = isTerminal(prev.updateStatus);
  const mus = new Map<string, MachineUpdate>();
  for (const mu of snap.machineUpdates) if (mu.spec.planName === planName) mus.set(mu.spec.machineRef.name, mu);
  const win = windowGate(plan, now);
  const soak = soakGate(plan, mus, snap.machines, now);
  const alerts = alertGate(plan, snap.alerts, now);
  // Parameters nested absurdly deep would break every clone of the MachineUpdates and tasks they are copied into.
  // An invalid plan that never started ends (final for its generation, status.ts invalidVerdict).
  const verdict = invalidVerdict({
    problems: [...validatePlan(snap), ...parameterDepthProblems(plan), ...win.problems, ...soak.problems, ...alerts.problems],
    started: !!prev.startTime || mus.size > 0,
    generation,
    prev,
    now: snap.now,
  });
  const problems = verdict.problems;
  const valid = problems.length === 0;
  const started0 = !!prev.startTime || mus.size > 0;
  const others = snap.plans.filter((p) => p.metadata?.name !== planName && p.spec.clusterName === plan.spec.clusterName);
  const older = others.filter((p) => planAge(p, plan) < 0);
  const olderActive = older.filter((p) => !isTerminal(p.status?.updateStatus));
  const supersededBy = plan.metadata?.annotations?.[PlanAnnotations.supersededBy];
  // Maintenance windows (gates.ts): a closed window holds new starts as paused does. With maintenanceWindowEnd Abort,
  // machines in flight when it closes are aborted and the plan ends aborted; the Ready reason it records keeps it
  // stopping once nothing is in flight any more (level-based, from status).
  const windowClosed = valid && win.state?.open === false;
  const windowEnded =
    !terminal &&
    ((windowClosed && win.abortAtEnd && [...mus.values()].some((mu) => machineState(mu) === 'inFlight')) ||
      (prev.updateStatus === UpdateStatus.aborting &&
        prev.conditions?.find((c) => c.type === ConditionTypes.ready)?.reason === Reasons.maintenanceWindowEnded));
  const stopping = deleting || phase === UpdatePhase.aborting || terminal || windowEnded;
  // Soak (gates.ts): the rollout counts a soaking machine in flight and a failed soak failed; a stopping plan starts
  // nothing more, so there its machines count as their MachineUpdates say.
  const rolloutMus = stopping ? mus : soak.mus;
  const targetMus = new Map<string, MachineUpdate[]>();
  for (const mu of rolloutMus.values()) {
    const k = targetKey(mu.spec.target.kind, mu.spec.target.name);
    let list = targetMus.get(k);
    if (!list) targetMus.set(k, (list = []));
    list.push(mu);
  }
  const waiting = olderActive.length > 0;
  // spec.alertGate (gates.ts): a matching firing alert, or an endpoint that cannot be read, holds new starts too.
  const alertHeld = valid && alerts.held;
  const mayStart = !stopping && valid && !waiting && !paused && !windowClosed && !alertHeld;
  const mode: Mode = stopping ? 'stop' : mayStart ? 'rollout' : 'hold';
  // A machine at target counts as updated once the plan may start (or has started): a plan that waits, is paused or
  // invalid before starting reports nothing as done. spec.rerunMachinesAtTarget runs the updaters regardless.
  const skipping = plan.spec.rerunMachinesAtTarget !== true && (mayStart || started0);
  const atTarget: ReadonlySet<string> = new Set(skipping ? (snap.atTarget ?? []) : []);
  const ctx: Ctx = {
    snap,
    machines: machinesByTarget(plan.spec.clusterName, snap.machines),
    targetMus,
    planName,
    planLabel: labelValue(planName),
    halt: (plan.spec.failurePolicy ?? 'Halt') === 'Halt',
    mus: rolloutMus,
    atTarget,
  };
  const d: PlanDecision = {
    problems,
    status: {},
    create: [],
    abort: [],
    label: [],
    unlabel: [],
    supersede: [],
    scale: [],
    events: [],
    metrics: { started: 0, updated: 0, failed: 0 },
  };

  // One active plan per cluster: a plan that wants to start moves every older active plan to aborting.
  if (!stopping && valid && !paused && !windowClosed && !alertHeld) {
    for (const p of olderActive)
      if (p.spec.updatePhase !== UpdatePhase.aborting && !p.metadata?.deletionTimestamp) d.supersede.push(p.metadata?.name ?? '');
  }

  // Targets in ascending sequence groups; a group may start machines only when every lower group is updated.
  const targets = targetsOf(plan).filter((t) => typeof t.target?.name === 'string');
  const sequences = [...new Set(targets.map((t) => t.target.sequence))].sort((a, b) => a - b);
  const evals = new Map<NamedTarget, TargetEval>();
  let lowerUpdated = true;
  for (const seq of sequences) {
    const group = targets.filter((t) => t.target.sequence === seq);
    for (const t of group) evals.set(t, evalTarget(ctx, t, mode, lowerUpdated));
    lowerUpdated = lowerUpdated && group.every((t) => evals.get(t)!.row.updateStatus === 'updated');
  }
  const ordered = targets.map((t) => ({ t, e: evals.get(t)! }));
  if (!stopping)
    for (const { t, e } of ordered) {
      const notes = soak.soaking.get(targetKey(t.kind, t.target.name));
      if (notes) e.row.message = boundMessage([e.row.message, ...notes].filter((x) => x).join('; '), MessageBudget.status);
    }
  const skippedAll = ordered.flatMap(({ e }) => e.skipped);
  const started = started0 || skippedAll.length > 0;

  // Actions: starts, surge/restore, abort propagation, labels.
  if (!terminal) {
    for (const { t, e } of ordered) {
      for (const machine of e.starts) {
        const name = machineUpdateName(planName, machine);
        d.create.push({ name, machine, target: { kind: t.kind, name: t.target.name }, updaters: orderedUpdaters(t.target.updaters) });
      }
      if (e.scale) d.scale.push(e.scale);
    }
  } else {
    for (const { e } of ordered) if (e.scale?.kind === 'restore') d.scale.push(e.scale);
  }
  const machinesByName = new Map(snap.machines.map((m) => [nameOf(m), m]));
  for (const mu of mus.values()) {
    if (machineState(mu) !== 'inFlight' || mu.spec.updatePhase === UpdatePhase.aborting) continue;
    const m = machinesByName.get(mu.spec.machineRef.name);
    // Abort on request, and for machines that are going away (their update cannot complete).
    if (stopping || !m || isDeleting(m)) d.abort.push(mu.metadata?.name ?? '');
  }
  const inUpdate = new Map<string, string>();
  for (const mu of mus.values())
    if (machineState(mu) === 'inFlight')
      inUpdate.set(mu.spec.machineRef.name, mu.status?.startTime ?? mu.metadata?.creationTimestamp ?? snap.now);
  for (const c of d.create) inUpdate.set(c.machine, snap.now);
  for (const m of snap.machines) {
    if (isDeleting(m)) continue;
    const labelled = m.metadata.labels?.[Labels.planName] === ctx.planLabel;
    const startedAt = inUpdate.get(nameOf(m));
    if (startedAt !== undefined && (!labelled || m.metadata.annotations?.[Annotations.updateStartedAt] === undefined))
      d.label.push({ machine: nameOf(m), startedAt });
    else if (startedAt === undefined && labelled) d.unlabel.push(nameOf(m));
  }

  // Status.
  const rows = ordered.map(({ e }) => e.row);
  const inFlightTotal = ordered.reduce((n, { e }) => n + e.inFlight, 0);
  const allUpdated = rows.every((r) => r.updateStatus === 'updated');
  let updateStatus: Status;
  if (terminal) updateStatus = prev.updateStatus!;
  // An abort that arrives after the last machine finished does not undo the result (contract C4).
  else if (stopping) updateStatus = inFlightTotal > 0 ? 'aborting' : started && allUpdated && valid ? 'updated' : 'aborted';
  // Halted by the alert gate: the machines in flight finish, then the plan ends failed.
  else if (valid && alerts.halted && inFlightTotal === 0 && !(started && allUpdated)) updateStatus = 'failed';
  else if (!started && !mayStart) updateStatus = 'pending';
  else if (allUpdated) updateStatus = 'updated';
  else {
    const reachedActive = ordered.some(
      ({ e }) => (e.row.updateStatus === 'pending' || e.row.updateStatus === 'updating') && e.reason !== Reasons.waitingForSequence,
    );
    updateStatus = rows.some((r) => r.updateStatus === 'failed') && !reachedActive && inFlightTotal === 0 ? 'failed' : 'updating';
  }

  const machines = rows.reduce((n, r) => n + (r.machines ?? 0), 0);
  const updated = rows.reduce((n, r) => n + (r.updated ?? 0), 0);
  const status: InPlaceUpdatePlanStatus = terminal
    ? { ...prev, conditions: [...(prev.conditions ?? [])] }
    : {
        ...prev,
        updateStatus,
        targets: rows,
        machines,
        updatedMachines: updated,
        skippedMachines: skippedAll.length,
        progress: `${updated}/${machines}`,
      };
  if (generation !== undefined) status.observedGeneration = generation;
  if (!terminal && (started || updateStatus === 'updating') && !status.startTime) status.startTime = snap.now;
  if (!terminal && isTerminal(updateStatus)) status.completionTime = snap.now;
  if (!terminal) {
    const ws = windowStatus(prev.maintenanceWindow, win, snap.now);
    if (ws) status.maintenanceWindow = ws;
    else delete status.maintenanceWindow;
    if (soak.failures.length > 0) status.gateFailures = soak.failures.slice(0, 1000);
    if (alerts.status) status.alertGate = alerts.status;
    else delete status.alertGate;
  }
  const windowNote = windowClosed ? win.state!.message : alertHeld ? alerts.message : undefined;

  const ready = readyCondition({
    updateStatus: terminal ? prev.updateStatus! : updateStatus,
    valid,
    started,
    waiting,
    paused,
    ...(windowNote
      ? { window: windowNote, windowReason: windowClosed ? Reasons.waitingForMaintenanceWindow : Reasons.waitingForAlerts }
      : {}),
    ...(alertHeld && alerts.halted ? { halt: alerts.message ?? 'halted by the alert gate' } : {}),
    windowEnded,
    deleting,
    supersededBy,
    olderActive,
    problems,
    progress: `${updated}/${machines}`,
    rows,
    stoppedByAbort: phase === UpdatePhase.aborting,
    terminal,
    prevReady: prev.conditions?.find((c) => c.type === ConditionTypes.ready),
    unreported: unreportedTaskNotes(mus.values()),
  });
  status.conditions = setPlanConditions(
    status.conditions ?? [],
    {
      valid,
      problems,
      terminal,
      started,
      waiting,
      paused,
      ...(windowNote
        ? { window: windowNote, windowReason: windowClosed ? Reasons.waitingForMaintenanceWindow : Reasons.waitingForAlerts }
        : {}),
      olderActive,
      ready,
      controlPlane: ordered.filter(({ t }) => t.kind === 'ControlPlane').map(({ e }) => e),
      machineDeployments: ordered.filter(({ t }) => t.kind === 'MachineDeployment').map(({ e }) => e),
      updateStatus: terminal ? prev.updateStatus! : updateStatus,
      invalidFinal: verdict.final && !started,
    },
    generation,
    now,
  );
  d.status = status;

  // Finalizer: held while the plan may touch machines; released once deletion has nothing left to undo.
  const hasFinalizer = plan.metadata?.finalizers?.includes(Finalizers.plan) ?? false;
  if (deleting) {
    const labelled = snap.machines.some((m) => !isDeleting(m) && m.metadata.labels?.[Labels.planName] === ctx.planLabel);
    if (
      hasFinalizer &&
      inFlightTotal === 0 &&
      !labelled &&
      d.unlabel.length === 0 &&
      d.scale.length === 0 &&
      !ordered.some(({ e }) => e.scale)
    )
      d.finalizer = 'remove';
  } else if (!hasFinalizer && !terminal && (mayStart || started)) d.finalizer = 'add';

  d.events = eventsFor(planName, prev, status, terminal ? [] : rows, d, problems, ready.reason);
  if (!terminal) d.events.push(...alreadyAtTargetEvents(prev, skippedAll));
  if (!terminal) d.events.push(...windowEvents(prev.maintenanceWindow, status.maintenanceWindow, win.abortAtEnd));
  if (!terminal) d.events.push(...alertGateEvents(prev.alertGate, status.alertGate));
  if (!terminal) {
    const wakes = [
      win.state?.nextChange,
      stopping ? undefined : soak.wakeAt,
      alerts.status && !stopping ? new Date(now.getTime() + ALERTS_POLL_MS) : undefined,
    ].filter((x): x is Date => !!x);
    if (wakes.length > 0) d.requeueAt = new Date(Math.min(...wakes.map((w) => w.getTime()))).toISOString();
  }
  if (!terminal) d.metrics = metricDeltas(prev, rows, d);
  d.gatesHolding = stopping ? [] : [...soak.holding];
  return d;
}
