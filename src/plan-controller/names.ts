// Deterministic names and label values derived from plan and machine names. Pure.
import { createHash } from 'node:crypto';

/** Maximum length of an object name (DNS subdomain). */
export const MAX_NAME = 253;
/** Maximum length of a label value. */
export const MAX_LABEL_VALUE = 63;

const shortHash = (s: string): string => createHash('sha256').update(s).digest('hex').slice(0, 10);
// Names and label values must end alphanumeric; a cut can leave a separator at the end.
const trimEnd = (s: string): string => s.replace(/[^a-zA-Z0-9]+$/, '');

/** Shortens `s` to at most `max` characters, keeping it unique by a hash suffix of the full string. */
export function shorten(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${trimEnd(s.slice(0, max - 11))}-${shortHash(s)}`;
}

/**
 * Name of the MachineUpdate of `machine` in `plan`: `<plan>-<machine>`, hashed down to 253 characters when longer.
 * Deterministic so that a restarted controller finds (and never duplicates) the record.
 */
export const machineUpdateName = (plan: string, machine: string): string => shorten(`${plan}-${machine}`, MAX_NAME);

/** A label value for an object name: the name itself when it fits 63 characters, else a hashed prefix. */
export const labelValue = (name: string): string => shorten(name, MAX_LABEL_VALUE);
