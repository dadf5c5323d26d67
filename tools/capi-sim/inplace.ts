// Cluster API v1.12's in-place update flow (alpha feature gate InPlaceUpdates), decided purely from objects and hook
// answers (no client, no HTTP): when KubeadmControlPlane tries an in-place update instead of replacing a machine,
// how a CanUpdateMachine answer is judged (its patches applied to `current`, then compared with `desired`), what the
// trigger writes on the Machine and its clones, and what an UpdateMachine answer means for the machine. Each
// function names the upstream code whose behaviour it models; the HTTP side is extension-client.ts.
import type { Condition, KubeObject } from '../../src/api/index.js';
import type { Machine } from '../../src/api/capi/index.js';
import { UPDATE_IN_PROGRESS_ANNOTATION, pickKcpVictim, type KcpMember, type KcpStep } from './rollout.js';

export { UPDATE_IN_PROGRESS_ANNOTATION };

/** CAPI: hooks still to be called for an object, comma-separated hook names (api/core/v1beta2 PendingHooksAnnotation). */
export const PENDING_HOOKS_ANNOTATION = 'runtime.cluster.x-k8s.io/pending-hooks';
/** The Runtime SDK hook that performs an in-place update. */
export const UPDATE_MACHINE_HOOK = 'UpdateMachine';
/** The Runtime SDK hook that decides whether a machine's changes can be made in place. */
export const CAN_UPDATE_MACHINE_HOOK = 'CanUpdateMachine';
/** The Runtime SDK hook that decides whether a MachineSet's template changes can be made in place. */
export const CAN_UPDATE_MACHINESET_HOOK = 'CanUpdateMachineSet';
/** Machine v1beta2 condition: True while an in-place update is in progress (MachineUpdatingCondition). */
export const UPDATING_CONDITION = 'Updating';
/** Reasons of the Updating condition (MachineNotUpdatingReason, MachineInPlaceUpdatingReason, MachineInPlaceUpdateFailedReason). */
export const UpdatingReason = {
  notUpdating: 'NotUpdating',
  inPlaceUpdating: 'InPlaceUpdating',
  inPlaceUpdateFailed: 'InPlaceUpdateFailed',
} as const;
/** The message upstream's machine controller sets when the UpdateMachine call fails (the extension's own message only goes to its log). */
export const UPDATE_MACHINE_FAILED_MESSAGE = 'UpdateMachine hook failed: please check controller logs for errors';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// --- pending hooks (internal/hooks tracking) ------------------------------------------------------------------

/** The hooks an object's pending-hooks annotation lists. */
export function pendingHooks(annotations: Record<string, string> | undefined): string[] {
  const v = annotations?.[PENDING_HOOKS_ANNOTATION];
  return v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
    : [];
}

/** hooks.IsPending: the hook is listed in the object's pending-hooks annotation. */
export const isHookPending = (hook: string, o: KubeObject): boolean => pendingHooks(o.metadata.annotations).includes(hook);

/** The pending-hooks annotation value with `hook` added (MarkAsPending) or removed (MarkAsDone); undefined: remove the annotation. */
export function pendingHooksValue(annotations: Record<string, string> | undefined, hook: string, pending: boolean): string | undefined {
  const hooks = pendingHooks(annotations).filter((h) => h !== hook);
  if (pending) hooks.push(hook);
  return hooks.length > 0 ? [...new Set(hooks)].sort().join(',') : undefined;
}

// --- KubeadmControlPlane: try in place before scaling down ----------------------------------------------------

/** What the KCP knows when it is about to replace an out-of-date machine. */
export interface KcpInPlaceInput {
  /** The InPlaceUpdates feature gate (the simulator's inPlaceUpdates option). */
  enabled: boolean;
  /** Registered CanUpdateMachine handlers (upstream supports exactly one). */
  canUpdateHandlers: number;
  /** The machine has its InfraMachine and KubeadmConfig (upstream EligibleForInPlaceUpdate; rollout.before/after not modelled). */
  eligible: boolean;
  /** Up-to-date machines now, and the KCP's spec.replicas. */
  upToDateReplicas: number;
  desiredReplicas: number;
}

/** What the KCP does with the machine decideKcpStep picked for deletion. */
export type KcpInPlaceStep = { kind: 'asIs' } | { kind: 'askCanUpdate'; machine: string } | { kind: 'error'; message: string };

/**
 * update.go rollingUpdate with InPlaceUpdates: once the surge is in place (decideKcpStep chose to delete the oldest
 * out-of-date machine, so preflight passed), the machine is offered to the CanUpdateMachine hook while fewer
 * machines than spec.replicas are up to date; only when the extension cannot cover the change is it scaled down.
 * With the default maxSurge 1 the surplus machine is still created first and the last out-of-date one deleted:
 * upstream replaces none only with maxSurge 0.
 */
export function decideKcpInPlace(step: KcpStep, outdated: ReadonlySet<string>, input: KcpInPlaceInput): KcpInPlaceStep {
  if (step.kind !== 'delete' || !outdated.has(step.machine)) return { kind: 'asIs' };
  if (!input.enabled || !input.eligible || input.upToDateReplicas >= input.desiredReplicas) return { kind: 'asIs' };
  if (input.canUpdateHandlers === 0) return { kind: 'asIs' };
  if (input.canUpdateHandlers > 1) return { kind: 'error', message: 'found multiple CanUpdateMachine hooks: only one hook is supported' };
  return { kind: 'askCanUpdate', machine: step.machine };
}

/**
 * Cluster API v1.15 KCP (capi#14200): before creating the surge machine of a rollout, the out-of-date machine it would
 * replace is offered in place; when the answer covers everything and says affectsAvailability false, it is updated at
 * once and the surge is skipped. The machine to offer, or undefined when the step is not a rollout's surge (a real
 * scale-up, no out-of-date machine, not exactly one handler).
 */
export function kcpSurgeCandidate(
  step: KcpStep,
  members: readonly KcpMember[],
  desiredReplicas: number,
  handlers: number,
): string | undefined {
  if (step.kind !== 'create' || handlers !== 1) return undefined;
  const live = members.filter((m) => !m.deleting);
  if (live.length < desiredReplicas) return undefined;
  return pickKcpVictim(live.filter((m) => !m.upToDate))?.name;
}

// --- CanUpdateMachine: patches applied to current, compared with desired --------------------------------------

/** Runtime SDK Patch: patchType JSONPatch (RFC 6902) or JSONMergePatch (RFC 7386), patch as base64 of the JSON bytes. */
export interface HookPatch {
  patchType?: string;
  patch?: string;
}

/** The three objects of a CanUpdateMachine request side (Machine, InfrastructureMachine, BootstrapConfig). */
export interface MachineObjects {
  machine: KubeObject & { spec?: unknown };
  infrastructureMachine: KubeObject & { spec?: unknown };
  bootstrapConfig?: KubeObject & { spec?: unknown };
}

/** A CanUpdateMachine answer's patches. */
export interface CanUpdateMachinePatches {
  machinePatch?: HookPatch;
  infrastructureMachinePatch?: HookPatch;
  bootstrapConfigPatch?: HookPatch;
  /** Cluster API v1.15+: false when the change does not disrupt the machine (absent: true). */
  affectsAvailability?: boolean;
}

/** A patch the simulator could not apply (bad base64/JSON, unknown type, a path that does not exist). */
export class ApplyPatchError extends Error {
  override readonly name = 'ApplyPatchError';
}

const unescapePointer = (s: string): string => s.replace(/~1/g, '/').replace(/~0/g, '~');

function applyJsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new ApplyPatchError('a JSONPatch must be an array of operations');
  let root = structuredClone(doc);
  for (const op of ops as Json[]) {
    const kind = op['op'];
    const path = typeof op['path'] === 'string' ? op['path'] : '';
    if (kind === 'test') {
      if (JSON.stringify(getAt(root, path)) !== JSON.stringify(op['value'])) throw new ApplyPatchError(`test failed at ${path}`);
      continue;
    }
    if (kind !== 'add' && kind !== 'replace' && kind !== 'remove') throw new ApplyPatchError(`unsupported JSONPatch op ${String(kind)}`);
    if (path === '') {
      if (kind === 'remove') throw new ApplyPatchError('cannot remove the document root');
      root = structuredClone(op['value']);
      continue;
    }
    const parts = path.split('/').slice(1).map(unescapePointer);
    const last = parts.pop() ?? '';
    const parent = walk(root, parts, path);
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new ApplyPatchError(`bad array index at ${path}`);
      if (kind === 'add') parent.splice(i, 0, structuredClone(op['value']));
      else if (i >= parent.length) throw new ApplyPatchError(`no element at ${path}`);
      else if (kind === 'replace') parent[i] = structuredClone(op['value']);
      else parent.splice(i, 1);
    } else if (isObject(parent)) {
      if (kind !== 'add' && !(last in parent)) throw new ApplyPatchError(`no value at ${path}`);
      if (kind === 'remove') delete parent[last];
      else parent[last] = structuredClone(op['value']);
    } else throw new ApplyPatchError(`no parent at ${path}`);
  }
  return root;
}

function walk(doc: unknown, parts: readonly string[], path: string): unknown {
  let cur: unknown = doc;
  for (const p of parts) {
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isObject(cur)) cur = cur[p];
    else throw new ApplyPatchError(`no value at ${path}`);
  }
  return cur;
}

const getAt = (doc: unknown, path: string): unknown => (path === '' ? doc : walk(doc, path.split('/').slice(1).map(unescapePointer), path));

function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Json = isObject(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/** Applies a Runtime SDK patch to an object (upstream internal/util/patch ApplyPatchToObject semantics); an undefined patch changes nothing. */
export function applyHookPatch<T>(obj: T, patch: HookPatch | undefined): T {
  if (!patch || (!patch.patchType && !patch.patch)) return structuredClone(obj);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(patch.patch ?? '', 'base64').toString('utf8'));
  } catch (err) {
    throw new ApplyPatchError(`patch is not base64-encoded JSON: ${(err as Error).message}`);
  }
  if (patch.patchType === 'JSONPatch') return applyJsonPatch(obj, body) as T;
  if (patch.patchType === 'JSONMergePatch') return applyMergePatch(obj, body) as T;
  throw new ApplyPatchError(`unknown patchType ${patch.patchType ?? '(none)'}`);
}

const canonical = (v: unknown): string =>
  JSON.stringify(v ?? {}, (_k, x: unknown) =>
    isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x,
  );

/** The result of judging a CanUpdateMachine answer. */
export interface Coverage {
  /** Every change between current and desired is covered: the machine can be updated in place. */
  covered: boolean;
  /** Which objects still differ after the patches. */
  reasons: string[];
}

/**
 * inplace_canupdatemachine.go applyPatchesToRequest + matchesMachine: the answer's patches are applied to the
 * request's current objects; the machine can be updated in place only when the patched current specs equal the
 * desired specs (Machine, InfraMachine, BootstrapConfig; metadata and status never count).
 */
export function judgeCanUpdateMachine(current: MachineObjects, desired: MachineObjects, answer: CanUpdateMachinePatches): Coverage {
  const reasons: string[] = [];
  const m = applyHookPatch(current.machine, answer.machinePatch);
  const infra = applyHookPatch(current.infrastructureMachine, answer.infrastructureMachinePatch);
  const boot = current.bootstrapConfig ? applyHookPatch(current.bootstrapConfig, answer.bootstrapConfigPatch) : undefined;
  if (canonical(machineSpecForDiff(m.spec)) !== canonical(machineSpecForDiff(desired.machine.spec)))
    reasons.push('Machine cannot be updated in-place');
  if (canonical(infra.spec) !== canonical(desired.infrastructureMachine.spec))
    reasons.push(`${desired.infrastructureMachine.kind ?? 'InfraMachine'} cannot be updated in-place`);
  if (canonical(boot?.spec) !== canonical(desired.bootstrapConfig?.spec))
    reasons.push(`${desired.bootstrapConfig?.kind ?? 'BootstrapConfig'} cannot be updated in-place`);
  return { covered: reasons.length === 0, reasons };
}

/** cleanupMachine / cleanupUnstructured: what a hook request carries of an object (type, name, namespace, labels, annotations, spec). */
export function forHookRequest<T extends KubeObject & { spec?: unknown }>(
  o: T,
  apiVersion: string,
  kind: string,
): KubeObject & { spec: unknown } {
  return {
    apiVersion,
    kind,
    metadata: {
      ...(o.metadata.name !== undefined ? { name: o.metadata.name } : {}),
      ...(o.metadata.namespace !== undefined ? { namespace: o.metadata.namespace } : {}),
      ...(o.metadata.labels ? { labels: o.metadata.labels } : {}),
      ...(o.metadata.annotations ? { annotations: o.metadata.annotations } : {}),
    },
    spec: structuredClone(o.spec ?? {}),
  };
}

// --- Machine controller: UpdateMachine ------------------------------------------------------------------------

/** What the machine controller knows about a machine and its clones for the in-place step. */
export interface MachineInPlaceView {
  machine: Machine;
  infraMachine: KubeObject | undefined;
  /** The bootstrap config, when the machine has one. */
  bootstrapConfig: KubeObject | undefined;
  hasBootstrapRef: boolean;
}

/** What the machine controller does for in-place updates this reconcile. */
export type MachineInPlaceStep =
  | { kind: 'none' }
  /** The pending hook was left without the annotation: clean up (completeInPlaceUpdate). */
  | { kind: 'complete' }
  /** Not ready for the hook yet (provisioning, clones not yet annotated by the trigger). */
  | { kind: 'wait' }
  | { kind: 'failed'; message: string }
  | { kind: 'callUpdateMachine' };

const has = (o: KubeObject | undefined, a: string): boolean => o?.metadata.annotations?.[a] !== undefined;

/**
 * machine_controller_inplace_update.go reconcileInPlaceUpdate: with the gate on, a machine carrying the
 * update-in-progress annotation and a pending UpdateMachine hook gets the hook called once it is provisioned (node
 * ref set) and its InfraMachine and bootstrap config carry the annotation too (the KCP/MachineSet trigger wrote them);
 * a pending hook without the annotation is an orphan to clean up.
 */
export function decideMachineInPlace(enabled: boolean, v: MachineInPlaceView): MachineInPlaceStep {
  if (!enabled) return { kind: 'none' };
  const inProgress = has(v.machine, UPDATE_IN_PROGRESS_ANNOTATION);
  const pending = isHookPending(UPDATE_MACHINE_HOOK, v.machine);
  if (!inProgress) return pending ? { kind: 'complete' } : { kind: 'none' };
  if (!pending) return { kind: 'none' };
  if (!v.machine.status?.nodeRef?.name) return { kind: 'wait' };
  if (!v.infraMachine) return { kind: 'failed', message: 'In-place update not possible: InfraMachine not found' };
  if (!has(v.infraMachine, UPDATE_IN_PROGRESS_ANNOTATION)) return { kind: 'wait' };
  if (v.hasBootstrapRef && v.bootstrapConfig && !has(v.bootstrapConfig, UPDATE_IN_PROGRESS_ANNOTATION)) return { kind: 'wait' };
  return { kind: 'callUpdateMachine' };
}

/** An UpdateMachine answer (CommonRetryResponse): status Success/Failure, message, retryAfterSeconds. */
export interface UpdateMachineAnswer {
  status?: string;
  message?: string;
  retryAfterSeconds?: number;
}

/** What an UpdateMachine answer means: keep polling, done, or failed. */
export type UpdateMachineOutcome =
  { kind: 'inProgress'; retryAfterMs: number; message: string } | { kind: 'done' } | { kind: 'failed'; message: string };

/**
 * callUpdateMachineHook: Success with retryAfterSeconds > 0 is "in progress, ask again then", Success with 0 is
 * done (annotations removed, hook marked done), anything else fails the call (upstream: an error, retried with
 * backoff, the machine's Updating condition says the hook failed).
 */
export function updateMachineOutcome(answer: UpdateMachineAnswer): UpdateMachineOutcome {
  if (answer.status !== 'Success') return { kind: 'failed', message: answer.message ?? '' };
  const after = answer.retryAfterSeconds ?? 0;
  if (after > 0) return { kind: 'inProgress', retryAfterMs: after * 1000, message: answer.message ?? '' };
  return { kind: 'done' };
}

/** A condition as the simulator writes it (setCondition input). */
export type ConditionInput = Pick<Condition, 'type' | 'status' | 'reason'> & { message?: string };

/**
 * The machine's Updating condition (machine_controller_status.go setUpdatingCondition): True with the in-place
 * reason while the update-in-progress annotation is on the machine, False NotUpdating otherwise.
 */
export function updatingCondition(inProgress: boolean, reason?: string, message?: string): ConditionInput {
  if (!inProgress) return { type: UPDATING_CONDITION, status: 'False', reason: UpdatingReason.notUpdating };
  return {
    type: UPDATING_CONDITION,
    status: 'True',
    reason: reason ?? UpdatingReason.inPlaceUpdating,
    ...(message !== undefined ? { message } : { message: 'In-place update in progress' }),
  };
}

/** The message of an in-progress answer as upstream shows it on the Updating condition. */
export const inProgressMessage = (extensionMessage: string): string =>
  extensionMessage ? `In-place update in progress: ${extensionMessage}` : 'In-place update in progress';

// --- MachineDeployment / MachineSet: moving machines to the new MachineSet, updated in place -------------------

/** CAPI: on an old MachineSet, the MachineSet its surplus machines move to instead of being deleted (MachineSetMoveMachinesToMachineSetAnnotation). */
export const MOVE_MACHINES_TO_ANNOTATION = 'in-place-updates.internal.cluster.x-k8s.io/move-machines-to-machineset';
/** CAPI: on the new MachineSet, the MachineSets it accepts machines from, comma-separated (MachineSetReceiveMachinesFromMachineSetsAnnotation). */
export const RECEIVE_MACHINES_FROM_ANNOTATION = 'in-place-updates.internal.cluster.x-k8s.io/receive-machines-from-machinesets';
/** CAPI: on the new MachineSet, the moved machines its MachineDeployment counted in spec.replicas (AcknowledgedMoveAnnotation). */
export const ACKNOWLEDGED_MOVE_ANNOTATION = 'in-place-updates.internal.cluster.x-k8s.io/acknowledged-move';
/** CAPI: on a moved machine until its MachineDeployment acknowledged the move (PendingAcknowledgeMoveAnnotation). */
export const PENDING_ACKNOWLEDGE_MOVE_ANNOTATION = 'in-place-updates.internal.cluster.x-k8s.io/pending-acknowledge-move';

const splitNames = (v: string | undefined): string[] => (v ? v.split(',').filter((s) => s !== '') : []);
const joinNames = (names: Iterable<string>): string => [...new Set(names)].sort().join(',');

/**
 * inplace.CleanupMachineSpecForDiff: what never makes an in-place update (clusterName, bootstrap, infrastructureRef,
 * providerID; the fields changed in place without a rollout: minReadySeconds, readinessGates, the deletion timeouts,
 * taints) is dropped before comparing machine specs.
 */
export function machineSpecForDiff(spec: unknown): Json {
  const s = isObject(spec) ? structuredClone(spec) : {};
  for (const k of ['clusterName', 'bootstrap', 'infrastructureRef', 'providerID', 'minReadySeconds', 'readinessGates', 'taints'])
    delete s[k];
  if (isObject(s['deletion'])) {
    const d = s['deletion'];
    for (const k of ['nodeDrainTimeoutSeconds', 'nodeVolumeDetachTimeoutSeconds', 'nodeDeletionTimeoutSeconds']) delete d[k];
    if (Object.keys(d).length === 0) delete s['deletion'];
  }
  return s;
}

/** The three objects of a CanUpdateMachineSet request side. */
export interface MachineSetObjects {
  machineSet: KubeObject & { spec?: unknown };
  infrastructureMachineTemplate: KubeObject & { spec?: unknown };
  bootstrapConfigTemplate?: KubeObject & { spec?: unknown };
}

/** A CanUpdateMachineSet answer's patches. */
export interface CanUpdateMachineSetPatches {
  machineSetPatch?: HookPatch;
  infrastructureMachineTemplatePatch?: HookPatch;
  bootstrapConfigTemplatePatch?: HookPatch;
  /** Cluster API v1.15+: false when the change does not disrupt the machines (absent: true). */
  affectsAvailability?: boolean;
}

/**
 * Whether a CanUpdate answer's change may disrupt the machines, as the simulated Cluster API reads it: before v1.15
 * the field does not exist (always true); from v1.15 only an explicit false counts (capi#14160: unset means true).
 */
export const answerAffectsAvailability = (answer: { affectsAvailability?: unknown }, readsAffectsAvailability: boolean): boolean =>
  !readsAffectsAvailability || answer.affectsAvailability !== false;

const templateSpec = (o: { spec?: unknown } | undefined): unknown => {
  const t = isObject(o?.spec) ? o.spec['template'] : undefined;
  return isObject(t) ? t['spec'] : undefined;
};

/**
 * machinedeployment_canupdatemachineset.go matchesMachineSet: the answer's patches applied to the old MachineSet and
 * its templates; in place only when the MachineSet's spec.template.spec (cleaned as machineSpecForDiff) and the
 * templates' spec.template.spec then equal the new ones.
 */
export function judgeCanUpdateMachineSet(
  current: MachineSetObjects,
  desired: MachineSetObjects,
  answer: CanUpdateMachineSetPatches,
): Coverage {
  const reasons: string[] = [];
  const ms = applyHookPatch(current.machineSet, answer.machineSetPatch);
  const infra = applyHookPatch(current.infrastructureMachineTemplate, answer.infrastructureMachineTemplatePatch);
  const boot = current.bootstrapConfigTemplate
    ? applyHookPatch(current.bootstrapConfigTemplate, answer.bootstrapConfigTemplatePatch)
    : undefined;
  if (canonical(machineSpecForDiff(templateSpec(ms))) !== canonical(machineSpecForDiff(templateSpec(desired.machineSet))))
    reasons.push('MachineSet cannot be updated in-place');
  if (canonical(templateSpec(infra)) !== canonical(templateSpec(desired.infrastructureMachineTemplate)))
    reasons.push(`${desired.infrastructureMachineTemplate.kind ?? 'InfraMachineTemplate'} cannot be updated in-place`);
  if (canonical(templateSpec(boot)) !== canonical(templateSpec(desired.bootstrapConfigTemplate)))
    reasons.push(`${desired.bootstrapConfigTemplate?.kind ?? 'BootstrapConfigTemplate'} cannot be updated in-place`);
  return { covered: reasons.length === 0, reasons };
}

/** An old MachineSet as the in-place intent sees it. */
export interface OldSetView {
  name: string;
  /** Live machines of the set (status.replicas upstream). */
  machines: number;
}

/**
 * rollingupdate.go reconcileInPlaceUpdateIntent, first half: while the new MachineSet has fewer replicas than the
 * deployment, every old MachineSet that still has machines is a candidate to ask CanUpdateMachineSet about (gate on,
 * exactly one handler; rollout.after eligibility not modelled).
 */
export function inPlaceCandidates(
  enabled: boolean,
  handlers: number,
  newReplicas: number,
  mdReplicas: number,
  olds: readonly OldSetView[],
): string[] {
  if (!enabled || handlers !== 1 || newReplicas >= mdReplicas) return [];
  return olds.filter((o) => o.machines > 0).map((o) => o.name);
}

/** The annotations the planner writes once the extension covers old → new: the old sets move to the new one, which receives from them. */
export function moveAnnotations(
  newSet: string,
  covered: readonly string[],
): { old: Record<string, Record<string, string>>; receive: string | undefined } {
  return {
    old: Object.fromEntries(covered.map((n) => [n, { [MOVE_MACHINES_TO_ANNOTATION]: newSet }])),
    receive: covered.length > 0 ? joinNames(covered) : undefined,
  };
}

/**
 * rollingupdate.go reconcileReplicasPendingAcknowledgeMove: machines moved into the new MachineSet and not yet
 * acknowledged add to its spec.replicas; the acknowledged list becomes the machines still pending acknowledgement.
 */
export function acknowledgeMoves(
  acknowledgedAnnotation: string | undefined,
  machinesOfNewSet: readonly KubeObject[],
): { scaleUp: number; acknowledged: string | undefined } {
  const before = new Set(splitNames(acknowledgedAnnotation));
  const pending = machinesOfNewSet.filter((m) => has(m, PENDING_ACKNOWLEDGE_MOVE_ANNOTATION)).map((m) => m.metadata.name ?? '');
  const scaleUp = pending.filter((n) => !before.has(n)).length;
  return { scaleUp, acknowledged: pending.length > 0 ? joinNames(pending) : acknowledgedAnnotation };
}

/** What a MachineSet does with its moved machines and its surplus. */
export interface MoveDecision {
  /** Moved machines not yet acknowledged: not counted against spec.replicas. */
  notAcknowledged: string[];
  /** Moved and acknowledged machines: drop pending-acknowledge-move and trigger their in-place update. */
  trigger: string[];
}

/**
 * machineset_controller.go: in a MachineSet receiving machines, a moved machine still pending acknowledgement is left
 * out of the replica count; once its name is in acknowledged-move the set triggers its in-place update.
 */
export function decideMoves(ms: KubeObject, machines: readonly KubeObject[]): MoveDecision {
  const receiving = splitNames(ms.metadata.annotations?.[RECEIVE_MACHINES_FROM_ANNOTATION]).length > 0;
  const acked = new Set(splitNames(ms.metadata.annotations?.[ACKNOWLEDGED_MOVE_ANNOTATION]));
  const out: MoveDecision = { notAcknowledged: [], trigger: [] };
  for (const m of machines) {
    if (!has(m, PENDING_ACKNOWLEDGE_MOVE_ANNOTATION)) continue;
    const name = m.metadata.name ?? '';
    if (acked.has(name)) out.trigger.push(name);
    else if (receiving) out.notAcknowledged.push(name);
  }
  return out;
}
