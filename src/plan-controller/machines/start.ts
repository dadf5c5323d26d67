// The machine effects of a decision: label each machine and create its MachineUpdate (in parallel across machines),
// move MachineUpdates to aborting, and unlabel the machines no longer in update (with the end of their MHC protection).
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { Annotations, Labels, MachineUpdates, Machines, UpdatePhase } from '../../api/index.js';
import type { Machine, MachineHealthCheck } from '../../api/capi/index.js';
import { restoreSkipRemediationOps } from '../../api/skip-remediation.js';
import { ConflictError, isAlreadyExists, KubeApiError, RetryableError } from '../../runtime/pure/errors.js';
import { encodePointer } from '../../runtime/pure/jsonpointer.js';
import type { Logger } from '../../runtime/pure/types.js';
import type { RefLookup } from '../../rules/at-target.js';
import type { PlanDeps } from '../deps.js';
import type { MachineLabelIntent, MachineUpdateIntent, PlanDecision } from '../decide/types.js';
import { labelPatch } from '../decide/label.js';
import { labelValue, machineUpdateName } from '../decide/names.js';
import { ownedBy } from '../snapshot/build-scope.js';
import { eachSettled, FIELD_MANAGER, ignoreNotFound } from '../act/writes.js';
import { machineUpdateFor } from './machine-update.js';

/** Most machines one reconcile starts (labels + MachineUpdates); the rest start in the next one, right after. */
const MAX_STARTS_PER_RECONCILE = 1000;

/** MachineUpdates created but not yet seen by the informer, by name (the plan's state: snapshot/plan-state.ts). */
export type Expectations = Map<string, { mu: MachineUpdate; at: number }>;

/** What the machine effects take besides the decision. */
export interface MachinesAround {
  /** Targets (Kind/name) whose owner could not be paused: none of their machines starts in this reconcile. */
  blocked?: ReadonlySet<string>;
  /** The caches the machines-at-target check read (the values new MachineUpdates record in spec.previous). */
  refs?: RefLookup | undefined;
  /** Where each created MachineUpdate is expected until the informer shows it (the plan's state). */
  expectations?: Expectations;
}

/** Machines: label then start each machine (in parallel across machines), then aborts to propagate, then labels to remove. */
export async function reconcileMachines(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  d: Readonly<PlanDecision>,
  log: Logger,
  around: MachinesAround = {},
): Promise<void> {
  const { blocked = new Set<string>(), refs, expectations } = around;
  const ns = plan.metadata.namespace ?? '';
  const name = plan.metadata.name ?? '';
  // A target whose owner could not be paused starts none of its machines in this reconcile (docs/design.md §11); past
  // MAX_STARTS_PER_RECONCILE the rest start in the next reconcile (bounded requests per reconcile).
  const held = new Set(d.create.filter((c) => blocked.has(`${c.target.kind}/${c.target.name}`)).map((c) => c.machine));
  const allowed = d.create.filter((c) => !held.has(c.machine));
  for (const c of allowed.slice(MAX_STARTS_PER_RECONCILE)) held.add(c.machine);
  if (allowed.length > MAX_STARTS_PER_RECONCILE) deps.ctrl().enqueue({ namespace: ns, name });
  // Each write is independent: one failure does not stop the others (under a flaky API server that would cap a
  // reconcile's progress at a handful of writes); the failures are reported once all ran.
  const failures: unknown[] = [];
  // Label first: the label patch carries the MHC protection (decide/label.ts), and the machine task controller acts on
  // a MachineUpdate only once its machine carries the plan's label (contract C9). Per machine,
  // not per phase: each MachineUpdate is created as soon as its own label landed, so a freed slot is refilled after two
  // round trips rather than after every label of the reconcile and then every create (the step latency at
  // maxUnavailable 1, where one reconcile refills a slot in each of hundreds of targets).
  const labels = new Map(d.label.filter((l) => !held.has(l.machine)).map((l) => [l.machine, l]));
  const creates = d.create.filter((c) => !held.has(c.machine));
  const starting = new Set(creates.map((c) => c.machine));
  const relabels = [...labels.values()].filter((l) => !starting.has(l.machine));
  // The namespace's MachineHealthChecks, read once for every label patch of this reconcile.
  const mhcs = labels.size > 0 ? ((deps.mhcs?.list(ns) ?? []) as MachineHealthCheck[]) : [];
  const jobs: (() => Promise<void>)[] = [
    ...creates.map((c) => async () => {
      const l = labels.get(c.machine);
      // Only machines whose label landed start: no machine is in update without its label.
      if (l && !(await labelMachine(deps, plan, l, mhcs, failures))) return;
      const created = await startMachine(deps, plan, c, log, refs);
      if (created) expectations?.set(c.name, { mu: created, at: Date.now() });
    }),
    ...relabels.map((l) => async () => void (await labelMachine(deps, plan, l, mhcs, failures))),
    // Aborts and unlabels in the same pool, after the starts: they depend on nothing above, and a stage of their own
    // held the status write and the next reconcile (the next freed slot) for one more round trip.
    ...d.abort.map((muName) => async () => {
      await ignoreNotFound(
        deps.client.patch(
          MachineUpdates,
          ns,
          muName,
          { spec: { updatePhase: UpdatePhase.aborting } },
          { type: 'merge', fieldManager: FIELD_MANAGER },
        ),
      );
    }),
    ...d.unlabel.map((machine) => async () => unlabelMachine(deps, ns, machine, labelValue(plan.metadata.name ?? ''))),
  ];
  await eachSettled(jobs, failures, (job) => job());
  if (failures.length > 0) throw failures[0];
}

/**
 * Labels a machine in update by this plan (label and start time, and the protection of the namespace's `mhcs` that
 * select it); false (the error in `failures`) when it did not land.
 */
async function labelMachine(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  l: MachineLabelIntent,
  mhcs: readonly MachineHealthCheck[],
  failures: unknown[],
): Promise<boolean> {
  const ns = plan.metadata.namespace ?? '';
  const m = deps.machines.peek(ns, l.machine) as Machine | undefined;
  if (!m) return true;
  // The MHC extension's protection rides on this patch when an MHC it acts on selects the machine (decide/label.ts).
  const planName = plan.metadata.name ?? '';
  const p = labelPatch(m, labelValue(planName), l.startedAt, machineUpdateName(planName, l.machine), mhcs);
  try {
    await ignoreNotFound(
      p.type === 'merge'
        ? deps.client.patch(Machines, ns, l.machine, p.body, { type: 'merge', fieldManager: FIELD_MANAGER })
        : deps.client.patch(Machines, ns, l.machine, p.ops, { type: 'json', fieldManager: FIELD_MANAGER }),
    );
    return true;
  } catch (err) {
    // A failed guard (the annotations or the machine moved since the cache): the start is decided again on fresh state.
    failures.push(
      p.protectedBy !== undefined && err instanceof KubeApiError && (err.code === 409 || err.code === 422)
        ? new ConflictError(`label Machine ${ns}/${l.machine}`, err)
        : err,
    );
    return false;
  }
}

/**
 * Creates a machine's MachineUpdate (adopting our own existing one): the MachineUpdate to expect until the informer
 * shows it, or undefined when the name is held by another plan's record.
 */
async function startMachine(
  deps: PlanDeps,
  plan: InPlaceUpdatePlan & KubeObject,
  c: MachineUpdateIntent,
  log: Logger,
  refs: RefLookup | undefined,
): Promise<MachineUpdate | undefined> {
  const { client } = deps;
  const ns = plan.metadata.namespace ?? '';
  const mu = machineUpdateFor(plan, c, deps.machines.peek(ns, c.machine), refs);
  let created: MachineUpdate = mu;
  try {
    created = await client.create(MachineUpdates, mu, { fieldManager: FIELD_MANAGER });
    // Counted here, not after the status write: a later conflict must not lose a start that happened.
    deps.metrics.machinesStarted.inc();
  } catch (err) {
    // Deterministic names: an existing record means an earlier reconcile (or process) already started this machine.
    if (!isAlreadyExists(err)) throw new RetryableError(`create MachineUpdate ${ns}/${c.name}`, err);
    const existing = await client.get<MachineUpdate & KubeObject>(MachineUpdates, ns, c.name);
    // Another plan's record under this name (e.g. of a deleted plan not yet collected) is not ours: retried later.
    if (existing && !ownedBy(existing, plan)) {
      log.info({ machineUpdate: c.name }, 'MachineUpdate name held by another plan; not adopted');
      return undefined;
    }
    if (existing) created = existing;
  }
  return created;
}

/** Removes this plan's label and start time from a machine no longer in update. */
async function unlabelMachine(deps: PlanDeps, ns: string, machine: string, planLabel: string): Promise<void> {
  const m = deps.machines.peek(ns, machine);
  if (!m) return;
  // Guarded by the label itself (a JSON patch test), not the resourceVersion: the label may belong to a newer plan by
  // the time this lands, but the MHC extension's annotation write at the same moment (the update ended) is no conflict.
  // The MHC extension leaves the end-of-update restore of skip-remediation to this patch (one write, not two); its ops
  // test what they read and come before the start time's removal (they may test the whole annotation map).
  const ops: unknown[] = [
    { op: 'test', path: `/metadata/labels/${encodePointer([Labels.planName]).slice(1)}`, value: planLabel },
    ...restoreSkipRemediationOps(m.metadata.annotations),
    { op: 'remove', path: `/metadata/labels/${encodePointer([Labels.planName]).slice(1)}` },
  ];
  if (m.metadata.annotations?.[Annotations.updateStartedAt] !== undefined)
    ops.push({ op: 'remove', path: `/metadata/annotations/${encodePointer([Annotations.updateStartedAt]).slice(1)}` });
  // A failed test (422) means the label is no longer this plan's, or the cache was stale: decided again on fresh state.
  await ignoreNotFound(deps.client.patch(Machines, ns, machine, ops, { type: 'json', fieldManager: FIELD_MANAGER }));
}
