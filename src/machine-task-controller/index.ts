// The machine task controller component (docs/design.md §4.2): runs each MachineUpdate's updaters through task CRs,
// one at a time in ascending sequence, and commits the responsibilities when all are updated (contract C8).
//
// MachineUpdate conditions: InPlaceUpdate is True while the update is in progress (reason Updating /
// WaitingForUpdater / Aborting / Committing) and False once terminal (Updated / AlreadyInPlace / Aborted / Failed /
// CommitFailed / CommitRolledBack / CommitRestoreFailed); Ready is True only when the MachineUpdate is updated.
// status.currentUpdater names the updater whose task is in flight, and is cleared once none is. A task with no first
// status from any updater past --unreported-task-timeout (default 2m) gives reason UpdaterNotReporting: nothing fails
// or commits, the message asks whether an updater serving it runs. A task asked to abort that its updater has not ended
// within --abort-grace-period (default 5m; never answered, ignores the abort, or gone) is given up on: the
// MachineUpdate ends aborted with reason AbortTimedOut, so that abort, deletion and supersede of a plan always end.
import type { WritePolicy } from '../api/index.js';
import type { Component, PolicyRule, ProviderResource } from '../runtime/index.js';
import { CONTROLLER_NAME, setupMachineTaskController } from './controller.js';
import { rbacFor } from './rbac.js';

export { rbac, baseRbac, rbacFor, PROVIDER_VERBS, taskKindRules } from './rbac.js';
export { CONTROLLER_NAME, DEFAULT_CONCURRENCY } from './controller.js';
export { DEFAULT_ABORT_GRACE_MS, DEFAULT_UNREPORTED_TASK_MS } from './decide.js';

/** Options of the component. */
export interface MachineTaskControllerOptions {
  /** RBAC rules for third-party task and template kinds (see taskKindRules), added to the component's rules. */
  extraRbac?: PolicyRule[];
  /** The fleet's provider kinds (InfraMachines and BootstrapConfigs are committed to); default DEFAULT_PROVIDERS. */
  providers?: readonly ProviderResource[];
  /** MachineUpdates reconciled in parallel (default DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** The write policy the commit enforces (`inplace run --write-policy`; default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** How long a task may go without a first status before its MachineUpdate says so (`--unreported-task-timeout`). */
  unreportedTaskMs?: number;
  /** How long an updater has to end a task asked to abort before its MachineUpdate gives up on it (`--abort-grace-period`). */
  abortGraceMs?: number;
  /** How often at most a MachineUpdate's status is written for an updater's progress alone (ms; default 5 s). */
  progressWriteIntervalMs?: number;
}

/** The component with extra RBAC for third-party task kinds and its reconcile concurrency. */
export function createMachineTaskController(opts: MachineTaskControllerOptions = {}): Component {
  return {
    name: CONTROLLER_NAME,
    rbac: [...rbacFor(opts.providers), ...(opts.extraRbac ?? [])],
    setup(mgr) {
      setupMachineTaskController(mgr, {
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
        ...(opts.unreportedTaskMs !== undefined ? { unreportedTaskMs: opts.unreportedTaskMs } : {}),
        ...(opts.abortGraceMs !== undefined ? { abortGraceMs: opts.abortGraceMs } : {}),
        ...(opts.progressWriteIntervalMs !== undefined ? { progressWriteIntervalMs: opts.progressWriteIntervalMs } : {}),
      });
    },
  };
}

/** The machine task controller as deployed by default (generic and sample task kinds). */
export const machineTaskController: Component = createMachineTaskController();
