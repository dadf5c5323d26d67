// Events of the runtime extension, on the Machine a hook is about (the plan flow records its Events on plans and
// MachineUpdates; here Cluster API drives, so the Machine is where an operator looks). Pure: builds what to record.
import type { UpdateMachineResponse } from './hooks.js';
import type { UpdateStep } from './decide.js';

/** Reasons of the Events the extension records (stable: tools match on them). */
export const Reasons = {
  /** The first UpdateMachine call created the machine's MachineUpdate. */
  inPlaceUpdateStarted: 'InPlaceUpdateStarted',
  /** UpdateMachine answered Done. */
  inPlaceUpdateDone: 'InPlaceUpdateDone',
  /** UpdateMachine answered Failure. */
  inPlaceUpdateFailed: 'InPlaceUpdateFailed',
} as const;

/** The Event to record for an UpdateMachine answer, if it is news (creation, done, failure; not every poll). */
export function updateEvent(
  step: UpdateStep,
  res: UpdateMachineResponse,
): { type: 'Normal' | 'Warning'; reason: string; message: string } | undefined {
  const message = res.message ?? '';
  if (step.kind === 'create') return { type: 'Normal', reason: Reasons.inPlaceUpdateStarted, message };
  if (res.status === 'Failure') return { type: 'Warning', reason: Reasons.inPlaceUpdateFailed, message };
  if (step.kind === 'answer' && res.retryAfterSeconds === 0) return { type: 'Normal', reason: Reasons.inPlaceUpdateDone, message };
  return undefined;
}
