// The plan controller's owner effects (docs/design.md §11): pause, align, release or keep paused the owners of each target,
// as decided by the pure functions of owners.ts. Called from the act step before any machine starts, so that an owner
// is paused before its first machine changes; every write is guarded by the resourceVersion it was decided on.
import type { InPlaceUpdatePlan, KubeObject, ResourceType, TargetKind } from '../api/index.js';
import { KubeadmControlPlanes, Labels, MachineDeployments, MachineSets, isTerminal } from '../api/index.js';
import { setCondition } from '../runtime/pure/conditions.js';
import { isAlreadyExists, isNotFound, KubeApiError, RetryableError } from '../runtime/pure/errors.js';
import { forEachLimit } from '../runtime/parallel.js';
import { snapshot as patchSnapshot } from '../runtime/patch.js';
import type { KubeClient, Logger } from '../runtime/pure/types.js';
import { isDeleting, machineInfraRef, mdReplicas, mdRollingUpdate, nameOf } from '../api/capi/index.js';
import type { PlanDecision } from './decide.js';
import { machinesOfTarget, planAge } from './decide.js';
import { resolveFenceposts } from '../api/capi/index.js';
import type { OwnerOutcome, OwnerStep, OwnerValue } from './owners.js';
import {
  CLONED_BY_PLAN,
  OWNERS_ALIGNED,
  OwnerEventReasons,
  OwnerReasons,
  cloneName,
  isPausedObject,
  mixedMessage,
  ownerCarries,
  ownerStep,
  ownerValues,
  ownersCondition,
  planAlignment,
  refAt,
  refPaths,
  withClonedFrom,
  withPause,
  withoutPause,
} from './owners.js';
import type { PlanSnapshot } from './scope.js';
import { targetsOf } from './validate.js';

/** What the owner effects need from the controller. */
export interface OwnerDeps {
  client: KubeClient;
  fieldManager: string;
  /** Writes of one kind in flight at once (InfraMachine annotations). */
  writesInFlight: number;
}

interface TargetOwner {
  kind: TargetKind;
  name: string;
  res: ResourceType;
  owner: KubeObject;
  values: OwnerValue[];
  step: OwnerStep;
}

const label = (t: { kind: TargetKind; name: string }): string =>
  `${t.kind === 'ControlPlane' ? 'KubeadmControlPlane' : 'MachineDeployment'} ${t.name}`;

/** True when the decision leaves OwnersAligned=False AlignFailed: the reconcile re-checks it periodically (e.g. after an RBAC fix). */
export const ownersNeedRecheck = (d: PlanDecision): boolean =>
  d.status.conditions?.some((c) => c.type === OWNERS_ALIGNED && c.reason === OwnerReasons.alignFailed) ?? false;

/** The owner step of every target of the plan (pure given the snapshot and the decision). */
export function ownerSteps(snap: PlanSnapshot, d: PlanDecision): TargetOwner[] {
  const plan = snap.plan as InPlaceUpdatePlan;
  // A terminal plan settled its owners when it got there — unless that failed (AlignFailed): it retries while no newer
  // plan of the cluster exists (a newer plan owns the owners' values from then on).
  const alignFailed = plan.status?.conditions?.some((c) => c.type === OWNERS_ALIGNED && c.reason === OwnerReasons.alignFailed) ?? false;
  const newer = snap.plans.some((o) => o.metadata?.name !== plan.metadata?.name && planAge(plan, o) < 0);
  const planTerminal = isTerminal(plan.status?.updateStatus) && !(alignFailed && !newer);
  const out: TargetOwner[] = [];
  for (const t of targetsOf(plan)) {
    const name = t.target?.name;
    if (typeof name !== 'string') continue;
    let owner: KubeObject | undefined;
    let res: ResourceType;
    let surge = false;
    if (t.kind === 'ControlPlane') {
      // The mapping is KubeadmControlPlane's; another control-plane kind is left alone (documented).
      const cp = snap.controlPlane?.object;
      owner = cp && cp.kind === KubeadmControlPlanes.kind ? cp : undefined;
      res = KubeadmControlPlanes;
    } else {
      owner = snap.machineDeployments.find((o) => nameOf(o) === name);
      res = MachineDeployments;
      if (owner) {
        const ru = mdRollingUpdate(owner);
        const fp = resolveFenceposts(ru.maxSurge, ru.maxUnavailable, mdReplicas(owner));
        surge = fp.ok && fp.value.unavailable === 0;
      }
    }
    if (!owner) continue;
    const row = d.status.targets?.find((r) => r.kind === t.kind && r.name === name);
    if (!row) continue;
    // Machines counted as already at target start the target as well: its owner is aligned like after a rollout.
    const started =
      snap.machineUpdates.some((mu) => mu.spec.target.kind === t.kind && mu.spec.target.name === name) ||
      d.create.some((c) => c.target.kind === t.kind && c.target.name === name) ||
      (row.skipped ?? 0) > 0;
    const step = ownerStep({ row, started, planTerminal, surge, ownerExists: true });
    out.push({
      kind: t.kind,
      name,
      res,
      owner,
      values: ownerValues(t.kind, Array.isArray(t.target.updaters) ? t.target.updaters : []),
      step,
    });
  }
  return out;
}

/**
 * Carries out the owner steps (before any machine of this reconcile starts), then sets the OwnersAligned condition on
 * the decision's status and adds its events. Throws (retryable) when a write fails: the next reconcile re-derives.
 */
export async function actOwners(deps: OwnerDeps, snap: PlanSnapshot, d: PlanDecision, log: Logger): Promise<void> {
  const planName = snap.plan.metadata?.name ?? '';
  const prev = snap.plan.status?.conditions?.find((c) => c.type === OWNERS_ALIGNED);
  const outcomes: OwnerOutcome[] = [];
  for (const t of ownerSteps(snap, d)) {
    const o: OwnerOutcome = { owner: label(t), op: t.step.op };
    switch (t.step.op) {
      case 'none':
        break;
      case 'hold': {
        const next = withPause(t.owner, planName);
        if (next) {
          await patchSnapshot(t.owner).apply(deps.client, t.res, next, { fieldManager: deps.fieldManager });
          d.events.push({
            type: 'Normal',
            reason: OwnerEventReasons.paused,
            message: `paused ${label(t)} while its machines are updated in place (cluster.x-k8s.io/paused; lifted when the target is done)`,
          });
          log.info({ owner: label(t) }, 'paused owner');
        }
        break;
      }
      case 'release': {
        const next = withoutPause(t.owner, planName);
        if (next) {
          await patchSnapshot(t.owner).apply(deps.client, t.res, next, { fieldManager: deps.fieldManager });
          d.events.push({
            type: 'Normal',
            reason: OwnerEventReasons.released,
            message: `unpaused ${label(t)}: no machine of the target committed anything, its spec is unchanged`,
          });
        }
        break;
      }
      case 'mixed': {
        o.updated = t.step.updated;
        o.machines = t.step.machines;
        const next = withPause(t.owner, planName);
        if (next && !isPausedObject(t.owner))
          await patchSnapshot(t.owner).apply(deps.client, t.res, next, { fieldManager: deps.fieldManager });
        const msg = mixedMessage(o);
        if (prev?.reason !== OwnerReasons.mixedMachines || !(prev.message ?? '').includes(msg))
          d.events.push({ type: 'Warning', reason: OwnerEventReasons.mixedMachines, message: msg });
        break;
      }
      case 'align': {
        const problems = await alignOrExplain(deps, snap, t, planName, d, log);
        if (problems.length > 0) o.problems = problems;
        break;
      }
    }
    outcomes.push(o);
  }
  const c = ownersCondition(outcomes);
  if (c)
    d.status.conditions = setCondition(
      d.status.conditions,
      { type: c.type, status: c.status, reason: c.reason, message: c.message ?? '' },
      snap.plan.metadata?.generation,
      new Date(snap.now),
    );
}

// A kind that is not served or not granted cannot be fixed by retrying: it is reported on OwnersAligned (AlignFailed)
// and re-tried on the next reconcile, instead of failing every reconcile with the same error.
async function alignOrExplain(
  deps: OwnerDeps,
  snap: PlanSnapshot,
  t: TargetOwner,
  planName: string,
  d: PlanDecision,
  log: Logger,
): Promise<string[]> {
  try {
    return await align(deps, snap, t, planName, d, log);
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 403)
      return [`forbidden: ${err.message} (grant the plan controller this kind: deployment configuration, see docs/operations.md)`];
    if (err instanceof KubeApiError && err.code === 404 && err.operation.startsWith('resolve')) return [`not served: ${err.message}`];
    throw err;
  }
}

async function getRef(
  client: KubeClient,
  ns: string,
  ref: { apiGroup: string; kind: string; name: string } | undefined,
): Promise<{ res: ResourceType; obj: KubeObject | undefined } | undefined> {
  if (!ref) return undefined;
  const res = await client.resolve(ref.apiGroup, ref.kind);
  return { res, obj: await client.get(res, ns, ref.name) };
}

// Clones first, then the MachineSets owning the machines, then the InfraMachines' cloned-from, then the owner's spec with
// its pause lifted: while the owner is paused CAPI acts on none of the intermediate states.
async function align(
  deps: OwnerDeps,
  snap: PlanSnapshot,
  t: TargetOwner,
  planName: string,
  d: PlanDecision,
  log: Logger,
): Promise<string[]> {
  const { client } = deps;
  const ns = t.owner.metadata.namespace ?? '';
  const paths = refPaths(t.kind);
  const needsInfra = t.values.some((v) => v.slot === 'infraTemplate');
  const needsBoot = t.values.some((v) => v.slot === 'bootstrapTemplate');
  const infra = needsInfra ? await getRef(client, ns, refAt(t.owner, paths.infra)) : undefined;
  const boot = needsBoot && paths.bootstrap ? await getRef(client, ns, refAt(t.owner, paths.bootstrap)) : undefined;
  // Level check first: an owner that carries the values and points at this plan's clones is done (two reads at most).
  const isOurs = (o: KubeObject | undefined): boolean => o?.metadata.annotations?.[CLONED_BY_PLAN] === planName;
  if (ownerCarries(t.owner, planName, t.values) && (!needsInfra || isOurs(infra?.obj)) && (!needsBoot || isOurs(boot?.obj))) return [];

  let owner = t.owner;
  // An owner that was not paused during the target (a surging MachineDeployment) is paused for the writes below.
  const paused = withPause(owner, planName);
  if (paused && !isPausedObject(owner))
    owner = await patchSnapshot(owner).apply(client, t.res, paused, { fieldManager: deps.fieldManager });

  const clones: KubeObject[] = [];
  for (const src of [infra, boot]) {
    if (!src?.obj || isOurs(src.obj)) continue;
    const c = await client.get(src.res, ns, cloneName(planName, nameOf(src.obj)));
    if (c) clones.push(c);
  }
  const machines = machinesOfTarget(t.kind, t.name, snap.plan.spec.clusterName, snap.machines).filter((m) => !isDeleting(m));
  const machineSets: KubeObject[] = [];
  if (t.kind === 'MachineDeployment') {
    for (const set of new Set(machines.map((m) => m.metadata.labels?.[Labels.setName]).filter((s): s is string => !!s))) {
      const ms = await client.get(MachineSets, ns, set);
      if (ms) machineSets.push(ms);
    }
  }
  const a = planAlignment({
    planName,
    kind: t.kind,
    owner,
    cluster: snap.cluster,
    values: t.values,
    clones,
    machineSets,
    ...(infra?.obj ? { infraTemplate: infra.obj } : {}),
    ...(boot?.obj ? { bootstrapTemplate: boot.obj } : {}),
  });
  if (a.problems.length > 0) return a.problems;

  for (const c of a.create) {
    const res = infra && c.kind === infra.res.kind ? infra.res : boot!.res;
    try {
      await client.create(res, c, { fieldManager: deps.fieldManager });
    } catch (err) {
      if (!isAlreadyExists(err)) throw new RetryableError(`create ${c.kind} ${ns}/${nameOf(c)}`, err);
    }
  }
  for (const ms of a.machineSets) await patchSnapshot(ms.before).apply(client, MachineSets, ms.after, { fieldManager: deps.fieldManager });
  if (a.infraClonedFrom) {
    const to = a.infraClonedFrom;
    await forEachLimit(machines, deps.writesInFlight, async (m) => {
      const got = await getRef(client, ns, machineInfraRef(m));
      if (!got?.obj) return;
      const next = withClonedFrom(got.obj, to);
      if (!next) return;
      try {
        await patchSnapshot(got.obj).apply(client, got.res, next, { fieldManager: deps.fieldManager });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    });
  }
  if (a.owner) await patchSnapshot(a.owner.before).apply(client, t.res, a.owner.after, { fieldManager: deps.fieldManager });
  const what = [
    ...a.create.map((c) => `created ${c.kind} ${nameOf(c)}`),
    ...a.machineSets.map((m) => `MachineSet ${nameOf(m.before)}`),
    ...(a.owner ? [label(t)] : []),
  ];
  d.events.push({
    type: 'Normal',
    reason: OwnerEventReasons.aligned,
    message: `${label(t)} carries the plan's values (${what.join(', ') || 'nothing to write'}); CAPI sees its updated machines as up to date`,
  });
  log.info({ owner: label(t), writes: what }, 'aligned owner');
  return [];
}
