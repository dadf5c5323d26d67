// The typed snapshot a plan reconcile decides from and where it is read from (ScopeReader). Its one builder
// (snapshot/build-scope.ts buildScope), shared by the plan controller (informer stores) and `inplace preview`
// (get/list), is re-exported here: both read through a ScopeReader, neither imports the other.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import type { AlertsRead, KindRead, ValidationInput } from '../rules/inputs.js';

// `inplace preview -f campaign.yaml` (src/cli) still names the plan's scope for this rule; its home is src/rules.

/** Everything a reconcile of one plan decides from. */
export interface PlanSnapshot extends ValidationInput {
  /** The current time (RFC 3339); the only clock decisions see. */
  now: string;
  /** Machines of the plan's cluster (label cluster.x-k8s.io/cluster-name), deleting ones included. */
  machines: KubeObject[];
  /** MachineUpdates owned by this plan. */
  machineUpdates: MachineUpdate[];
  /** Every plan of the same cluster in the namespace, this one included. */
  plans: InPlaceUpdatePlan[];
  /**
   * Machines without a MachineUpdate of this plan whose objects already carry every value of their target (at-target.ts);
   * absent when not computed (spec.rerunMachinesAtTarget, a terminal plan).
   */
  atTarget?: string[];
  /**
   * The InfraMachines / BootstrapConfigs the at-target check read (the informer caches), for the values new
   * MachineUpdates record in spec.previous; absent when that check did not run.
   */
  refObjects?: (namespace: string, ref: ContractRef) => KubeObject | undefined;
  /** What spec.alertGate's endpoint answered this reconcile (alerts.ts); absent when the plan has no alert gate. */
  alerts?: AlertsRead;
}

/**
 * Where a plan's snapshot is read from: the plan controller's informer stores, or `inplace preview`'s get/list calls.
 * No client types: each caller adapts its own reads.
 */
export interface ScopeReader {
  /** The current time (RFC 3339). */
  now(): string;
  /** The Cluster of the plan. */
  cluster(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** The MachineDeployments of the namespace with these names (those that exist). */
  machineDeployments(namespace: string, names: readonly string[]): Promise<KubeObject[]>;
  /** Machines labelled with the cluster's name. */
  machines(namespace: string, clusterName: string): Promise<KubeObject[]>;
  /** MachineUpdates carrying the plan-name label value (the builder keeps only the plan's own). */
  machineUpdates(namespace: string, planLabel: string): Promise<MachineUpdate[]>;
  /** Every plan of the namespace for the cluster. */
  plans(namespace: string, clusterName: string): Promise<InPlaceUpdatePlan[]>;
  /** One object of a kind named at run time; `purpose` lets the reader route events (controller watches). */
  read(namespace: string, apiGroup: string, kind: string, name: string, purpose: 'controlPlane' | 'template'): Promise<KindRead>;
  /** The CRD of a task kind (undefined: not served or no CRD). */
  taskCrd(group: string, kind: string): Promise<KubeObject | undefined>;
}

/** ownMachineUpdates' last input and answer for one plan, with each input position's place in the answer (-1: not kept). */
export interface OwnFilterMemo {
  last?: {
    name: string;
    uid: string;
    input: readonly MachineUpdate[];
    out: readonly MachineUpdate[];
    at: Int32Array;
    /** When `out` was patched from `base` (the answer before): the positions in `out` holding new objects, ascending. */
    base?: readonly MachineUpdate[];
    changed?: readonly number[];
  };
}

export { buildScope, ownedBy, ownMachineUpdates } from './snapshot/build-scope.js';
