// Deterministic names and label values derived from plan and machine names. Pure.
import { shortenName, toLabelValue } from '../contract/index.js';

/** Maximum length of an object name (DNS subdomain). */
export const MAX_NAME = 253;

/**
 * Name of the MachineUpdate of `machine` in `plan`: `<plan>-<machine>`, hashed down to 253 characters when longer.
 * Deterministic so that a restarted controller finds (and never duplicates) the record.
 */
export const machineUpdateName = (plan: string, machine: string): string => shortenName(`${plan}-${machine}`, MAX_NAME);

/** A label value for an object name: the name itself when it fits 63 characters, else a hashed prefix (the contract's rule). */
export const labelValue = toLabelValue;
