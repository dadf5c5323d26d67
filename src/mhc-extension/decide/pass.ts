// Which machines a pass over an MHC looks at: shared by the snapshot (scope.ts keeps them per namespace as the caches
// change) and the decisions (decide.ts), so it sits below both. Pure.
import type { Machine, MachineUpdate } from './objects.js';
import { markedUnhealthy } from './remediation.js';
import { currentUpdateOf, putsInUpdate, updatesByMachine } from './updates.js';

/**
 * A machine a pass looks at: selected and not being deleted, and marked unhealthy (markedUnhealthy) or in update. `u` is
 * its current update when that puts it in update. Every other selected machine only counts towards the budget's base.
 */
export interface PassMachine {
  m: Machine;
  u?: MachineUpdate;
  /** markedUnhealthy(m). */
  marked: boolean;
}

/** The machine as a pass sees it given its MachineUpdates (deleting ones left out), or undefined when a pass need not look at it. */
export function passMachine(m: Machine, mine: readonly MachineUpdate[]): PassMachine | undefined {
  const cur = currentUpdateOf(m, mine);
  const u = cur && putsInUpdate(cur) ? cur : undefined;
  const marked = markedUnhealthy(m);
  return u || marked ? { m, ...(u ? { u } : {}), marked } : undefined;
}

/** The machines among `eligible` (selected, not deleting) a pass looks at, given their namespace's MachineUpdates. */
export function passMachines(eligible: readonly Machine[], updates: readonly MachineUpdate[]): PassMachine[] {
  const byMachine = updatesByMachine(updates);
  const out: PassMachine[] = [];
  for (const m of eligible) {
    const p = passMachine(m, byMachine.get(m.metadata.name ?? '') ?? []);
    if (p) out.push(p);
  }
  return out;
}
