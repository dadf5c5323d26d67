// The MHC extension's two reconciles. `reconcile` passes over one MachineHealthCheck: snapshot (scope.ts) → decide
// (decide.ts) → per machine one annotation patch and one condition write, through the snapshot/patch helper with
// optimistic concurrency. `reconcileRestore` puts a machine's skip-remediation back once its update ended, unless the
// plan labelling it will (its unlabel carries the restore: one Machine patch at the end of an update, not two).
import { MachineUpdates, Machines } from '../api/index.js';
import {
  Action,
  ConflictError,
  KubeApiError,
  snapshot,
  type EventRecorder,
  type KubeClient,
  type Logger,
  type ObjectKey,
} from '../runtime/index.js';
import { encodePointer } from '../runtime/pure/index.js';
import {
  confirmUnhealthy,
  planNeedsAttention,
  planPass,
  restoreDue,
  restoreGraceMs,
  restorePatch,
  settledAction,
  type AnnotationPatch,
  type MachineAction,
  type PassMachine,
} from './decide.js';
import { DecisionMemo } from './memo.js';
import { MhcIndex, machineUpdatesScope, mhcScope, type Machine, type MachineUpdate, type MhcScope, type MhcStores } from './scope.js';
import { conditionRecorded, recordEvents, setHealthCheckSucceededCondition, type EventWish } from './status.js';

/** Name of the component and of its main controller. */
export const CONTROLLER_NAME = 'mhc-extension';
/** Name of the controller restoring skip-remediation when an update ends. */
export const RESTORE_CONTROLLER_NAME = `${CONTROLLER_NAME}-restore`;

/**
 * How soon a pass looks again after the API server contradicted its cached view (an update completed between the
 * decision and the write): the watch event that follows normally triggers the pass first; this only backs it up.
 */
export const STALE_VIEW_RECHECK_MS = 1_000;

/** What the reconciles need: the caches, the API client, the Event recorder, the clock and per-process memory. */
export interface MhcDeps {
  stores: MhcStores;
  /** What passes decide on, kept by the caches' change events (scope.ts); rebuilt from the caches on a restart. */
  index: MhcIndex;
  /** The per-machine steps of past decisions, by the identity of their inputs (memo.ts); empty on a restart. */
  memo: DecisionMemo;
  client: KubeClient;
  events: EventRecorder;
  /** The clock decisions are taken at (tests inject one). */
  now: () => number;
  /** MHCs whose last pass left a timed-out or failed machine: any event may free budget for it (see index.ts). */
  attention: Set<string>;
  /** Configuration warnings already given (one per MHC configuration, not one per pass). */
  warned: Set<string>;
  /**
   * Machines whose annotations we patched, by `namespace/name`: the resourceVersion written and when. Until the
   * Machine cache shows that version, a decision on the machine would rest on the annotations before our write (the
   * pass or the restore runs again on the next event, often before the watch delivered it: a failed test, retried).
   */
  ownWrites: Map<string, { rv: string; at: number }>;
}

/** How long a decision waits for the Machine cache to show our own annotation write (then decides on what is cached). */
export const OWN_WRITE_TTL_MS = 5_000;

/** The Machine cache delivered `m`: our write to it is seen once its resourceVersion passes by (or it is deleted). */
export function observeMachine(deps: Pick<MhcDeps, 'ownWrites'>, m: Machine, deleted: boolean): void {
  const k = mhcKey(keyOf(m));
  const w = deps.ownWrites.get(k);
  if (w && (deleted || w.rv === m.metadata.resourceVersion)) deps.ownWrites.delete(k);
}

/** How long to wait before deciding on the cached `m` (undefined: decide now): it does not yet show our last write. */
function ownWritePendingMs(deps: MhcDeps, m: Machine): number | undefined {
  const k = mhcKey(keyOf(m));
  const w = deps.ownWrites.get(k);
  if (!w) return undefined;
  const left = w.at + OWN_WRITE_TTL_MS - deps.now();
  if (w.rv === m.metadata.resourceVersion || left <= 0) {
    deps.ownWrites.delete(k);
    return undefined;
  }
  return left;
}

const keyOf = (o: { metadata: { namespace?: string; name?: string } }): ObjectKey => ({
  ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
  name: o.metadata.name ?? '',
});

/** Creates the reconciles' dependencies. */
export function mhcDeps(stores: MhcStores, client: KubeClient, events: EventRecorder, now: () => number = Date.now): MhcDeps {
  return {
    stores,
    index: new MhcIndex(stores),
    memo: new DecisionMemo(),
    client,
    events,
    now,
    attention: new Set(),
    warned: new Set(),
    ownWrites: new Map(),
  };
}

/** The key of an MHC in `MhcDeps.attention`. */
export const mhcKey = (key: ObjectKey): string => `${key.namespace ?? ''}/${key.name}`;

/** One pass over a MachineHealthCheck: protect machines in update, judge them, remediate within budget; requeue at the next deadline. */
export async function reconcile(deps: MhcDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const scope = mhcScope(deps.index, key, deps.now());
  if (!scope) {
    deps.attention.delete(mhcKey(key));
    return Action.awaitChange();
  }
  return reconcileMachineHealthCheck(deps, scope, log);
}

/** The pass on a snapshot: decide, then act machine by machine (a settled machine has nothing to write and is passed over). */
async function reconcileMachineHealthCheck(deps: MhcDeps, scope: MhcScope, log: Logger): Promise<Action> {
  const { mhc } = scope;
  const key: ObjectKey = { ...(mhc.metadata.namespace ? { namespace: mhc.metadata.namespace } : {}), name: mhc.metadata.name ?? '' };
  const plan = planPass(mhc, scope.expected, scope.machines, scope.nowMs, deps.memo);
  if (planNeedsAttention(plan)) deps.attention.add(mhcKey(key));
  else deps.attention.delete(mhcKey(key));
  reconcileWarnings(deps, scope, plan.mhcEvents, log);
  let byName: Map<string, PassMachine> | undefined;
  let stale = false;
  for (const action of plan.actions) {
    if (settledAction(action)) continue;
    byName ??= new Map(scope.machines.map((p) => [p.m.metadata.name ?? '', p]));
    const seen = byName.get(action.machine);
    const machine = seen?.m;
    const update = action.update && seen?.u?.metadata.name === action.update.name ? seen.u : undefined;
    if (!machine || (action.update && !update)) continue;
    // Decided on annotations from before our own write: the write's watch event brings a pass if one is still needed.
    if (ownWritePendingMs(deps, machine) !== undefined) {
      stale = true;
      continue;
    }
    if (!(await reconcileMachine(deps, scope, { action, machine, cached: update }, log))) stale = true;
  }
  const after = stale ? Math.min(STALE_VIEW_RECHECK_MS, plan.requeueAfterMs ?? Infinity) : plan.requeueAfterMs;
  return after !== undefined ? Action.requeue(after) : Action.awaitChange();
}

/** Records the MHC's configuration warnings once per configuration value, not once per pass. */
function reconcileWarnings(deps: MhcDeps, scope: MhcScope, events: readonly EventWish[], log: Logger): void {
  const { mhc } = scope;
  for (const e of events) {
    const id = `${mhc.metadata.uid}/${mhc.metadata.annotations ? JSON.stringify(mhc.metadata.annotations) : ''}/${JSON.stringify(mhc.spec.remediation ?? {})}`;
    if (deps.warned.has(id)) continue;
    deps.warned.add(id);
    recordEvents(deps.events, mhc, 'MachineHealthCheck', [e]);
    log.warn({ mhc: mhc.metadata.name, reason: e.reason }, e.message);
  }
}

/**
 * Applies one machine's decision: its annotations (one patch), then, when the decision has one, its MachineUpdate's
 * condition (one status write), then Events. A verdict of timed out or failed is first confirmed on the MachineUpdate as the API server
 * has it now: the decision was taken on a cache, and an update completing meanwhile must not get its machine
 * remediated. Returns false when the API server contradicted the cached view (nothing written).
 */
async function reconcileMachine(
  deps: MhcDeps,
  scope: MhcScope,
  { action, machine, cached }: { action: MachineAction; machine: Machine; cached: MachineUpdate | undefined },
  log: Logger,
): Promise<boolean> {
  const wish = action.update?.condition;
  if (!wish || !cached) {
    // Protected and within its timeout: the annotation (naming the MHC and the expiry) is the whole record.
    if (action.annotations) {
      await patchMachineAnnotations(deps, machine, action.annotations);
      log.info({ machine: action.machine, annotations: action.annotations }, 'patched machine annotations');
      recordEvents(deps.events, machine, 'Machine', action.eventsOnPatch);
    }
    return true;
  }
  let update = cached;
  if (wish.status === 'False' && (action.annotations || !conditionRecorded(cached, wish))) {
    const fresh = await deps.client.get<MachineUpdate>(MachineUpdates, machine.metadata.namespace, cached.metadata.name ?? '');
    if (!confirmUnhealthy(scope.mhc, machine, fresh, deps.now())) {
      log.info(
        { machine: action.machine, machineUpdate: cached.metadata.name, updateStatus: fresh?.status?.updateStatus },
        'the update changed since the decision; not acting on the stale view',
      );
      return false;
    }
    update = fresh!;
  }
  if (action.annotations) {
    await patchMachineAnnotations(deps, machine, action.annotations);
    log.info({ machine: action.machine, annotations: action.annotations }, 'patched machine annotations');
    recordEvents(deps.events, machine, 'Machine', action.eventsOnPatch);
  }
  if (conditionRecorded(update, wish)) return true;
  const snap = snapshot(update);
  const next: MachineUpdate = { ...update };
  setHealthCheckSucceededCondition(next, wish, new Date(deps.now()));
  await snap.apply(deps.client, MachineUpdates, next, { fieldManager: CONTROLLER_NAME });
  recordEvents(deps.events, machine, 'Machine', action.eventsOnChange);
  return true;
}

/**
 * Restores a machine's skip-remediation to its state before the update once its update ended (no current update in
 * progress), unless a plan still labelling the machine will (restoreDeferredToPlan): its label's removal, or the
 * deletion of the plan and its MachineUpdates, brings this reconcile back, so the machine is never left protected.
 */
export async function reconcileRestore(deps: MhcDeps, key: ObjectKey, log: Logger): Promise<Action> {
  const scope = machineUpdatesScope(deps.stores, key);
  if (!scope) return Action.awaitChange();
  const nowMs = deps.now();
  if (!restoreDue(scope.machine, scope.updates, scope.planExists, nowMs)) {
    // A recent plan label whose plan the caches do not show yet: looked at again when the grace ends.
    const grace = restoreGraceMs(scope.machine, scope.updates, scope.planExists, nowMs);
    return grace !== undefined ? Action.requeue(grace) : Action.awaitChange();
  }
  const wait = ownWritePendingMs(deps, scope.machine);
  if (wait !== undefined) return Action.requeue(wait);
  const patch = restorePatch(scope.machine.metadata.annotations);
  if (!patch) return Action.awaitChange();
  await patchMachineAnnotations(deps, scope.machine, patch);
  // No Event: one per machine per update would repeat what the MachineUpdate's status and the annotations show.
  log.info({ machine: key.name, restored: Object.keys(patch) }, 'in-place update ended: restored skip-remediation to its prior state');
  return Action.awaitChange();
}

/**
 * Patches only the machine's annotations. The decision rests on the annotations alone, so the patch is guarded by
 * them (a JSON patch `test` of the whole map as the decision saw it), not by the resourceVersion: a label or spec
 * write by another controller (the plan's label, the commit) no longer costs a conflict, an annotation change still
 * does (409/422: ConflictError, retried). A machine without annotations has no map to test: resourceVersion as before.
 */
async function patchMachineAnnotations(deps: MhcDeps, m: Machine, patch: AnnotationPatch): Promise<void> {
  const written = await sendAnnotations(deps.client, m, patch);
  const rv = written.metadata.resourceVersion;
  if (rv) deps.ownWrites.set(mhcKey(keyOf(m)), { rv, at: deps.now() });
}

/** The patch itself (see patchMachineAnnotations); returns the Machine as written. */
async function sendAnnotations(client: KubeClient, m: Machine, patch: AnnotationPatch): Promise<Machine> {
  const seen = m.metadata.annotations;
  if (!seen) {
    const annotations: Record<string, string> = {};
    for (const [k, v] of Object.entries(patch)) if (v !== null) annotations[k] = v;
    return snapshot(m).apply(client, Machines, { ...m, metadata: { ...m.metadata, annotations } }, { fieldManager: CONTROLLER_NAME });
  }
  const ops: unknown[] = [{ op: 'test', path: '/metadata/annotations', value: seen }];
  for (const [k, v] of Object.entries(patch)) {
    const path = `/metadata/annotations/${encodePointer([k]).slice(1)}`;
    if (v !== null) ops.push({ op: 'add', path, value: v });
    else if (seen[k] !== undefined) ops.push({ op: 'remove', path });
  }
  const name = m.metadata.name ?? '';
  try {
    return await client.patch<Machine>(Machines, m.metadata.namespace, name, ops, { type: 'json', fieldManager: CONTROLLER_NAME });
  } catch (err) {
    // A failed test is a 422 (as in Kubernetes): the annotations moved since the decision; decide again on fresh ones.
    if (err instanceof KubeApiError && (err.code === 409 || err.code === 422))
      throw new ConflictError(`patch annotations of Machine ${m.metadata.namespace ?? ''}/${name}`, err);
    throw err;
  }
}
