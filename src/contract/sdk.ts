// The updater SDK: a third-party updater in TypeScript is one defineUpdater({...}) call. The SDK watches the
// task kind, calls update/abort, and keeps the contract for the updater: terminal never left (C4), status
// stamped with observedGeneration (C5), Ready with reason and message (C6), status only through /status,
// optimistic concurrency, backoff on errors, leader election, start and completion times.
import { eventAction } from '../api/event-actions.js';
import { Labels, Machines, UpdaterUpdateTasks, type KubeObject, type ResourceType } from '../api/index.js';
// The runtime's modules one by one, not its barrel: the declarations then name only the runtime's own types, so an
// installed SDK type-checks without the API client library's declarations (and theirs' missing @types).
import { createClient, loadKubeConfig } from '../runtime/client.js';
import { createLogger, noopLogger } from '../runtime/log.js';
import { createManager } from '../runtime/manager.js';
import { snapshot } from '../runtime/patch.js';
import { jsonCopy } from '../runtime/pure/copy.js';
import { isConflict } from '../runtime/pure/errors.js';
import { Action, type KubeClient, type Logger, type Manager, type ObjectKey } from '../runtime/pure/types.js';
import { taskPhase, type Task, type TaskPhase, type TaskStatus } from './accessors.js';
import {
  isTerminalTask,
  requeueDelay,
  statusChanged,
  statusForError,
  statusForResult,
  statusForTerminal,
  type Result,
} from './sdk-core.js';

export { progress, done, failed, aborted, toMicroTime, MAX_REQUEUE_MS, type Result, type StatusFields } from './sdk-core.js';

/** What a handler gets besides the task. */
export interface UpdaterContext {
  /** The API client. Reading CAPI objects is fine; writing them is forbidden (C8). */
  client: KubeClient;
  /** Logger bound to the updater and the task. */
  log: Logger;
  /** The clock (tests may replace it). */
  now(): Date;
  /** When this task's update started: status.startTime (to the microsecond), or now on the first reconcile. Survives restarts (C7). */
  startTime: Date;
  /** The task's spec.updatePhase (C2). */
  phase: TaskPhase;
  /** The task's last written status (read it to resume; write through the handler's result fields). */
  status: TaskStatus;
  /** The CAPI Machine the task is for (spec.machineRef), read fresh; undefined when it does not exist. */
  machine(): Promise<KubeObject | undefined>;
}

/** An updater's definition. */
export interface UpdaterDefinition<T extends Task = Task> {
  /** Name of the updater (logs, leader-election lease, field manager). */
  name: string;
  /** The task kind it reconciles; default the generic UpdaterUpdateTask. */
  kind?: ResourceType;
  /**
   * Generic kind only: the updater names served (label inplace.cluster.x-k8s.io/updater-name). Required to start a
   * generic-kind updater (or StartOptions.names), unless StartOptions.catchAll.
   */
  names?: string[];
  /** Moves the update forward; called while spec.updatePhase is updating. Must be idempotent (C7). */
  update(task: T, ctx: UpdaterContext): Promise<Result>;
  /** Stops the update; called once spec.updatePhase is aborting. Return aborted (or done/failed if it already finished). */
  abort(task: T, ctx: UpdaterContext): Promise<Result>;
  /** Clock override (tests). */
  now?: () => Date;
}

/** Options of Updater.start. */
export interface StartOptions {
  /** Client to use; else one is built from kubeconfigPath (or the default kubeconfig chain). */
  client?: KubeClient;
  kubeconfigPath?: string;
  /** Watch only this namespace (default all). */
  namespace?: string;
  /** Override the definition's names (generic kind). */
  names?: string[];
  /**
   * Generic kind: serve every updater name. An updater answering names nobody else serves makes the platform commit
   * changes no updater made, so only test doubles and the demo's simulated reference updater do this.
   */
  catchAll?: boolean;
  /** Run only while holding a Lease (for several replicas). */
  leaderElect?: boolean;
  /** Namespace of the lease (default: $POD_NAMESPACE — the pod's own, where the manifests grant Leases — else namespace, else `default`). */
  leaseNamespace?: string;
  /** Logger (default: a pino logger named after the updater). */
  log?: Logger;
  /** Tasks reconciled in parallel (default 4). A reconcile mostly waits on the API server; raise it for large fleets. */
  concurrency?: number;
}

/** A running updater. */
export interface RunningUpdater {
  stop(): Promise<void>;
}

/** A defined updater: start it against a cluster, or drive one task by hand (tests). */
export interface Updater<T extends Task = Task> {
  readonly name: string;
  readonly kind: ResourceType;
  start(opts?: StartOptions): Promise<RunningUpdater>;
  /** One reconcile of one task with `client`: what the running updater does per event. */
  reconcileTask(client: KubeClient, task: T, opts?: { log?: Logger; names?: string[] }): Promise<Action>;
}

/** What reconciling a task of an updater needs besides the task. */
interface Reconciler<T extends Task> {
  def: UpdaterDefinition<T>;
  client: KubeClient;
  res: ResourceType;
  log: Logger;
  /** The updater names served (generic kind); undefined: every task. */
  names: string[] | undefined;
}

/** Does the update/abort step for a task and writes the status it leads to. */
async function reconcileOne<T extends Task>(r: Reconciler<T>, task: T): Promise<Action> {
  const { def, client, res, log, names } = r;
  if (names && !names.includes(task.metadata.labels?.[Labels.updaterName] ?? '')) return Action.awaitChange();
  if (task.metadata.deletionTimestamp) return Action.awaitChange();
  const now = def.now ?? (() => new Date());
  const write = async (status: TaskStatus): Promise<void> => {
    const helper = snapshot<Task>(task);
    try {
      await helper.apply(client, res, { ...task, status } as T, { fieldManager: def.name });
    } catch (err) {
      if (isConflict(err)) log.debug({ task: task.metadata.name }, 'status write conflicted; will retry from fresh state');
      throw err;
    }
  };

  if (isTerminalTask(task)) {
    // C4: never leave a terminal status; C5: still answer a newer generation so the platform can trust it.
    const st = statusForTerminal(task);
    if (st) await write(st);
    return Action.awaitChange();
  }

  const phase = taskPhase(task);
  // One instant for the first start: the handler measures from exactly the startTime the status records.
  const startedAt = task.status?.startTime ? new Date(task.status.startTime) : now();
  const ctx: UpdaterContext = {
    client,
    log,
    now,
    startTime: startedAt,
    phase,
    status: jsonCopy(task.status ?? {}),
    machine: () => client.get(Machines, task.metadata.namespace, task.spec.machineRef.name),
  };
  let result: Result;
  try {
    result = phase === 'aborting' ? await def.abort(task, ctx) : await def.update(task, ctx);
  } catch (err) {
    const st = statusForError(task, err, now(), startedAt);
    if (statusChanged(task, st)) await write(st).catch(() => undefined);
    throw err;
  }
  const next = statusForResult(task, result, now(), startedAt);
  if (statusChanged(task, next)) await write(next);
  // A deadline far away is waited for in resync-sized steps (a timer cannot wait longer than ~24.8 days).
  if (result.type === 'progress' && result.requeueAfterMs !== undefined) return Action.requeue(requeueDelay(result.requeueAfterMs));
  return Action.awaitChange();
}

/** Defines an updater (see UpdaterDefinition); call start() to run it. */
export function defineUpdater<T extends Task = Task>(def: UpdaterDefinition<T>): Updater<T> {
  const res = def.kind ?? UpdaterUpdateTasks;
  const generic = res.group === UpdaterUpdateTasks.group && res.kind === UpdaterUpdateTasks.kind;
  return {
    name: def.name,
    kind: res,
    reconcileTask(client, task, opts) {
      const names = generic ? (opts?.names ?? def.names) : undefined;
      return reconcileOne({ def, client, res, log: opts?.log ?? noopLogger, names: names && names.length ? names : undefined }, task);
    },
    async start(opts: StartOptions = {}): Promise<RunningUpdater> {
      const client = opts.client ?? createClient(loadKubeConfig(opts.kubeconfigPath), { userAgent: `inplace-updater-${def.name}` });
      const log = opts.log ?? createLogger({ name: def.name });
      const rawNames = generic ? (opts.names ?? def.names) : undefined;
      const names = rawNames && rawNames.length && !opts.catchAll ? rawNames : undefined;
      if (generic && !names && !opts.catchAll)
        throw new Error(
          `updater ${def.name} serves the generic UpdaterUpdateTask kind: declare the updater names it serves (names), or start it with catchAll (test doubles and demos only)`,
        );
      const mgr: Manager = createManager({
        client,
        name: `updater-${def.name}`,
        eventAction,
        ...(opts.namespace ? { namespace: opts.namespace } : {}),
        log,
        ...(opts.leaderElect
          ? {
              leaderElection: {
                enabled: true,
                leaseName: `inplace-updater-${def.name}`,
                leaseNamespace: opts.leaseNamespace ?? process.env['POD_NAMESPACE'] ?? opts.namespace ?? 'default',
              },
            }
          : {}),
      });
      const informer = mgr.informer<T>(res);
      mgr
        .controller<T>(`updater-${def.name}`)
        .for(res)
        .withConcurrency(opts.concurrency ?? 4)
        .reconcile(async (key: ObjectKey, rctx) => {
          const task = informer.store.get(key.namespace, key.name);
          if (!task) return Action.awaitChange();
          return reconcileOne({ def, client, res, log: rctx.log, names }, task);
        });
      await mgr.start();
      log.info({ kind: res.kind, names: names ?? 'all' }, 'updater started');
      return {
        stop: async () => {
          await mgr.stop();
        },
      };
    },
  };
}
