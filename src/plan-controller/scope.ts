// The typed snapshot a plan reconcile decides from: everything read from the informer stores, nothing else. Pure types.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, WritePolicy } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';

/** A template reference as written in a plan (apiVersion, kind, name; always in the plan's namespace). */
export interface TemplateRef {
  apiVersion: string;
  kind: string;
  name: string;
}

/** Whether a referenced template was found in the plan's namespace (`error` says why the lookup failed, e.g. kind not served). */
export interface TemplateLookup {
  ref: TemplateRef;
  found: boolean;
  error?: string;
  /** The task kind's CRD as looked up (crd absent: no CRD), when the lookup got that far. */
  task?: { crd?: KubeObject };
  /** Size of the template's spec as JSON, when found. */
  bytes?: number;
}

/** Stable key of a template reference. */
export const templateKey = (r: TemplateRef): string => `${r.apiVersion}/${r.kind}/${r.name}`;

/** The control plane the plan names, resolved through Cluster.spec.controlPlaneRef (KubeadmControlPlane when the cluster has none). */
export interface ControlPlaneLookup {
  /** The kind the cluster's controlPlaneRef names (or KubeadmControlPlane). */
  kind: Pick<ContractRef, 'apiGroup' | 'kind'>;
  /** The object, when found. */
  object?: KubeObject;
  /** Why it could not be looked up (kind not served, ...), when that is the case. */
  error?: string;
}

/** The inputs of validation: the plan and the objects it names. */
export interface ValidationInput {
  plan: InPlaceUpdatePlan;
  /** The Cluster named by spec.clusterName in the plan's namespace, when it exists. */
  cluster: KubeObject | undefined;
  /** The control plane, when the plan names one. */
  controlPlane?: ControlPlaneLookup;
  /** MachineDeployments of the plan's namespace (at least every one the plan names that exists). */
  machineDeployments: KubeObject[];
  /** One lookup per distinct template reference of the plan. */
  templates: TemplateLookup[];
  /** Machines of the plan's cluster (the upgrade rules compare versions with them); absent = those rules are skipped. */
  machines?: KubeObject[];
  /** The write policy responsibilities must pass (default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** The pre-start check of this plan generation (dry-run of the commit, uncovered changes), when it ran. */
  prestart?: PrestartResult;
}

/** What the pre-start check found (computed with I/O once per plan generation, before any machine starts). */
export interface PrestartResult {
  /** The plan generation checked. */
  generation: number;
  /** Values the target schema rejects (4xx), prunes or defaults away, per the server's dry-run of the commit patch. */
  schemaProblems: string[];
  /** Changes the owners want that no updater covers (refused unless spec.acceptUncoveredChanges). */
  uncovered: string[];
}

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
}
