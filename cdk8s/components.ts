// The deployable components and the RBAC each one declares in its own folder (docs/design.md §10: cdk8s takes each
// component's RBAC from what that component exports, so a new API call without a rule fails the RBAC test).
// Rules on provider kinds (InfraMachine, BootstrapConfig, control plane, their templates) are not fixed: each
// component declares the verbs it needs per provider role and the deployment supplies the provider list.
import type { PolicyRule } from '../src/runtime/types.js';
import type { ProviderVerbs } from '../src/runtime/rbac.js';
import { baseRbac as planControllerBase, PROVIDER_VERBS as planControllerProviderVerbs, rbac as planControllerRbac } from '../src/plan-controller/rbac.js';
import {
  baseRbac as machineTaskControllerBase,
  PROVIDER_VERBS as machineTaskControllerProviderVerbs,
  rbac as machineTaskControllerRbac,
} from '../src/machine-task-controller/rbac.js';
import { rbac as mhcExtensionRbac } from '../src/mhc-extension/rbac.js';

/** A controller component as deployed: one Deployment running `inplace run <name>`. */
export interface DeployedComponent {
  /** Component name, also the `inplace run` argument and the Deployment name. */
  name: string;
  /** Source folder (relative to the project root) whose exported rules the RBAC is built from. */
  folder: string;
  /** One-line description, written as an annotation on the Deployment. */
  description: string;
  /** The rules the component declares with the default providers (src/<component>/rbac.ts `rbac`). */
  rbac: PolicyRule[];
  /** The rules that do not depend on the providers. */
  baseRbac: PolicyRule[];
  /** The verbs it needs per provider role (empty when it touches no provider kind). */
  providerVerbs: ProviderVerbs;
}

/** Every controller component, in deployment order. */
export const COMPONENTS: readonly DeployedComponent[] = [
  {
    name: 'plan-controller',
    folder: 'src/plan-controller',
    description: 'Validates InPlaceUpdatePlans, sequences targets and creates MachineUpdates.',
    rbac: planControllerRbac,
    baseRbac: planControllerBase,
    providerVerbs: planControllerProviderVerbs,
  },
  {
    name: 'machine-task-controller',
    folder: 'src/machine-task-controller',
    description: 'Runs the updaters of each MachineUpdate through task CRs and commits the result.',
    rbac: machineTaskControllerRbac,
    baseRbac: machineTaskControllerBase,
    providerVerbs: machineTaskControllerProviderVerbs,
  },
  {
    name: 'mhc-extension',
    folder: 'src/mhc-extension',
    description: 'Keeps MachineHealthChecks from remediating machines in update; remediates timed-out or failed ones.',
    rbac: mhcExtensionRbac,
    baseRbac: mhcExtensionRbac,
    providerVerbs: {},
  },
];
