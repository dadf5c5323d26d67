// Phase 2 of an MHC pass: judge every machine in update against its timeout (failed, timed out, or within it),
// and when to look again (the earliest deadline of a machine still within its timeout).
import { Annotations, UpdateStatus, isNodeInitialized, updateTimeoutMs } from '../../api/index.js';
import type { Machine, MachineUpdate } from './objects.js';

// The timeout arithmetic is shared with the plan controller (the protection it sets as it labels a machine): src/api.
export { isNodeInitialized, updateTimeoutMs } from '../../api/index.js';

/** When a machine's update started: the MachineUpdate's startTime, else the Machine's annotation, else the MachineUpdate's creation. */
function updateStartMs(m: Machine, u: MachineUpdate): number | undefined {
  for (const t of [u.status?.startTime, m.metadata.annotations?.[Annotations.updateStartedAt], u.metadata.creationTimestamp]) {
    const ms = t ? Date.parse(t) : NaN;
    if (!Number.isNaN(ms)) return ms;
  }
  return undefined;
}

/** The health verdict on one machine in update. */
export type Verdict =
  | { kind: 'within'; expiresAtMs: number; timeoutMs: number }
  | { kind: 'timedOut'; expiresAtMs: number; timeoutMs: number }
  | { kind: 'failed'; message: string };

/**
 * What a verdict rests on besides the clock: failed, or when the machine's timeout started (undefined: unknown, so it
 * starts at every look) and how long it is. A function of the machine, its update and the MHC's timeouts only, so a
 * caller may keep it while those objects are unchanged and re-judge it at any time with `verdictAt`.
 */
export type VerdictBasis = { kind: 'failed'; message: string } | { kind: 'timed'; startMs: number | undefined; timeoutMs: number };

/** The basis of a machine's verdict (see VerdictBasis). */
export function verdictBasis(m: Machine, u: MachineUpdate, inPlaceMs: number, nodeStartupTimeoutSeconds: number | undefined): VerdictBasis {
  if (u.status?.updateStatus === UpdateStatus.failed) return { kind: 'failed', message: u.status.message ?? 'the in-place update failed' };
  return {
    kind: 'timed',
    startMs: updateStartMs(m, u),
    timeoutMs: updateTimeoutMs(inPlaceMs, nodeStartupTimeoutSeconds, isNodeInitialized(m)),
  };
}

/** The verdict on a basis at `nowMs`: failed, timed out (now ≥ start + timeout), or within its timeout. */
export function verdictAt(b: VerdictBasis, nowMs: number): Verdict {
  if (b.kind === 'failed') return { kind: 'failed', message: b.message };
  const expiresAtMs = (b.startMs ?? nowMs) + b.timeoutMs;
  return nowMs >= expiresAtMs
    ? { kind: 'timedOut', expiresAtMs, timeoutMs: b.timeoutMs }
    : { kind: 'within', expiresAtMs, timeoutMs: b.timeoutMs };
}

/** Judges a machine in update: failed update, timed out (now ≥ start + timeout), or within its timeout. */
export function judge(
  m: Machine,
  u: MachineUpdate,
  inPlaceMs: number,
  nodeStartupTimeoutSeconds: number | undefined,
  nowMs: number,
): Verdict {
  return verdictAt(verdictBasis(m, u, inPlaceMs, nodeStartupTimeoutSeconds), nowMs);
}

/** A machine in update, its current update, and the verdict on it. */
export interface Judged {
  m: Machine;
  u: MachineUpdate;
  verdict: Verdict;
}

/**
 * The longest a pass waits for a deadline before looking again. Timers cannot wait longer than 2^31−1 ms (a longer
 * one fires at once: a 1000 h timeout made the extension spin), and an hourly look is free and survives clock jumps.
 */
export const MAX_REQUEUE_MS = 3_600_000;

/**
 * How long to wait before the next look: until the earliest deadline of a machine within its timeout, at least 1 ms,
 * at most MAX_REQUEUE_MS; undefined when no machine is within its timeout.
 */
export function requeueAfterMs(judged: readonly Judged[], nowMs: number): number | undefined {
  let next: number | undefined;
  for (const { verdict } of judged)
    if (verdict.kind === 'within') next = next === undefined ? verdict.expiresAtMs : Math.min(next, verdict.expiresAtMs);
  return next === undefined ? undefined : Math.min(MAX_REQUEUE_MS, Math.max(1, Math.ceil(next - nowMs)));
}
