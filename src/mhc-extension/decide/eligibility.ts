// Phase 1 of an MHC pass: is this MachineHealthCheck one the extension acts on? It must carry a valid in-place
// update timeout and a remediation trigger CAPI itself would accept; anything else is ignored with a Warning.
import type { Machine } from './objects.js';

// The configuration readers are shared with the plan controller (it protects a machine as it labels it): src/api.
export {
  InvalidTriggerError,
  readMhcConfig,
  readTimeoutAnnotation,
  remediationWindow,
  type MhcConfig,
  type RemediationWindow,
  type TimeoutConfig,
} from '../../api/index.js';

/** Code-unit order of names: deterministic and much cheaper than localeCompare on thousands of machines. */
export const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The machines a pass judges: the selected ones not being deleted, in name order (so the plan is deterministic). */
export const eligibleMachines = (selected: readonly Machine[]): Machine[] =>
  selected.filter((m) => !m.metadata.deletionTimestamp).sort((a, b) => byName(a.metadata.name ?? '', b.metadata.name ?? ''));
