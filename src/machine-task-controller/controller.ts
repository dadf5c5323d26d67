// The machine task controller (docs/design.md §4.2): reconciles MachineUpdates. Per reconcile it snapshots the
// MachineUpdate, its Machine and its tasks, decides one step (decide.ts), does it, and writes the status once.
import {
  Annotations,
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
  templateTaskProblem,
  toLabelValue,
  TemplateKindError,
  type Task,
} from '../contract/index.js';
import {
  ConflictError,
  KubeApiError,
  RetryableError,
  isAlreadyExists,
  isNotFound,
  snapshot,
  Action,
  type Controller,
  type Informer,
  type KubeClient,
  type Logger,
  type Manager,
  type ObjectKey,
} from '../runtime/index.js';
import type { WritePolicy } from '../api/index.js';
import { commitResponsibilities } from './commit-apply.js';
import { DryRunMemo } from './commit.js';
import { Expectations } from './expectations.js';
import type { CommitJournal, JournalObject } from './journal.js';
import { controllingPlanRef, ownershipProblem } from './ownership.js';
import {
  abortRequestedAt,
  DEFAULT_ABORT_GRACE_MS,
  DEFAULT_UNREPORTED_TASK_MS,
  commitEnding,
  decide,
  refusalRecheckMs,
  type DecideOptions,
  type Decision,
} from './decide.js';
import { metricsFor, type TaskControllerMetrics } from './metrics.js';
import {
  buildScope,
  machinePresence,
  type MachineUpdateObject,
  type MachineUpdateUpdater,
  type Scope,
  type ScopeReader,
  type UpdaterView,
} from './scope.js';
import { PROGRESS_WRITE_INTERVAL_MS, buildStatus, progressHoldMs, refusalStatus, statusEvent, type StatusInput } from './status.js';

/** Name of the controller (also its field manager and event source). */
export const CONTROLLER_NAME = 'machine-task-controller';

/** Retry delay after deleting an earlier update's finished task. */
const FOREIGN_DELETE_RETRY_MS = 500;

/** What reconcile needs; built once in setup. */
export interface TaskDeps {
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
  /** How long a task may go without a first status before the MachineUpdate says no updater reports (ms). */
  unreportedTaskMs: number;
  /** How long an updater has to end a task asked to abort before the MachineUpdate gives up on it (ms). */
  abortGraceMs: number;
  /** Our writes the caches have not shown yet (a reconcile on such a cache waits rather than conflict). */
  expect: Expectations;
  /** When each MachineUpdate in flight last showed a step (ms): our status write or task create, for the progress interval. */
  statusWrites: Map<string, number>;
  /** How often at most a status is written for an updater's progress alone (ms; PROGRESS_WRITE_INTERVAL_MS by default). */
  progressWriteIntervalMs: number;
  /** Single-object commit patches that dry-ran clean, per plan and kind (see DryRunMemo). */
  dryRuns: DryRunMemo;
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
  /** How long a task may go without a first status before the MachineUpdate says so (default DEFAULT_UNREPORTED_TASK_MS). */
  unreportedTaskMs?: number;
  /** How long an updater has to end a task asked to abort before the MachineUpdate gives up on it (default DEFAULT_ABORT_GRACE_MS). */
  abortGraceMs?: number;
  /** How often at most a status is written for an updater's progress alone (default PROGRESS_WRITE_INTERVAL_MS). */
  progressWriteIntervalMs?: number;
}

/** Registers the controller with the manager. */
export function setupMachineTaskController(mgr: Manager, opts: SetupOptions = {}): Controller {
  const muInformer = mgr.informer<MachineUpdateObject>(MachineUpdates);
  const watched = new Set<string>([resourceKey(UpdaterUpdateTasks)]);
  const holder: { ctrl?: Controller } = {};
  /** The cached MachineUpdates this controller refused (by key), for the plan mapper. */
  const refusedMus = new Map<string, MachineUpdateObject>();
  const deps: TaskDeps = {
    mgr,
    client: mgr.client,
    controller: () => holder.ctrl!,
    watched,
    metrics: metricsFor(mgr),
    allowedKinds: new Map(),
    unreportedTaskMs: opts.unreportedTaskMs ?? DEFAULT_UNREPORTED_TASK_MS,
    abortGraceMs: opts.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS,
    expect: new Expectations(),
    statusWrites: new Map(),
    progressWriteIntervalMs: opts.progressWriteIntervalMs ?? PROGRESS_WRITE_INTERVAL_MS,
    dryRuns: new DryRunMemo(),
    ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
  };
  const ctrl = mgr
    .controller<MachineUpdateObject>(CONTROLLER_NAME)
    .for(MachineUpdates)
    // A task wakes its own MachineUpdate and any other in flight for its machine (one waiting for its name, C9).
    .watches<KubeObject>(
      UpdaterUpdateTasks,
      tasksToMachineUpdates(muInformer.store, mgr.informer<KubeObject>(UpdaterUpdateTasks).store, deps.expect),
    )
    // A Machine that disappears or starts deleting aborts its update, and its labels decide ownership: only those wake.
    .watches<KubeObject>(
      Machines,
      machineToMachineUpdates(muInformer.store, mgr.informer<KubeObject>(Machines).store, (mu) => planOf(deps, mu)),
    )
    // Ownership is re-checked on every change of the plan that owns a MachineUpdate. Only MachineUpdates refused for
    // want of their plan care about it: a plan's every progress is a status change, and mapping it to all its
    // MachineUpdates tripled this controller's reconciles at 1,003 machines; scanning them all to find the refused ones
    // was 8 % of its CPU. The refused ones are kept apart (normally none).
    .watches<KubeObject>(InPlaceUpdatePlans, planToRefusedMachineUpdates(refusedMus))
    .withConcurrency(opts.concurrency ?? DEFAULT_CONCURRENCY)
    .reconcile((key, ctx) => reconcile(deps, key, ctx.log));
  // After the controller's own handler: the key is queued, and this only marks our write as seen.
  muInformer.onChange((mu, _old, type) => {
    deps.expect.observed(mu, type === 'delete');
    if (type === 'delete') deps.statusWrites.delete(muKey(mu));
    if (type !== 'delete' && refused(mu)) refusedMus.set(muKey(mu), mu);
    else refusedMus.delete(muKey(mu));
  });
  holder.ctrl = ctrl;
  return ctrl;
}

/** The key of a MachineUpdate in TaskDeps.statusWrites. */
const muKey = (mu: MachineUpdateObject): string => `${mu.metadata.namespace ?? ''}/${mu.metadata.name ?? ''}`;

/** The cached MachineUpdates a mapper looks up by machine (and by name). */
type MachineUpdateStore = Pick<Informer<MachineUpdateObject>['store'], 'byLabel' | 'peek'>;

/**
 * Maps a Machine to the MachineUpdates in flight for it whose next step its state can change: the machine is gone from
 * the cache or deleting (the update aborts), or its ownership is in question (the MachineUpdate is refused, or would be
 * now: a label or annotation ownership reads). Other Machine changes (its status, the MHC extension's annotation, our
 * own commit) change nothing a MachineUpdate decides, and a finished one never acts again: they wake nothing (at 10,003
 * machines they were a quarter of this controller's reconciles). Level-based: it reads the cached Machine as it is now.
 */
export const machineToMachineUpdates =
  (
    mus: MachineUpdateStore,
    machines: Pick<Informer<KubeObject>['store'], 'peek'>,
    planOf: (mu: MachineUpdateObject) => KubeObject | undefined,
  ) =>
  (m: KubeObject): ObjectKey[] => {
    const name = m.metadata.name ?? '';
    const ns = m.metadata.namespace;
    const current = machines.peek(ns, name);
    const keys: ObjectKey[] = [];
    // Indexed by the machine-name label (every Machine event would otherwise scan every MachineUpdate).
    for (const mu of mus.byLabel(Labels.machineName, toLabelValue(name), ns)) {
      if (mu.spec?.machineRef?.name !== name || isTerminal(mu.status?.updateStatus)) continue;
      const concerns = machinePresence(current) !== 'present' || refused(mu) || ownershipProblem(mu, planOf(mu), current) !== undefined;
      if (concerns) keys.push({ namespace: mu.metadata.namespace, name: mu.metadata.name! });
    }
    return keys;
  };

/** Whether a task event can change what its owner `owner` decides (see tasksToMachineUpdates). */
function ownerConcerned(
  mus: MachineUpdateStore,
  tasks: Pick<Informer<KubeObject>['store'], 'peek'> | undefined,
  t: KubeObject,
  owner: string,
  expect: Pick<Expectations, 'waiting'> | undefined,
): boolean {
  if (isTerminal(mus.peek(t.metadata.namespace, owner)?.status?.updateStatus)) return false;
  if (!tasks || (t as { status?: unknown }).status !== undefined || expect?.waiting(t.metadata.namespace, owner)) return true;
  const cached = tasks.peek(t.metadata.namespace, t.metadata.name ?? '');
  return cached?.metadata.resourceVersion !== t.metadata.resourceVersion;
}

/** Maps a plan to the MachineUpdates it controls that were refused (`refusedMus`: every refused one, by key). */
export const planToRefusedMachineUpdates =
  (refusedMus: ReadonlyMap<string, MachineUpdateObject>) =>
  (p: KubeObject): ObjectKey[] =>
    [...refusedMus.values()]
      .filter((mu) => mu.metadata.namespace === p.metadata.namespace && controllingPlanRef(mu)?.name === p.metadata.name)
      .map((mu) => ({ namespace: mu.metadata.namespace, name: mu.metadata.name! }));

/** Whether the MachineUpdate carries this controller's refusal (not owned by a plan). */
const refused = (mu: MachineUpdateObject): boolean => mu.status?.conditions?.some((c) => c.reason === Reasons.notOwnedByPlan) === true;

/**
 * Maps a task of any kind to the MachineUpdate that controls it and to the other MachineUpdates in flight for the same
 * machine: one of those may be waiting for this task's deterministic name (an earlier update's task still running),
 * and is woken when it finishes or goes, rather than polling. The owner is not woken when it is finished (it never acts
 * again), nor by the task as we created it (no status yet, and the cached version: the echo of our create, which the
 * reconcile that created it already decided past; the updater's first report wakes it) unless a reconcile of it waits
 * for that create to show (`expect`). A task that changed or went (`t` is then an older version than the cache's, or
 * not cached) always wakes it.
 */
export const tasksToMachineUpdates =
  (mus: MachineUpdateStore, tasks?: Pick<Informer<KubeObject>['store'], 'peek'>, expect?: Pick<Expectations, 'waiting'>) =>
  (t: KubeObject): ObjectKey[] => {
    const owner = owningMachineUpdate(t);
    const concerned = owner !== undefined && ownerConcerned(mus, tasks, t, owner, expect);
    const keys: ObjectKey[] = owner && concerned ? [{ namespace: t.metadata.namespace, name: owner }] : [];
    const machine = t.metadata.labels?.[Labels.machineName];
    if (!machine) return keys;
    for (const mu of mus.byLabel(Labels.machineName, machine, t.metadata.namespace)) {
      if (mu.metadata.name !== owner && !isTerminal(mu.status?.updateStatus))
        keys.push({ namespace: mu.metadata.namespace, name: mu.metadata.name! });
    }
    return keys;
  };

/**
 * The top-level reconcile of one MachineUpdate: ownership first (only plans drive machines), then one step — of its
 * updaters' tasks or of its commit — decided purely from a snapshot, then one status write.
 */
export async function reconcile(deps: TaskDeps, key: ObjectKey, log: Logger): Promise<Action> {
  // Frozen cached objects throughout (no copies): the scope is only read, and reconcileStatus snapshots what it patches.
  const mu = deps.mgr.informer<MachineUpdateObject>(MachineUpdates).store.peek(key.namespace, key.name);
  if (!mu || isTerminal(mu.status?.updateStatus)) return Action.awaitChange();
  const now = new Date();
  const refused = await reconcileOwnership(deps, mu, now);
  if (refused) return refused;
  let scope: Scope;
  try {
    scope = await buildScope(scopeReader(deps), mu);
  } catch (err) {
    if (!(err instanceof TemplateKindError) && !(err instanceof TaskKindRefusedError)) throw err;
    // A template ref that cannot name an acceptable task kind never will: fail the update with the reason.
    const failedScope: Scope = { mu, machine: 'present', views: [] };
    const reason = err instanceof TaskKindRefusedError ? Reasons.taskKindRefused : Reasons.templateNotFound;
    await reconcileStatus(deps, failedScope, { updateStatus: 'failed', reason, message: err.message }, now);
    return Action.awaitChange();
  }
  // Deciding on a cache that has not shown our last write would conflict or redo it; its watch event wakes us.
  const wait = deps.expect.waitMs(
    mu,
    scope.views.filter((v) => v.task).map((v) => v.taskName),
  );
  if (wait !== undefined) return Action.requeue(wait);
  const opts: DecideOptions = { now, unreportedTaskMs: deps.unreportedTaskMs, abortGraceMs: deps.abortGraceMs };
  const d = decide(scope, opts);
  log.debug({ step: d.step.kind, updateStatus: d.updateStatus, message: d.message }, 'decided');
  if (d.step.kind === 'none') return Action.awaitChange();
  const outcome = d.step.kind === 'commit' ? await reconcileCommit(deps, scope, d, now) : await reconcileTasks(deps, scope, d, log, opts);
  const hold = await reconcileStatus(deps, outcome.mu ? { ...scope, mu: outcome.mu } : scope, outcome.status, now, outcome);
  // A progress-only change held back is written when due, unless an earlier wake-up (the task's next change) comes first.
  if (hold === undefined) return outcome.action;
  return Action.requeue(outcome.action.kind === 'requeue' ? Math.min(outcome.action.afterMs, hold) : hold);
}

/**
 * Only plans drive machines: a MachineUpdate no existing plan controls (or whose machine that plan did not label) gets
 * no task and no commit. Returns what to wait for when it is refused (the refusal written on it), undefined to go on.
 */
export async function reconcileOwnership(deps: TaskDeps, mu: MachineUpdateObject, now: Date): Promise<Action | undefined> {
  let problem = ownershipProblem(
    mu,
    planOf(deps, mu),
    deps.mgr.informer<KubeObject>(Machines).store.peek(mu.metadata.namespace, mu.spec.machineRef.name),
  );
  // The caches lag: the plan labels the machine just before it creates the MachineUpdate, so a refusal is confirmed
  // against the API server first (one read, only on the refusing path) instead of costing a refusal and a re-check.
  if (problem)
    problem = ownershipProblem(
      mu,
      await freshPlanOf(deps, mu),
      (await deps.client.get<KubeObject>(Machines, mu.metadata.namespace, mu.spec.machineRef.name)) ?? undefined,
    );
  if (!problem) return undefined;
  await writeRefusal(deps, mu, problem, now);
  // Also re-checked on a timer while young: a label event seen before the MachineUpdate existed maps to nothing.
  const recheck = refusalRecheckMs(mu, now);
  return recheck === undefined ? Action.awaitChange() : Action.requeue(recheck);
}

/** The plan a MachineUpdate's controller ownerReference names, from the cache (same namespace). */
function planOf(deps: TaskDeps, mu: MachineUpdateObject): KubeObject | undefined {
  const ref = controllingPlanRef(mu);
  return ref ? deps.mgr.informer<KubeObject>(InPlaceUpdatePlans).store.peek(mu.metadata.namespace, ref.name) : undefined;
}

/** The MachineUpdate's controlling plan as the API server has it now. */
async function freshPlanOf(deps: TaskDeps, mu: MachineUpdateObject): Promise<KubeObject | undefined> {
  const ref = controllingPlanRef(mu);
  return ref ? ((await deps.client.get<KubeObject>(InPlaceUpdatePlans, mu.metadata.namespace, ref.name)) ?? undefined) : undefined;
}

/** Says on the MachineUpdate why it is not acted on (status kept otherwise), with a Warning Event when that is news. */
async function writeRefusal(deps: TaskDeps, mu: MachineUpdateObject, message: string, now: Date): Promise<void> {
  if (mu.status?.message === message) return;
  const written = await snapshot(mu).apply(
    deps.client,
    MachineUpdates,
    { ...mu, status: refusalStatus(mu, message, now) },
    { fieldManager: CONTROLLER_NAME },
  );
  deps.expect.wrote(written);
  deps.mgr.events.event(mu, 'Warning', Reasons.notOwnedByPlan, message);
}

/** The scope reader over the informers' caches; task kinds are resolved, checked and watched on first use. */
const scopeReader = (deps: TaskDeps): ScopeReader => ({
  machine: (ns, name) => deps.mgr.informer<KubeObject>(Machines).store.peek(ns, name),
  taskResource: (u) => taskResource(deps, u),
  task: (res, ns, name) => deps.mgr.informer<Task>(res).store.peek(ns, name),
});

/** The task resource of an updater: the generic kind, or the template's kind without "Template" (served version). */
async function taskResource(deps: TaskDeps, u: MachineUpdateUpdater): Promise<ResourceType> {
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
    await deps
      .controller()
      .watch<KubeObject>(
        res,
        tasksToMachineUpdates(
          deps.mgr.informer<MachineUpdateObject>(MachineUpdates).store,
          deps.mgr.informer<KubeObject>(res).store,
          deps.expect,
        ),
      );
    await deps.mgr.informer(res).synced();
    deps.watched.add(k);
  }
  return res;
}

/** What a phase did: the status to write, what to wait for, and the MachineUpdate as last written (the commit's journal). */
export interface Outcome {
  status: StatusInput;
  action: Action;
  /** The MachineUpdate as last written during the step (the commit journals in its status), when it changed. */
  mu?: MachineUpdateObject;
  /** The commit journal the status write leaves (null: cleared); undefined keeps what is there. */
  commit?: CommitJournal | null;
  /** What the finished commit wrote (status.committed), set by the status write that ends the MachineUpdate. */
  committed?: readonly JournalObject[];
}

const statusOf = (d: Decision): StatusInput => ({
  updateStatus: d.updateStatus,
  ...(d.current !== undefined ? { current: d.current } : {}),
  reason: d.reason,
  message: d.message,
});

/** Does the decided step on the updaters' tasks (create, abort, replace, wait, or finish); returns the status to write and what to wait for. */
export async function reconcileTasks(deps: TaskDeps, scope: Scope, d: Decision, log: Logger, opts: DecideOptions): Promise<Outcome> {
  const { client, mgr } = deps;
  const mu = scope.mu;
  const ns = mu.metadata.namespace!;
  const step = d.step;
  switch (step.kind) {
    case 'none':
    case 'finish':
    case 'commit':
      return { status: statusOf(d), action: Action.awaitChange() };
    case 'wait':
      // The task's changes (ours, or a foreign one's finishing or going) wake this MachineUpdate; the one timer is the
      // deadline of a task that has no first status yet (nothing else changes when no updater serves it).
      return { status: statusOf(d), action: d.recheckAfterMs !== undefined ? Action.requeue(d.recheckAfterMs) : Action.awaitChange() };
    case 'createTask': {
      const view = scope.views[step.index]!;
      const created = await createTask(deps, mu, view, scope.views[step.index - 1], log);
      if ('failed' in created)
        return { status: { updateStatus: 'failed', reason: created.reason, message: created.failed }, action: Action.awaitChange() };
      view.task = created.task;
      // The task is the step others see: the first status that only says so waits like progress (firstStatusOnly).
      deps.statusWrites.set(muKey(mu), Date.now());
      // The status is what the next reconcile will decide with the task in place (waiting for its updater), so that
      // reconcile has nothing to write.
      const next = decide(scope, opts);
      const action = next.recheckAfterMs !== undefined ? Action.requeue(next.recheckAfterMs) : Action.awaitChange();
      return { status: statusOf(next), action };
    }
    case 'abortTask': {
      const view = scope.views[step.index]!;
      const task = view.task!;
      const res = await taskResource(deps, view.updater);
      // Through the patch helper: only spec.updatePhase and the time of the ask are sent, guarded by the
      // resourceVersion the decision saw. The time is on the task itself, written with the ask, so the grace period
      // survives a restart of this controller (level-based) and an updater can read how long it has.
      const annotations = { ...task.metadata.annotations };
      if (abortRequestedAt(task, opts.now) === undefined) annotations[Annotations.abortRequestedAt] = opts.now.toISOString();
      view.task = await snapshot(task).apply(
        client,
        res,
        { ...task, metadata: { ...task.metadata, annotations }, spec: { ...task.spec, updatePhase: 'aborting' } },
        { fieldManager: CONTROLLER_NAME },
      );
      mgr.events.event(mu, 'Normal', Reasons.aborting, `asked updater ${view.updater.name} to abort (${view.kind} ${view.taskName})`);
      // An updater that never answers changes nothing that would wake us: look again when the grace period ends.
      return { status: statusOf(d), action: Action.requeue(deps.abortGraceMs) };
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
  }
}

/**
 * Commits every responsibility once every updater is updated (C8), all or nothing; returns how the MachineUpdate ends.
 * The journal rides on status writes that happen anyway: it is written with the decided status (every updater
 * updated, committing) before the first object is written, and cleared by the final status write that follows. A
 * commit to one object still at the values recorded in spec.previous writes no journal: the final status write is
 * the only one.
 */
export async function reconcileCommit(deps: TaskDeps, scope: Scope, d: Decision, now: Date): Promise<Outcome> {
  const { client, mgr } = deps;
  const mu = scope.mu;
  const resps = scope.views.flatMap((v) => v.updater.responsibilities);
  let latest = mu;
  let journal: CommitJournal | undefined = mu.status?.commit;
  let committed: readonly JournalObject[] | undefined;
  const save = async (next: CommitJournal | undefined, done?: readonly JournalObject[]): Promise<void> => {
    journal = next;
    // What a finished commit wrote (before and after) stays as status.committed, for `inplace revert`.
    if (done) committed = done;
    // Clearing waits for the final status write of this reconcile; if that write fails, the journal left behind makes
    // the next run verify the values in place (finished) or finish the rollback, as after a crash.
    if (!next) return;
    // Durable before any object is written (commit-apply calls save first): one /status patch, guarded by resourceVersion.
    const status = { ...buildStatus({ ...scope, mu: latest }, statusOf(d), now), commit: next };
    latest = await snapshot(latest).apply(client, MachineUpdates, { ...latest, status }, { fieldManager: CONTROLLER_NAME });
    deps.expect.wrote(latest);
    deps.statusWrites.set(muKey(latest), Date.now());
  };
  const cachedMachine = mgr.informer<KubeObject>(Machines).store.peek(mu.metadata.namespace, mu.spec.machineRef.name);
  const plan = controllingPlanRef(mu)?.uid;
  const result = await commitResponsibilities(client, {
    namespace: mu.metadata.namespace!,
    machineName: mu.spec.machineRef.name,
    resps,
    journal: mu.status?.commit,
    save,
    policy: deps.writePolicy,
    cachedMachine,
    memoRef: plan ? { memo: deps.dryRuns, plan } : undefined,
    previous: mu.spec.previous,
  });
  const ending = commitEnding(result, scope.views.length);
  if (!result.ok) mgr.events.event(mu, ending.updateStatus === 'aborted' ? 'Normal' : 'Warning', ending.reason, ending.message);
  return { status: ending, action: Action.awaitChange(), mu: latest, commit: journal ?? null, ...(committed ? { committed } : {}) };
}

/** Creates the task of an updater (idempotent: an existing task of ours is adopted as is). */
async function createTask(
  deps: TaskDeps,
  mu: MachineUpdateObject,
  view: UpdaterView,
  previous: UpdaterView | undefined,
  log: Logger,
): Promise<{ task: Task } | { failed: string; reason: string }> {
  const { client } = deps;
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
      return {
        failed: `template kind ${ref.kind}.${group} of updater ${u.name} is not served: ${err instanceof Error ? err.message : String(err)}`,
        reason: Reasons.templateNotFound,
      };
    }
    const tpl = await client.get(tplRes, ns, ref.name);
    if (!tpl) return { failed: `template ${ref.kind} ${ns}/${ref.name} of updater ${u.name} not found`, reason: Reasons.templateNotFound };
    // The plan's validation judges the same (judgeTemplate): a template it could not judge never becomes a task either.
    const tooLarge = templateTaskProblem(`template ${ref.kind} ${ns}/${ref.name} of updater ${u.name}`, tpl);
    if (tooLarge) return { failed: tooLarge, reason: Reasons.taskCreateFailed };
    task = buildTaskFromTemplate(tpl, inputs);
    task.apiVersion = view.apiVersion;
  } else {
    task = buildGenericTask({ ...inputs, updaterName: u.name, ...(u.parameters ? { parameters: u.parameters } : {}) });
  }
  const res = await taskResource(deps, u);
  try {
    const created = await client.create<Task>(res, task, { fieldManager: CONTROLLER_NAME });
    deps.expect.created(ns, mu.metadata.name!, view.taskName);
    deps.metrics.tasksCreated.inc({ kind: res.kind });
    const prevDone = previous?.task?.status?.completionTime;
    if (prevDone) deps.metrics.stepLatency.observe(Math.max(0, (Date.now() - Date.parse(prevDone)) / 1000));
    // No per-task Event: status.tasks lists every task with its start (a Normal Event per machine and updater cost a
    // request each and said nothing more; issue 25).
    log.info({ task: view.taskName, kind: res.kind, updater: u.name }, 'task created');
    return { task: created };
  } catch (err) {
    // The API server refuses the object itself (too large, invalid, kind gone): retrying sends the same object.
    if (err instanceof KubeApiError && [400, 404, 413, 422].includes(err.code) && !isAlreadyExists(err)) {
      return {
        failed: `updater ${u.name}: the API server refused to create ${res.kind} ${ns}/${view.taskName}: ${err.status?.message ?? err.message}`,
        reason: Reasons.taskCreateFailed,
      };
    }
    if (!isAlreadyExists(err)) throw new RetryableError(`create ${res.kind} ${ns}/${view.taskName}`, err);
    // C9: the name is deterministic, so the task is ours from an earlier reconcile (cache lag) or another update's.
    const existing = await client.get<Task>(res, ns, view.taskName);
    if (existing && existing.metadata.ownerReferences?.some((r) => r.controller && r.uid === mu.metadata.uid)) return { task: existing };
    throw new ConflictError(`create ${res.kind} ${ns}/${view.taskName}: the name is held by another object`, err);
  }
}

/**
 * Writes the status once (only what changed, guarded by resourceVersion) and records the transition's Event. A change
 * that is only an updater's progress is held back within the progress interval of our last write: returns how
 * long until it is due (nothing written), undefined otherwise.
 */
export async function reconcileStatus(
  deps: TaskDeps,
  scope: Scope,
  s: StatusInput,
  now: Date,
  phase: Pick<Outcome, 'commit' | 'committed'> = {},
): Promise<number | undefined> {
  const { commit, committed } = phase;
  const mu = scope.mu;
  const helper = snapshot(mu);
  // Only the status changes, and buildStatus returns a new one: a shallow copy of the (frozen) MachineUpdate is enough.
  const status = buildStatus(scope, s, now);
  if (commit === null) delete status.commit;
  else if (commit) status.commit = commit;
  if (committed) status.committed = { objects: [...committed] };
  const next: MachineUpdateObject = { ...mu, status };
  const key = muKey(mu);
  const hold = progressHoldMs(mu.status, status, deps.statusWrites.get(key), now.getTime(), deps.progressWriteIntervalMs);
  if (hold !== undefined) return hold;
  // apply sends nothing and returns `next` itself when nothing changed: one diff rather than changed() and apply().
  const written = await helper.apply(deps.client, MachineUpdates, next, { fieldManager: CONTROLLER_NAME });
  if (written === next) return undefined;
  deps.expect.wrote(written);
  if (isTerminal(status.updateStatus)) deps.statusWrites.delete(key);
  else deps.statusWrites.set(key, now.getTime());
  const event = statusEvent(
    mu.status?.updateStatus,
    s,
    mu.status?.conditions?.find((c) => c.type === ConditionTypes.inPlaceUpdate)?.reason,
  );
  if (event) deps.mgr.events.event(mu, event.type, event.reason, event.message);
  return undefined;
}
