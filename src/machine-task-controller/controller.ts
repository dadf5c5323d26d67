// The machine task controller (docs/design.md §4.2): reconciles MachineUpdates. Per reconcile it snapshots the
// MachineUpdate, its Machine and its tasks, decides one step (decide.ts), does it, and writes the status once.
import {
  ConditionTypes,
  CustomResourceDefinitions,
  InPlaceUpdatePlans,
  Labels,
  MachineUpdates,
  Machines,
  Reasons,
  UpdaterUpdateTasks,
  apiVersionOf,
  isTerminal,
  parseApiVersion,
  resourceKey,
  type KubeObject,
  type ResourceType,
} from '../api/index.js';
import {
  buildGenericTask,
  buildTaskFromTemplate,
  crdName,
  isClusterApiGroup,
  machineUpdateOwnerRef,
  owningMachineUpdate,
  taskKindOfTemplate,
  taskLabels,
  taskKindProblem,
  taskName,
  taskSizeProblem,
  toLabelValue,
  TemplateKindError,
  type Task,
} from '../contract/index.js';
import { ConflictError, KubeApiError, RetryableError, isAlreadyExists, isNotFound, setCondition, snapshot, Action, type Controller, type KubeClient, type Logger, type Manager, type ObjectKey } from '../runtime/index.js';
import type { WritePolicy } from '../api/index.js';
import { commitResponsibilities } from './commit-apply.js';
import type { CommitJournal } from './journal.js';
import { controllingPlanRef, ownershipProblem } from './ownership.js';
import { decide, reasonOfTerminal, type Decision } from './decide.js';
import { metricsFor, type TaskControllerMetrics } from './metrics.js';
import { orderedSpecUpdaters, type MachineState, type MachineUpdateObject, type MachineUpdateUpdater, type Scope, type UpdaterView } from './scope.js';
import { buildStatus, type StatusInput } from './status.js';

/** Name of the controller (also its field manager and event source). */
export const CONTROLLER_NAME = 'machine-task-controller';

/** Retry delay while another MachineUpdate's in-flight task holds a task name. */
const FOREIGN_TASK_RETRY_MS = 5_000;
/** Re-check period of a MachineUpdate not (yet) acted on for want of a plan that owns it and labelled its machine. */
const NOT_OWNED_RECHECK_MS = 3_000;
/** Retry delay after deleting an earlier update's finished task. */
const FOREIGN_DELETE_RETRY_MS = 500;

/** What reconcile needs; built once in setup. */
interface Deps {
  mgr: Manager;
  client: KubeClient;
  controller: () => Controller;
  /** Resource keys of the task kinds already watched. */
  watched: Set<string>;
  metrics: TaskControllerMetrics;
  /** The write policy the commit enforces (`--write-policy`; default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** Task kinds whose CRD was seen declaring the contract, with when (re-checked after TASK_KIND_TTL_MS). */
  allowedKinds: Map<string, number>;
}

/** How long a task kind's contract declaration is trusted before its CRD is read again. */
const TASK_KIND_TTL_MS = 60_000;

/** A template's task kind the platform must not create (terminal: fails the MachineUpdate). */
export class TaskKindRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TaskKindRefusedError';
  }
}

/** Reconciles mostly wait on the API server: at 10,003 machines 32 cut the p99 to ~20 s (16: ~30 s, 4: ~94 s) for the same writes; 64 wrote a third more. */
export const DEFAULT_CONCURRENCY = 32;

/** Options of setupMachineTaskController. */
export interface SetupOptions {
  /** MachineUpdates reconciled in parallel (default DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** The write policy the commit enforces (default: DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
}

/** Registers the controller with the manager. */
export function setupMachineTaskController(mgr: Manager, opts: SetupOptions = {}): Controller {
  const muInformer = mgr.informer<MachineUpdateObject>(MachineUpdates);
  const watched = new Set<string>([resourceKey(UpdaterUpdateTasks)]);
  const holder: { ctrl?: Controller } = {};
  const deps: Deps = { mgr, client: mgr.client, controller: () => holder.ctrl!, watched, metrics: metricsFor(mgr), allowedKinds: new Map(), ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}) };
  const ctrl = mgr
    .controller<MachineUpdateObject>(CONTROLLER_NAME)
    .for(MachineUpdates)
    .owns(UpdaterUpdateTasks)
    // A Machine that disappears or starts deleting aborts its update; machines are few per MachineUpdate.
    .watches<KubeObject>(Machines, (m) =>
      // Indexed by the machine-name label (every Machine event would otherwise scan every MachineUpdate).
      muInformer.store
        .byLabel(Labels.machineName, toLabelValue(m.metadata.name ?? ''), m.metadata.namespace)
        .filter((mu) => mu.spec?.machineRef?.name === m.metadata.name)
        .map((mu) => ({ namespace: mu.metadata.namespace, name: mu.metadata.name! })),
    )
    // Ownership is re-checked on every change of the plan that owns a MachineUpdate.
    .watches<KubeObject>(InPlaceUpdatePlans, (p) =>
      muInformer.store
        .byLabel(Labels.planName, toLabelValue(p.metadata.name ?? ''), p.metadata.namespace)
        // Only MachineUpdates refused for want of their plan care about it: a plan's every progress is a status change,
        // and mapping it to all its MachineUpdates tripled this controller's reconciles at 1,003 machines.
        .filter((mu) => controllingPlanRef(mu)?.name === p.metadata.name && mu.status?.conditions?.some((c) => c.reason === Reasons.notOwnedByPlan))
        .map((mu) => ({ namespace: mu.metadata.namespace, name: mu.metadata.name! })),
    )
    .withConcurrency(opts.concurrency ?? DEFAULT_CONCURRENCY)
    .reconcile((key, ctx) => reconcile(deps, key, ctx.log));
  holder.ctrl = ctrl;
  return ctrl;
}

/** Maps a task of any kind to the MachineUpdate that controls it. */
const taskToMachineUpdate = (t: KubeObject): ObjectKey[] => {
  const owner = owningMachineUpdate(t);
  return owner ? [{ namespace: t.metadata.namespace, name: owner }] : [];
};

/** The top-level reconcile of one MachineUpdate. */
export async function reconcile(deps: Deps, key: ObjectKey, log: Logger): Promise<Action> {
  // Frozen cached objects throughout (no copies): the scope is only read, and writeStatus snapshots what it patches.
  const mu = deps.mgr.informer<MachineUpdateObject>(MachineUpdates).store.peek(key.namespace, key.name);
  if (!mu || isTerminal(mu.status?.updateStatus)) return Action.awaitChange();
  const now = new Date();
  // Only plans drive machines: anything else gets no task and no commit, re-checked on every reconcile.
  let problem = ownershipProblem(mu, planOf(deps, mu), deps.mgr.informer<KubeObject>(Machines).store.peek(key.namespace, mu.spec.machineRef.name));
  // The caches lag: the plan labels the machine just before it creates the MachineUpdate, so a refusal is confirmed
  // against the API server first (one read, only on the refusing path) instead of costing a refusal and a re-check.
  if (problem) problem = ownershipProblem(mu, await freshPlanOf(deps, mu), (await deps.client.get<KubeObject>(Machines, key.namespace, mu.spec.machineRef.name)) ?? undefined);
  if (problem) {
    await writeRefusal(deps, mu, problem, now);
    // Also re-checked on a timer: the plan labels the machine just before it creates the MachineUpdate, and the
    // Machine cache may show the label only after this reconcile (a label event seen before the MachineUpdate maps to nothing).
    return Action.requeue(NOT_OWNED_RECHECK_MS);
  }
  let scope: Scope;
  try {
    scope = await buildScope(deps, mu);
  } catch (err) {
    if (!(err instanceof TemplateKindError) && !(err instanceof TaskKindRefusedError)) throw err;
    // A template ref that cannot name an acceptable task kind never will: fail the update with the reason.
    const failedScope: Scope = { mu, machine: 'present', views: [] };
    const reason = err instanceof TaskKindRefusedError ? Reasons.taskKindRefused : Reasons.templateNotFound;
    await writeStatus(deps, failedScope, { updateStatus: 'failed', reason, message: err.message }, now);
    return Action.awaitChange();
  }
  const d = decide(scope);
  log.debug({ step: d.step.kind, updateStatus: d.updateStatus, message: d.message }, 'decided');
  if (d.step.kind === 'none') return Action.awaitChange();
  const outcome = await act(deps, scope, d, log);
  await writeStatus(deps, outcome.mu ? { ...scope, mu: outcome.mu } : scope, outcome.status, now);
  return outcome.action;
}

/** The plan a MachineUpdate's controller ownerReference names, from the cache (same namespace). */
function planOf(deps: Deps, mu: MachineUpdateObject): KubeObject | undefined {
  const ref = controllingPlanRef(mu);
  return ref ? deps.mgr.informer<KubeObject>(InPlaceUpdatePlans).store.peek(mu.metadata.namespace, ref.name) : undefined;
}

/** The MachineUpdate's controlling plan as the API server has it now. */
async function freshPlanOf(deps: Deps, mu: MachineUpdateObject): Promise<KubeObject | undefined> {
  const ref = controllingPlanRef(mu);
  return ref ? ((await deps.client.get<KubeObject>(InPlaceUpdatePlans, mu.metadata.namespace, ref.name)) ?? undefined) : undefined;
}

/** Says on the MachineUpdate why it is not acted on (status kept otherwise), with a Warning Event when that is news. */
async function writeRefusal(deps: Deps, mu: MachineUpdateObject, message: string, now: Date): Promise<void> {
  const old = mu.status ?? {};
  if (old.message === message) return;
  const conditions = setCondition(old.conditions ?? [], { type: ConditionTypes.inPlaceUpdate, status: 'False', reason: Reasons.notOwnedByPlan, message }, mu.metadata.generation, now);
  const next: MachineUpdateObject = { ...mu, status: { ...old, message, conditions } };
  await snapshot(mu).apply(deps.client, MachineUpdates, next, { fieldManager: CONTROLLER_NAME });
  deps.mgr.events.event(mu, 'Warning', Reasons.notOwnedByPlan, message);
}

/** Resolves each updater's task resource, makes sure it is watched and reads its task from the cache. */
async function buildScope(deps: Deps, mu: MachineUpdateObject): Promise<Scope> {
  const ns = mu.metadata.namespace!;
  const machine = deps.mgr.informer<KubeObject>(Machines).store.peek(ns, mu.spec.machineRef.name);
  const machineState: MachineState = !machine ? 'missing' : machine.metadata.deletionTimestamp ? 'deleting' : 'present';
  const views: UpdaterView[] = [];
  for (const u of orderedSpecUpdaters(mu.spec)) {
    const res = await taskResource(deps, u);
    const name = taskName(mu.spec.planName, mu.spec.machineRef.name, u.name);
    const found = deps.mgr.informer<Task>(res).store.peek(ns, name);
    const view: UpdaterView = { updater: u, taskName: name, apiVersion: apiVersionOf(res), kind: res.kind };
    if (found) {
      const ownerUid = found.metadata.ownerReferences?.find((r) => r.controller)?.uid;
      if (ownerUid === mu.metadata.uid) view.task = found;
      else view.foreign = found;
    }
    views.push(view);
  }
  return { mu, machine: machineState, views };
}

/** The task resource of an updater: the generic kind, or the template's kind without "Template" (served version). */
async function taskResource(deps: Deps, u: MachineUpdateUpdater): Promise<ResourceType> {
  const ref = u.updaterUpdateTemplateRef;
  if (!ref) return UpdaterUpdateTasks;
  const { group } = parseApiVersion(ref.apiVersion);
  const kind = taskKindOfTemplate(ref.kind);
  // Checked before anything is resolved or watched: a Cluster API kind is never a task.
  if (isClusterApiGroup(group)) throw new TaskKindRefusedError(`updater ${u.name}: ${taskKindProblem(group, kind, undefined)!}`);
  let res: ResourceType;
  try {
    res = await deps.client.resolve(group, kind);
  } catch (err) {
    if (isNotFound(err)) throw new TaskKindRefusedError(`updater ${u.name}: ${taskKindProblem(group, kind, undefined)!}`);
    throw new RetryableError(`resolve task kind ${kind}.${group} of updater ${u.name}`, err);
  }
  const k = resourceKey(res);
  const seen = deps.allowedKinds.get(k);
  if (seen === undefined || Date.now() - seen > TASK_KIND_TTL_MS) {
    const crd = await deps.client.get(CustomResourceDefinitions, undefined, crdName(res.plural, res.group));
    const problem = taskKindProblem(res.group, res.kind, crd);
    if (problem) {
      deps.allowedKinds.delete(k);
      throw new TaskKindRefusedError(`updater ${u.name}: ${problem}`);
    }
    deps.allowedKinds.set(k, Date.now());
  }
  if (!deps.watched.has(k)) {
    await deps.controller().watch<KubeObject>(res, taskToMachineUpdate);
    await deps.mgr.informer(res).synced();
    deps.watched.add(k);
  }
  return res;
}

interface Outcome {
  status: StatusInput;
  action: Action;
  /** The MachineUpdate as last written during the step (the commit journals in its status), when it changed. */
  mu?: MachineUpdateObject;
}

const statusOf = (d: Decision): StatusInput => ({ updateStatus: d.updateStatus, ...(d.current !== undefined ? { current: d.current } : {}), reason: d.reason, message: d.message });

/** Does the decided step; returns the status to write and what to wait for. */
async function act(deps: Deps, scope: Scope, d: Decision, log: Logger): Promise<Outcome> {
  const { client, mgr } = deps;
  const mu = scope.mu;
  const ns = mu.metadata.namespace!;
  const step = d.step;
  switch (step.kind) {
    case 'none':
    case 'finish':
      return { status: statusOf(d), action: Action.awaitChange() };
    case 'wait':
      return { status: statusOf(d), action: step.foreign ? Action.requeue(FOREIGN_TASK_RETRY_MS) : Action.awaitChange() };
    case 'createTask': {
      const view = scope.views[step.index]!;
      const created = await createTask(deps, mu, view, scope.views[step.index - 1], log);
      if ('failed' in created) return { status: { updateStatus: 'failed', reason: created.reason, message: created.failed }, action: Action.awaitChange() };
      view.task = created.task;
      return { status: statusOf(d), action: Action.awaitChange() };
    }
    case 'abortTask': {
      const view = scope.views[step.index]!;
      const res = await taskResource(deps, view.updater);
      const patched = await client.patch<Task>(res, ns, view.taskName, { spec: { updatePhase: 'aborting' } }, { type: 'merge', fieldManager: CONTROLLER_NAME });
      view.task = patched;
      mgr.events.event(mu, 'Normal', Reasons.aborting, `asked updater ${view.updater.name} to abort (${view.kind} ${view.taskName})`);
      return { status: statusOf(d), action: Action.awaitChange() };
    }
    case 'deleteForeignTask': {
      const view = scope.views[step.index]!;
      const res = await taskResource(deps, view.updater);
      const uid = view.foreign?.metadata.uid;
      try {
        await client.delete(res, ns, view.taskName, uid ? { preconditions: { uid } } : {});
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return { status: statusOf(d), action: Action.requeue(FOREIGN_DELETE_RETRY_MS) };
    }
    case 'commit': {
      const resps = scope.views.flatMap((v) => v.updater.responsibilities);
      let latest = mu;
      // The journal goes through /status on its own, before the first real write; the final status write builds on it.
      const save = async (journal: CommitJournal | undefined): Promise<void> => {
        latest = await client.patch<MachineUpdateObject>(MachineUpdates, ns, mu.metadata.name!, { status: { commit: journal ? { ...journal, reason: journal.reason ?? null } : null } }, { type: 'merge', subresource: 'status', fieldManager: CONTROLLER_NAME });
      };
      const result = await commitResponsibilities(client, ns, mu.spec.machineRef.name, resps, mu.status?.commit, save, deps.writePolicy);
      if (!result.ok && result.outcome === 'machine-gone') {
        // Deleted under the update (the cache had not shown it): aborted, as a deletion seen earlier would be; no Halt.
        mgr.events.event(mu, 'Normal', Reasons.aborted, result.message);
        return { status: { updateStatus: 'aborted', reason: Reasons.aborted, message: result.message }, action: Action.awaitChange(), mu: latest };
      }
      if (!result.ok) {
        const reason = result.outcome === 'rolled-back' ? Reasons.commitRolledBack : result.outcome === 'restore-failed' ? Reasons.commitRestoreFailed : Reasons.commitFailed;
        mgr.events.event(mu, 'Warning', reason, result.message);
        return { status: { updateStatus: 'failed', reason, message: result.message }, action: Action.awaitChange(), mu: latest };
      }
      const message = result.written.length
        ? `updated by ${scope.views.length} updater(s); committed ${result.written.join(', ')}`
        : // A restart after the commit but before this status write, or values that were already at target: verified in place.
          `updated by ${scope.views.length} updater(s); every value was already in place (verified)`;
      return { status: { updateStatus: 'updated', reason: Reasons.updated, message }, action: Action.awaitChange(), mu: latest };
    }
  }
}

/** Creates the task of an updater (idempotent: an existing task of ours is adopted as is). */
async function createTask(
  deps: Deps,
  mu: MachineUpdateObject,
  view: UpdaterView,
  previous: UpdaterView | undefined,
  log: Logger,
): Promise<{ task: Task } | { failed: string; reason: string }> {
  const { client, mgr } = deps;
  const ns = mu.metadata.namespace!;
  const u = view.updater;
  const inputs = {
    name: view.taskName,
    namespace: ns,
    labels: taskLabels({ cluster: mu.spec.clusterName, plan: mu.spec.planName, machine: mu.spec.machineRef.name, updater: u.name }),
    owner: machineUpdateOwnerRef({ ...mu, apiVersion: apiVersionOf(MachineUpdates), kind: MachineUpdates.kind }),
    updatePhase: 'updating' as const,
    machineName: mu.spec.machineRef.name,
    responsibilities: u.responsibilities,
  };
  let task: Task;
  const ref = u.updaterUpdateTemplateRef;
  if (ref) {
    const { group } = parseApiVersion(ref.apiVersion);
    let tplRes: ResourceType;
    try {
      tplRes = await client.resolve(group, ref.kind);
    } catch (err) {
      return { failed: `template kind ${ref.kind}.${group} of updater ${u.name} is not served: ${err instanceof Error ? err.message : String(err)}`, reason: Reasons.templateNotFound };
    }
    const tpl = await client.get(tplRes, ns, ref.name);
    if (!tpl) return { failed: `template ${ref.kind} ${ns}/${ref.name} of updater ${u.name} not found`, reason: Reasons.templateNotFound };
    const tooLarge = taskSizeProblem(`template ${ref.kind} ${ns}/${ref.name} of updater ${u.name}`, tpl.spec);
    if (tooLarge) return { failed: tooLarge, reason: Reasons.taskCreateFailed };
    task = buildTaskFromTemplate(tpl, inputs);
    task.apiVersion = view.apiVersion;
  } else {
    task = buildGenericTask({ ...inputs, updaterName: u.name, ...(u.parameters ? { parameters: u.parameters } : {}) });
  }
  const res = await taskResource(deps, u);
  try {
    const created = await client.create<Task>(res, task, { fieldManager: CONTROLLER_NAME });
    deps.metrics.tasksCreated.inc({ kind: res.kind });
    const prevDone = previous?.task?.status?.completionTime;
    if (prevDone) deps.metrics.stepLatency.observe(Math.max(0, (Date.now() - Date.parse(prevDone)) / 1000));
    mgr.events.event(mu, 'Normal', Reasons.taskCreated, `created ${res.kind} ${view.taskName} for updater ${u.name}`);
    log.info({ task: view.taskName, kind: res.kind, updater: u.name }, 'task created');
    return { task: created };
  } catch (err) {
    // The API server refuses the object itself (too large, invalid, kind gone): retrying sends the same object.
    if (err instanceof KubeApiError && [400, 404, 413, 422].includes(err.code) && !isAlreadyExists(err)) {
      return { failed: `updater ${u.name}: the API server refused to create ${res.kind} ${ns}/${view.taskName}: ${err.status?.message ?? err.message}`, reason: Reasons.taskCreateFailed };
    }
    if (!isAlreadyExists(err)) throw new RetryableError(`create ${res.kind} ${ns}/${view.taskName}`, err);
    // C9: the name is deterministic, so the task is ours from an earlier reconcile (cache lag) or another update's.
    const existing = await client.get<Task>(res, ns, view.taskName);
    if (existing && existing.metadata.ownerReferences?.some((r) => r.controller && r.uid === mu.metadata.uid)) return { task: existing };
    throw new ConflictError(`create ${res.kind} ${ns}/${view.taskName}: the name is held by another object`, err);
  }
}

/** Writes the status once (only what changed, guarded by resourceVersion) and records transition Events. */
async function writeStatus(deps: Deps, scope: Scope, s: StatusInput, now: Date): Promise<void> {
  const mu = scope.mu;
  const helper = snapshot(mu);
  // Only the status changes, and buildStatus returns a new one: a shallow copy of the (frozen) MachineUpdate is enough.
  const next: MachineUpdateObject = { ...mu, status: buildStatus(scope, s, now) };
  // apply sends nothing and returns `next` itself when nothing changed: one diff rather than changed() and apply().
  if ((await helper.apply(deps.client, MachineUpdates, next, { fieldManager: CONTROLLER_NAME })) === next) return;
  const before = mu.status?.updateStatus;
  if (before !== s.updateStatus && isTerminal(s.updateStatus)) {
    deps.mgr.events.event(mu, s.updateStatus === 'updated' ? 'Normal' : 'Warning', reasonOfTerminal(s.updateStatus), s.message);
  } else if (!before && s.updateStatus) {
    deps.mgr.events.event(mu, 'Normal', Reasons.updating, s.message);
  }
}

