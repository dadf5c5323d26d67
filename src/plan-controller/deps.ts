// What the plan controller's phases are given (built once in setupPlanController): the client, the informer stores,
// the metrics, the operator's policies, the fleet-wide caches (keyed by kind) and the per-plan states (one object per
// plan, snapshot/plan-state.ts). Types only: every phase module may import it.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, WritePolicy } from '../api/index.js';
import type { AlertGatePolicy } from '../api/alert-gate-policy.js';
import type { Controller, KubeClient, Manager, Store } from '../runtime/pure/types.js';
import type { PlanMetrics } from './metrics.js';
import type { PlanStates } from './snapshot/plan-state.js';
import type { ReconcileTiming } from './timing.js';
import type { ClusterScopes } from './snapshot/cluster-scopes.js';

/** Built once in setup; what reconcile and its phases need. */
export interface PlanDeps {
  mgr: Manager;
  client: KubeClient;
  ctrl: () => Controller;
  plans: Store<InPlaceUpdatePlan & KubeObject>;
  /** MachineUpdates: of the clusters `scopes` holds when set (else every one). */
  machineUpdates: Store<MachineUpdate & KubeObject>;
  /** Machines: of the clusters `scopes` holds when set (else every one). */
  machines: Store;
  /**
   * The per-cluster caches (snapshot/cluster-scopes.ts) behind machines, machineUpdates and the kinds machines
   * reference; absent in tests that build deps over whole stores.
   */
  scopes?: ClusterScopes;
  machineDeployments: Store;
  /** MachineSets (owner alignment reads the ones owning a target's machines from here). */
  machineSets: Store;
  /**
   * MachineHealthChecks: the label patch that starts a machine's update also protects it from remediation when one the
   * MHC extension acts on selects it (decide/label.ts). Read at the start only: MHC events wake no plan.
   */
  mhcs?: Store;
  clusters: Store;
  metrics: PlanMetrics;
  /** Everything kept per plan between reconciles, one object per plan key (created and dropped in one place). */
  states: PlanStates;
  /** Task kinds' CRDs as last looked up, by kind.group (snapshot/reader.ts lookupTaskCrd): fleet-wide, one per kind. */
  taskCrds: Map<string, { crd?: KubeObject; at: number }>;
  /** Provider kinds (Kind.group) whose informer could not be started, with when: not waited for again until REF_KIND_RETRY_MS. */
  refKindFailures: Map<string, number>;
  /** The write policy plans are validated against (`--write-policy`). */
  writePolicy?: WritePolicy;
  /** The operator's alert-gate policy (`--alert-gate-policy`); absent: every alert gate is refused. */
  alertGatePolicy?: AlertGatePolicy;
  /** The reconcile cycle's clock (timing.ts); none in tests that build deps by hand. */
  timing?: ReconcileTiming;
}
