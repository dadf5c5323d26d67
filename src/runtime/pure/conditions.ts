// Conditions with Cluster API semantics: lastTransitionTime moves only when the status flips. Pure.
import { CONDITION_MESSAGE_MAX, boundMessage, type Condition } from '../../api/kube.js';

/** What a caller sets; the helper fills lastTransitionTime and observedGeneration. */
export interface ConditionInput {
  type: string;
  status: Condition['status'];
  reason: string;
  message?: string;
}

/** metav1.Time format: RFC 3339 with second precision (`2006-01-02T15:04:05Z`). */
export const toKubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Returns a new conditions list with `input` set: an existing condition of the same type keeps its
 * lastTransitionTime unless the status changes; reason, message and observedGeneration are always updated.
 * A new type is appended. The input list is not modified. The message is cut to the schema's 32 KiB limit.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  observedGeneration: number | undefined,
  now: Date = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === input.type);
  const prev = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    // Last line of defence: one over-long message would make the API server reject the whole status write.
    message: boundMessage(input.message ?? '', CONDITION_MESSAGE_MAX),
    lastTransitionTime: prev && prev.status === input.status ? prev.lastTransitionTime : toKubeTime(now),
  };
  if (observedGeneration !== undefined) next.observedGeneration = observedGeneration;
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

/** Sets a condition on `obj.status.conditions` in place (creating status/conditions as needed). */
export function setStatusCondition(
  obj: { status?: unknown; metadata?: { generation?: number } },
  input: ConditionInput,
  now: Date = new Date(),
): void {
  const status = (obj.status ??= {}) as { conditions?: Condition[] };
  status.conditions = setCondition(status.conditions, input, obj.metadata?.generation, now);
}

/** Returns a new list without the condition `type`. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/** The condition of `type`, if present. */
export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the condition exists with status True. */
export const isTrue = (conditions: readonly Condition[] | undefined, type: string): boolean =>
  getCondition(conditions, type)?.status === 'True';
/** True when the condition exists with status False. */
export const isFalse = (conditions: readonly Condition[] | undefined, type: string): boolean =>
  getCondition(conditions, type)?.status === 'False';
/** True when the condition is missing or Unknown. */
export const isUnknown = (conditions: readonly Condition[] | undefined, type: string): boolean => {
  const c = getCondition(conditions, type);
  return c === undefined || c.status === 'Unknown';
};

/** What kstatus reads: which of Reconciling and Stalled is True (at most one), with its reason and message. */
export interface KstatusVerdict {
  /** `reconciling`: kstatus InProgress; `stalled`: kstatus Failed; `ready`: kstatus Current (Ready=True). */
  state: 'reconciling' | 'stalled' | 'ready';
  reason: string;
  message: string;
}

/**
 * Reconciling and Stalled from a kstatus verdict. kstatus reads them abnormal-true (only True counts); both are written
 * every time, the one not in effect False with the same reason, so that they carry the observedGeneration too.
 */
export function setKstatusConditions(conds: Condition[], v: KstatusVerdict, generation: number | undefined, now: Date): Condition[] {
  const one = (type: string, on: boolean) => ({
    type,
    status: on ? ('True' as const) : ('False' as const),
    reason: v.reason,
    message: on ? v.message : v.state === 'ready' ? `ready (${v.reason})` : `${v.state} (${v.reason})`,
  });
  const out = setCondition(conds, one('Reconciling', v.state === 'reconciling'), generation, now);
  return setCondition(out, one('Stalled', v.state === 'stalled'), generation, now);
}
