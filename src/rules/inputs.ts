// What the shared rules read and answer: the plan's inputs as looked up (templates, control plane, the pre-start
// check's findings, the alert gate's read), the template references a plan names, and the Event a rule asks for.
// Types and pure helpers only: the plan controller's scope (buildScope), the campaign and the CLI fill them in.
import type { AlertGatePolicy } from '../api/alert-gate-policy.js';
import type { InPlaceUpdatePlan, KubeObject, WritePolicy } from '../api/index.js';
import { parseApiVersion } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { isClusterApiGroup } from '../contract/index.js';

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
  /** Size of the template's spec as JSON, when found and judged. */
  bytes?: number;
  /** Found, but its size and content cannot be judged (contract judgeTemplate): the plan is not valid with it. */
  unjudged?: string;
  /** Not looked up by this caller (a campaign's pre-check): the plan looks it up itself, so absence is no problem here. */
  unchecked?: boolean;
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
  /** The operator's alert-gate policy (`--alert-gate-policy`); absent: none configured, every alert gate is refused. */
  alertGatePolicy?: AlertGatePolicy;
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

/** What reading one object of a kind named at run time (control plane, template) gave. */
export type KindRead =
  /** The kind is served and readable; `object` when the name exists. `bytes` of its spec (templates). */
  | { object?: KubeObject }
  /** The kind is not served by the API server (message from the discovery). */
  | { notServed: string }
  /** The kind is served but could not be read (e.g. not listable: RBAC); the full sentence. */
  | { unreadable: string };

/** One alert as the Prometheus API reports it. */
export interface Alert {
  labels: Record<string, string>;
  state: string;
  activeAt?: string;
}

/** What one query of the alerts endpoint gave. */
export type AlertsResult = { ok: true; alerts: Alert[] } | { ok: false; error: string };

/** What the plan's alert gate read this reconcile: the Secret's problem (`secret`) or the endpoint's answer. */
export type AlertsRead = AlertsResult & {
  secretProblem?: string;
  /** The operator's policy refused the gate: nothing was read or sent (the decision lists these as Valid=False). */
  refused?: string[];
  /** When this was read (RFC 3339): the controller reuses it until ALERTS_POLL_MS later, the decision wakes then. */
  at?: string;
};

/** A Kubernetes Event to record, on this plan unless `plan` names another plan of the namespace. */
export interface PlanEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  plan?: string;
}

const DNS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** True when a template reference has nothing to look up: malformed (validation reports it) or a Cluster API kind. */
export function unlookedTemplate(ref: TemplateRef): boolean {
  const { group } = parseApiVersion(ref.apiVersion ?? '');
  // Malformed references are reported by validation; a Cluster API kind is refused from the reference alone (templates.ts).
  return !group || !/Template$/.test(ref.kind ?? '') || !DNS_NAME.test(ref.name ?? '') || isClusterApiGroup(group);
}

/** The distinct template references of a plan's updaters. */
export function templateRefsOf(plan: InPlaceUpdatePlan): TemplateRef[] {
  const refs = new Map<string, TemplateRef>();
  for (const t of [plan.spec.controlPlane, ...(plan.spec.machineDeployments ?? [])]) {
    for (const u of t?.updaters ?? [])
      if (u.updaterUpdateTemplateRef) refs.set(templateKey(u.updaterUpdateTemplateRef), u.updaterUpdateTemplateRef);
  }
  return [...refs.values()];
}
