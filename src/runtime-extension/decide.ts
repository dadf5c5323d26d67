// The runtime extension's decisions (docs/hooks.md), pure: which changes between current and desired the registered
// InPlaceUpdaters cover and the patches that say so (CanUpdateMachine / CanUpdateMachineSet), the MachineUpdate an
// UpdateMachine request stands for, and the hook answer read from that MachineUpdate's status.
import { createHash } from 'node:crypto';
import {
  API_VERSION,
  Annotations,
  GROUP,
  Labels,
  MachineUpdates,
  REQUESTED_BY_RUNTIME_EXTENSION,
  UpdatePhase,
  UpdateStatus,
  orderedUpdaters,
  type InPlaceUpdater,
  type KubeObject,
  type MachineUpdate,
  type MachineUpdateSpec,
  type TargetKind,
} from '../api/index.js';
import { shortenName, toLabelValue } from '../contract/index.js';
import { encodePointer, getPointer, parsePointer } from '../runtime/pure/jsonpointer.js';
import {
  HOOKS_API_VERSION,
  encodePatchBytes,
  type CanUpdateMachineRequest,
  type CanUpdateMachineResponse,
  type CanUpdateMachineSetRequest,
  type CanUpdateMachineSetResponse,
  type HookPatch,
  type UpdateMachineResponse,
} from './hooks.js';
import { callerReadsAffectsAvailability } from './validate.js';

/** The object an updater's cover selects, as in responsibilities. */
export type SelectResource = InPlaceUpdater['spec']['covers'][number]['selectResource'];
/** One RFC 6902 operation of a CanUpdate patch. */
export type JsonPatchOp = { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

const MAX_NAME = 253;
/** retryAfterSeconds answered while a MachineUpdate runs (upstream polls on it; the plan flow watches instead). */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;
/** retryAfterSeconds answered while waiting on something quick (a replaced MachineUpdate's deletion). */
export const SHORT_RETRY_AFTER_SECONDS = 1;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const canonical = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canonical).join(',')}]`
    : isObject(v)
      ? `{${Object.keys(v)
          .sort()
          .filter((k) => v[k] !== undefined)
          .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
          .join(',')}}`
      : JSON.stringify(v);
const deepEqual = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);

/**
 * JSON pointers (under `root`) of the leaves that differ between `current` and `desired`: an added or removed key is
 * one leaf, an array that differs is one leaf (replaced whole), objects present on both sides are descended.
 */
export function changedLeaves(current: unknown, desired: unknown, root: string): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, tokens: string[]): void => {
    if (isObject(a) && isObject(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) walk(a[k], b[k], [...tokens, k]);
      return;
    }
    if (!deepEqual(a, b)) out.push(encodePointer(tokens));
  };
  walk(getPointer(current, root), getPointer(desired, root), parsePointer(root));
  return out;
}

/** True when pointer `prefix` is `path` or one of its ancestors (token-wise, so /spec/a does not cover /spec/ab). */
export function covers(prefix: string, path: string): boolean {
  const p = parsePointer(prefix);
  const q = parsePointer(path);
  return p.length <= q.length && p.every((t, i) => t === q[i]);
}

/** Where an object's updatable spec sits: /spec for a Machine-level object, /spec/template/spec for a template. */
export type SpecRoot = '/spec' | '/spec/template/spec';

/** A cover path (written against /spec of the machine-level object) as a path into an object rooted at `root`. */
export const coverPathIn = (coverPath: string, root: SpecRoot): string => (root === '/spec' ? coverPath : `/spec/template${coverPath}`);

/** The updaters whose covers include `path` of the object `select` (rooted at `root`), by name. */
export function coveringUpdaters(updaters: readonly InPlaceUpdater[], select: SelectResource, path: string, root: SpecRoot): string[] {
  return updaters
    .filter((u) => u.spec.covers.some((c) => c.selectResource === select && covers(coverPathIn(c.path, root), path)))
    .map((u) => u.metadata?.name ?? '');
}

/** The coverage of one object pair: its changed leaves, split into covered (with the updaters) and not covered. */
export interface ObjectCoverage {
  covered: { path: string; updaters: string[] }[];
  uncovered: string[];
  /** JSON patch bringing current to desired on exactly the covered paths (undefined when nothing is covered). */
  patch?: JsonPatchOp[];
}

/** Decides the coverage of one object: changed leaves under `root`, matched against the updaters' covers. */
export function coverObject(
  current: unknown,
  desired: unknown,
  select: SelectResource,
  root: SpecRoot,
  updaters: readonly InPlaceUpdater[],
): ObjectCoverage {
  const result: ObjectCoverage = { covered: [], uncovered: [] };
  const ops: JsonPatchOp[] = [];
  for (const path of changedLeaves(current, desired, root)) {
    const by = coveringUpdaters(updaters, select, path, root);
    if (by.length === 0) {
      result.uncovered.push(path);
      continue;
    }
    result.covered.push({ path, updaters: by });
    const want = getPointer(desired, path);
    if (want === undefined) ops.push({ op: 'remove', path });
    else ops.push({ op: getPointer(current, path) === undefined ? 'add' : 'replace', path, value: want });
  }
  if (ops.length > 0) result.patch = ops;
  return result;
}

const toHookPatch = (c: ObjectCoverage): HookPatch | undefined =>
  c.patch ? { patchType: 'JSONPatch', patch: encodePatchBytes(c.patch) } : undefined;

/** A summary of what is covered and what is left to a rollout, for the response message and the log. */
function coverageMessage(parts: { kind: string; c: ObjectCoverage }[]): string {
  const covered = parts.flatMap((p) => p.c.covered.map((x) => `${p.kind} ${x.path} (${x.updaters.join(', ')})`));
  const uncovered = parts.flatMap((p) => p.c.uncovered.map((x) => `${p.kind} ${x}`));
  const a = covered.length ? `covered in place: ${covered.join('; ')}` : 'no change covered in place';
  return uncovered.length ? `${a}; not covered: ${uncovered.join('; ')}` : a;
}

/**
 * Whether the covered changes may disrupt the machine: false only when every updater covering one of them declares
 * `affectsAvailability: false` (unset is true, the safe default); undefined when nothing is covered. Only changed
 * fields count: an updater whose field is already at its value also runs on UpdateMachine, and finishes at once
 * without acting (contract rule C7).
 */
export function coverageAffectsAvailability(parts: readonly ObjectCoverage[], updaters: readonly InPlaceUpdater[]): boolean | undefined {
  const names = new Set(parts.flatMap((p) => p.covered.flatMap((c) => c.updaters)));
  if (names.size === 0) return undefined;
  const declared = new Map(updaters.map((u) => [u.metadata?.name ?? '', u.spec.affectsAvailability]));
  return ![...names].every((n) => declared.get(n) === false);
}

/** The `affectsAvailability` to answer: only to a caller that reads it (v1.15+, by its settings), when something is covered. */
function availabilityField(
  settings: Record<string, string> | undefined,
  parts: readonly ObjectCoverage[],
  updaters: readonly InPlaceUpdater[],
): { affectsAvailability?: boolean } {
  if (!callerReadsAffectsAvailability(settings)) return {};
  const a = coverageAffectsAvailability(parts, updaters);
  return a === undefined ? {} : { affectsAvailability: a };
}

/** The CanUpdateMachine answer: patches for the covered changes of the Machine, InfraMachine and BootstrapConfig. */
export function decideCanUpdateMachine(req: CanUpdateMachineRequest, updaters: readonly InPlaceUpdater[]): CanUpdateMachineResponse {
  const machine = coverObject(req.current.machine, req.desired.machine, 'Machine', '/spec', updaters);
  const infra = coverObject(req.current.infrastructureMachine, req.desired.infrastructureMachine, 'InfraMachine', '/spec', updaters);
  const bootstrap = coverObject(req.current.bootstrapConfig, req.desired.bootstrapConfig, 'BootstrapConfig', '/spec', updaters);
  const res: CanUpdateMachineResponse = {
    apiVersion: HOOKS_API_VERSION,
    kind: 'CanUpdateMachineResponse',
    status: 'Success',
    message: coverageMessage([
      { kind: 'Machine', c: machine },
      { kind: 'InfraMachine', c: infra },
      { kind: 'BootstrapConfig', c: bootstrap },
    ]),
  };
  const mp = toHookPatch(machine);
  const ip = toHookPatch(infra);
  const bp = toHookPatch(bootstrap);
  if (mp) res.machinePatch = mp;
  if (ip) res.infrastructureMachinePatch = ip;
  if (bp) res.bootstrapConfigPatch = bp;
  return { ...res, ...availabilityField(req.settings, [machine, infra, bootstrap], updaters) };
}

/** The CanUpdateMachineSet answer: the same decision on spec.template.spec of the MachineSet and the templates. */
export function decideCanUpdateMachineSet(
  req: CanUpdateMachineSetRequest,
  updaters: readonly InPlaceUpdater[],
): CanUpdateMachineSetResponse {
  const root = '/spec/template/spec';
  const ms = coverObject(req.current.machineSet, req.desired.machineSet, 'Machine', root, updaters);
  const infra = coverObject(
    req.current.infrastructureMachineTemplate,
    req.desired.infrastructureMachineTemplate,
    'InfraMachine',
    root,
    updaters,
  );
  const bootstrap = coverObject(
    req.current.bootstrapConfigTemplate,
    req.desired.bootstrapConfigTemplate,
    'BootstrapConfig',
    root,
    updaters,
  );
  const res: CanUpdateMachineSetResponse = {
    apiVersion: HOOKS_API_VERSION,
    kind: 'CanUpdateMachineSetResponse',
    status: 'Success',
    message: coverageMessage([
      { kind: 'MachineSet', c: ms },
      { kind: 'InfraMachineTemplate', c: infra },
      { kind: 'BootstrapConfigTemplate', c: bootstrap },
    ]),
  };
  const mp = toHookPatch(ms);
  const ip = toHookPatch(infra);
  const bp = toHookPatch(bootstrap);
  if (mp) res.machineSetPatch = mp;
  if (ip) res.infrastructureMachineTemplatePatch = ip;
  if (bp) res.bootstrapConfigTemplatePatch = bp;
  return { ...res, ...availabilityField(req.settings, [ms, infra, bootstrap], updaters) };
}

/** The desired objects of an UpdateMachine request, by what responsibilities select. */
export type DesiredObjects = Partial<Record<SelectResource, Record<string, unknown>>>;

/** A fingerprint of the desired specs: one update of a machine is one desired state, whatever the number of calls. */
export function desiredHash(desired: DesiredObjects): string {
  const specs = { m: desired.Machine?.spec, i: desired.InfraMachine?.spec, b: desired.BootstrapConfig?.spec };
  return createHash('sha256').update(canonical(specs)).digest('hex').slice(0, 10);
}

/** The name of the MachineUpdate standing for the update of `machine` to the desired state hashed as `hash`. */
export const machineUpdateName = (machine: string, hash: string): string =>
  shortenName(`${machine}-${hash}`, MAX_NAME, `${machine}/${hash}`);

/** The updaters (in run order) with their responsibilities: every covered path present in the desired objects. */
export function updatersFor(updaters: readonly InPlaceUpdater[], desired: DesiredObjects): MachineUpdateSpec['updaters'] {
  const out: MachineUpdateSpec['updaters'] = [];
  for (const u of updaters) {
    const responsibilities = u.spec.covers.flatMap((c) => {
      const value = getPointer(desired[c.selectResource], c.path);
      return value === undefined ? [] : [{ selectResource: c.selectResource, path: c.path, value }];
    });
    if (responsibilities.length === 0) continue;
    out.push({
      name: u.metadata?.name ?? '',
      sequence: u.spec.sequence,
      ...(u.spec.affectsAvailability !== undefined ? { affectsAvailability: u.spec.affectsAvailability } : {}),
      ...(u.spec.updaterUpdateTemplateRef ? { updaterUpdateTemplateRef: u.spec.updaterUpdateTemplateRef } : {}),
      ...(u.spec.parameters ? { parameters: u.spec.parameters } : {}),
      responsibilities: responsibilities.slice(0, 64),
    });
  }
  return orderedUpdaters(out).slice(0, 32);
}

/** The target a machine belongs to, from CAPI's labels (a machine of a bare MachineSet counts as its set's). */
export function targetOf(machine: KubeObject): { kind: TargetKind; name: string } {
  const l = machine.metadata.labels ?? {};
  const cp = l[Labels.controlPlaneName];
  if (cp) return { kind: 'ControlPlane', name: cp };
  return { kind: 'MachineDeployment', name: l[Labels.deploymentName] ?? l[Labels.setName] ?? machine.metadata.name ?? '' };
}

/** The MachineUpdate to create for the first UpdateMachine call of an update: owned by the Machine, labelled as requested. */
export function buildMachineUpdate(
  machine: KubeObject,
  name: string,
  hash: string,
  updaters: MachineUpdateSpec['updaters'],
): MachineUpdate {
  const machineName = machine.metadata.name ?? '';
  const cluster = String(
    (machine as { spec?: { clusterName?: unknown } }).spec?.clusterName ?? machine.metadata.labels?.[Labels.clusterName] ?? '',
  );
  const target = targetOf(machine);
  return {
    apiVersion: API_VERSION,
    kind: MachineUpdates.kind,
    metadata: {
      name,
      namespace: machine.metadata.namespace ?? '',
      labels: {
        [Labels.clusterName]: toLabelValue(cluster),
        [Labels.machineName]: toLabelValue(machineName),
        [Labels.targetName]: toLabelValue(target.name),
        [Labels.requestedBy]: REQUESTED_BY_RUNTIME_EXTENSION,
      },
      annotations: { [DESIRED_HASH_ANNOTATION]: hash },
      ownerReferences: [
        {
          apiVersion: machine.apiVersion ?? 'cluster.x-k8s.io/v1beta2',
          kind: 'Machine',
          name: machineName,
          uid: machine.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      // The MachineUpdate's own name stands for the plan: task names (C9) then differ between successive updates.
      planName: name,
      clusterName: cluster,
      target,
      machineRef: { name: machineName },
      updatePhase: UpdatePhase.updating,
      updaters,
    },
  };
}

/** On a MachineUpdate the runtime extension created: the desired-state fingerprint it stands for. */
export const DESIRED_HASH_ANNOTATION = `${GROUP}/desired-hash`;

/** What an UpdateMachine call does before answering. */
export type UpdateStep =
  | { kind: 'answer' }
  | { kind: 'create'; mu: MachineUpdate }
  | { kind: 'delete'; namespace: string; name: string; uid?: string }
  | { kind: 'wait' };

/** The decision on one UpdateMachine call: what to do, and the answer. */
export interface UpdateDecision {
  step: UpdateStep;
  response: UpdateMachineResponse;
}

/** What the UpdateMachine decision reads: the request's desired objects, the Machine, the updaters and existing MachineUpdates. */
export interface UpdateInputs {
  desired: DesiredObjects;
  /** The Machine as the API server has it (its uid owns the MachineUpdate), undefined when missing. */
  machine: KubeObject | undefined;
  /** Registered InPlaceUpdaters of the machine's namespace. */
  updaters: readonly InPlaceUpdater[];
  /** The runtime extension's MachineUpdates of this machine. */
  updates: readonly MachineUpdate[];
  retryAfterSeconds: number;
}

const answer = (status: 'Success' | 'Failure', message: string, retryAfterSeconds: number): UpdateMachineResponse => ({
  apiVersion: HOOKS_API_VERSION,
  kind: 'UpdateMachineResponse',
  status,
  message,
  retryAfterSeconds,
});

const created = (mu: MachineUpdate): string => mu.metadata?.creationTimestamp ?? '';

/** The hook answer from a MachineUpdate's status: InProgress (retry), Done, or Failure with the updater's message. */
export function answerFromStatus(mu: MachineUpdate, retryAfterSeconds: number): UpdateMachineResponse {
  const s = mu.status?.updateStatus;
  const msg = mu.status?.message;
  const name = mu.metadata?.name ?? '';
  if (s === UpdateStatus.updated) return answer('Success', `updated in place (MachineUpdate ${name})`, 0);
  if (s === UpdateStatus.failed) return answer('Failure', msg || `MachineUpdate ${name} failed`, 0);
  if (s === UpdateStatus.aborted) return answer('Failure', msg || `MachineUpdate ${name} was aborted`, 0);
  const who = mu.status?.currentUpdater ? `updater ${mu.status.currentUpdater} running` : 'waiting for the machine task controller';
  return answer('Success', `MachineUpdate ${name}: ${msg || who}`, retryAfterSeconds);
}

const isTerminalStatus = (mu: MachineUpdate): boolean =>
  [UpdateStatus.updated, UpdateStatus.failed, UpdateStatus.aborted].includes(mu.status?.updateStatus as 'updated');

/**
 * Decides one UpdateMachine call. Idempotent: the update is identified by the machine and the desired specs, so a
 * repeated call finds its MachineUpdate and answers from its status; the first call creates it. A MachineUpdate of
 * the same desired state left from an earlier update (A → B → A) is replaced; a running one of another state is
 * waited for.
 */
export function decideUpdateMachine(i: UpdateInputs): UpdateDecision {
  const m = i.desired.Machine;
  const machineName = String((m?.metadata as { name?: unknown } | undefined)?.name ?? '');
  if (!machineName) return { step: { kind: 'answer' }, response: answer('Failure', 'the request has no desired Machine', 0) };
  if (!i.machine) return { step: { kind: 'answer' }, response: answer('Failure', `Machine ${machineName} not found`, 0) };
  if (!capiUpdateInProgress(i.machine)) {
    return {
      step: { kind: 'answer' },
      response: answer(
        'Failure',
        `Machine ${machineName} is not in an in-place update (no ${Annotations.capiUpdateInProgress} annotation)`,
        0,
      ),
    };
  }
  const hash = desiredHash(i.desired);
  const name = machineUpdateName(machineName, hash);
  const mine = i.updates.find((u) => u.metadata?.name === name);
  const newer = mine ? i.updates.filter((u) => u !== mine && created(u) > created(mine)) : [];
  if (mine && newer.length === 0) return { step: { kind: 'answer' }, response: answerFromStatus(mine, i.retryAfterSeconds) };
  if (mine) {
    return {
      step: {
        kind: 'delete',
        namespace: i.machine.metadata.namespace ?? '',
        name,
        ...(mine.metadata?.uid ? { uid: mine.metadata.uid } : {}),
      },
      response: answer('Success', `replacing MachineUpdate ${name} of an earlier update to the same state`, SHORT_RETRY_AFTER_SECONDS),
    };
  }
  const running = i.updates.find((u) => !isTerminalStatus(u));
  if (running) {
    const rn = running.metadata?.name ?? '';
    return {
      step: { kind: 'wait' },
      response: answer('Success', `waiting for MachineUpdate ${rn} of an earlier update to finish`, i.retryAfterSeconds),
    };
  }
  const updaters = updatersFor(i.updaters, i.desired);
  if (updaters.length === 0) {
    return {
      step: { kind: 'answer' },
      response: answer(
        'Failure',
        `no InPlaceUpdater in namespace ${i.machine.metadata.namespace ?? ''} covers a field of the desired objects`,
        0,
      ),
    };
  }
  const mu = buildMachineUpdate(i.machine, name, hash, updaters);
  return {
    step: { kind: 'create', mu },
    response: answer('Success', `MachineUpdate ${name} created: ${updaters.map((u) => u.name).join(', ')}`, i.retryAfterSeconds),
  };
}

/** The objects of the machine as the API server has them, by what responsibilities select. */
export type LiveObjects = Partial<Record<SelectResource, KubeObject>>;

/**
 * The responsibilities whose value differs from the cluster's object. Cluster API writes the desired objects before
 * it calls UpdateMachine, so a request whose desired values are not the cluster's is not Cluster API's: the hook
 * endpoint takes no client credentials, and values from the body alone would let any caller choose what updaters
 * do and what the commit writes.
 */
export function desiredMismatches(mu: MachineUpdate, live: LiveObjects): string[] {
  const out: string[] = [];
  for (const u of mu.spec.updaters) {
    for (const r of u.responsibilities) {
      const obj = live[r.selectResource];
      if (!obj) out.push(`${r.selectResource} not found`);
      else if (!deepEqual(getPointer(obj, r.path), r.value)) out.push(`${r.selectResource} ${obj.metadata.name ?? ''} ${r.path}`);
    }
  }
  return [...new Set(out)];
}

/** The Failure answered for a request whose desired values are not the cluster's. */
export const mismatchAnswer = (machine: string, mismatches: readonly string[]): UpdateMachineResponse =>
  answer(
    'Failure',
    `not updating Machine ${machine}: the request's desired values differ from the cluster's objects (${mismatches.join('; ')}); Cluster API writes them before it calls UpdateMachine`,
    0,
  );

/** True when the Machine is in an in-place update Cluster API started (its update-in-progress annotation). */
export const capiUpdateInProgress = (machine: KubeObject | undefined): boolean =>
  machine?.metadata.annotations?.[Annotations.capiUpdateInProgress] !== undefined;
