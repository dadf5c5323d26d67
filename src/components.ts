// The one list of the platform's controller components: what `inplace run` starts and what the manifests (cdk8s)
// deploy, one Deployment each. A component is added here once; the CLI and the charts derive everything from it.
// Only each component's rbac.ts is imported eagerly (pure data); the component itself is loaded on demand, so
// reading the list (e.g. to synthesize manifests) does not load the controllers or the API client.
import type { AlertGatePolicy, WritePolicy } from './api/index.js';
import type { ProviderVerbs } from './runtime/rbac.js';
import type { Component, PolicyRule } from './runtime/pure/types.js';
import * as planControllerRbac from './plan-controller/rbac.js';
import * as machineTaskControllerRbac from './machine-task-controller/rbac.js';
import * as mhcExtensionRbac from './mhc-extension/rbac.js';
import * as runtimeExtensionRbac from './runtime-extension/rbac.js';
import * as campaignControllerRbac from './campaign-controller/rbac.js';

/** Settings from `run`'s flags that a component may take (see ComponentSpec.takes). */
export interface ComponentRunOptions {
  /** Keys reconciled in parallel (`--concurrency`). */
  concurrency?: number;
  /** The write policy (`--write-policy`). */
  writePolicy?: WritePolicy;
  /** Which alert endpoints and Secrets alert gates may use (`--alert-gate-policy`). */
  alertGatePolicy?: AlertGatePolicy;
  /** Finished plans per cluster that keep their MachineUpdates and tasks (`--finished-plans-per-cluster`). */
  finishedPlansPerCluster?: number;
  /** Delete user-applied plans beyond that limit too (`--prune-finished-plans`). */
  pruneFinishedPlans?: boolean;
  /** HTTPS port of the runtime extension (`--extension-port`). */
  extensionPort?: number;
  /** Directory with the runtime extension's tls.crt/tls.key (`--cert-dir`). */
  certDir?: string;
  /** Address servers listen on (`--bind-address`; every component's metrics and health servers take it too). */
  bindAddress?: string;
  /** How long a task may go without a first status before its MachineUpdate says so (`--unreported-task-timeout`, ms). */
  unreportedTaskMs?: number;
  /** How long an updater has to end a task asked to abort before its MachineUpdate gives up on it (`--abort-grace-period`, ms). */
  abortGraceMs?: number;
}

/** A run option a component accepts: `inplace run` refuses a flag no named component takes. */
export type ComponentOption = keyof ComponentRunOptions;

/** A controller component: one Deployment running `inplace run <name>`. */
export interface ComponentSpec {
  /** Component name: the `inplace run` argument, the Deployment name (`inplace-<name>`) and the controller's name. */
  name: string;
  /** Source folder (relative to the project root) whose rbac.ts the RBAC is built from. */
  folder: string;
  /** One-line description, written as an annotation on the Deployment. */
  description: string;
  /** The rules the component declares with the default providers (src/<component>/rbac.ts `rbac`). */
  rbac: PolicyRule[];
  /** The rules that do not depend on the providers. */
  baseRbac: PolicyRule[];
  /** The verbs it needs per provider role (empty when it touches no provider kind). */
  providerVerbs: ProviderVerbs;
  /** The run options it takes. */
  takes: readonly ComponentOption[];
  /** True when `inplace run` without component names leaves it out (it needs a port and a certificate of its own). */
  optIn?: boolean;
  /** Loads the component (without options: as deployed by default). */
  load(opts?: ComponentRunOptions): Promise<Component>;
}

/** Every controller component, in deployment order. */
export const COMPONENTS: readonly ComponentSpec[] = [
  {
    name: 'plan-controller',
    folder: 'src/plan-controller',
    description: 'Validates InPlaceUpdatePlans, sequences targets and creates MachineUpdates.',
    rbac: planControllerRbac.rbac,
    baseRbac: planControllerRbac.baseRbac,
    providerVerbs: planControllerRbac.PROVIDER_VERBS,
    takes: ['writePolicy', 'alertGatePolicy', 'finishedPlansPerCluster', 'pruneFinishedPlans'],
    load: async (opts = {}) => {
      const m = await import('./plan-controller/index.js');
      if (!opts.writePolicy && !opts.alertGatePolicy && opts.finishedPlansPerCluster === undefined && !opts.pruneFinishedPlans)
        return m.planController;
      return m.createPlanController({
        ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
        ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
        ...(opts.finishedPlansPerCluster !== undefined ? { finishedPlansPerCluster: opts.finishedPlansPerCluster } : {}),
        ...(opts.pruneFinishedPlans ? { pruneFinishedPlans: true } : {}),
      });
    },
  },
  {
    name: 'campaign-controller',
    folder: 'src/campaign-controller',
    description: 'Rolls InPlaceUpdateCampaigns over many Clusters: one plan per cluster, canaries, waves, failure budget.',
    rbac: campaignControllerRbac.rbac,
    baseRbac: campaignControllerRbac.baseRbac,
    providerVerbs: campaignControllerRbac.PROVIDER_VERBS,
    takes: ['alertGatePolicy'],
    load: async (opts = {}) => {
      const m = await import('./campaign-controller/index.js');
      return opts.alertGatePolicy ? m.createCampaignController({ alertGatePolicy: opts.alertGatePolicy }) : m.campaignController;
    },
  },
  {
    name: 'machine-task-controller',
    folder: 'src/machine-task-controller',
    description: 'Runs the updaters of each MachineUpdate through task CRs and commits the result.',
    rbac: machineTaskControllerRbac.rbac,
    baseRbac: machineTaskControllerRbac.baseRbac,
    providerVerbs: machineTaskControllerRbac.PROVIDER_VERBS,
    takes: ['concurrency', 'writePolicy', 'unreportedTaskMs', 'abortGraceMs'],
    load: async (opts = {}) => {
      const m = await import('./machine-task-controller/index.js');
      if (opts.concurrency === undefined && !opts.writePolicy && opts.unreportedTaskMs === undefined && opts.abortGraceMs === undefined)
        return m.machineTaskController;
      return m.createMachineTaskController({
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
        ...(opts.unreportedTaskMs !== undefined ? { unreportedTaskMs: opts.unreportedTaskMs } : {}),
        ...(opts.abortGraceMs !== undefined ? { abortGraceMs: opts.abortGraceMs } : {}),
      });
    },
  },
  {
    name: 'mhc-extension',
    folder: 'src/mhc-extension',
    description: 'Keeps MachineHealthChecks from remediating machines in update; remediates timed-out or failed ones.',
    rbac: mhcExtensionRbac.rbac,
    baseRbac: mhcExtensionRbac.rbac,
    providerVerbs: {},
    takes: [],
    load: async () => (await import('./mhc-extension/index.js')).mhcExtension,
  },
  {
    name: 'runtime-extension',
    folder: 'src/runtime-extension',
    description: "Serves Cluster API's in-place update hooks (CanUpdateMachine, CanUpdateMachineSet, UpdateMachine) from the updaters.",
    rbac: runtimeExtensionRbac.rbac,
    baseRbac: runtimeExtensionRbac.baseRbac,
    providerVerbs: runtimeExtensionRbac.PROVIDER_VERBS,
    takes: ['extensionPort', 'certDir'],
    optIn: true,
    load: async (opts = {}) => {
      const m = await import('./runtime-extension/index.js');
      if (opts.extensionPort === undefined && !opts.certDir && !opts.bindAddress) return m.runtimeExtension;
      return m.createRuntimeExtension({
        ...(opts.extensionPort !== undefined ? { port: opts.extensionPort } : {}),
        ...(opts.certDir ? { certDir: opts.certDir } : {}),
        ...(opts.bindAddress ? { bindAddress: opts.bindAddress } : {}),
      });
    },
  },
];

/** The names of the components that take `option`, in deployment order. */
export const componentsTaking = (option: ComponentOption): string[] =>
  COMPONENTS.filter((c) => c.takes.includes(option)).map((c) => c.name);
