// What the MHC extension records: the HealthCheckSucceeded condition on a MachineUpdate (its verdict on the machine)
// and Events on Machines and MachineHealthChecks. Pure except `recordEvents`, which hands Events to the recorder.
import { ConditionTypes, type Condition, type KubeObject } from '../api/index.js';
import { setCondition } from '../runtime/pure/conditions.js';
import type { EventRecorder } from '../runtime/pure/types.js';
import type { MachineUpdate } from './scope.js';

/** A condition the extension wants on a MachineUpdate (lastTransitionTime is filled by the condition helper). */
export type ConditionWish = Pick<Condition, 'type' | 'status' | 'reason'> & { message: string };

/** An Event to record. */
export interface EventWish {
  on: 'Machine' | 'MachineHealthCheck';
  name: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** A duration as operators write it in the annotation (`1h0m0s`, `2s`, `500ms`), for messages. */
export const fmtDuration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const min = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return `${h ? `${h}h` : ''}${h || min ? `${min}m` : ''}${sec}s`;
};

/** True when the MachineUpdate already carries exactly this condition (so writing it, and its Events, would repeat). */
export function conditionRecorded(u: MachineUpdate, wish: ConditionWish): boolean {
  const cur = u.status?.conditions?.find((c) => c.type === wish.type);
  return !!cur && cur.status === wish.status && cur.reason === wish.reason && (cur.message ?? '') === wish.message;
}

/** Sets the extension's HealthCheckSucceeded verdict on a (mutable) MachineUpdate; other conditions are kept. */
export function setHealthCheckSucceededCondition(u: MachineUpdate, wish: ConditionWish, now: Date): void {
  if (wish.type !== ConditionTypes.healthCheckSucceeded)
    throw new Error(`the MHC extension sets only ${ConditionTypes.healthCheckSucceeded}, not ${wish.type}`);
  u.status = {
    ...(u.status ?? {}),
    conditions: setCondition(u.status?.conditions, wish, u.metadata.generation, now),
  } as MachineUpdate['status'];
}

/** Records the Events meant for `on` (a Machine's or the MHC's own) against that object. */
export function recordEvents(recorder: EventRecorder, obj: KubeObject, on: EventWish['on'], events: readonly EventWish[]): void {
  for (const e of events) if (e.on === on) recorder.event(obj, e.type, e.reason, e.message);
}
