// The one rule for the order updaters run on a machine, shared by the plan controller (which writes a MachineUpdate's
// updaters), the machine task controller (which runs them) and the preview. Pure.

/** The fields the run order reads. */
export interface Sequenced {
  sequence: number;
  name: string;
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Updaters in the order they run on a machine: ascending `sequence`, ties by name (names are unique per target, so
 * the order is total and does not depend on how the list was written).
 */
export function orderedUpdaters<T extends Sequenced>(updaters: readonly T[]): T[] {
  return [...updaters].sort((a, b) => a.sequence - b.sequence || byCodeUnits(a.name, b.name));
}
