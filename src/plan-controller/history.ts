// History limit of finished plans (like a Deployment's revisionHistoryLimit): per cluster, the newest `limit`
// finished plans stay, older ones are deleted (their MachineUpdates and tasks follow through ownerReferences).
// Pure: the history reconciler (history-controller.ts) reads the plans and owners, this decides, it deletes.
//
// Rules:
// * Only finished plans (terminal updateStatus: updated, failed, aborted; a superseded plan ends aborted) count and
//   may go; a plan in flight (pending, updating, aborting, or not yet reported) never does.
// * Age is the supersede order: creationTimestamp, then name. The oldest finished plans go first.
// * The newest finished plan of a cluster always stays (it is the record of what was last done to the cluster), so a
//   limit of 0 keeps one, like 1.
// * A plan an owner still names as its pause holder (paused-by-plan: left paused over mixed machines) stays and does
//   not count: its OwnersAligned condition tells the operator what to do until a newer plan takes the pause over.
// * A plan already being deleted neither counts nor is deleted again.
import type { InPlaceUpdatePlan } from '../api/index.js';
import { isTerminal } from '../api/index.js';
import { planAge } from './decide.js';

/**
 * Finished plans kept per cluster when nothing else is configured (`--finished-plans-per-cluster`). Like a CronJob's
 * successfulJobsHistoryLimit rather than a Deployment's 10 revisions: a kept plan keeps one MachineUpdate and one task
 * per machine per updater in every controller's cache, so at 10,000 machines ten plans would hold 200,000 objects.
 */
export const DEFAULT_FINISHED_PLANS_PER_CLUSTER = 3;

/** A plan to delete: the uid is the delete's precondition (a plan recreated under the same name is not touched). */
export interface PlanToPrune {
  name: string;
  uid: string;
  updateStatus: string;
}

/** What pruneFinishedPlans decided for one cluster. */
export interface HistoryDecision {
  /** Plans to delete, oldest first. */
  prune: PlanToPrune[];
  /** The newest finished plan (kept; where the Event about the pruning goes), when the cluster has one. */
  newestFinished?: string;
}

/**
 * Which finished plans of one cluster to delete so that at most `limit` remain (the newest always remains).
 * `plans` are the plans of one cluster in one namespace; `pinned` names plans an owner still holds paused.
 */
export function pruneFinishedPlans(
  plans: readonly InPlaceUpdatePlan[],
  limit: number,
  pinned: ReadonlySet<string> = new Set(),
): HistoryDecision {
  const finished = plans
    .filter((p) => isTerminal(p.status?.updateStatus) && !p.metadata?.deletionTimestamp && !!p.metadata?.name)
    .sort(planAge)
    .reverse();
  const newest = finished[0];
  if (!newest) return { prune: [] };
  const keep = Math.max(1, Math.floor(limit));
  const counted = finished.filter((p) => !pinned.has(p.metadata?.name ?? ''));
  const prune = counted
    .slice(keep)
    .filter((p) => p !== newest && !!p.metadata?.uid)
    .map((p) => ({ name: p.metadata!.name!, uid: p.metadata!.uid!, updateStatus: p.status!.updateStatus! }))
    .reverse();
  return { prune, newestFinished: newest.metadata!.name! };
}

/** The message of the Event on the newest finished plan after older ones were deleted. */
export function prunedMessage(pruned: readonly PlanToPrune[], limit: number): string {
  const names = pruned.map((p) => `${p.name} (${p.updateStatus})`).join(', ');
  return `deleted ${pruned.length} older finished plan${pruned.length === 1 ? '' : 's'} of the cluster and their MachineUpdates: ${names}; the plan controller keeps ${Math.max(1, Math.floor(limit))} finished plan${Math.max(1, Math.floor(limit)) === 1 ? '' : 's'} per cluster (--finished-plans-per-cluster)`;
}
