// Phase 1 of an MHC pass: is this MachineHealthCheck one the extension acts on? It must carry a valid in-place
// update timeout and a remediation trigger CAPI itself would accept; anything else is ignored with a Warning.
import { Annotations } from '../../api/index.js';
import { scaleIntOrPercent } from '../../api/capi/index.js';
import { InvalidDurationError, parseGoDuration } from '../../api/duration.js';
import type { Machine, MachineHealthCheck } from '../scope.js';

/** The MHC's in-place timeout: absent (MHC not configured), valid (ms), or invalid (with the reason). */
export type TimeoutConfig = { kind: 'absent' } | { kind: 'valid'; ms: number } | { kind: 'invalid'; value: string; message: string };

/** Reads the in-place update timeout annotation of an MHC; zero and negative durations are invalid. */
export function readTimeoutAnnotation(mhc: MachineHealthCheck): TimeoutConfig {
  const value = mhc.metadata.annotations?.[Annotations.inPlaceUpdateTimeout];
  if (value === undefined) return { kind: 'absent' };
  try {
    const ms = parseGoDuration(value.trim());
    if (ms <= 0)
      return {
        kind: 'invalid',
        value,
        message: `${Annotations.inPlaceUpdateTimeout} must be a positive duration, got ${JSON.stringify(value)}`,
      };
    return { kind: 'valid', ms };
  } catch (err) {
    if (err instanceof InvalidDurationError)
      return {
        kind: 'invalid',
        value,
        message: `${Annotations.inPlaceUpdateTimeout}: ${err.message} (want a Go duration such as 30m or 1h30m)`,
      };
    throw err;
  }
}

/** Thrown for a triggerIf value CAPI itself would reject. */
export class InvalidTriggerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTriggerError';
  }
}

/** The remediation window of an MHC: at most `max` unhealthy machines, and (unhealthyInRange) at least `min`. */
export interface RemediationWindow {
  min: number;
  max: number;
}

/**
 * maxAllowedUnhealthy of an MHC for `expected` selected machines, as CAPI computes it: unhealthyInRange `[a-b]`
 * takes precedence; else unhealthyLessThanOrEqualTo (int or percent, rounded down); absent = 100%.
 */
export function remediationWindow(mhc: MachineHealthCheck, expected: number): RemediationWindow {
  const t = mhc.spec.remediation?.triggerIf;
  if (t?.unhealthyInRange) {
    const m = /^\[(\d+)-(\d+)\]$/.exec(t.unhealthyInRange);
    if (!m) throw new InvalidTriggerError(`invalid unhealthyInRange ${JSON.stringify(t.unhealthyInRange)}`);
    const [min, max] = [Number(m[1]), Number(m[2])];
    if (max < min) throw new InvalidTriggerError(`unhealthyInRange: max value ${max} cannot be less than min value ${min}`);
    return { min, max };
  }
  // CAPI's GetScaledValueFromIntOrPercent(v, expected, roundUp=false): a percentage rounds down.
  const max = scaleIntOrPercent(t?.unhealthyLessThanOrEqualTo ?? '100%', expected, false);
  if (!max.ok) throw new InvalidTriggerError(`unhealthyLessThanOrEqualTo: ${max.error}`);
  return { min: 0, max: max.value };
}

/** Code-unit order of names: deterministic and much cheaper than localeCompare on thousands of machines. */
export const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The machines a pass judges: the selected ones not being deleted, in name order (so the plan is deterministic). */
export const eligibleMachines = (selected: readonly Machine[]): Machine[] =>
  selected.filter((m) => !m.metadata.deletionTimestamp).sort((a, b) => byName(a.metadata.name ?? '', b.metadata.name ?? ''));

/** What the MHC's configuration allows: act (with its timeout and window), or ignore it (with the reason, if any). */
export type MhcConfig =
  | { kind: 'act'; timeoutMs: number; window: RemediationWindow }
  | { kind: 'ignore'; problem?: { reason: 'timeout' | 'trigger'; message: string } };

/** Reads the MHC's configuration for `expected` eligible machines; a missing timeout ignores it silently. */
export function readMhcConfig(mhc: MachineHealthCheck, expected: number): MhcConfig {
  const timeout = readTimeoutAnnotation(mhc);
  if (timeout.kind === 'absent') return { kind: 'ignore' };
  if (timeout.kind === 'invalid') return { kind: 'ignore', problem: { reason: 'timeout', message: timeout.message } };
  try {
    return { kind: 'act', timeoutMs: timeout.ms, window: remediationWindow(mhc, expected) };
  } catch (err) {
    if (!(err instanceof InvalidTriggerError)) throw err;
    return { kind: 'ignore', problem: { reason: 'trigger', message: err.message } };
  }
}
