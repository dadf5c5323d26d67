// The runtime extension's handlers: each hook call is one snapshot → decide → act-once pass. `reconcile` is the
// UpdateMachine pass (idempotent: it makes the machine's MachineUpdate exist and answers from its status); the
// CanUpdate hooks only read. The HTTPS surface is server.ts.
import { MachineUpdates, type InPlaceUpdater, type KubeObject, type MachineUpdate } from '../api/index.js';
import { isAlreadyExists, isNotFound, type EventRecorder, type KubeClient, type Logger } from '../runtime/index.js';
import {
  decideCanUpdateMachine,
  decideCanUpdateMachineSet,
  decideUpdateMachine,
  desiredMismatches,
  mismatchAnswer,
  type DesiredObjects,
  type UpdateDecision,
} from './decide.js';
import type {
  CanUpdateMachineRequest,
  CanUpdateMachineResponse,
  CanUpdateMachineSetRequest,
  CanUpdateMachineSetResponse,
  UpdateMachineRequest,
  UpdateMachineResponse,
} from './hooks.js';
import { clusterLabels, liveMachine, liveObjects, updatersIn, updatesOfMachine, type Stores } from './scope.js';
import { clusterNameOf, machineSetSubject, machineSubject, needsClusterLabels, updatersServing, type ScopeSubject } from './validate.js';
import { Reasons, updateEvent } from './status.js';

/** The controller name (Events' source, logs, the Deployment `inplace-runtime-extension`). */
export const CONTROLLER_NAME = 'runtime-extension';

/** What the handlers use. */
export interface ExtensionDeps {
  client: KubeClient;
  stores: Stores;
  events: EventRecorder;
  log: Logger;
  retryAfterSeconds: number;
}

/** Creating the MachineUpdate of an in-place update failed (retryable: CAPI calls again). */
export class CreateMachineUpdateError extends Error {
  constructor(name: string, cause: unknown) {
    super(`create MachineUpdate ${name}: ${(cause as Error).message}`, { cause });
    this.name = 'CreateMachineUpdateError';
  }
}

/** Deleting a MachineUpdate left from an earlier update to the same state failed (retryable). */
export class DeleteMachineUpdateError extends Error {
  constructor(name: string, cause: unknown) {
    super(`delete MachineUpdate ${name}: ${(cause as Error).message}`, { cause });
    this.name = 'DeleteMachineUpdateError';
  }
}

const nsOf = (o: Record<string, unknown> | undefined): string | undefined =>
  (o?.metadata as { namespace?: string } | undefined)?.namespace || undefined;

/**
 * The updaters of the namespace that serve the request's machine (their scope: cluster, provider kinds); the others
 * are as if not registered, so a change only they cover is "not covered" and Cluster API rolls it out as without us.
 */
async function servingUpdaters(
  deps: ExtensionDeps,
  ns: string | undefined,
  clusterOf: unknown,
  subject: Omit<ScopeSubject, 'clusterLabels'>,
): Promise<InPlaceUpdater[]> {
  const all = updatersIn(deps.stores, ns);
  const labels = ns && needsClusterLabels(all) ? await clusterLabels(deps.client, ns, clusterNameOf(clusterOf)) : undefined;
  return updatersServing(all, { ...subject, clusterLabels: labels });
}

/** CanUpdateMachine: the covered changes of one machine, as patches (read only). */
export async function handleCanUpdateMachine(deps: ExtensionDeps, req: CanUpdateMachineRequest): Promise<CanUpdateMachineResponse> {
  const ns = nsOf(req.desired.machine) ?? nsOf(req.current.machine);
  const updaters = await servingUpdaters(deps, ns, req.desired.machine ?? req.current.machine, machineSubject(req.desired));
  return decideCanUpdateMachine(req, updaters);
}

/** CanUpdateMachineSet: the covered changes of a MachineSet's machine template, as patches (read only). */
export async function handleCanUpdateMachineSet(
  deps: ExtensionDeps,
  req: CanUpdateMachineSetRequest,
): Promise<CanUpdateMachineSetResponse> {
  const ns = nsOf(req.desired.machineSet) ?? nsOf(req.current.machineSet);
  const updaters = await servingUpdaters(deps, ns, req.desired.machineSet ?? req.current.machineSet, machineSetSubject(req.desired));
  return decideCanUpdateMachineSet(req, updaters);
}

/** The desired objects of an UpdateMachine request by what responsibilities select. */
const desiredOf = (req: UpdateMachineRequest): DesiredObjects => ({
  ...(req.desired.machine ? { Machine: req.desired.machine } : {}),
  ...(req.desired.infrastructureMachine && Object.keys(req.desired.infrastructureMachine).length > 0
    ? { InfraMachine: req.desired.infrastructureMachine }
    : {}),
  ...(req.desired.bootstrapConfig && Object.keys(req.desired.bootstrapConfig).length > 0
    ? { BootstrapConfig: req.desired.bootstrapConfig }
    : {}),
});

/**
 * UpdateMachine, level-based: snapshot (the live Machine, the cached updaters and MachineUpdates) → decide → at most
 * one write (create or replace the MachineUpdate) → the answer. A create that finds the object already there (the
 * cache lagged) answers from the existing one.
 */
export async function reconcile(deps: ExtensionDeps, req: UpdateMachineRequest): Promise<UpdateMachineResponse> {
  const desired = desiredOf(req);
  const meta = (req.desired.machine?.metadata ?? {}) as { name?: string; namespace?: string };
  const ns = meta.namespace ?? '';
  const machine = meta.name && ns ? await liveMachine(deps.client, ns, meta.name) : undefined;
  const decision = decideUpdateMachine({
    desired,
    machine,
    updaters: machine ? await servingUpdaters(deps, ns, req.desired.machine, machineSubject(req.desired)) : [],
    updates: machine ? updatesOfMachine(deps.stores, ns, meta.name ?? '') : [],
    retryAfterSeconds: deps.retryAfterSeconds,
  });
  if (decision.step.kind === 'create' && machine) {
    const mismatches = desiredMismatches(decision.step.mu, await liveObjects(deps.client, machine));
    if (mismatches.length > 0) {
      const refused = mismatchAnswer(meta.name ?? '', mismatches);
      deps.events.event(machine, 'Warning', Reasons.inPlaceUpdateFailed, refused.message ?? '');
      return refused;
    }
  }
  const response = await reconcileStep(deps, decision);
  const ev = updateEvent(decision.step, response);
  if (ev && machine) deps.events.event(machine, ev.type, ev.reason, ev.message);
  deps.log.debug(
    { machine: meta.name, step: decision.step.kind, status: response.status, retryAfterSeconds: response.retryAfterSeconds },
    'UpdateMachine',
  );
  return response;
}

/** Does the decided write and returns the answer (the decided one, or the existing MachineUpdate's after a lost race). */
export async function reconcileStep(deps: ExtensionDeps, d: UpdateDecision): Promise<UpdateMachineResponse> {
  const step = d.step;
  if (step.kind === 'create') {
    const ns = step.mu.metadata?.namespace ?? '';
    const name = step.mu.metadata?.name ?? '';
    try {
      await deps.client.create<MachineUpdate & KubeObject>(MachineUpdates, step.mu as MachineUpdate & KubeObject);
    } catch (err) {
      if (!isAlreadyExists(err)) throw new CreateMachineUpdateError(name, err);
      const existing = await deps.client.get<MachineUpdate & KubeObject>(MachineUpdates, ns, name);
      if (existing) return { ...d.response, message: `MachineUpdate ${name} exists: waiting for it` };
    }
    return d.response;
  }
  if (step.kind === 'delete') {
    try {
      await deps.client.delete(MachineUpdates, step.namespace, step.name, step.uid ? { preconditions: { uid: step.uid } } : {});
    } catch (err) {
      if (!isNotFound(err)) throw new DeleteMachineUpdateError(step.name, err);
    }
  }
  return d.response;
}
