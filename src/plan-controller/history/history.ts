// History of finished plans. Pure: the history reconciler (history-controller.ts) reads the plans and owners, this
// decides, it deletes.
//
// What the platform deletes by default is only what it created: the MachineUpdates (and, through ownerReferences,
// the tasks) of old finished plans. The plans themselves stay with their status (updateStatus, progress, targets,
// conditions: the record of what happened). A GitOps tool (Argo CD, Flux) that applied a plan and finds it deleted
// would apply it again, and the two would fight forever. A plan is deleted only when
// * its own spec.ttlSecondsAfterFinished opted in (like a Job's): that long after it finished;
// * the operator enabled plan pruning (`--prune-finished-plans`): the plans beyond the limit go with their records;
// * a campaign created it (an ownerReference with controller: true to an InPlaceUpdateCampaign of this group): the
//   campaign owns its plans' history, and they are pruned beyond the limit like their records.
//
// Rules of the count (per cluster, `limit` = --finished-plans-per-cluster):
// * Only plans that finished after touching machines count (terminal updateStatus and a startTime): a plan that
//   never started (invalid, superseded before it started, aborted while pending) has no records and never pushes a
//   real one out. It is deleted only by its TTL, or under plan pruning / by its campaign once it is not the newest.
// * Age is the supersede order: creationTimestamp, then name. The newest `limit` counted plans keep their records; the
//   newest finished plan always stays (a limit of 0 keeps one, like 1).
// * A plan an owner still names as its pause holder (paused-by-plan: left paused over mixed machines) keeps its records
//   and is never deleted, and does not count: its OwnersAligned condition tells the operator what to do.
// * A plan already being deleted neither counts nor is deleted again; a plan in flight is never touched.
import type { Condition, InPlaceUpdatePlan } from '../../api/index.js';
import { ConditionTypes, GROUP, Reasons, isTerminal } from '../../api/index.js';
import { planAge } from '../../rules/machines.js';

/**
 * Finished plans per cluster whose records (MachineUpdates, tasks) are kept when nothing else is configured
 * (`--finished-plans-per-cluster`). Like a CronJob's successfulJobsHistoryLimit rather than a Deployment's 10
 * revisions: a kept plan keeps one MachineUpdate and one task per machine per updater in every controller's cache, so
 * at 10,000 machines ten plans would hold 200,000 objects.
 */
export const DEFAULT_FINISHED_PLANS_PER_CLUSTER = 3;

/** Kind of the owner that marks a plan as created by a campaign controller (its plans may be pruned by default). */
export const CAMPAIGN_KIND = 'InPlaceUpdateCampaign';

/** Why a plan is deleted. */
export type PruneWhy = 'ttl' | 'limit' | 'campaign';

/** A plan to delete: the uid is the delete's precondition (a plan recreated under the same name is not touched). */
export interface PlanToPrune {
  name: string;
  uid: string;
  updateStatus: string;
  why: PruneWhy;
}

/** How the history is kept. */
export interface HistoryOptions {
  /** Finished plans per cluster that keep their records (and, when plans are pruned, that stay). */
  limit: number;
  /** The operator enabled deleting user-applied plans beyond the limit (`--prune-finished-plans`). */
  prunePlans: boolean;
  /** The current time (RFC 3339): TTLs are due against it. */
  now: string;
}

/** What decideHistory decided for one cluster. */
export interface HistoryDecision {
  /** Plans to delete, oldest first. */
  prune: PlanToPrune[];
  /** Finished plans that stay but whose MachineUpdates (and tasks) go, oldest first. */
  pruneRecords: string[];
  /** The newest finished plan that stays (where the Event about deleted plans goes), if one does. */
  newestFinished?: string;
  /** When the next TTL falls due (ms from now), if one is pending. */
  requeueAfterMs?: number;
}

const cond = (p: InPlaceUpdatePlan, type: string): Condition | undefined => p.status?.conditions?.find((c) => c.type === type);

/** True when a campaign controller created the plan (controller ownerReference to an InPlaceUpdateCampaign of this group). */
export function createdByCampaign(p: InPlaceUpdatePlan): boolean {
  return (p.metadata?.ownerReferences ?? []).some(
    (r) => r.controller === true && r.kind === CAMPAIGN_KIND && r.apiVersion.split('/')[0] === GROUP,
  );
}

/**
 * When the plan finished (RFC 3339), or undefined while it may still act: a terminal status (its completionTime), or
 * an invalid plan that ended for its generation (Failed=True reason Invalid: its lastTransitionTime).
 */
export function finishedAt(p: InPlaceUpdatePlan): string | undefined {
  if (isTerminal(p.status?.updateStatus)) return p.status?.completionTime ?? cond(p, ConditionTypes.ready)?.lastTransitionTime ?? '';
  const failed = cond(p, ConditionTypes.failed);
  if (failed?.status === 'True' && failed.reason === Reasons.invalid && failed.observedGeneration === p.metadata?.generation)
    return failed.lastTransitionTime ?? '';
  return undefined;
}

/** Orders RFC 3339 instants (one-second resolution; absent sorts first). */
const byTime = (a: string | undefined, b: string | undefined): number => ((a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0);

/** True when the plan touched machines (it started): only such plans have records and count against the limit. */
const touchedMachines = (p: InPlaceUpdatePlan): boolean => !!p.status?.startTime;

/**
 * What to delete among the plans of one cluster (`plans`: one cluster in one namespace); `pinned` names plans an owner
 * still holds paused.
 */
export function decideHistory(
  plans: readonly InPlaceUpdatePlan[],
  opts: HistoryOptions,
  pinned: ReadonlySet<string> = new Set(),
): HistoryDecision {
  const now = Date.parse(opts.now);
  // Newest finished first: by when they finished, then when they started (plans applied within one second tie on
  // creationTimestamp, and the name would then decide), then by creation and name.
  const finished = plans
    .filter((p) => finishedAt(p) !== undefined && !p.metadata?.deletionTimestamp && !!p.metadata?.name)
    .sort((a, b) => byTime(finishedAt(a), finishedAt(b)) || byTime(a.status?.startTime, b.status?.startTime) || planAge(a, b))
    .reverse();
  const newest = finished[0];
  if (!newest) return { prune: [], pruneRecords: [] };
  const nameOf = (p: InPlaceUpdatePlan): string => p.metadata!.name!;
  const keep = Math.max(1, Math.floor(opts.limit));
  const free = finished.filter((p) => !pinned.has(nameOf(p)));

  const prune = new Map<string, PlanToPrune>();
  const del = (p: InPlaceUpdatePlan, why: PruneWhy): void => {
    if (!prune.has(nameOf(p)) && p.metadata?.uid)
      prune.set(nameOf(p), {
        name: nameOf(p),
        uid: p.metadata.uid,
        // A plan that ended invalid never left pending: the message says how it ended.
        updateStatus: isTerminal(p.status?.updateStatus) ? p.status!.updateStatus! : 'invalid',
        why,
      });
  };
  let requeueAfterMs: number | undefined;
  // The plan's own opt-in first: a due TTL deletes it whatever the count says (a plan is never kept by its newness).
  for (const p of free) {
    const ttl = p.spec?.ttlSecondsAfterFinished;
    if (ttl === undefined) continue;
    const at = Date.parse(finishedAt(p)!);
    const dueIn = (Number.isNaN(at) ? now : at) + ttl * 1000 - now;
    if (dueIn <= 0) del(p, 'ttl');
    else requeueAfterMs = Math.min(requeueAfterMs ?? dueIn, dueIn);
  }

  const counted = free.filter(touchedMachines);
  const beyond = counted.slice(keep).filter((p) => p !== newest);
  const deletable = (p: InPlaceUpdatePlan): PruneWhy | undefined =>
    createdByCampaign(p) ? 'campaign' : opts.prunePlans ? 'limit' : undefined;
  const pruneRecords: string[] = [];
  for (const p of beyond) {
    const why = deletable(p);
    if (why) del(p, why);
    else if (!prune.has(nameOf(p))) pruneRecords.push(nameOf(p));
  }
  // Plans that never touched a machine hold no records: only plan pruning or their campaign removes them (not the newest).
  for (const p of free) if (!touchedMachines(p) && p !== newest && deletable(p)) del(p, deletable(p)!);

  const staying = finished.find((p) => !prune.has(nameOf(p)));
  const age = new Map(finished.map((p, i) => [nameOf(p), i]));
  const oldestFirst = (a: string, b: string): number => age.get(b)! - age.get(a)!;
  return {
    prune: [...prune.values()].sort((a, b) => oldestFirst(a.name, b.name)),
    pruneRecords: pruneRecords.sort(oldestFirst),
    ...(staying ? { newestFinished: nameOf(staying) } : {}),
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}

const WHY: Record<PruneWhy, string> = {
  ttl: 'spec.ttlSecondsAfterFinished',
  limit: '--prune-finished-plans',
  campaign: 'created by a campaign',
};

/** The message of the Event on the newest finished plan after other plans were deleted. */
export function prunedMessage(pruned: readonly PlanToPrune[], limit: number): string {
  const names = pruned.map((p) => `${p.name} (${p.updateStatus}; ${WHY[p.why]})`).join(', ');
  const keep = Math.max(1, Math.floor(limit));
  return `deleted ${pruned.length} finished plan${pruned.length === 1 ? '' : 's'} of the cluster and their MachineUpdates: ${names}; the newest ${keep} finished plan${keep === 1 ? '' : 's'} per cluster keep their records (--finished-plans-per-cluster)`;
}

/** The message of the Event on a plan whose MachineUpdates were deleted (the plan and its status stay). */
export function recordsPrunedMessage(machineUpdates: number, limit: number): string {
  const keep = Math.max(1, Math.floor(limit));
  return `deleted the ${machineUpdates} MachineUpdate${machineUpdates === 1 ? '' : 's'} (and their tasks) of this finished plan: newer plans of the cluster keep theirs (--finished-plans-per-cluster ${keep}); the plan and its status stay`;
}
