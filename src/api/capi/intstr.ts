// Kubernetes IntOrString arithmetic as Deployments and MachineDeployments use it. Pure.

/** An int-or-string value as it appears in a MachineDeployment (`3` or `"25%"`). */
export type IntOrString = number | string;

/** Result of scaling an IntOrString: the value, or why it is not one. */
export type Scaled = { ok: true; value: number } | { ok: false; error: string };

/**
 * Resolves an int or a percentage of `total` (k8s intstr.GetScaledValueFromIntOrPercent): percentages round up or down
 * as asked; a string without `%` is an error, as in Kubernetes.
 */
export function scaleIntOrPercent(v: IntOrString, total: number, roundUp: boolean): Scaled {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? { ok: true, value: v } : { ok: false, error: `invalid value ${v}` };
  const m = /^(\d+)%$/.exec(v);
  if (!m) return { ok: false, error: `invalid value "${v}": must be an integer or a percentage` };
  const raw = (Number(m[1]) * total) / 100;
  return { ok: true, value: roundUp ? Math.ceil(raw) : Math.floor(raw) };
}

/** Resolved rolling-update bounds of a MachineDeployment. */
export interface Fenceposts {
  surge: number;
  unavailable: number;
}

/** CAPI v1beta2 defaults for an unset rollingUpdate (the MachineDeployment webhook's defaults). */
export const DEFAULT_MAX_SURGE: IntOrString = 1;
/** CAPI v1beta2 default maxUnavailable. */
export const DEFAULT_MAX_UNAVAILABLE: IntOrString = 0;

/**
 * Resolves maxSurge (rounded up) and maxUnavailable (rounded down) against the desired replicas, like CAPI's
 * mdutil.ResolveFenceposts: when both resolve to 0 (rounding), maxUnavailable becomes 1 so the rollout can progress.
 */
export function resolveFenceposts(
  maxSurge: IntOrString | undefined,
  maxUnavailable: IntOrString | undefined,
  desired: number,
): { ok: true; value: Fenceposts } | { ok: false; error: string } {
  const s = scaleIntOrPercent(maxSurge ?? DEFAULT_MAX_SURGE, desired, true);
  if (!s.ok) return { ok: false, error: `maxSurge: ${s.error}` };
  const u = scaleIntOrPercent(maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE, desired, false);
  if (!u.ok) return { ok: false, error: `maxUnavailable: ${u.error}` };
  if (s.value === 0 && u.value === 0) return { ok: true, value: { surge: 0, unavailable: 1 } };
  return { ok: true, value: { surge: s.value, unavailable: u.value } };
}
