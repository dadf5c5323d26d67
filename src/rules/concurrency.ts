// The one home of the MaxUnavailable / concurrency rule of a MachineDeployment target, shared by the decision (how
// many machines start), the preview (what it will do) and owner alignment (a surging owner is not paused). Pure.
//
// The rule follows CAPI/Kubernetes: maxUnavailable and maxSurge resolve against the replica count (percentages round
// down, maxSurge up); when both resolve to 0, one machine at a time (the fencepost rule). maxUnavailable 0 means no
// machine may go down: the MachineDeployment surges by one and machines update one at a time.
//
// One input everywhere: the replica count before this plan's surge (mdRuleReplicas). The surge changes spec.replicas,
// and a percentage resolved against the surged count can answer differently (10 % of 9 is 0: surge; 10 % of 10 is 1:
// no surge), so a caller reading spec.replicas paused the MachineDeployment it had just surged (issue 42, item 11).
// The count before the surge is recorded on the MachineDeployment with the surge itself, so a restarted controller
// reads the same answer from the same objects.
//
// Non-disruptive targets (every updater declares affectsAvailability false) follow Cluster API v1.15's rule for the
// same declaration (capi#14160): no surge, and a machine in update does not count against maxUnavailable. It is paced
// instead, as upstream keeps such machines in the rollout's speed: at most max(1, maxSurge + maxUnavailable) of the
// target's machines are in update at once.
import type { KubeObject } from '../api/index.js';
import { Annotations } from '../api/index.js';
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

/** A MachineDeployment's surge as its annotations record it, read by plan `planName`. */
export interface MdSurge {
  /** Surged by this plan (or by a platform version that did not name the plan): the plan restores it. */
  surged: boolean;
  /** The surge-original-replicas annotation as written, when present (whoever surged). */
  recorded?: string;
  /** The replica count before the surge, when surged and the annotation is a count. */
  original?: number;
}

/** The surge of `md` as plan `planName` sees it (annotations written with the surge, decide/start.ts). */
export function mdSurge(md: KubeObject, planName: string): MdSurge {
  const a = md.metadata.annotations ?? {};
  const recorded = a[Annotations.surgeOriginalReplicas];
  if (recorded === undefined) return { surged: false };
  const by = a[Annotations.surgePlan];
  const surged = by === undefined || by === planName;
  const n = Number(recorded);
  return { surged, recorded, ...(surged && recorded.trim() !== '' && Number.isInteger(n) && n >= 0 ? { original: n } : {}) };
}

/**
 * The replica count the rule resolves against: the count before this plan's surge while the plan has the
 * MachineDeployment surged, else spec.replicas. Level-based: read from the MachineDeployment alone.
 */
export function mdRuleReplicas(md: KubeObject, planName: string): number {
  return mdSurge(md, planName).original ?? mdReplicas(md);
}

/** What the rule reads of a MachineDeployment target: the deployment as it is, the plan asking, the target's updaters. */
export interface MdRuleInput {
  md: KubeObject;
  planName: string;
  updaters: readonly AvailabilityDeclaration[] | undefined;
}

/**
 * The concurrency of a MachineDeployment target: the one rule the decision, the preview and owner alignment take,
 * resolved against mdRuleReplicas (never the surged count) and targetDisruptive of its updaters.
 */
export function mdConcurrency(i: MdRuleInput): MdConcurrency {
  return resolveConcurrency(mdRollingUpdate(i.md), mdRuleReplicas(i.md, i.planName), targetDisruptive(i.updaters));
}

/** The rule on its inputs: a rollingUpdate, the replica count it resolves against, whether the target is disruptive. */
export function resolveConcurrency(
  ru: { maxSurge?: number | string; maxUnavailable?: number | string },
  replicas: number,
  disruptive: boolean,
): MdConcurrency {
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
