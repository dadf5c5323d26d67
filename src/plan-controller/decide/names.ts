// Deterministic names and label values derived from plan and machine names. Pure.
import { createHash } from 'node:crypto';
import { shortenName, toLabelValue } from '../../contract/index.js';

/** Maximum length of an object name (DNS subdomain). */
export const MAX_NAME = 253;

/**
 * Name of the MachineUpdate of `machine` in `plan`: `<plan>-<machine>-<hash of the pair>`, hashed down to 253
 * characters when longer. The hash keeps it unique per (plan, machine) whatever the names (plan `p` with machine
 * `c1-md-a-0` and plan `p-c1` with machine `md-a-0` would otherwise meet); deterministic so that a restarted controller
 * finds (and never duplicates) the record.
 */
export const machineUpdateName = (plan: string, machine: string): string => {
  const pair = `${plan}/${machine}`;
  return shortenName(`${plan}-${machine}-${createHash('sha256').update(pair).digest('hex').slice(0, 8)}`, MAX_NAME, pair);
};

/** A label value for an object name: the name itself when it fits 63 characters, else a hashed prefix (the contract's rule). */
export const labelValue = toLabelValue;
