// The one home of the MaxUnavailable / concurrency rule of a MachineDeployment target, shared by the decision (how
// many machines start), the preview (what it will do) and owner alignment (a surging owner is not paused). Pure.
//
// The rule follows CAPI/Kubernetes: maxUnavailable and maxSurge resolve against the replica count (percentages round
// down, maxSurge up); when both resolve to 0, one machine at a time (the fencepost rule). maxUnavailable 0 means no
// machine may go down: the MachineDeployment surges by one and machines update one at a time.
//
// Non-disruptive targets (every updater declares affectsAvailability false) follow Cluster API v1.15's rule for the
// same declaration (capi#14160): no surge, and a machine in update does not count against maxUnavailable. It is paced
// instead, as upstream keeps such machines in the rollout's speed: at most max(1, maxSurge + maxUnavailable) of the
// target's machines are in update at once.
import type { KubeObject } from '../api/index.js';
import { mdReplicas, mdRollingUpdate, resolveFenceposts } from '../api/capi/index.js';

/** How many machines of a MachineDeployment target may be unavailable at once. */
export type MdConcurrency =
  | {
      ok: true;
      /** Machines that may be unavailable at once (surge: 1, with the extra machine); non-disruptive: in update at once. */
      max: number;
      /** maxUnavailable resolves to 0: scale up by one first, then one at a time (never for a non-disruptive target). */
      surge: boolean;
      /** The replica count the rule was resolved against. */
      replicas: number;
      /** False when every updater declares affectsAvailability false: its machines in update are not unavailable. */
      disruptive: boolean;
    }
  | { ok: false; error: string };

/** What a target's updaters declare (the plan's updater entries). */
export type AvailabilityDeclaration = { affectsAvailability?: boolean };

/** True unless the target has updaters and every one declares affectsAvailability false (unset means true). */
export const targetDisruptive = (updaters: readonly AvailabilityDeclaration[] | undefined): boolean =>
  !(updaters && updaters.length > 0 && updaters.every((u) => u.affectsAvailability === false));

/**
 * The concurrency of a MachineDeployment target, resolved against `replicas` (default spec.replicas; the decision passes
 * the original count while this plan has the MachineDeployment surged); `disruptive` from targetDisruptive.
 */
export function mdConcurrency(md: KubeObject, replicas: number = mdReplicas(md), disruptive = true): MdConcurrency {
  const ru = mdRollingUpdate(md);
  const fenceposts = resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicas);
  if (!fenceposts.ok) return { ok: false, error: `rollingUpdate: ${fenceposts.error}` };
  if (!disruptive)
    return { ok: true, max: Math.max(1, fenceposts.value.surge + fenceposts.value.unavailable), surge: false, replicas, disruptive };
  const surge = fenceposts.value.unavailable === 0;
  return { ok: true, max: surge ? 1 : fenceposts.value.unavailable, surge, replicas, disruptive };
}

/**
 * How many more machines may start now. Disruptive: max less every unavailable machine (not Ready, in update by this
 * plan or another). Non-disruptive: max less this target's machines in update (only they take a slot: they do not
 * make the MachineDeployment less available, and machines unavailable for other reasons are not made worse).
 */
export function mdStartBudget(c: Extract<MdConcurrency, { ok: true }>, unavailable: number, inUpdate: number): number {
  return Math.max(0, c.max - (c.disruptive ? unavailable : inUpdate));
}

/** The rule in words, for the decision's status message and the preview. */
export function mdConcurrencyNote(c: Extract<MdConcurrency, { ok: true }>): string {
  if (!c.disruptive)
    return `non-disruptive updaters (affectsAvailability false): not counted against maxUnavailable, no surge; up to ${c.max} in update at once (maxSurge + maxUnavailable, at least 1)`;
  return c.surge ? `surge (maxUnavailable 0): one at a time with ${c.replicas + 1} machines` : `maxUnavailable=${c.max}`;
}
