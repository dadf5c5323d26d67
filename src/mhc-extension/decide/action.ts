// Phase 4 of an MHC pass: what the controller does about one machine, built in one place: the annotation patch,
// the HealthCheckSucceeded condition on its MachineUpdate, and the Events to record with either.
import { Annotations, ConditionTypes, MessageBudget, Reasons, boundMessage, protectionNote, protectPatch } from '../../api/index.js';
import { fmtDuration, type ConditionWish, type EventWish } from '../status.js';
import { liftPatch, type AnnotationPatch } from './annotations.js';
import type { RemediationOutcome } from './remediation.js';
import type { Judged, Verdict } from './timeouts.js';

/** What to do about one machine. */
export interface MachineAction {
  machine: string;
  /** Annotation changes for the Machine (merge patch), if any. */
  annotations?: AnnotationPatch;
  /** MachineUpdate whose HealthCheckSucceeded condition to set, and the condition. */
  update?: { name: string; condition: ConditionWish };
  /** Events to record if the condition changes (so they are not repeated on every reconcile or after a restart). */
  eventsOnChange: EventWish[];
  /** Events to record if the annotation patch is applied. */
  eventsOnPatch: EventWish[];
}

/** The one builder of a machine's action: the condition is always HealthCheckSucceeded on its current MachineUpdate. */
function machineAction(
  j: Judged,
  patch: AnnotationPatch | undefined,
  condition: Pick<ConditionWish, 'status' | 'reason' | 'message'>,
  events: { onChange?: EventWish[]; onPatch?: EventWish[] } = {},
): MachineAction {
  return {
    machine: j.m.metadata.name ?? '',
    ...(patch ? { annotations: patch } : {}),
    update: { name: j.u.metadata.name ?? '', condition: { type: ConditionTypes.healthCheckSucceeded, ...condition } },
    eventsOnChange: events.onChange ?? [],
    eventsOnPatch: events.onPatch ?? [],
  };
}

/** A Warning Event on the machine. */
const machineWarning = (j: Judged, reason: string, message: string): EventWish => ({
  on: 'Machine',
  name: j.m.metadata.name ?? '',
  type: 'Warning',
  reason,
  message,
});

// The value of a skip-remediation is shared with the plan controller (it protects as it labels): src/api.
export { protectionNote } from '../../api/index.js';

/**
 * A machine within its timeout: protected from remediation by the annotation alone, which names the MHC, the update
 * and the expiry. The HealthCheckSucceeded condition is written only to replace a non-True verdict written before (a
 * timeout raised since): "within its timeout" repeated on every MachineUpdate said nothing the annotation does not,
 * and its write raced the task controller's status writes. No per-machine Event (the annotation is the record).
 */
export function protectAction(j: Judged, verdict: Extract<Verdict, { kind: 'within' }>, mhcName: string): MachineAction {
  const { expiresAtMs, timeoutMs } = verdict;
  const until = new Date(expiresAtMs).toISOString();
  const uName = j.u.metadata.name ?? '';
  const patch = protectPatch(j.m.metadata.annotations, protectionNote(mhcName, uName, until));
  const action = machineAction(j, patch, {
    status: 'True',
    reason: Reasons.withinInPlaceUpdateTimeout,
    message: `In-place update within its ${fmtDuration(timeoutMs)} timeout (until ${until}); remediation skipped by MachineHealthCheck ${mhcName}`,
  });
  const written = j.u.status?.conditions?.find((c) => c.type === ConditionTypes.healthCheckSucceeded);
  if (written && written.status !== 'True') return action;
  const { update: _none, ...annotationsOnly } = action;
  return annotationsOnly;
}

/** A timed-out or failed machine: protection lifted, and remediation triggered, blocked, or left to its operator. */
export function unhealthyAction(
  j: Judged,
  verdict: Exclude<Verdict, { kind: 'within' }>,
  outcome: RemediationOutcome,
  mhcName: string,
): MachineAction {
  const reason = verdict.kind === 'failed' ? Reasons.inPlaceUpdateFailed : Reasons.inPlaceUpdateTimedOut;
  // The failure text comes from an updater: bounded so the condition and the Events stay within their limits.
  const what =
    verdict.kind === 'failed'
      ? `In-place update failed: ${boundMessage(verdict.message, MessageBudget.status)}`
      : `In-place update exceeded its ${fmtDuration(verdict.timeoutMs)} timeout`;
  const uName = j.u.metadata.name ?? '';
  const annotations = j.m.metadata.annotations;
  switch (outcome.kind) {
    case 'operatorSkips':
      return machineAction(
        j,
        liftPatch(annotations, false),
        {
          status: 'False',
          reason,
          message: `${what}; not remediated: the machine carried ${Annotations.skipRemediation} before the update`,
        },
        {
          onChange: [
            machineWarning(
              j,
              reason,
              `${what}; not remediated because the machine carried ${Annotations.skipRemediation} before the update`,
            ),
          ],
        },
      );
    case 'triggered':
      // The annotation goes on (or stays), protection is lifted; the Event only when the request is new.
      return machineAction(
        j,
        liftPatch(annotations, true),
        { status: 'False', reason, message: `${what}; remediation triggered (${Annotations.remediateMachine})` },
        {
          onPatch: outcome.isNew
            ? [
                machineWarning(
                  j,
                  Reasons.remediationTriggered,
                  `${what} (MachineUpdate ${uName}); set ${Annotations.remediateMachine} for MachineHealthCheck ${mhcName}`,
                ),
              ]
            : [],
        },
      );
    case 'blocked':
      return machineAction(
        j,
        liftPatch(annotations, false),
        { status: 'False', reason, message: `${what}; remediation blocked (${outcome.why})` },
        { onChange: [machineWarning(j, Reasons.remediationBlocked, `${what} (MachineUpdate ${uName}); ${outcome.why}`)] },
      );
  }
}
