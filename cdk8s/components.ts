// The deployable components and the RBAC each one declares in its own folder (DESIGN §10: cdk8s takes each
// component's RBAC from what that component exports, so a new API call without a rule fails the RBAC test).
import type { PolicyRule } from '../src/runtime/types.js';
import { rbac as planControllerRbac } from '../src/plan-controller/rbac.js';
import { rbac as machineTaskControllerRbac } from '../src/machine-task-controller/rbac.js';
import { rbac as mhcExtensionRbac } from '../src/mhc-extension/rbac.js';

/** A controller component as deployed: one Deployment running `inplace run <name>`. */
export interface DeployedComponent {
  /** Component name, also the `inplace run` argument and the Deployment name. */
  name: string;
  /** Source folder (relative to the project root) whose exported rules the RBAC is built from. */
  folder: string;
  /** One-line description, written as an annotation on the Deployment. */
  description: string;
  /** The rules the component declares (src/<component>/rbac.ts). */
  rbac: PolicyRule[];
}

/** Every controller component, in deployment order. */
export const COMPONENTS: readonly DeployedComponent[] = [
  {
    name: 'plan-controller',
    folder: 'src/plan-controller',
    description: 'Validates InPlaceUpdatePlans, sequences targets and creates MachineUpdates.',
    rbac: planControllerRbac,
  },
  {
    name: 'machine-task-controller',
    folder: 'src/machine-task-controller',
    description: 'Runs the updaters of each MachineUpdate through task CRs and commits the result.',
    rbac: machineTaskControllerRbac,
  },
  {
    name: 'mhc-extension',
    folder: 'src/mhc-extension',
    description: 'Keeps MachineHealthChecks from remediating machines in update; remediates timed-out or failed ones.',
    rbac: mhcExtensionRbac,
  },
];
