// The one home of the MaxUnavailable / concurrency rule of a MachineDeployment target, shared by the decision (how
// many machines start), the preview (what it will do) and owner alignment (a surging owner is not paused). Pure.
//
// The rule follows CAPI/Kubernetes: maxUnavailable and maxSurge resolve against the replica count (percentages round
// down, maxSurge up); when both resolve to 0, one machine at a time (the fencepost rule). maxUnavailable 0 means no
// machine may go down: the MachineDeployment surges by one and machines update one at a time.
import type { KubeObject } from '../api/index.js';
import { mdReplicas, mdRollingUpdate, resolveFenceposts } from '../api/capi/index.js';

/** How many machines of a MachineDeployment target may be unavailable at once. */
export type MdConcurrency =
  | {
      ok: true;
      /** Machines that may be unavailable at once (surge: 1, with the extra machine). */
      max: number;
      /** maxUnavailable resolves to 0: scale up by one first, then one at a time. */
      surge: boolean;
      /** The replica count the rule was resolved against. */
      replicas: number;
    }
  | { ok: false; error: string };

/**
 * The concurrency of a MachineDeployment target, resolved against `replicas` (default spec.replicas; the decision passes
 * the original count while this plan has the MachineDeployment surged).
 */
export function mdConcurrency(md: KubeObject, replicas: number = mdReplicas(md)): MdConcurrency {
  const ru = mdRollingUpdate(md);
  const fp = resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicas);
  if (!fp.ok) return { ok: false, error: `rollingUpdate: ${fp.error}` };
  const surge = fp.value.unavailable === 0;
  return { ok: true, max: surge ? 1 : fp.value.unavailable, surge, replicas };
}
