// The MHC extension component (docs/design.md §4.3): keeps CAPI's MachineHealthChecks from remediating machines that are
// legitimately down for an in-place update, and triggers remediation when an update exceeds its timeout or fails.
//
// Configuration is the MHC annotation `inplace.cluster.x-k8s.io/in-place-update-timeout` (Go duration). For each
// selected machine in update (a non-terminal or failed MachineUpdate): within the timeout it carries
// `cluster.x-k8s.io/skip-remediation` (prior state kept in `inplace.cluster.x-k8s.io/skip-remediation-prior` and
// restored when the update ends); timed out or failed, the protection is lifted and, budget permitting,
// `cluster.x-k8s.io/remediate-machine` is set. The verdict is the MachineUpdate condition HealthCheckSucceeded
// (WithinInPlaceUpdateTimeout / InPlaceUpdateTimedOut / InPlaceUpdateFailed).
import type { Component } from '../runtime/index.js';
import { CONTROLLER_NAME, setupMhcExtension, type MhcExtensionOptions } from './controller.js';
import { rbac } from './rbac.js';

export { rbac } from './rbac.js';
export { CONTROLLER_NAME, setupMhcExtension, selects, type MhcExtensionOptions } from './controller.js';
export { parseGoDuration, InvalidDurationError } from './duration.js';

/** The component with options (tests inject the clock). */
export function createMhcExtension(opts: MhcExtensionOptions = {}): Component {
  return { name: CONTROLLER_NAME, rbac, setup: (mgr) => setupMhcExtension(mgr, opts) };
}

/** The MHC extension as deployed. */
export const mhcExtension: Component = createMhcExtension();
