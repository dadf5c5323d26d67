// The start of an in-place update's MHC protection, one rule shared by the MHC extension (which protects machines in
// update as it finds them) and the plan controller (which sets the same protection in the patch that labels a machine
// to start its update, so that the extension finds it protected and writes nothing: issue 25). What an MHC the
// extension acts on looks like (readMhcConfig), which machines it selects (mhcSelects), how long a machine may stay in
// update (updateTimeoutMs), the annotations that protect it (protectPatch, with protectionNote as the value), and
// the protection a machine gets as its update starts (startProtection). Here in src/api so that both components
// share it without one importing the other. Pure.
import { Annotations } from './constants.js';
import { InvalidDurationError, parseGoDuration } from './duration.js';
import type { AnnotationPatch } from './skip-remediation.js';
import { scaleIntOrPercent } from './capi/intstr.js';
import type { LabelSelectorSpec, Machine, MachineHealthCheck } from './capi/types.js';

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

/** What the MHC's configuration allows: act (with its timeout and window), or ignore it (with the reason, if any). */
export type MhcConfig =
  | { kind: 'act'; timeoutMs: number; window: RemediationWindow }
  | { kind: 'ignore'; problem?: { reason: 'timeout' | 'trigger'; message: string } };

/**
 * Reads the MHC's configuration for `expected` eligible machines; a missing timeout ignores it silently. Whether the
 * MHC is acted on does not depend on `expected` (only its window's size does).
 */
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

/** Matches a metav1.LabelSelector against labels (src/runtime/pure labelSelectorMatches: src/api imports nothing of ours). */
export type SelectorMatcher = (selector: LabelSelectorSpec | undefined, labels: Record<string, string> | undefined) => boolean;

/**
 * True when the MHC selects the machine, as CAPI's MHC does: same namespace and cluster, and its selector matches the
 * machine's labels (`matches` says how; a selector that does not parse selects nothing).
 */
export function mhcSelects(
  mhc: MachineHealthCheck,
  m: { metadata: { namespace?: string; labels?: Record<string, string> }; spec?: { clusterName?: string } },
  matches: SelectorMatcher,
): boolean {
  if (m.metadata.namespace !== mhc.metadata.namespace || m.spec?.clusterName !== mhc.spec.clusterName) return false;
  return matches(mhc.spec.selector, m.metadata.labels);
}

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

/** The value of a skip-remediation the platform sets: who protects the machine, for which update, until when. */
export const protectionNote = (mhcName: string, update: string, untilIso: string): string =>
  `in-place update ${update}: MachineHealthCheck ${mhcName} skips remediation until ${untilIso}`;

/**
 * Protect a machine: set skip-remediation, remembering (once) whether it was there before. `note` is the value given
 * to a skip-remediation the platform sets (CAPI reads only its presence): which MHC protects the machine and until
 * when, so a protected, healthy machine needs no condition to say so. An operator's own value is never touched.
 * Undefined when nothing changes (the machine is protected already, by the extension, the plan controller or its operator).
 */
export function protectPatch(annotations: Record<string, string> | undefined, note = ''): AnnotationPatch | undefined {
  const a = annotations ?? {};
  const patch: AnnotationPatch = {};
  if (a[Annotations.skipRemediationPrior] === undefined)
    patch[Annotations.skipRemediationPrior] = a[Annotations.skipRemediation] !== undefined ? 'true' : 'false';
  if (a[Annotations.skipRemediation] === undefined) patch[Annotations.skipRemediation] = note;
  return Object.keys(patch).length ? patch : undefined;
}

/** The protection a machine gets as its update starts: which MHC, until when, and the annotations to add. */
export interface StartProtection {
  mhc: string;
  expiresAtMs: number;
  patch: AnnotationPatch;
}

/**
 * The protection the MHC extension would give a machine whose update `update` starts at `startMs`, decided when the
 * plan controller labels it (so that the label patch carries it): among the MHCs that select the machine
 * (`selecting`), the ones the extension acts on (readMhcConfig); the first by name protects it (any one of them
 * protects it in the extension, whichever passes first; the name makes the choice deterministic), until start +
 * its timeout (+ the node startup timeout while the node is not initialized), as the extension judges it. Undefined
 * when none acts on it or the machine is protected already (protectPatch: nothing to add).
 */
export function startProtection(
  m: Machine,
  selecting: readonly MachineHealthCheck[],
  update: string,
  startMs: number,
): StartProtection | undefined {
  if (m.metadata.deletionTimestamp) return undefined;
  let chosen: { mhc: MachineHealthCheck; timeoutMs: number } | undefined;
  for (const mhc of selecting) {
    if (mhc.metadata.deletionTimestamp) continue;
    const config = readMhcConfig(mhc, 1);
    if (config.kind !== 'act') continue;
    if (!chosen || (mhc.metadata.name ?? '') < (chosen.mhc.metadata.name ?? '')) chosen = { mhc, timeoutMs: config.timeoutMs };
  }
  if (!chosen) return undefined;
  const name = chosen.mhc.metadata.name ?? '';
  const expiresAtMs = startMs + updateTimeoutMs(chosen.timeoutMs, chosen.mhc.spec.checks?.nodeStartupTimeoutSeconds, isNodeInitialized(m));
  const patch = protectPatch(m.metadata.annotations, protectionNote(name, update, new Date(expiresAtMs).toISOString()));
  return patch ? { mhc: name, expiresAtMs, patch } : undefined;
}
