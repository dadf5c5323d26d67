// The plan controller's owner effects (docs/design.md §11): pause, align, release or keep paused the owners of each target,
// as decided by the pure functions of owners.ts. Called from the act step before any machine starts, so that an owner
// is paused before its first machine changes; every write is guarded by the resourceVersion it was decided on.
import type { InPlaceUpdatePlan, KubeObject, ResourceType, TargetKind } from '../../api/index.js';
import { KubeadmControlPlanes, Labels, MachineDeployments, MachineSets, isTerminal } from '../../api/index.js';
import { isAlreadyExists, isNotFound, KubeApiError, RetryableError } from '../../runtime/pure/errors.js';
import { forEachLimit } from '../../runtime/parallel.js';
import { snapshot as patchSnapshot } from '../../runtime/patch.js';
import type { KubeClient, Logger } from '../../runtime/pure/types.js';
import { isDeleting, machineInfraRef, nameOf } from '../../api/capi/index.js';
import type { PlanDecision } from '../decide.js';
import { machinesByTarget, planAge, targetKey } from '../../rules/machines.js';
import { mdConcurrency } from '../../rules/concurrency.js';
import type { Alignment, OwnerOutcome, OwnerStep, OwnerValue } from '../../rules/owners.js';
import {
  CLONED_FROM_NAME,
  OWNERS_ALIGNED,
  OwnerEventReasons,
  OwnerReasons,
  alignmentUnfinished,
  carrierName,
  isPausedObject,
  mixedMessage,
  originalTemplateName,
  ownerCarries,
  ownerStep,
  ownerValues,
  planAlignment,
  refAt,
  refPaths,
  withClonedFrom,
  withPause,
  withoutPause,
} from '../../rules/owners.js';
import type { PlanSnapshot } from '../scope.js';
import { targetsOf } from '../../rules/validate.js';

/** A template or InfraMachine as the informer of its kind holds it. */
export interface CachedRef {
  res: ResourceType;
  /** The object, when the cache has it. */
  obj?: KubeObject;
  /** Another object of the same kind and namespace by name (clones, the templates a clone came from). */
  byName(name: string): KubeObject | undefined;
}

/**
 * Reads of owner alignment, all from informer caches (never a live GET per object: under a flaky API server a
 * reconcile that needs a hundred reads to all succeed never completes). A kind that is not served or not readable throws
 * a KubeApiError (404 resolve / 403), reported as AlignFailed.
 */
export interface OwnerReads {
  /** The object a {apiGroup, kind, name} reference names, from its kind's informer (started on first use). */
  ref(ns: string, ref: { apiGroup: string; kind: string; name: string }): Promise<CachedRef>;
  /** A MachineSet from the informer. */
  machineSet(ns: string, name: string): KubeObject | undefined;
}

/** What the owner effects need from the controller. */
export interface OwnerDeps {
  client: KubeClient;
  fieldManager: string;
  /** Writes of one kind in flight at once (InfraMachine annotations). */
  writesInFlight: number;
  /** Most InfraMachine annotations written in one reconcile (the rest in the next: bounded requests per reconcile). */
  maxInfraWrites: number;
  /** Bounds the InfraMachine writes in flight across the targets of one reconcile (made by actOwners when unset). */
  limit?: <T>(fn: () => Promise<T>) => Promise<T>;
  reads: OwnerReads;
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
  // A terminal plan settled its owners when it got there — unless that did not finish (AlignFailed, or Aligning after a
  // failed request): it goes on while no newer plan of the cluster exists (a newer plan owns the owners' values then).
  const unfinished = alignmentUnfinished(plan);
  const newer = snap.plans.some((o) => o.metadata?.name !== plan.metadata?.name && planAge(plan, o) < 0);
  const planTerminal = isTerminal(plan.status?.updateStatus) && !(unfinished && !newer);
  const out: TargetOwner[] = [];
  const targets = targetsOf(plan);
  // Indexed once: a find per target over 300 MachineDeployments and 300 rows was O(targets²) per reconcile.
  const mdByName = new Map<string, KubeObject>();
  for (const o of snap.machineDeployments) if (!mdByName.has(nameOf(o))) mdByName.set(nameOf(o), o);
  const rows = new Map<string, NonNullable<PlanDecision['status']['targets']>[number]>();
  for (const r of d.status.targets ?? []) if (!rows.has(targetKey(r.kind, r.name))) rows.set(targetKey(r.kind, r.name), r);
  const started = startedTargets(snap, d, targets);
  for (const t of targets) {
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
      owner = mdByName.get(name);
      res = MachineDeployments;
      if (owner) {
        // The decision's rule on the decision's input (the replicas before this plan's surge): re-taken from the surged
        // count it could answer "not surging" and pause the MachineDeployment the plan just surged (issue 42, item 11).
        const c = mdConcurrency({ md: owner, planName: plan.metadata?.name ?? '', updaters: t.target?.updaters });
        surge = c.ok && c.surge;
      }
    }
    if (!owner) continue;
    const row = rows.get(targetKey(t.kind, name));
    if (!row) continue;
    // Machines counted as already at target start the target as well: its owner is aligned like after a rollout.
    const isStarted = started(t.kind, name) || (row.skipped ?? 0) > 0;
    const step = ownerStep({ row, started: isStarted, planTerminal, surge, ownerExists: true });
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
 * Whether a target of the plan has a MachineUpdate or a create in this decision. One pass over the MachineUpdates
 * without building a key string per update (at 30,003 machines that was most of ownerSteps' time), stopping once every
 * target of the plan was seen.
 */
function startedTargets(
  snap: PlanSnapshot,
  d: PlanDecision,
  targets: readonly { kind: TargetKind; target?: { name?: unknown } }[],
): (kind: TargetKind, name: string) => boolean {
  // The plan's targets not seen yet, by kind.
  const unseen = new Map<string, Set<string>>();
  let left = 0;
  for (const t of targets) {
    const name = t.target?.name;
    if (typeof name !== 'string') continue;
    let names = unseen.get(t.kind);
    if (!names) unseen.set(t.kind, (names = new Set()));
    if (!names.has(name)) left++;
    names.add(name);
  }
  const see = (kind: string, name: string): void => {
    if (unseen.get(kind)?.delete(name)) left--;
  };
  for (const c of d.create) see(c.target.kind, c.target.name);
  for (const mu of snap.machineUpdates) {
    if (left === 0) break;
    see(mu.spec.target.kind, mu.spec.target.name);
  }
  return (kind, name) => !(unseen.get(kind)?.has(name) ?? false);
}

/** What every owner step of one reconcile reads: the plan's dependencies, snapshot, per-target index, name and log. */
interface OwnerScope {
  deps: OwnerDeps;
  snap: PlanSnapshot;
  view: TargetView;
  planName: string;
  log: Logger;
}

/** Writes an owner's pause change (`next`, undefined when there is none) and records its Event; true when it wrote. */
async function writePause(
  deps: OwnerDeps,
  t: TargetOwner,
  next: KubeObject | undefined,
  d: PlanDecision,
  event: { reason: string; message: string },
): Promise<boolean> {
  if (!next) return false;
  await patchSnapshot(t.owner).apply(deps.client, t.res, next, { fieldManager: deps.fieldManager });
  d.events.push({ type: 'Normal', ...event });
  return true;
}

/**
 * Carries out the owner steps (before any machine of this reconcile starts) and returns one outcome per target. Never
 * throws on a failed request: that target's outcome is `pending` (its machines do not start when it was not paused yet,
 * its alignment continues in the next reconcile from what the objects show), and the others go on.
 */
export async function actOwners(deps: OwnerDeps, snap: PlanSnapshot, d: PlanDecision, log: Logger): Promise<OwnerOutcome[]> {
  const planName = snap.plan.metadata?.name ?? '';
  const prev = snap.plan.status?.conditions?.find((c) => c.type === OWNERS_ALIGNED);
  const outcomes: OwnerOutcome[] = [];
  const steps = ownerSteps(snap, d);
  if (steps.every((t) => t.step.op === 'none')) return outcomes;
  // Indexed at most once per reconcile: every target reads its own machines and updates (O(machines), not O(targets x machines)).
  const view = targetView(snap, d);
  // Targets are independent (each has its own owner, templates, MachineSets, InfraMachines): their steps run side by
  // side, so pausing 200 owners at the start or aligning them at the end costs a few round trips, not 200 in a row (the
  // plan's reconciles are serial: meanwhile no machine of any target starts). Each target's events are kept apart and
  // appended in target order, as the sequential loop did. InfraMachine writes share one bound across targets.
  const perTarget: { o: OwnerOutcome; events: PlanDecision['events'] }[] = new Array(steps.length);
  const scope: OwnerScope = { deps: { ...deps, limit: deps.limit ?? limiter(deps.writesInFlight) }, snap, view, planName, log };
  await forEachLimit(steps, deps.writesInFlight, async (t, i) => {
    const events: PlanDecision['events'] = [];
    perTarget[i] = { o: await ownerStepOf(scope, { ...d, events }, t, prev), events };
  });
  for (const { o, events } of perTarget) {
    outcomes.push(o);
    d.events.push(...events);
  }
  return outcomes;
}

// One target's owner step; never throws (a failed request leaves the outcome pending). `d` is the decision with this
// target's own events list.
async function ownerStepOf(
  s: OwnerScope,
  d: PlanDecision,
  t: TargetOwner,
  prev: { reason?: string; message?: string } | undefined,
): Promise<OwnerOutcome> {
  const { deps, planName, log } = s;
  const o: OwnerOutcome = { owner: label(t), op: t.step.op, kind: t.kind, name: t.name };
  try {
    switch (t.step.op) {
      case 'none':
        break;
      case 'hold': {
        const paused = await writePause(deps, t, withPause(t.owner, planName), d, {
          reason: OwnerEventReasons.paused,
          message: `paused ${label(t)} while its machines are updated in place (cluster.x-k8s.io/paused; lifted when the target is done)`,
        });
        if (paused) log.info({ owner: label(t) }, 'paused owner');
        await annotateAhead(s, t);
        break;
      }
      case 'release': {
        await writePause(deps, t, withoutPause(t.owner, planName), d, {
          reason: OwnerEventReasons.released,
          message: `unpaused ${label(t)}: no machine of the target committed anything, its spec is unchanged`,
        });
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
        const r = await alignOrExplain(s, t, d);
        if (r.problems.length > 0) o.problems = r.problems;
        if (r.pending) o.pending = r.pending;
        break;
      }
    }
  } catch (err) {
    // Transient (5xx, 429, a conflict with a newer version, a network error): what landed is visible in the objects.
    o.pending = `${(err as Error).message.slice(0, 200)} (retrying)`;
    log.info({ owner: label(t), err: (err as Error).message }, 'owner step not finished; continues in the next reconcile');
  }
  return o;
}

/** A counting semaphore: `run` waits until fewer than `n` calls are in flight. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= n) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** Targets whose machines must not start in this reconcile: their owner should be paused first and that write did not land. */
export const blockedTargets = (outcomes: readonly OwnerOutcome[]): Set<string> =>
  new Set(outcomes.filter((o) => o.op === 'hold' && o.pending !== undefined).map((o) => `${o.kind}/${o.name}`));

// A kind that is not served or not granted cannot be fixed by retrying: it is reported on OwnersAligned (AlignFailed)
// and re-tried on the next reconcile, instead of failing every reconcile with the same error.
async function alignOrExplain(s: OwnerScope, t: TargetOwner, d: PlanDecision): Promise<{ problems: string[]; pending?: string }> {
  try {
    return await align(s, t, d);
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 403)
      return {
        problems: [`forbidden: ${err.message} (grant the plan controller this kind: deployment configuration, see docs/operations.md)`],
      };
    if (err instanceof KubeApiError && err.code === 404 && err.operation.startsWith('resolve'))
      return { problems: [`not served: ${err.message}`] };
    throw err;
  }
}

/** A reconcile's machines (not deleting) and this plan's finished machines, per target key. */
interface TargetView {
  /** The target's machines that are not deleting. */
  machines(key: string): readonly KubeObject[];
  /** The names of the target's machines this plan finished updating. */
  updated(kind: TargetKind, name: string): ReadonlySet<string> | undefined;
}

// A group's machines that are not deleting, by the group's array. Only frozen groups are kept (the decision memo's,
// decide/machines.ts): their machines are the store's frozen objects, so a machine that changed (deleting now) comes in
// a new group array and is filtered afresh, while unchanged groups cost nothing. Filtering every target's group on
// every reconcile was 6 % of the plan controller's CPU at 30,003 machines (one finished target is aligned, a level
// check, on every reconcile of the rest of the plan).
const liveByGroup = new WeakMap<readonly KubeObject[], readonly KubeObject[]>();

function liveMachines(group: readonly KubeObject[]): readonly KubeObject[] {
  if (!Object.isFrozen(group)) return group.filter((m) => !isDeleting(m));
  let live = liveByGroup.get(group);
  if (!live) liveByGroup.set(group, (live = Object.freeze(group.filter((m) => !isDeleting(m)))));
  return live;
}

/**
 * Built on first use, per target: most reconciles of a running plan only hold their owners and read neither, and an
 * aligned target reads only its own machines (at 10,003 machines building both every reconcile was 4 % of the plan
 * controller's CPU).
 */
function targetView(snap: PlanSnapshot, d: PlanDecision): TargetView {
  let groups: ReadonlyMap<string, readonly KubeObject[]> | undefined;
  let updated: Map<string, Map<string, Set<string>>> | undefined;
  return {
    machines(key: string): readonly KubeObject[] {
      groups ??= d.machinesByTarget ?? machinesByTarget(snap.plan.spec.clusterName, snap.machines);
      const group = groups.get(key);
      return group ? liveMachines(group) : [];
    },
    updated(kind: TargetKind, name: string): ReadonlySet<string> | undefined {
      if (!updated) {
        // By kind, then name: no key string per MachineUpdate.
        updated = new Map();
        for (const mu of snap.machineUpdates) {
          if (mu.status?.updateStatus !== 'updated') continue;
          let byName = updated.get(mu.spec.target.kind);
          if (!byName) updated.set(mu.spec.target.kind, (byName = new Map()));
          let set = byName.get(mu.spec.target.name);
          if (!set) byName.set(mu.spec.target.name, (set = new Set()));
          set.add(mu.spec.machineRef.name);
        }
      }
      return updated.get(kind)?.get(name);
    },
  };
}

/** Reads of a namespace's objects by reference, each kind through the informer once (see kindReader). */
interface KindReader {
  /** The object, from the cache of a kind read before (no await); undefined when its kind was not read yet. */
  peek(ref: { apiGroup: string; kind: string; name: string }): CachedRef | undefined;
  /** The object, reading its kind through the informer when it was not read yet. */
  read(ref: { apiGroup: string; kind: string; name: string }): Promise<CachedRef>;
}

/**
 * Each kind read through the informer once (its kind resolved, its informer started and synced) and its other objects
 * from that read's cache by name: a target's InfraMachines were one resolve, one sync wait and one await each, per
 * reconcile (for every running target, each of its finished machines).
 */
function kindReader(deps: OwnerDeps, ns: string): KindReader {
  const kinds = new Map<string, CachedRef>();
  const peek = (ref: { apiGroup: string; kind: string; name: string }): CachedRef | undefined => {
    const known = kinds.get(`${ref.apiGroup}/${ref.kind}`);
    if (!known) return undefined;
    const obj = known.byName(ref.name);
    return { res: known.res, ...(obj ? { obj } : {}), byName: known.byName };
  };
  return {
    peek,
    async read(ref) {
      const known = peek(ref);
      if (known) return known;
      const got = await deps.reads.ref(ns, ref);
      kinds.set(`${ref.apiGroup}/${ref.kind}`, got);
      return got;
    },
  };
}

interface Prepared {
  a: Alignment;
  infra?: CachedRef;
  boot?: CachedRef;
  /** InfraMachines still to move to the clone (from the cache; each write is guarded by the resourceVersion read). */
  infraWrites: { res: ResourceType; obj: KubeObject; next: KubeObject }[];
}

// What aligning the target's owners writes, from the informer caches (no request); `only` limits the InfraMachines to
// those machines.
async function prepare(s: OwnerScope, t: TargetOwner, only?: ReadonlySet<string>): Promise<Prepared | { problems: string[] }> {
  const { deps, snap, view, planName } = s;
  const ns = t.owner.metadata.namespace ?? '';
  const paths = refPaths(t.kind);
  const needsInfra = t.values.some((v) => v.slot === 'infraTemplate');
  const needsBoot = t.values.some((v) => v.slot === 'bootstrapTemplate');
  const infraRef = needsInfra ? refAt(t.owner, paths.infra) : undefined;
  const bootRef = needsBoot && paths.bootstrap ? refAt(t.owner, paths.bootstrap) : undefined;
  const infra = infraRef ? await deps.reads.ref(ns, infraRef) : undefined;
  const boot = bootRef ? await deps.reads.ref(ns, bootRef) : undefined;
  const clones: KubeObject[] = [];
  const originals: { infraOriginal?: string; bootstrapOriginal?: string } = {};
  if (infra?.obj) originals.infraOriginal = originalTemplateName(infra.obj, infra.byName);
  if (boot?.obj) originals.bootstrapOriginal = originalTemplateName(boot.obj, boot.byName);
  const machines = view.machines(targetKey(t.kind, t.name));
  const machineSets = machineSetsOf(deps, t, machines);
  const input = {
    planName,
    kind: t.kind,
    owner: t.owner,
    cluster: snap.cluster,
    values: t.values,
    clones,
    machineSets,
    ...originals,
    ...(infra?.obj ? { infraTemplate: infra.obj } : {}),
    ...(boot?.obj ? { bootstrapTemplate: boot.obj } : {}),
  };
  // The clone's name is content-addressed: look it up in the cache once the alignment named it.
  let a = planAlignment(input);
  if (a.create.length > 0) {
    for (const c of a.create) {
      const src = infra && c.kind === infra.res.kind ? infra : boot;
      const existing = src?.byName(nameOf(c));
      if (existing) clones.push(existing);
    }
    if (clones.length > 0) a = planAlignment(input);
  }
  if (a.problems.length > 0) return { problems: a.problems };
  const infraWrites: Prepared['infraWrites'] = [];
  if (a.infraClonedFrom) {
    const reader = kindReader(deps, ns);
    for (const m of machines) {
      const ref = machineInfraRef(m);
      if (!ref || (only && !only.has(nameOf(m)))) continue;
      const got = reader.peek(ref) ?? (await reader.read(ref));
      const next = got.obj ? withClonedFrom(got.obj, a.infraClonedFrom) : undefined;
      if (got.obj && next) infraWrites.push({ res: got.res, obj: got.obj, next });
    }
  }
  return { a, ...(infra ? { infra } : {}), ...(boot ? { boot } : {}), infraWrites };
}

// The MachineSets owning a MachineDeployment target's machines, from the cache (none for a control plane).
function machineSetsOf(deps: OwnerDeps, t: TargetOwner, machines: readonly KubeObject[]): KubeObject[] {
  const machineSets: KubeObject[] = [];
  if (t.kind !== 'MachineDeployment') return machineSets;
  const ns = t.owner.metadata.namespace ?? '';
  for (const set of new Set(machines.map((m) => m.metadata.labels?.[Labels.setName]).filter((s): s is string => !!s))) {
    const ms = deps.reads.machineSet(ns, set);
    if (ms) machineSets.push(ms);
  }
  return machineSets;
}

// Creates the clones an alignment needs (an existing one, e.g. our earlier create whose answer was lost, is the same:
// its name is content-addressed).
async function createClones(deps: OwnerDeps, p: Prepared): Promise<void> {
  for (const c of p.a.create) {
    const res = p.infra && c.kind === p.infra.res.kind ? p.infra.res : p.boot!.res;
    try {
      await deps.client.create(res, c, { fieldManager: deps.fieldManager });
    } catch (err) {
      if (!isAlreadyExists(err)) throw new RetryableError(`create ${c.kind} ${c.metadata.namespace}/${nameOf(c)}`, err);
    }
  }
}

// Writes up to maxInfraWrites InfraMachine annotations; one failure does not stop the others. Returns how many are
// left and the first error.
async function annotateInfraMachines(deps: OwnerDeps, writes: Prepared['infraWrites']): Promise<{ left: number; firstError?: unknown }> {
  const batch = writes.slice(0, deps.maxInfraWrites);
  let failed = 0;
  let firstError: unknown;
  const limit = deps.limit ?? (<T>(fn: () => Promise<T>): Promise<T> => fn());
  await forEachLimit(batch, deps.writesInFlight, async (w) => {
    try {
      await limit(() => patchSnapshot(w.obj).apply(deps.client, w.res, w.next, { fieldManager: deps.fieldManager }));
    } catch (err) {
      if (isNotFound(err)) return;
      failed++;
      firstError ??= err;
    }
  });
  return { left: writes.length - batch.length + failed, ...(firstError !== undefined ? { firstError } : {}) };
}

/**
 * While a paused target runs, the InfraMachines of its machines that finished already get the cloned-from annotation of
 * the clone the target will end on (its name is known in advance: content-addressed), so the end of the target writes
 * only the owners (O(targets), not O(machines), on the critical path). Best effort: a failure leaves it to the next
 * reconcile or to the end-of-target alignment, which writes whatever is still missing.
 */
async function annotateAhead(s: OwnerScope, t: TargetOwner): Promise<void> {
  const { deps, view, log } = s;
  if (!t.values.some((v) => v.slot === 'infraTemplate')) return;
  const done = view.updated(t.kind, t.name);
  if (!done || done.size === 0) return;
  try {
    // Cheap level check first (runs every reconcile of a running target): which finished machines' InfraMachines do not
    // name the carrier yet, from the caches; the full alignment is computed only when some are left.
    const ns = t.owner.metadata.namespace ?? '';
    const ref = refAt(t.owner, refPaths(t.kind).infra);
    const infra = ref ? await deps.reads.ref(ns, ref) : undefined;
    if (!infra?.obj) return;
    const carrier = carrierName(
      infra.obj,
      originalTemplateName(infra.obj, infra.byName),
      t.values.filter((v) => v.slot === 'infraTemplate'),
    );
    if (carrier === undefined) return;
    const left = new Set<string>();
    const reader = kindReader(deps, ns);
    for (const m of view.machines(targetKey(t.kind, t.name))) {
      const r = done.has(nameOf(m)) ? machineInfraRef(m) : undefined;
      if (!r) continue;
      const im = (reader.peek(r) ?? (await reader.read(r))).obj;
      if (im && im.metadata.annotations?.[CLONED_FROM_NAME] !== carrier) left.add(nameOf(m));
    }
    if (left.size === 0) return;
    const p = await prepare(s, t, left);
    if ('problems' in p || p.infraWrites.length === 0) return;
    await createClones(deps, p);
    await annotateInfraMachines(deps, p.infraWrites);
  } catch (err) {
    log.debug({ owner: label(t), err: (err as Error).message }, 'InfraMachine annotations ahead of the target end: continuing later');
  }
}

// Clones first, then the MachineSets owning the machines, then the InfraMachines' cloned-from, then the owner's spec with
// its pause lifted: while the owner is paused CAPI acts on none of the intermediate states. Every read comes from the
// informer caches and every step is a level (a clone that exists, a MachineSet or InfraMachine that carries the values),
// so a reconcile that fails half-way leaves the next one the rest; requests are O(writes still needed).
async function align(s: OwnerScope, t: TargetOwner, d: PlanDecision): Promise<{ problems: string[]; pending?: string }> {
  const { deps, view, planName, log } = s;
  const { client } = deps;
  // Values that all sit on the owner (and a MachineDeployment's MachineSets) need no template, clone or InfraMachine:
  // when the owner carries them and is not paused by the plan, and so do the MachineSets of its machines, nothing is
  // written. Checked by reading the fields instead of cloning every object: it runs on every reconcile once the target
  // is done, until the plan ends.
  if (
    t.values.every((v) => v.slot === 'owner') &&
    ownerCarries(t.owner, planName, t.values) &&
    machineSetsOf(deps, t, view.machines(targetKey(t.kind, t.name))).every((ms) => ownerCarries(ms, planName, t.values))
  )
    return { problems: [] };
  const prepared = await prepare(s, t);
  if ('problems' in prepared) return { problems: prepared.problems };
  const { a, infraWrites } = prepared;
  if (a.create.length === 0 && a.machineSets.length === 0 && infraWrites.length === 0 && !a.owner) return { problems: [] };

  let owner = t.owner;
  // An owner that was not paused during the target (a surging MachineDeployment) is paused for the writes below.
  const paused = withPause(owner, planName);
  if (paused && !isPausedObject(owner))
    owner = await patchSnapshot(owner).apply(client, t.res, paused, { fieldManager: deps.fieldManager });

  await createClones(deps, prepared);
  for (const ms of a.machineSets) await patchSnapshot(ms.before).apply(client, MachineSets, ms.after, { fieldManager: deps.fieldManager });
  const { left, firstError } = await annotateInfraMachines(deps, infraWrites);
  if (left > 0) {
    const why = firstError ? `: ${(firstError as Error).message.slice(0, 160)}` : '';
    return { problems: [], pending: `${left} InfraMachine(s) of ${label(t)} still to annotate${why} (continuing)` };
  }
  if (a.owner) {
    // The owner as paused above (its resourceVersion moved) with the alignment's change on top.
    const after = a.owner.after;
    if (owner !== t.owner) after.metadata.resourceVersion = owner.metadata.resourceVersion;
    await patchSnapshot(owner === t.owner ? a.owner.before : owner).apply(client, t.res, after, { fieldManager: deps.fieldManager });
  }
  const what = [
    ...a.create.map((c) => `created ${c.kind} ${nameOf(c)}`),
    ...a.machineSets.map((m) => `MachineSet ${nameOf(m.before)}`),
    ...(infraWrites.length ? [`${infraWrites.length} InfraMachine(s)`] : []),
    ...(a.owner ? [label(t)] : []),
  ];
  d.events.push({
    type: 'Normal',
    reason: OwnerEventReasons.aligned,
    message: `${label(t)} carries the plan's values (${what.join(', ') || 'nothing to write'}); CAPI sees its updated machines as up to date`,
  });
  log.info({ owner: label(t), writes: what }, 'aligned owner');
  return { problems: [] };
}
