// Phase 2 of an MHC pass: judge every machine in update against its timeout (failed, timed out, or within it),
// and when to look again (the earliest deadline of a machine still within its timeout).
import { Annotations, UpdateStatus } from '../../api/index.js';
import type { Machine, MachineUpdate } from '../scope.js';
import { currentUpdateOf, putsInUpdate, updatesByMachine } from './updates.js';

/** CAPI's default nodeStartupTimeoutSeconds (10 minutes, set by its defaulting webhook when absent). */
const DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS = 600;

/** True when the machine's node exists and its infrastructure and bootstrap data are ready (CAPI's "node started"). */
export function isNodeInitialized(m: Machine): boolean {
  const init = m.status?.initialization;
  return !!m.status?.nodeRef?.name && init?.infrastructureProvisioned === true && init.bootstrapDataSecretCreated === true;
}

/** How long a machine may stay in update: the in-place timeout, plus the node startup timeout if its node is not initialized. */
export function updateTimeoutMs(inPlaceMs: number, nodeStartupTimeoutSeconds: number | undefined, nodeInitialized: boolean): number {
  return nodeInitialized ? inPlaceMs : inPlaceMs + (nodeStartupTimeoutSeconds ?? DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS) * 1000;
}

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

/** Judges a machine in update: failed update, timed out (now ≥ start + timeout), or within its timeout. */
export function judge(
  m: Machine,
  u: MachineUpdate,
  inPlaceMs: number,
  nodeStartupTimeoutSeconds: number | undefined,
  nowMs: number,
): Verdict {
  if (u.status?.updateStatus === UpdateStatus.failed) return { kind: 'failed', message: u.status.message ?? 'the in-place update failed' };
  const timeoutMs = updateTimeoutMs(inPlaceMs, nodeStartupTimeoutSeconds, isNodeInitialized(m));
  const start = updateStartMs(m, u) ?? nowMs;
  const expiresAtMs = start + timeoutMs;
  return nowMs >= expiresAtMs ? { kind: 'timedOut', expiresAtMs, timeoutMs } : { kind: 'within', expiresAtMs, timeoutMs };
}

/** A machine in update, its current update, and the verdict on it. */
export interface Judged {
  m: Machine;
  u: MachineUpdate;
  verdict: Verdict;
}

/** Judges every machine its current update puts in update (machines not in update are left out). */
export function judgeMachines(
  machines: readonly Machine[],
  updates: readonly MachineUpdate[],
  inPlaceMs: number,
  nodeStartupTimeoutSeconds: number | undefined,
  nowMs: number,
): Judged[] {
  const byMachine = updatesByMachine(updates);
  return machines.flatMap((m) => {
    const mine = byMachine.get(m.metadata.name ?? '');
    const u = mine ? currentUpdateOf(m, mine) : undefined;
    return u && putsInUpdate(u) ? [{ m, u, verdict: judge(m, u, inPlaceMs, nodeStartupTimeoutSeconds, nowMs) }] : [];
  });
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
