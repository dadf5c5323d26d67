// bench/decide-cpu.ts
import { performance } from "node:perf_hooks";

// src/api/message.ts
var CONDITION_MESSAGE_MAX = 32768;
var MessageBudget = {
  /** A condition message: well under the 32 KiB limit so that several conditions still fit one object. */
  condition: 8192,
  /** A status.message or one status.targets[] row message. */
  status: 4096,
  /** An Event message: kube's events.k8s.io note is limited to 1 KiB. */
  event: 1024,
  /** One item of a summarised list (a name, or `machine: why`). */
  item: 512
};
var utf8 = new TextEncoder();
var byteLength = (s) => utf8.encode(s).length;
function prefixBytes(s, maxBytes) {
  if (maxBytes <= 0) return "";
  if (s.length * 3 <= maxBytes) return s;
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    const n = cp < 128 ? 1 : cp < 2048 ? 2 : cp < 65536 ? 3 : 4;
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return s.slice(0, end);
}
function boundMessage(message, maxBytes = MessageBudget.condition) {
  if (message.length * 3 <= maxBytes) return message;
  const total2 = byteLength(message);
  if (total2 <= maxBytes) return message;
  const suffixFor = (rest) => `... (${rest} more bytes)`;
  const room = maxBytes - byteLength(suffixFor(total2));
  if (room <= 0) return prefixBytes(message, maxBytes);
  const kept = prefixBytes(message, room);
  return `${kept}${suffixFor(total2 - byteLength(kept))}`;
}
function summarizeList(items, opts = {}) {
  const maxBytes = opts.maxBytes ?? MessageBudget.condition;
  const itemMax = Math.min(opts.itemMaxBytes ?? MessageBudget.item, maxBytes);
  const sep = opts.separator ?? "; ";
  const sepBytes = byteLength(sep);
  const more = (n) => `${sep}... and ${n} more`;
  const parts = [];
  let used = 0;
  for (let i = 0; i < items.length; i++) {
    const item = boundMessage(items[i], itemMax);
    const cost = (parts.length ? sepBytes : 0) + byteLength(item);
    const left = items.length - i - 1;
    const tail = left > 0 ? byteLength(more(left)) : 0;
    if (used + cost + tail > maxBytes) {
      if (parts.length === 0) {
        const tailNow = byteLength(more(items.length - 1));
        parts.push(boundMessage(item, Math.max(0, maxBytes - tailNow)));
        return boundMessage(`${parts[0]}${items.length > 1 ? more(items.length - 1) : ""}`, maxBytes);
      }
      return `${parts.join(sep)}${more(items.length - i)}`;
    }
    parts.push(item);
    used += cost;
  }
  return parts.join(sep);
}

// src/api/kube.ts
var namespacedResource = (group, version, plural, kind) => ({
  group,
  version,
  plural,
  kind,
  namespaced: true
});
var Secrets = namespacedResource("", "v1", "secrets", "Secret");
var ConfigMaps = namespacedResource("", "v1", "configmaps", "ConfigMap");
var Events = namespacedResource("", "v1", "events", "Event");
var EventsV1 = namespacedResource("events.k8s.io", "v1", "events", "Event");
var Leases = namespacedResource("coordination.k8s.io", "v1", "leases", "Lease");
var parseApiVersion = (apiVersion) => {
  const i = apiVersion.indexOf("/");
  return i < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
};

// src/api/constants.ts
var GROUP = "inplace.cluster.x-k8s.io";
var VERSION = "v1alpha1";
var API_VERSION = `${GROUP}/${VERSION}`;
var SAMPLES_GROUP = `samples.${GROUP}`;
var Labels = {
  /** CAPI: the cluster a Machine (and every task) belongs to. Contract C1. */
  clusterName: "cluster.x-k8s.io/cluster-name",
  /** CAPI: present (empty value) on control-plane machines. */
  controlPlane: "cluster.x-k8s.io/control-plane",
  /** CAPI: name of the control plane owning a machine. */
  controlPlaneName: "cluster.x-k8s.io/control-plane-name",
  /** CAPI: name of the MachineDeployment owning a machine. */
  deploymentName: "cluster.x-k8s.io/deployment-name",
  /** CAPI: name of the MachineSet owning a machine. */
  setName: "cluster.x-k8s.io/set-name",
  /** Plan a Machine is being updated by (present only while in update), and plan of a task / MachineUpdate. Contract C1. */
  planName: `${GROUP}/plan-name`,
  /** Machine a MachineUpdate or task is for. Contract C1. */
  machineName: `${GROUP}/machine-name`,
  /** Updater a task is for; generic-kind updaters select on it. Contract C1. */
  updaterName: `${GROUP}/updater-name`,
  /** Target (control plane or MachineDeployment) name of a MachineUpdate. */
  targetName: `${GROUP}/target-name`,
  /** Who asked for a MachineUpdate that no plan owns: `runtime-extension` (Cluster API's UpdateMachine hook). */
  requestedBy: `${GROUP}/requested-by`
};
var Annotations = {
  /** On a Machine in update: when its update started (RFC 3339). Removed when the MachineUpdate is terminal. */
  updateStartedAt: `${GROUP}/update-started-at`,
  /** On a MachineHealthCheck: the in-place update timeout (Go duration, e.g. 30m). Configures the MHC extension. */
  inPlaceUpdateTimeout: `${GROUP}/in-place-update-timeout`,
  /** On a Machine: records whether skip-remediation was present before the MHC extension set it ("true"/"false"). */
  skipRemediationPrior: `${GROUP}/skip-remediation-prior`,
  /** On a MachineDeployment: the replica count before the plan surged it by one (maxUnavailable 0). */
  surgeOriginalReplicas: `${GROUP}/surge-original-replicas`,
  /** On a MachineDeployment: the plan that surged it. */
  surgePlan: `${GROUP}/surge-plan`,
  /** CAPI: the MHC skips remediation of a machine carrying it. */
  skipRemediation: "cluster.x-k8s.io/skip-remediation",
  /** CAPI: manual remediation trigger; the MHC marks the machine unhealthy and remediates it. */
  remediateMachine: "cluster.x-k8s.io/remediate-machine",
  /** CAPI: pauses reconciliation of an object. */
  paused: "cluster.x-k8s.io/paused",
  /** CAPI (InPlaceUpdates): on a Machine (and its infra/bootstrap objects) while Cluster API updates it in place. */
  capiUpdateInProgress: "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
};
var Finalizers = {
  /** On an InPlaceUpdatePlan: deletion aborts the plan first and completes once every machine is terminal. */
  plan: `${GROUP}/plan`
};
var ConditionTypes = {
  /** Plan: the spec passed validation (False lists every problem). */
  valid: "Valid",
  /** Plan: the control-plane target's rollout. */
  controlPlaneUpdate: "ControlPlaneUpdate",
  /** Plan: the MachineDeployment targets' rollout. */
  machineDeploymentUpdate: "MachineDeploymentUpdate",
  /** Plan / MachineUpdate / task: True once the object reached `updated`; usable with `kubectl wait --for=condition=Ready`. */
  ready: "Ready",
  /** Plan: spec.paused is set. */
  paused: "Paused",
  /**
   * Plan: True once the plan failed (reason Failed) or ended invalid before starting (reason Invalid, final for its
   * generation); usable with `kubectl wait --for=condition=Failed`. False carries the Ready reason.
   */
  failed: "Failed",
  /** MachineUpdate: progress of the in-place update of this machine. */
  inPlaceUpdate: "InPlaceUpdate",
  /** MachineUpdate: the MHC extension's health verdict for a machine in update. */
  healthCheckSucceeded: "HealthCheckSucceeded"
};
var Reasons = {
  valid: "Valid",
  invalid: "Invalid",
  superseded: "Superseded",
  waitingForPreviousPlan: "WaitingForPreviousPlan",
  waitingForSequence: "WaitingForSequence",
  pending: "Pending",
  updating: "Updating",
  updated: "Updated",
  aborting: "Aborting",
  aborted: "Aborted",
  failed: "Failed",
  halted: "Halted",
  paused: "Paused",
  notPaused: "NotPaused",
  /** Plan: outside every spec.maintenanceWindows window, no new machine starts. */
  waitingForMaintenanceWindow: "WaitingForMaintenanceWindow",
  /** Plan: an alert matching spec.alertGate fires, or its endpoint cannot be read: no new machine starts. */
  waitingForAlerts: "WaitingForAlerts",
  /** Plan: machines still in update when a window closed were aborted (spec.maintenanceWindowEnd Abort). */
  maintenanceWindowEnded: "MaintenanceWindowEnded",
  deleting: "Deleting",
  preflightFailed: "PreflightFailed",
  surging: "Surging",
  onDeleteStrategy: "OnDeleteStrategy",
  noTarget: "NoTarget",
  committing: "Committing",
  commitFailed: "CommitFailed",
  taskCreateFailed: "TaskCreateFailed",
  templateNotFound: "TemplateNotFound",
  machineNotFound: "MachineNotFound",
  waitingForUpdater: "WaitingForUpdater",
  /** MachineUpdate: a task got no first status from any updater within the machine task controller's limit. */
  updaterNotReporting: "UpdaterNotReporting",
  inPlaceUpdateTimedOut: "InPlaceUpdateTimedOut",
  inPlaceUpdateFailed: "InPlaceUpdateFailed",
  withinInPlaceUpdateTimeout: "WithinInPlaceUpdateTimeout",
  remediationBlocked: "RemediationBlocked",
  remediationTriggered: "RemediationTriggered",
  /** Event on a MachineUpdate: the task of an updater was created. */
  taskCreated: "TaskCreated",
  /** A commit failed after a write and every written object was restored (C8). */
  commitRolledBack: "CommitRolledBack",
  /** A commit failed and a written object could not be restored: operator action needed (C8). */
  commitRestoreFailed: "CommitRestoreFailed",
  /** A MachineUpdate not controlled by an existing plan that labelled its machine: never acted on. */
  notOwnedByPlan: "NotOwnedByPlan",
  /** A template's task kind does not declare the updater contract, or is a Cluster API kind. */
  taskKindRefused: "TaskKindRefused",
  /** A MachineUpdate ended updated with every value already on the objects: verified, nothing written. */
  alreadyInPlace: "AlreadyInPlace"
};
var UpdateStatus = {
  pending: "pending",
  updating: "updating",
  updated: "updated",
  aborting: "aborting",
  aborted: "aborted",
  failed: "failed"
};
var TERMINAL_STATUSES = [UpdateStatus.updated, UpdateStatus.aborted, UpdateStatus.failed];
var isTerminal = (s) => s !== void 0 && TERMINAL_STATUSES.includes(s);
var UpdatePhase = { updating: "updating", aborting: "aborting" };
var PlanAnnotations = {
  /** On an InPlaceUpdatePlan moved to `aborting` because a newer plan of the same cluster superseded it: the newer plan's name. */
  supersededBy: `${GROUP}/superseded-by`
};
var PlanEventReasons = {
  /** The plan passed validation and started (or resumed from pending). */
  started: "PlanStarted",
  /** The plan failed validation; the message lists every problem. */
  invalid: "PlanInvalid",
  /** The plan waits until an older plan of the same cluster is terminal. */
  waiting: "WaitingForPreviousPlan",
  /** This plan moved an older plan of the same cluster to aborting. */
  superseding: "SupersedingPlan",
  /** This plan was moved to aborting by a newer plan of the same cluster. */
  superseded: "Superseded",
  /** A target (control plane / MachineDeployment) started. */
  targetStarted: "TargetStarted",
  /** Every current machine of a target is updated. */
  targetUpdated: "TargetUpdated",
  /** A target failed (Halt after a failure, or Continue with failures once every machine is done). */
  targetFailed: "TargetFailed",
  /** The update of a machine started (a MachineUpdate was created). */
  machineUpdateStarted: "MachineUpdateStarted",
  /** Machines whose objects already carried every value of the plan were counted as updated without running updaters. */
  alreadyAtTarget: "MachinesAlreadyAtTarget",
  /** A MachineDeployment was scaled up by one for maxUnavailable 0. */
  surged: "Surged",
  /** A surged MachineDeployment's replica count was restored. */
  surgeRestored: "SurgeRestored",
  /** The plan is aborting. */
  aborting: "PlanAborting",
  /** The plan ended aborted. */
  aborted: "PlanAborted",
  /** The plan ended updated. */
  completed: "PlanCompleted",
  /** The plan ended failed. */
  failed: "PlanFailed",
  /** The plan was paused. */
  paused: "PlanPaused",
  /** The plan was resumed. */
  resumed: "PlanResumed",
  /** spec.alertGate started holding the plan (an alert fires, or the endpoint cannot be read). */
  alertGateHolding: "AlertGateHolding",
  /** spec.alertGate no longer holds the plan. */
  alertGateCleared: "AlertGateCleared",
  /** spec.alertGate held the plan longer than its holdTimeout: the plan halts. */
  alertGateHalted: "AlertGateHalted",
  /** A maintenance window of the plan opened: machines may start. */
  windowOpened: "MaintenanceWindowOpened",
  /** A maintenance window of the plan closed (or the plan first saw it closed): no new machine starts. */
  windowClosed: "MaintenanceWindowClosed",
  /** On the newest finished plan of a cluster: finished plans were deleted (their TTL, plan pruning, or their campaign). */
  pruned: "PlansPruned",
  /** On a finished plan beyond the history limit: its MachineUpdates and tasks were deleted; the plan and its status stay. */
  machineUpdatesPruned: "MachineUpdatesPruned"
};
var CampaignLabels = {
  /** On a campaign's plan: the campaign's name. */
  campaign: `${GROUP}/campaign-name`,
  /** On a campaign's plan: the wave it was started in (0 = the canaries). */
  wave: `${GROUP}/campaign-wave`,
  /** On a campaign's plan the campaign paused (so that resume lifts only the campaign's own pause, never an operator's). */
  pausedByCampaign: `${GROUP}/paused-by-campaign`
};

// src/api/resources.ts
var InPlaceUpdatePlans = namespacedResource(GROUP, VERSION, "inplaceupdateplans", "InPlaceUpdatePlan");
var InPlaceUpdateCampaigns = namespacedResource(GROUP, VERSION, "inplaceupdatecampaigns", "InPlaceUpdateCampaign");
var MachineUpdates = namespacedResource(GROUP, VERSION, "machineupdates", "MachineUpdate");
var InPlaceUpdaters = namespacedResource(GROUP, VERSION, "inplaceupdaters", "InPlaceUpdater");
var UpdaterUpdateTasks = namespacedResource(GROUP, VERSION, "updaterupdatetasks", "UpdaterUpdateTask");
var KubernetesVersionUpdateTasks = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  "kubernetesversionupdatetasks",
  "KubernetesVersionUpdateTask"
);
var KubernetesVersionUpdateTaskTemplates = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  "kubernetesversionupdatetasktemplates",
  "KubernetesVersionUpdateTaskTemplate"
);
var OSImageUpdateTasks = namespacedResource(SAMPLES_GROUP, VERSION, "osimageupdatetasks", "OSImageUpdateTask");
var OSImageUpdateTaskTemplates = namespacedResource(
  SAMPLES_GROUP,
  VERSION,
  "osimageupdatetasktemplates",
  "OSImageUpdateTaskTemplate"
);
var CAPI_GROUP = "cluster.x-k8s.io";
var CAPI_VERSION = "v1beta2";
var Clusters = namespacedResource(CAPI_GROUP, CAPI_VERSION, "clusters", "Cluster");
var Machines = namespacedResource(CAPI_GROUP, CAPI_VERSION, "machines", "Machine");
var MachineSets = namespacedResource(CAPI_GROUP, CAPI_VERSION, "machinesets", "MachineSet");
var MachineDeployments = namespacedResource(CAPI_GROUP, CAPI_VERSION, "machinedeployments", "MachineDeployment");
var MachineHealthChecks = namespacedResource(CAPI_GROUP, CAPI_VERSION, "machinehealthchecks", "MachineHealthCheck");
var KubeadmControlPlanes = namespacedResource(
  "controlplane.cluster.x-k8s.io",
  CAPI_VERSION,
  "kubeadmcontrolplanes",
  "KubeadmControlPlane"
);
var KubeadmConfigs = namespacedResource("bootstrap.cluster.x-k8s.io", CAPI_VERSION, "kubeadmconfigs", "KubeadmConfig");
var DevMachines = namespacedResource("infrastructure.cluster.x-k8s.io", CAPI_VERSION, "devmachines", "DevMachine");

// src/api/schemas.ts
import { z } from "zod";
var int = z.number().int();
var jsonPointer = z.string().min(2).max(1024).regex(/^(\/([^/~]|~[01])*)+$/, "must be a JSON pointer such as /spec/version");
var dnsLabel = z.string().min(1).max(63).regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label (lowercase letters, digits, "-")');
var objectName = z.string().min(1).max(253);
var status = z.enum(["pending", "updating", "updated", "aborting", "aborted", "failed"]);
var phase = z.enum(["updating", "aborting"]);
var times = { startTime: z.string().optional(), completionTime: z.string().optional() };
var OwnerReferenceSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional()
});
var ObjectMetaSchema = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: int.optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  deletionGracePeriodSeconds: int.optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z.array(OwnerReferenceSchema).optional(),
  managedFields: z.array(z.unknown()).optional()
});
var ConditionSchema = z.object({
  type: z.string().min(1),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: int.optional(),
  lastTransitionTime: z.string(),
  reason: z.string().min(1),
  message: z.string().optional()
});
var ResponsibilitySchema = z.object({
  selectResource: z.enum(["Machine", "InfraMachine", "BootstrapConfig"]),
  path: jsonPointer,
  value: z.unknown()
});
var UpdaterSchema = z.object({
  name: dnsLabel,
  sequence: int.min(1).max(1e3),
  verify: z.object({
    osImage: z.string().min(1).max(256).optional(),
    kernelVersion: z.string().min(1).max(256).optional(),
    reboot: z.boolean().optional()
  }).optional(),
  updaterUpdateTemplateRef: z.object({
    apiVersion: z.string().min(1),
    kind: z.string().regex(/^[A-Z][A-Za-z0-9]*Template$/, "must be a kind ending in Template"),
    name: objectName
  }).optional(),
  responsibilities: z.array(ResponsibilitySchema).min(1).max(64),
  parameters: z.record(z.string(), z.unknown()).optional()
});
var TargetSchema = z.object({ name: objectName, sequence: int.min(1).max(1e3), updaters: z.array(UpdaterSchema).min(1).max(32) });
var MaintenanceWindowSchema = z.object({
  days: z.array(z.string().max(3)).max(7).optional(),
  start: z.string().max(5),
  duration: z.string().max(32),
  timeZone: z.string().max(64)
});
var PlanSpecSchema = z.object({
  clusterName: objectName,
  updatePhase: phase.optional(),
  paused: z.boolean().optional(),
  failurePolicy: z.enum(["Halt", "Continue"]).optional(),
  acceptUncoveredChanges: z.boolean().optional(),
  rerunMachinesAtTarget: z.boolean().optional(),
  ttlSecondsAfterFinished: int.min(0).max(31536e3).optional(),
  soak: z.string().max(32).optional(),
  verification: z.object({ mode: z.enum(["Enabled", "Disabled"]).optional(), timeout: z.string().max(32).optional() }).optional(),
  alertGate: z.object({
    url: z.string().max(2048),
    matchers: z.array(z.string().max(256)).max(16).optional(),
    holdTimeout: z.string().max(32),
    secretRef: z.object({ name: z.string().min(1).max(253) }).optional()
  }).optional(),
  maintenanceWindows: z.array(MaintenanceWindowSchema).max(32).optional(),
  maintenanceWindowEnd: z.enum(["Finish", "Abort"]).optional(),
  controlPlane: TargetSchema.optional(),
  machineDeployments: z.array(TargetSchema).max(500).optional()
});
var countFields = {
  machines: int.optional(),
  updated: int.optional(),
  updating: int.optional(),
  failed: int.optional(),
  aborted: int.optional()
};
var PlanStatusSchema = z.object({
  updateStatus: status.optional(),
  observedGeneration: int.optional(),
  ...times,
  progress: z.string().optional(),
  machines: int.optional(),
  updatedMachines: int.optional(),
  skippedMachines: int.optional(),
  targets: z.array(
    z.object({
      kind: z.enum(["ControlPlane", "MachineDeployment"]),
      name: z.string(),
      sequence: int,
      updateStatus: status,
      ...countFields,
      skipped: int.optional(),
      message: z.string().optional()
    })
  ).optional(),
  gateFailures: z.array(z.object({ machine: z.string().max(253), gate: z.enum(["soak", "verification"]).optional(), message: z.string().max(1024) })).max(1e3).optional(),
  alertGate: z.object({
    state: z.enum(["Clear", "Firing", "Unreachable", "Halted"]),
    since: z.string().optional(),
    message: z.string().max(1024).optional()
  }).optional(),
  maintenanceWindow: z.object({
    state: z.enum(["Open", "Closed"]),
    since: z.string().optional(),
    nextChange: z.string().optional(),
    message: z.string().max(256).optional()
  }).optional(),
  conditions: z.array(ConditionSchema).optional()
});
var InPlaceUpdatePlanSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: PlanSpecSchema,
  status: PlanStatusSchema.optional()
});
var MachineUpdateSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.object({
    planName: objectName,
    clusterName: objectName,
    target: z.object({ kind: z.enum(["ControlPlane", "MachineDeployment"]), name: objectName }),
    machineRef: z.object({ name: objectName }),
    updatePhase: phase.optional(),
    updaters: z.array(UpdaterSchema).min(1).max(32)
  }),
  status: z.object({
    updateStatus: z.enum(["", "updating", "updated", "aborting", "aborted", "failed"]).optional(),
    observedGeneration: int.optional(),
    currentUpdater: z.string().optional(),
    tasks: z.array(
      z.object({
        updater: z.string(),
        apiVersion: z.string(),
        kind: z.string(),
        name: z.string(),
        updateStatus: z.string().optional(),
        ...times
      })
    ).optional(),
    ...times,
    message: z.string().optional(),
    conditions: z.array(ConditionSchema).optional()
  }).optional()
});
var UpdaterUpdateTaskSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.object({
    updaterName: dnsLabel,
    updatePhase: phase.optional(),
    machineRef: z.object({ name: objectName }),
    responsibilities: z.array(ResponsibilitySchema).max(64).optional(),
    parameters: z.record(z.string(), z.unknown()).optional()
  }),
  status: z.object({
    updateStatus: z.enum(["updating", "updated", "aborted", "failed"]).optional(),
    observedGeneration: int.optional(),
    ...times,
    conditions: z.array(ConditionSchema).optional()
  }).optional()
});
function formatIssues(error, prefix = "") {
  return error.issues.map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join(".") || "(root)"}: ${i.message}`);
}

// src/api/depth.ts
var MAX_PARAMETERS_DEPTH = 64;
function nestedDeeperThan(value, max) {
  const stack = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop();
    if (v === null || typeof v !== "object") continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, d + 1]);
    }
  }
  return false;
}

// src/api/write-policy.ts
var DEFAULT_WRITE_POLICY = Object.freeze({});
var DEFAULT_ALLOW = ["/spec"];
var RESERVED_KEY_PREFIXES = [
  /^cluster\.x-k8s\.io\//,
  /^[^/]*\.cluster\.x-k8s\.io\//,
  /^kubernetes\.io\//,
  /^[^/]*\.kubernetes\.io\//,
  /^k8s\.io\//,
  /^[^/]*\.k8s\.io\//
];
var NEVER = {
  Machine: ["/spec/clusterName", "/spec/providerID", "/spec/infrastructureRef", "/spec/bootstrap"],
  InfraMachine: ["/spec/providerID"],
  BootstrapConfig: []
};
var EXPLICIT_ONLY = {
  Machine: ["/spec/failureDomain"],
  InfraMachine: [],
  BootstrapConfig: []
};
var POINTER = /^(\/([^/~]|~[01])*)*$/;
var unescape = (t) => t.replace(/~1/g, "/").replace(/~0/g, "~");
var tokensOf = (p2) => p2 === "" ? [] : p2.slice(1).split("/").map(unescape);
var covers = (prefix, path) => path === prefix || path.startsWith(`${prefix}/`);
var isResource = (s) => s === "Machine" || s === "InfraMachine" || s === "BootstrapConfig";
function writeRefusal(policy, selectResource, path) {
  if (!POINTER.test(path)) return `${path} is not a JSON pointer`;
  const t = tokensOf(path);
  const head = t[0];
  if (head === void 0) return "the whole object is never writable";
  if (head === "apiVersion" || head === "kind") return `${head} is never writable`;
  if (head === "status") return "status is written by the object's own controller, never by a plan";
  if (head === "spec" && t.length === 1) return "the whole spec is never writable (name the fields the updater changes)";
  const res = isResource(selectResource) ? selectResource : void 0;
  if (!res) return `selectResource ${selectResource} is not one of Machine, InfraMachine, BootstrapConfig`;
  if (head === "metadata") {
    const map = t[1];
    if (map !== "labels" && map !== "annotations" || t.length !== 3)
      return "metadata is never writable, except single labels and annotations the write policy allows";
    const key = t[2];
    if (RESERVED_KEY_PREFIXES.some((r) => r.test(key)))
      return `${map === "labels" ? "label" : "annotation"} ${key} has a reserved prefix (cluster.x-k8s.io/, kubernetes.io/, k8s.io/ and their subdomains belong to Cluster API and Kubernetes)`;
  }
  const never = NEVER[res].find((n) => covers(n, path));
  if (never) return `${res} ${never} is identity or wiring, never writable by a plan`;
  const rules = policy[res];
  const allow = rules?.allow ?? DEFAULT_ALLOW;
  const allowedBy = allow.filter((a) => covers(a, path));
  if (allowedBy.length === 0) {
    if (head === "metadata")
      return `${t[1] === "labels" ? "labels" : "annotations"} are not writable unless the write policy allows the key (allow ${path} for ${res})`;
    return `the write policy allows only ${allow.length ? allow.join(", ") : "nothing"} on ${res}`;
  }
  const explicit = EXPLICIT_ONLY[res].find((e) => covers(e, path));
  if (explicit && !allowedBy.some((a) => covers(explicit, a)))
    return `${res} ${explicit} is writable only when the write policy allows it by name`;
  const denied = (rules?.deny ?? []).find((d) => covers(d, path) || covers(path, d));
  if (denied) return `the write policy denies ${denied} on ${res}`;
  return void 0;
}

// src/api/updaters.ts
var byCodeUnits = (a, b) => a < b ? -1 : a > b ? 1 : 0;
function orderedUpdaters(updaters) {
  return [...updaters].sort((a, b) => a.sequence - b.sequence || byCodeUnits(a.name, b.name));
}

// src/api/limits.ts
var MAX_PLAN_VALUE_BYTES = 64 * 1024;
function planValueSizeProblems(value, what) {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
  if (bytes <= MAX_PLAN_VALUE_BYTES) return [];
  return [`${what} has a ${Math.ceil(bytes / 1024)} KiB value, more than the ${MAX_PLAN_VALUE_BYTES / 1024} KiB a plan value may have`];
}

// src/api/duration.ts
var InvalidDurationError = class extends Error {
  constructor(value, why) {
    super(`parse duration ${JSON.stringify(value)}: ${why}`);
    this.value = value;
    this.name = "InvalidDurationError";
  }
  value;
};
var UNIT_MS = { ns: 1e-6, us: 1e-3, \u00B5s: 1e-3, \u03BCs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 36e5 };
function parseGoDuration(value) {
  let s = value;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s.startsWith("-") ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new InvalidDurationError(value, "empty");
  let total2 = 0;
  const re = /^(\d*)(?:\.(\d*))?([a-zµμ]+)/;
  while (s !== "") {
    const m = re.exec(s);
    if (!m) throw new InvalidDurationError(value, /^[\d.]/.test(s) ? "missing unit" : "expected a number");
    const [all, whole = "", frac] = m;
    if (whole === "" && (frac === void 0 || frac === "")) throw new InvalidDurationError(value, "expected a number");
    const unit = m[3] ?? "";
    const factor = UNIT_MS[unit];
    if (factor === void 0) throw new InvalidDurationError(value, `unknown unit ${JSON.stringify(unit)}`);
    total2 += Number(`${whole || "0"}.${frac || "0"}`) * factor;
    s = s.slice(all.length);
  }
  return sign * total2;
}

// src/api/windows.ts
import { DateTime } from "luxon";
var WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
var WINDOW_MIN_MS = 6e4;
var WINDOW_MAX_MS = 7 * 24 * 36e5;
var WINDOWS_MAX = 32;
var HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;
function windowProblems(w, path) {
  const problems = [];
  if (!HHMM.test(w.start))
    problems.push(`${path}.start: ${JSON.stringify(w.start).slice(0, 40)} is not a local time HH:MM (00:00 to 23:59)`);
  try {
    const ms2 = parseGoDuration(w.duration);
    if (ms2 < WINDOW_MIN_MS || ms2 > WINDOW_MAX_MS)
      problems.push(`${path}.duration: ${w.duration} is outside 1m..168h (a window must be open at least a minute and at most 7 days)`);
  } catch (e) {
    if (!(e instanceof InvalidDurationError)) throw e;
    problems.push(`${path}.duration: ${e.message.slice(0, 120)} (a Go duration such as 4h or 90m)`);
  }
  if (!DateTime.now().setZone(w.timeZone).isValid)
    problems.push(
      `${path}.timeZone: ${JSON.stringify(w.timeZone).slice(0, 80)} is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)`
    );
  const seen = /* @__PURE__ */ new Set();
  for (const d of w.days ?? []) {
    if (!WEEKDAYS.includes(d))
      problems.push(`${path}.days: ${JSON.stringify(d).slice(0, 40)} is not one of ${WEEKDAYS.join(", ")}`);
    else if (seen.has(d)) problems.push(`${path}.days: ${d} is listed twice`);
    seen.add(d);
  }
  return problems;
}
function parseWindow(w, index) {
  const [hour, minute] = w.start.split(":").map(Number);
  const days = w.days && w.days.length > 0 ? w.days : WEEKDAYS;
  return {
    index,
    isoDays: new Set(days.map((d) => WEEKDAYS.indexOf(d) + 1)),
    hour,
    minute,
    durationMs: parseGoDuration(w.duration),
    zone: w.timeZone
  };
}
function occurrences(w, from, to) {
  const out = [];
  let day = DateTime.fromJSDate(from, { zone: w.zone }).startOf("day").minus({ days: 1 });
  const last = DateTime.fromJSDate(to, { zone: w.zone }).startOf("day").plus({ days: 1 });
  while (day <= last) {
    if (w.isoDays.has(day.weekday)) {
      const start = DateTime.fromObject(
        { year: day.year, month: day.month, day: day.day, hour: w.hour, minute: w.minute },
        { zone: w.zone }
      ).toJSDate();
      if (start >= from && start < to) out.push({ window: w.index, start, end: new Date(start.getTime() + w.durationMs) });
    }
    day = day.plus({ days: 1 });
  }
  return out;
}
function allOccurrences(ws, from, to) {
  return ws.flatMap((w) => occurrences(w, from, to)).sort((a, b) => a.start.getTime() - b.start.getTime() || a.window - b.window);
}
function validateMaintenanceWindows(specs, now, path = "spec.maintenanceWindows") {
  if (specs.length > WINDOWS_MAX) return [`${path}: ${specs.length} windows; at most ${WINDOWS_MAX} are allowed`];
  const problems = specs.flatMap((w, i) => windowProblems(w, `${path}[${i}]`));
  if (problems.length > 0) return problems;
  const ws = specs.map(parseWindow);
  const year = allOccurrences(ws, now, new Date(now.getTime() + 366 * 24 * 36e5));
  const pairs = /* @__PURE__ */ new Set();
  for (let i = 0; i < year.length; i++) {
    const a = year[i];
    for (let j = i + 1; j < year.length && year[j].start < a.end; j++) {
      const b = year[j];
      const key = `${Math.min(a.window, b.window)}/${Math.max(a.window, b.window)}`;
      if (pairs.has(key)) continue;
      pairs.add(key);
      problems.push(
        a.window === b.window ? `${path}[${a.window}]: overlaps its own next opening (${b.start.toISOString()}); shorten its duration` : `${path}[${a.window}] and ${path}[${b.window}] overlap (both open at ${b.start.toISOString()}); merge them or make them disjoint`
      );
    }
  }
  return problems;
}
function maintenanceWindowState(specs, now) {
  if (specs.length === 0) return void 0;
  const ws = specs.map(parseWindow);
  const day = 24 * 36e5;
  const occ = allOccurrences(ws, new Date(now.getTime() - 8 * day), new Date(now.getTime() + 9 * day));
  const current = occ.find((o) => o.start <= now && now < o.end);
  if (current) {
    let closesAt = current.end;
    for (const o of occ) if (o.start > now && o.start <= closesAt && o.end > closesAt) closesAt = o.end;
    return { open: true, closesAt, window: current.window };
  }
  const next = occ.find((o) => o.start > now);
  if (!next) throw new Error("maintenanceWindowState: no opening within 9 days (specs not validated)");
  return { open: false, opensAt: next.start, window: next.window };
}
function describeWindowInstant(spec, at) {
  const local = DateTime.fromJSDate(at, { zone: spec.timeZone });
  return `${WEEKDAYS[local.weekday - 1]} ${local.toFormat("HH:mm")} ${spec.timeZone} (${at.toISOString()})`;
}

// src/api/capi/accessors.ts
var obj = (v) => v !== null && typeof v === "object" && !Array.isArray(v) ? v : void 0;
var str = (v) => typeof v === "string" ? v : void 0;
var num = (v) => typeof v === "number" ? v : void 0;
var intOrStr = (v) => typeof v === "number" || typeof v === "string" ? v : void 0;
function field(o, ...keys) {
  let cur = o;
  for (const k of keys) cur = obj(cur)?.[k];
  return cur;
}
var nameOf = (o) => o.metadata.name ?? "";
var isDeleting = (o) => !!o.metadata.deletionTimestamp;
var conditionsOf = (o) => {
  const c = field(o, "status", "conditions");
  return Array.isArray(c) ? c : [];
};
var conditionTrue = (o, type) => conditionsOf(o).some((c) => c.type === type && c.status === "True");
var isMachineReady = (m) => conditionTrue(m, "Ready");
var machineVersion = (m) => str(field(m, "spec", "version"));
var ref = (v) => {
  const o = obj(v);
  const apiGroup = str(o?.apiGroup);
  const kind = str(o?.kind);
  const name = str(o?.name);
  return apiGroup !== void 0 && kind && name ? { apiGroup, kind, name } : void 0;
};
var machineInfraRef = (m) => ref(field(m, "spec", "infrastructureRef"));
var machineBootstrapRef = (m) => ref(field(m, "spec", "bootstrap", "configRef"));
var clusterControlPlaneRef = (c) => ref(field(c, "spec", "controlPlaneRef"));
var clusterLabel = (o) => o.metadata.labels?.[Labels.clusterName];
var controlPlaneNameOf = (m) => m.metadata.labels?.[Labels.controlPlaneName];
var deploymentNameOf = (m) => m.metadata.labels?.[Labels.deploymentName];
var mdReplicas = (md2) => num(field(md2, "spec", "replicas")) ?? 1;
var mdClusterName = (md2) => str(field(md2, "spec", "clusterName"));
var mdStrategyType = (md2) => str(field(md2, "spec", "rollout", "strategy", "type")) ?? "RollingUpdate";
var mdRollingUpdate = (md2) => {
  const ru = field(md2, "spec", "rollout", "strategy", "rollingUpdate");
  const maxSurge = intOrStr(field(ru, "maxSurge"));
  const maxUnavailable = intOrStr(field(ru, "maxUnavailable"));
  return { ...maxSurge !== void 0 ? { maxSurge } : {}, ...maxUnavailable !== void 0 ? { maxUnavailable } : {} };
};
var cpReplicas = (cp) => num(field(cp, "spec", "replicas"));
var cpVersion = (cp) => str(field(cp, "spec", "version"));

// src/api/capi/intstr.ts
function scaleIntOrPercent(v, total2, roundUp) {
  if (typeof v === "number") return Number.isInteger(v) && v >= 0 ? { ok: true, value: v } : { ok: false, error: `invalid value ${v}` };
  const m = /^(\d+)%$/.exec(v);
  if (!m) return { ok: false, error: `invalid value "${v}": must be an integer or a percentage` };
  const raw = Number(m[1]) * total2 / 100;
  return { ok: true, value: roundUp ? Math.ceil(raw) : Math.floor(raw) };
}
var DEFAULT_MAX_SURGE = 1;
var DEFAULT_MAX_UNAVAILABLE = 0;
function resolveFenceposts(maxSurge, maxUnavailable, desired) {
  const s = scaleIntOrPercent(maxSurge ?? DEFAULT_MAX_SURGE, desired, true);
  if (!s.ok) return { ok: false, error: `maxSurge: ${s.error}` };
  const u = scaleIntOrPercent(maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE, desired, false);
  if (!u.ok) return { ok: false, error: `maxUnavailable: ${u.error}` };
  if (s.value === 0 && u.value === 0) return { ok: true, value: { surge: 0, unavailable: 1 } };
  return { ok: true, value: { surge: s.value, unavailable: u.value } };
}

// src/plan-controller/names.ts
import { createHash as createHash2 } from "node:crypto";

// src/contract/rules.ts
var CONTRACT_VERSION = "v1alpha1";

// src/contract/accessors.ts
import { createHash } from "node:crypto";
var MAX_LABEL_VALUE = 63;
var hash = (s, n) => createHash("sha256").update(s).digest("hex").slice(0, n);
var trimEnd = (s) => s.replace(/[^a-z0-9A-Z]+$/, "");
function toLabelValue(s) {
  return shortenName(s, MAX_LABEL_VALUE);
}
function shortenName(s, max, hashOf = s) {
  if (s.length <= max) return s;
  return `${trimEnd(s.slice(0, max - 11))}-${hash(hashOf, 10)}`;
}
var TASK_LABEL_KEYS = [Labels.clusterName, Labels.planName, Labels.machineName, Labels.updaterName];
var TemplateKindError = class extends Error {
  constructor(kind) {
    super(`template kind ${JSON.stringify(kind)} must end in "Template" (CAPI template convention: FooTemplate creates Foo)`);
    this.name = "TemplateKindError";
  }
};
function taskKindOfTemplate(templateKind) {
  if (!templateKind.endsWith("Template") || templateKind.length === "Template".length) throw new TemplateKindError(templateKind);
  return templateKind.slice(0, -"Template".length);
}

// src/contract/task-kinds.ts
var UPDATER_CONTRACT_LABEL = `${GROUP}/updater-contract`;
var UPDATER_CONTRACT_VALUE = CONTRACT_VERSION;
var MAX_TASK_BYTES = 256 * 1024;
function isClusterApiGroup(group) {
  const g = group.toLowerCase();
  if (g === GROUP || g.endsWith(`.${GROUP}`)) return false;
  return g === "cluster.x-k8s.io" || g.endsWith(".cluster.x-k8s.io");
}
function taskKindProblem(group, kind, crd) {
  if (isClusterApiGroup(group))
    return `task kind ${kind}.${group} is in a Cluster API group: the platform never creates Cluster API objects as tasks`;
  if (!crd) return `task kind ${kind}.${group} has no CustomResourceDefinition (is the updater installed?)`;
  const label2 = crd.metadata.labels?.[UPDATER_CONTRACT_LABEL];
  if (label2 !== UPDATER_CONTRACT_VALUE) {
    return `task kind ${kind}.${group}: its CustomResourceDefinition ${crd.metadata.name ?? ""} does not declare the updater contract (label ${UPDATER_CONTRACT_LABEL}=${UPDATER_CONTRACT_VALUE}${label2 !== void 0 ? `, found ${JSON.stringify(label2)}` : ""})`;
  }
  return void 0;
}

// src/plan-controller/names.ts
var MAX_NAME = 253;
var machineUpdateName = (plan2, machine2) => {
  const pair = `${plan2}/${machine2}`;
  return shortenName(`${plan2}-${machine2}-${createHash2("sha256").update(pair).digest("hex").slice(0, 8)}`, MAX_NAME, pair);
};
var labelValue = toLabelValue;

// src/plan-controller/decide/memo.ts
var DecideMemo = class {
  /** Per target key. */
  targets = /* @__PURE__ */ new Map();
  /** Per target key, for the cluster `groupsCluster`. */
  groups = /* @__PURE__ */ new Map();
  groupsCluster;
  /**
   * machinesByTarget's last input and output, with each grouped machine's group and position in it: patched for the
   * machines replaced in place (decide/machines.ts patchGroups).
   */
  byTarget;
  /** The upgrade rules' problems, the machines and key they were derived from. */
  upgrade;
  /** The upgrade rules' per-target checks (upgrade-rules.ts UpgradeGroupMemo), for the same key. */
  upgradeGroups;
  /** The name index of the last snapshot's machines (updated in place for the machines that changed). */
  byName;
  /** Soak/verification facts per MachineUpdate object (weak: dropped with the objects). */
  soak = /* @__PURE__ */ new WeakMap();
  /** The soak gate's last inputs (soakCandidates) and the updates it left open (held, failed, or read again). */
  soakLast;
  soakOpen = /* @__PURE__ */ new Set();
  /**
   * This decision's changes against the last one (soakCandidates): positions in the snapshot's MachineUpdates and
   * Machines holding new objects (appended ones included); undefined when not a patch (start over).
   */
  delta;
  /** abortsOf's last answer (decide/actions.ts): the update to abort per machine name, and the lists it read. */
  aborts;
  /**
   * labelChanges' last answer (decide/actions.ts): per machine to label (with its start) or unlabel, its position; the
   * machines whose start time was the clock's; the machines started then; every machine's position; the lists it read.
   */
  labels;
  /** The snapshot's ownership filter of the plan's MachineUpdates (scope.ts ownMachineUpdates). */
  ownFilter = {};
  /** ownUpdates' last input and answer (decide/mode.ts), with the position each machine's entry came from. */
  own;
  /** Machine names whose update counts under another target than the machine's (targets.ts), as of the last decision. */
  cross;
  /** The "updater not reporting" note of a MachineUpdate object, or null (weak). */
  unreported = /* @__PURE__ */ new WeakMap();
  /** This decision may take memoEvalTarget's fast path (set by evaluateTargets). */
  fast = false;
  /** This decision's MachineDeployments by name (set by evaluateTargets). */
  mdByName;
  /** The last decision counted every update under its own target. */
  lastCrossFree;
  /** The last decision's machines at target, joined. */
  lastAtTarget;
  stats = { targetHits: 0, targetMisses: 0, upgradeHits: 0, upgradeMisses: 0 };
};
function sameRefs(a, b) {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
function machineIndex(machines2, memo3) {
  const prev = memo3?.byName;
  if (prev && prev.machines.length === machines2.length) {
    let same = true;
    const changed2 = [];
    for (let i = 0; i < machines2.length && same; i++)
      if (machines2[i] !== prev.machines[i]) {
        if (machines2[i].metadata.name !== prev.machines[i].metadata.name) same = false;
        else changed2.push(i);
      }
    if (same) {
      for (const i of changed2) prev.map.set(machines2[i].metadata.name ?? "", machines2[i]);
      memo3.byName = { machines: machines2, map: prev.map };
      return prev.map;
    }
  }
  const map = new Map(machines2.map((m) => [m.metadata.name ?? "", m]));
  if (memo3) memo3.byName = { machines: machines2, map };
  return map;
}
function changedAt(prev, next) {
  if (next.length < prev.length) return void 0;
  const out = [];
  for (let i = 0; i < prev.length; i++)
    if (next[i] !== prev[i]) {
      if (next[i].metadata?.name !== prev[i].metadata?.name) return void 0;
      out.push(i);
    }
  for (let i = prev.length; i < next.length; i++) out.push(i);
  return out;
}
function soakCandidates(memo3, key, mus2, machines2) {
  const last = memo3.soakLast;
  memo3.delta = void 0;
  const musChanged = last && last.key === key ? changedAt(last.mus, mus2) : void 0;
  const machinesChanged = musChanged && changedAt(last.machines, machines2);
  if (!musChanged || !machinesChanged) {
    const position2 = /* @__PURE__ */ new Map();
    mus2.forEach((mu2, i) => {
      if (!position2.has(mu2.spec.machineRef.name)) position2.set(mu2.spec.machineRef.name, i);
    });
    memo3.soakLast = { key, mus: mus2, machines: machines2, position: position2 };
    return void 0;
  }
  const position = last.position;
  for (let i = last.mus.length; i < mus2.length; i++)
    if (!position.has(mus2[i].spec.machineRef.name)) position.set(mus2[i].spec.machineRef.name, i);
  memo3.soakLast = { key, mus: mus2, machines: machines2, position };
  memo3.delta = { mus: musChanged, machines: machinesChanged, baseMus: last.mus, baseMachines: last.machines };
  const names = new Set(memo3.soakOpen);
  for (const i of musChanged) names.add(mus2[i].spec.machineRef.name);
  for (const i of machinesChanged) names.add(machines2[i].metadata.name ?? "");
  const at = [];
  for (const n of names) {
    const i = last.position.get(n);
    if (i !== void 0) at.push([i, n]);
  }
  return at.sort((a, b) => a[0] - b[0]).map(([, n]) => n);
}
function ownUpdates(mus2, planName, memo3) {
  const last = memo3?.own;
  const at = last && last.planName === planName ? changedAt(last.mus, mus2) : void 0;
  if (at) {
    const { map: map2, from: from2 } = last;
    let patched = true;
    for (const i of at) {
      const mu2 = mus2[i];
      const was = last.mus[i];
      if (was && (was.spec.machineRef.name !== mu2.spec.machineRef.name || was.spec.planName !== mu2.spec.planName)) {
        patched = false;
        break;
      }
      if (mu2.spec.planName !== planName) continue;
      const name = mu2.spec.machineRef.name;
      if ((from2.get(name) ?? -1) > i) continue;
      map2.set(name, mu2);
      from2.set(name, i);
    }
    if (patched) {
      memo3.own = { planName, mus: mus2, map: map2, from: from2 };
      return map2;
    }
  }
  const map = /* @__PURE__ */ new Map();
  const from = /* @__PURE__ */ new Map();
  mus2.forEach((mu2, i) => {
    if (mu2.spec.planName !== planName) return;
    map.set(mu2.spec.machineRef.name, mu2);
    from.set(mu2.spec.machineRef.name, i);
  });
  if (memo3) memo3.own = { planName, mus: mus2, map, from };
  return map;
}

// src/plan-controller/decide/machines.ts
var byName = (a, b) => a < b ? -1 : a > b ? 1 : 0;
var planAge = (a, b) => byName(a.metadata?.creationTimestamp ?? "", b.metadata?.creationTimestamp ?? "") || byName(a.metadata?.name ?? "", b.metadata?.name ?? "");
function machineState(mu2) {
  if (!mu2) return "notStarted";
  switch (mu2.status?.updateStatus) {
    case UpdateStatus.updated:
      return "updated";
    case UpdateStatus.failed:
      return "failed";
    case UpdateStatus.aborted:
      return "aborted";
    default:
      return "inFlight";
  }
}
var targetKey = (kind, name) => `${kind}/${name}`;
function targetOfMachine(m) {
  const cp = controlPlaneNameOf(m);
  if (cp !== void 0) return targetKey("ControlPlane", cp);
  const md2 = deploymentNameOf(m);
  return md2 !== void 0 ? targetKey("MachineDeployment", md2) : void 0;
}
function machinesByTarget(clusterName, machines2, memo3) {
  const patched = memo3 ? patchGroups(memo3, clusterName, machines2) : void 0;
  if (patched) return patched;
  const out = groupMachines(clusterName, machines2, memo3);
  if (memo3) {
    const where = /* @__PURE__ */ new Map();
    for (const [key, list] of out) list.forEach((m, i) => where.set(nameOf(m), [key, i]));
    memo3.byTarget = { cluster: clusterName, machines: machines2, out, where };
  }
  return out;
}
function groupOf(clusterName, m) {
  const labels = m.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return void 0;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== void 0) return targetKey("ControlPlane", cp);
  const md2 = labels[Labels.deploymentName];
  return md2 !== void 0 ? targetKey("MachineDeployment", md2) : void 0;
}
function patchGroups(memo3, clusterName, machines2) {
  const prev = memo3.byTarget;
  if (!prev || prev.cluster !== clusterName || prev.machines.length !== machines2.length) return void 0;
  const changed2 = changedAt(prev.machines, machines2);
  if (!changed2) return void 0;
  const copies = /* @__PURE__ */ new Map();
  for (const i of changed2) {
    const m = machines2[i];
    const old = prev.machines[i];
    const name = nameOf(m);
    const key = groupOf(clusterName, m);
    if (key !== groupOf(clusterName, old)) return void 0;
    if (key === void 0) continue;
    const at = prev.where.get(name);
    if (!at || at[0] !== key) return void 0;
    let copy = copies.get(key);
    if (!copy) copies.set(key, copy = [...prev.out.get(key)]);
    copy[at[1]] = m;
  }
  const out = new Map(prev.out);
  for (const [key, copy] of copies) out.set(key, Object.freeze(copy));
  memo3.byTarget = { cluster: clusterName, machines: machines2, out, where: prev.where };
  return out;
}
function groupMachines(clusterName, machines2, memo3) {
  const cps = /* @__PURE__ */ new Map();
  const mds = /* @__PURE__ */ new Map();
  for (const m of machines2) {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== clusterName) continue;
    const cp = labels[Labels.controlPlaneName];
    const md2 = cp === void 0 ? labels[Labels.deploymentName] : void 0;
    const groups = cp !== void 0 ? cps : md2 !== void 0 ? mds : void 0;
    if (!groups) continue;
    const name = cp ?? md2;
    let list = groups.get(name);
    if (!list) groups.set(name, list = []);
    list.push(m);
  }
  const out = /* @__PURE__ */ new Map();
  if (memo3 && memo3.groupsCluster !== clusterName) {
    memo3.groups.clear();
    memo3.groupsCluster = clusterName;
  }
  for (const [kind, groups] of [
    ["ControlPlane", cps],
    ["MachineDeployment", mds]
  ])
    for (const [name, list] of groups) {
      const key = targetKey(kind, name);
      out.set(key, memo3 ? sortedGroup(memo3, key, list) : list.sort((a, b) => byName(nameOf(a), nameOf(b))));
    }
  if (memo3) {
    for (const key of memo3.groups.keys()) if (!out.has(key)) memo3.groups.delete(key);
  }
  return out;
}
function sortedGroup(memo3, key, input) {
  const prev = memo3.groups.get(key);
  if (prev && sameRefs(prev.input, input)) return prev.sorted;
  let perm;
  if (prev && prev.input.length === input.length && input.every((m, i) => nameOf(m) === nameOf(prev.input[i]))) perm = [...prev.perm];
  else perm = input.map((_, i) => i).sort((a, b) => byName(nameOf(input[a]), nameOf(input[b])));
  const sorted = Object.freeze(perm.map((i) => input[i]));
  memo3.groups.set(key, { input, perm, sorted });
  return sorted;
}
var inUpdateByOther = (scope, m) => {
  const v = m.metadata.labels?.[Labels.planName];
  return v !== void 0 && v !== scope.planLabel ? v : void 0;
};
var failureNote = (scope, names) => summarizeList(
  names.map((n) => {
    const msg = scope.mus.get(n)?.status?.message;
    return msg ? `${n}: ${msg}` : n;
  }),
  { maxBytes: MessageBudget.status, itemMaxBytes: MessageBudget.item }
);

// src/plan-controller/decide/actions.ts
function startIntents(planName, ordered, terminal) {
  if (terminal) return { create: [], scale: ordered.flatMap(({ e }) => e.scale?.kind === "restore" ? [e.scale] : []) };
  const create = [];
  const scale = [];
  for (const { t, e } of ordered) {
    for (const machine2 of e.starts)
      create.push({
        name: machineUpdateName(planName, machine2),
        machine: machine2,
        target: { kind: t.kind, name: t.target.name },
        updaters: orderedUpdaters(t.target.updaters)
      });
    if (e.scale) scale.push(e.scale);
  }
  return { create, scale };
}
function abortsOf(snap, mus2, stopping, machineByName, memo3) {
  const machinesByName = machineByName ?? new Map(snap.machines.map((m) => [nameOf(m), m]));
  const last = memo3?.aborts;
  const delta = memo3?.delta;
  const position = memo3?.soakLast?.position;
  if (memo3 && !stopping && position && memo3.soakLast.mus === snap.machineUpdates) {
    const abortOf = (name) => {
      const mu2 = mus2.get(name);
      if (!mu2 || machineState(mu2) !== "inFlight" || mu2.spec.updatePhase === UpdatePhase.aborting) return void 0;
      const m = machinesByName.get(name);
      return !m || isDeleting(m) ? mu2.metadata?.name ?? "" : void 0;
    };
    let entries;
    if (last && delta && last.mus === delta.baseMus && last.machines === delta.baseMachines) {
      entries = last.entries;
      const names = /* @__PURE__ */ new Set();
      for (const i of delta.machines) names.add(nameOf(snap.machines[i]));
      for (const i of delta.mus) names.add(snap.machineUpdates[i].spec.machineRef.name);
      for (const n of names) {
        const a = abortOf(n);
        if (a === void 0) entries.delete(n);
        else entries.set(n, a);
      }
    } else {
      entries = /* @__PURE__ */ new Map();
      for (const n of mus2.keys()) {
        const a = abortOf(n);
        if (a !== void 0) entries.set(n, a);
      }
    }
    memo3.aborts = { mus: snap.machineUpdates, machines: snap.machines, entries };
    return [...entries].map(([n, a]) => [position.get(n) ?? Infinity, a]).sort((x, y) => x[0] - y[0]).map(([, a]) => a);
  }
  if (memo3) memo3.aborts = void 0;
  const abort = [];
  for (const mu2 of mus2.values()) {
    if (machineState(mu2) !== "inFlight" || mu2.spec.updatePhase === UpdatePhase.aborting) continue;
    const m = machinesByName.get(mu2.spec.machineRef.name);
    if (stopping || !m || isDeleting(m)) abort.push(mu2.metadata?.name ?? "");
  }
  return abort;
}
function labelChanges(snap, mus2, planLabel, create, memo3) {
  if (memo3) return labelsThroughMemo(snap, mus2, planLabel, create, memo3);
  return labelsOfAll(snap, mus2, planLabel, create);
}
function labelOf(m, mus2, planLabel, created, now) {
  if (isDeleting(m)) return void 0;
  const name = nameOf(m);
  let startedAt;
  let clock = false;
  if (created.has(name)) {
    startedAt = now;
    clock = true;
  } else {
    const mu2 = mus2.get(name);
    if (mu2 && machineState(mu2) === "inFlight") {
      startedAt = mu2.status?.startTime ?? mu2.metadata?.creationTimestamp;
      if (startedAt === void 0) {
        startedAt = now;
        clock = true;
      }
    }
  }
  const labelled = m.metadata.labels?.[Labels.planName] === planLabel;
  if (startedAt !== void 0 && (!labelled || m.metadata.annotations?.[Annotations.updateStartedAt] === void 0))
    return { startedAt, ...clock ? { now: true } : {} };
  if (startedAt === void 0 && labelled) return { unlabel: true };
  return clock ? { now: true } : void 0;
}
function labelsThroughMemo(snap, mus2, planLabel, create, memo3) {
  const created = new Set(create.map((c) => c.machine));
  const last = memo3.labels;
  const delta = memo3.delta;
  const machines2 = snap.machines;
  let state;
  const look = (name, i) => {
    const m = machines2[i];
    state.entries.delete(name);
    state.clock.delete(name);
    if (!m || nameOf(m) !== name) return;
    const r = labelOf(m, mus2, planLabel, created, snap.now);
    if (r?.now) state.clock.add(name);
    if (r?.startedAt !== void 0 || r?.unlabel)
      state.entries.set(name, { pos: i, ...r.startedAt !== void 0 ? { startedAt: r.startedAt } : {} });
  };
  if (last && delta && last.planLabel === planLabel && last.machines === delta.baseMachines && last.mus === delta.baseMus) {
    state = { planLabel, machines: machines2, mus: snap.machineUpdates, entries: last.entries, clock: /* @__PURE__ */ new Set(), pos: last.pos, created };
    for (let i = last.machines.length; i < machines2.length; i++) state.pos.set(nameOf(machines2[i]), i);
    const names = /* @__PURE__ */ new Set([...last.clock, ...last.created, ...created]);
    for (const i of delta.machines) names.add(nameOf(machines2[i]));
    for (const i of delta.mus) names.add(snap.machineUpdates[i].spec.machineRef.name);
    for (const n of names) {
      const i = state.pos.get(n);
      if (i === void 0) state.entries.delete(n);
      else look(n, i);
    }
  } else {
    state = { planLabel, machines: machines2, mus: snap.machineUpdates, entries: /* @__PURE__ */ new Map(), clock: /* @__PURE__ */ new Set(), pos: /* @__PURE__ */ new Map(), created };
    for (let i = 0; i < machines2.length; i++) {
      const name = nameOf(machines2[i]);
      state.pos.set(name, i);
      look(name, i);
    }
  }
  memo3.labels = state;
  const ordered = [...state.entries].sort((a, b) => a[1].pos - b[1].pos);
  const label2 = [];
  const unlabel = [];
  for (const [machine2, e] of ordered) {
    if (e.startedAt !== void 0) label2.push({ machine: machine2, startedAt: e.startedAt });
    else unlabel.push(machine2);
  }
  return { label: label2, unlabel };
}
function labelsOfAll(snap, mus2, planLabel, create) {
  const inUpdate = /* @__PURE__ */ new Map();
  for (const mu2 of mus2.values())
    if (machineState(mu2) === "inFlight")
      inUpdate.set(mu2.spec.machineRef.name, mu2.status?.startTime ?? mu2.metadata?.creationTimestamp ?? snap.now);
  for (const c of create) inUpdate.set(c.machine, snap.now);
  const label2 = [];
  const unlabel = [];
  for (const m of snap.machines) {
    if (isDeleting(m)) continue;
    const labelled = m.metadata.labels?.[Labels.planName] === planLabel;
    const startedAt = inUpdate.get(nameOf(m));
    if (startedAt !== void 0 && (!labelled || m.metadata.annotations?.[Annotations.updateStartedAt] === void 0))
      label2.push({ machine: nameOf(m), startedAt });
    else if (startedAt === void 0 && labelled) unlabel.push(nameOf(m));
  }
  return { label: label2, unlabel };
}

// src/runtime/pure/conditions.ts
var toKubeTime = (d) => d.toISOString().replace(/\.\d{3}Z$/, "Z");
function setCondition(conditions, input, observedGeneration, now = /* @__PURE__ */ new Date()) {
  const list = [...conditions ?? []];
  const i = list.findIndex((c) => c.type === input.type);
  const prev = i >= 0 ? list[i] : void 0;
  const next = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    // Last line of defence: one over-long message would make the API server reject the whole status write.
    message: boundMessage(input.message ?? "", CONDITION_MESSAGE_MAX),
    lastTransitionTime: prev && prev.status === input.status ? prev.lastTransitionTime : toKubeTime(now)
  };
  if (observedGeneration !== void 0) next.observedGeneration = observedGeneration;
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

// src/runtime/pure/jsonpointer.ts
var JsonPointerError = class extends Error {
  constructor(pointer, why) {
    super(`json pointer ${JSON.stringify(pointer)}: ${why}`);
    this.name = "JsonPointerError";
  }
};
function isPointer(s) {
  return s === "" || s.startsWith("/") && !/~[^01]|~$/.test(s);
}
function parsePointer(pointer) {
  if (!isPointer(pointer)) throw new JsonPointerError(pointer, 'must be empty or start with "/" and use only ~0 and ~1 escapes');
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}
function encodePointer(tokens) {
  return tokens.map((t) => "/" + t.replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}
var isIndex = (t) => /^(0|[1-9]\d*)$/.test(t);
function getPointer(doc, pointer) {
  let cur = doc;
  for (const t of parsePointer(pointer)) {
    if (Array.isArray(cur)) {
      if (!isIndex(t)) return void 0;
      cur = cur[Number(t)];
    } else if (cur !== null && typeof cur === "object") {
      cur = Object.prototype.hasOwnProperty.call(cur, t) ? cur[t] : void 0;
    } else return void 0;
  }
  return cur;
}

// src/plan-controller/owners.ts
var IDENTITY = /* @__PURE__ */ new Set(["clusterName", "providerID", "infrastructureRef", "bootstrap"]);
var KCP_MACHINE_TEMPLATE_SPEC = /* @__PURE__ */ new Set(["deletion", "readinessGates", "taints"]);
var MD_MACHINE_SPEC = /* @__PURE__ */ new Set(["deletion", "failureDomain", "minReadySeconds", "readinessGates", "taints", "version"]);
var KUBEADM_CONFIG_SPEC_FIELDS = [
  "bootCommands",
  "clusterConfiguration",
  "diskSetup",
  "files",
  "format",
  "ignition",
  "initConfiguration",
  "joinConfiguration",
  "mounts",
  "ntp",
  "postKubeadmCommands",
  "preKubeadmCommands",
  "users",
  "verbosity"
];
var KUBEADM_CONFIG_SPEC = new Set(KUBEADM_CONFIG_SPEC_FIELDS);
var under = (prefix, rest) => encodePointer([...prefix, ...rest]);
function ownerFieldFor(kind, selectResource, path) {
  let tokens;
  try {
    tokens = parsePointer(path);
  } catch {
    return { slot: "none", why: "not a JSON pointer" };
  }
  const [root, f, ...more] = tokens;
  const cp = kind === "ControlPlane";
  if (root === "metadata" && (f === "labels" || f === "annotations") && more.length > 0) {
    if (selectResource !== "Machine") return { slot: "untracked" };
    return { slot: "owner", path: under(cp ? ["spec", "machineTemplate", "metadata", f] : ["spec", "template", "metadata", f], more) };
  }
  if (root !== "spec" || f === void 0) return { slot: "none", why: "only /spec fields and labels/annotations have an owner field" };
  const rest = [f, ...more];
  switch (selectResource) {
    case "Machine":
      if (IDENTITY.has(f)) return { slot: "none", why: `Machine /spec/${f} is identity, set by its owner` };
      if (cp) {
        if (f === "version") return { slot: "owner", path: under(["spec"], rest) };
        if (KCP_MACHINE_TEMPLATE_SPEC.has(f)) return { slot: "owner", path: under(["spec", "machineTemplate", "spec"], rest) };
        return { slot: "none", why: `KubeadmControlPlane has no field for Machine /spec/${f}` };
      }
      if (MD_MACHINE_SPEC.has(f)) return { slot: "owner", path: under(["spec", "template", "spec"], rest) };
      return { slot: "none", why: `MachineDeployment spec.template.spec has no field ${f}` };
    case "BootstrapConfig":
      if (cp) {
        if (KUBEADM_CONFIG_SPEC.has(f)) return { slot: "owner", path: under(["spec", "kubeadmConfigSpec"], rest) };
        return { slot: "none", why: `KubeadmControlPlane spec.kubeadmConfigSpec has no field ${f}` };
      }
      return { slot: "bootstrapTemplate", path: under(["spec", "template", "spec"], rest) };
    case "InfraMachine":
      if (f === "providerID") return { slot: "none", why: "InfraMachine /spec/providerID is identity, set by the provider" };
      return { slot: "infraTemplate", path: under(["spec", "template", "spec"], rest) };
    default:
      return { slot: "none", why: `selectResource ${selectResource} has no owner` };
  }
}
function ownerProblems(input) {
  const problems = [];
  if (input.cluster && field(input.cluster, "spec", "topology") !== void 0) {
    problems.push(
      `Cluster ${nameOf(input.cluster)} is managed by a ClusterClass topology (spec.topology is set): the topology controller owns the KubeadmControlPlane and MachineDeployment specs and would rewrite the values this plan carries to them, so CAPI would roll the updated machines back; change Cluster.spec.topology instead`
    );
  }
  const targets = [];
  const spec = input.plan.spec;
  const kcp2 = (input.controlPlane?.kind.kind ?? "KubeadmControlPlane") === "KubeadmControlPlane";
  if (spec.controlPlane && kcp2)
    targets.push({ kind: "ControlPlane", name: spec.controlPlane.name, updaters: spec.controlPlane.updaters ?? [] });
  for (const md2 of spec.machineDeployments ?? []) targets.push({ kind: "MachineDeployment", name: md2.name, updaters: md2.updaters ?? [] });
  for (const t of targets) {
    for (const u of Array.isArray(t.updaters) ? t.updaters : []) {
      for (const r of Array.isArray(u.responsibilities) ? u.responsibilities : []) {
        if (typeof r.path !== "string" || !/^\/(spec\/.+|metadata\/(labels|annotations)\/.+)$/.test(r.path)) continue;
        const f = ownerFieldFor(t.kind, r.selectResource, r.path);
        if (f.slot !== "none") continue;
        const where = `${t.kind === "ControlPlane" ? "controlPlane" : "machineDeployment"} ${t.name} updater ${u.name}`;
        problems.push(
          `${where}: ${r.selectResource} ${r.path} has no owner field (${f.why}): after the plan CAPI would roll this machine back`
        );
      }
    }
  }
  return problems;
}

// src/plan-controller/status.ts
var problemsNote = (problems) => summarizeList(problems);
var nameList = (names) => summarizeList(names, { separator: ", ", maxBytes: MessageBudget.status / 2, itemMaxBytes: 256 });
var waitingFor = (olderActive) => nameList(olderActive.map((p2) => p2.metadata?.name ?? ""));
function setValidCondition(conds, problems, generation, now) {
  const valid = problems.length === 0;
  return setCondition(
    conds,
    {
      type: ConditionTypes.valid,
      status: valid ? "True" : "False",
      reason: valid ? Reasons.valid : Reasons.invalid,
      message: valid ? "the plan is valid" : problemsNote(problems)
    },
    generation,
    now
  );
}
function startGate(i) {
  if (i.started) return void 0;
  if (!i.valid) return { reason: Reasons.invalid, message: "the plan is invalid" };
  if (i.paused)
    return {
      reason: Reasons.paused,
      message: i.waiting ? `the plan is paused; once resumed it waits for plan ${waitingFor(i.olderActive)} to finish` : "the plan is paused"
    };
  if (i.window) return { reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow, message: i.window };
  if (i.waiting) return { reason: Reasons.waitingForPreviousPlan, message: `waiting for plan ${waitingFor(i.olderActive)} to finish` };
  return void 0;
}
function setTargetConditions(conds, controlPlane, machineDeployments, gate, generation, now) {
  const c1 = targetsCondition(ConditionTypes.controlPlaneUpdate, controlPlane, "the plan has no control-plane target", gate);
  const c2 = targetsCondition(ConditionTypes.machineDeploymentUpdate, machineDeployments, "the plan has no MachineDeployment target", gate);
  return setCondition(setCondition(conds, c1, generation, now), c2, generation, now);
}
function setPausedCondition(conds, paused, generation, now) {
  return setCondition(
    conds,
    {
      type: ConditionTypes.paused,
      status: paused ? "True" : "False",
      reason: paused ? Reasons.paused : Reasons.notPaused,
      message: paused ? "no new machines start; in-flight machines finish" : "the plan is not paused"
    },
    generation,
    now
  );
}
function setReadyCondition(conds, ready, generation, now) {
  return setCondition(conds, { type: ConditionTypes.ready, ...ready }, generation, now);
}
var INVALID_SETTLE_MS = 1e4;
var INVALID_NEXT_STEP = "apply a corrected plan under a new name and delete this one; once a missing object exists, inplace pause + inplace resume (a new generation) validates this plan again";
function invalidVerdict(i) {
  const problems = [...i.problems];
  if (i.started) return { problems, final: false };
  const prevValid = i.prev.conditions?.find((c) => c.type === ConditionTypes.valid);
  const prevFailed = i.prev.conditions?.find((c) => c.type === ConditionTypes.failed);
  if (prevFailed?.status === "True" && prevFailed.reason === Reasons.invalid && prevFailed.observedGeneration === i.generation) {
    const kept = problems.length > 0 ? problems : (prevValid?.message ?? "the plan was invalid").split("; ");
    return { problems: kept, final: true };
  }
  if (problems.length === 0) return { problems, final: false };
  const since = prevValid?.status === "False" ? Date.parse(prevValid.lastTransitionTime ?? "") : NaN;
  const invalidFor = Number.isNaN(since) ? 0 : Date.parse(i.now) - since;
  return { problems, final: invalidFor >= INVALID_SETTLE_MS };
}
function setFailedCondition(conds, i, generation, now) {
  const c = i.updateStatus === "failed" ? { status: "True", reason: Reasons.failed, message: i.ready.message } : (
    // Superseded or aborted after it ended invalid (never started): it still ended invalid, the condition stays.
    i.invalidFinal && (i.updateStatus === "pending" || i.updateStatus === "aborted") ? {
      status: "True",
      reason: Reasons.invalid,
      message: `the plan ended invalid and touched nothing: ${problemsNote(i.problems)}; ${INVALID_NEXT_STEP}`
    } : { status: "False", reason: i.ready.reason, message: "the plan has not failed" }
  );
  return setCondition(conds, { type: ConditionTypes.failed, ...c }, generation, now);
}
function setPlanConditions(conds, i, generation, now) {
  let out = setValidCondition(conds, i.problems, generation, now);
  if (!i.terminal) out = setTargetConditions(out, i.controlPlane, i.machineDeployments, startGate(i), generation, now);
  out = setPausedCondition(out, i.paused, generation, now);
  out = setReadyCondition(out, i.ready, generation, now);
  return setFailedCondition(out, { ...i, problems: i.problems }, generation, now);
}
function alreadyAtTargetEvents(prev, skipped) {
  if (skipped.length <= (prev.skippedMachines ?? 0)) return [];
  return [
    {
      type: "Normal",
      reason: PlanEventReasons.alreadyAtTarget,
      message: `${skipped.length} machine(s) already carry every value of the plan and count as updated without running updaters (spec.rerunMachinesAtTarget forces a re-run): ${nameList(skipped)}`
    }
  ];
}
var rowRank = { failed: 0, aborting: 1, aborted: 2, updating: 3, pending: 4, updated: 5 };
var reasonOf = {
  failed: Reasons.failed,
  aborting: Reasons.aborting,
  aborted: Reasons.aborted,
  updating: Reasons.updating,
  pending: Reasons.pending,
  updated: Reasons.updated
};
function targetsCondition(type, evals, none, override) {
  if (evals.length === 0) return { type, status: "True", reason: Reasons.noTarget, message: none };
  const worst = [...evals].sort((a, b) => rowRank[a.row.updateStatus] - rowRank[b.row.updateStatus])[0];
  if (worst.row.updateStatus === "updated") {
    return {
      type,
      status: "True",
      reason: Reasons.updated,
      message: summarizeList(
        evals.map(
          (e) => `${e.row.name}: ${e.row.updated}/${e.row.machines} updated${e.row.skipped ? ` (${e.row.skipped} already at target)` : ""}`
        )
      )
    };
  }
  if (override && worst.row.updateStatus === "pending") return { type, status: "False", ...override };
  const reason = worst.row.updateStatus === "pending" || worst.row.updateStatus === "updating" ? worst.reason : reasonOf[worst.row.updateStatus];
  const message = summarizeList(
    evals.filter((e) => e.row.updateStatus !== "updated").map((e) => `${e.row.name}: ${e.row.updateStatus} ${e.row.updated}/${e.row.machines}${e.row.message ? ` (${e.row.message})` : ""}`),
    { itemMaxBytes: MessageBudget.item * 2 }
  );
  return { type, status: "False", reason, message };
}
function unreportedTaskNotes(mus2) {
  const out = [];
  for (const mu2 of mus2) {
    const c = mu2.status?.conditions?.find((x) => x.type === ConditionTypes.inPlaceUpdate);
    if (c?.status === "True" && c.reason === Reasons.updaterNotReporting)
      out.push(`machine ${mu2.spec.machineRef.name}: ${c.message ?? ""}`);
  }
  return out;
}
function readyCondition(i) {
  const detail = summarizeList(
    [...i.unreported ?? [], ...i.rows.filter((r) => r.updateStatus !== "updated" && r.message).map((r) => `${r.name}: ${r.message}`)],
    { itemMaxBytes: MessageBudget.item * 2 }
  );
  const withDetail = (s) => detail ? `${s}; ${detail}` : s;
  if (i.terminal && i.prevReady) return { status: i.prevReady.status, reason: i.prevReady.reason, message: i.prevReady.message ?? "" };
  switch (i.updateStatus) {
    case "updated": {
      const skipped = i.rows.reduce((n, r) => n + (r.skipped ?? 0), 0);
      return {
        status: "True",
        reason: Reasons.updated,
        message: `${i.progress} machines updated${skipped > 0 ? ` (${skipped} already at target: no updater ran)` : ""}`
      };
    }
    case "failed":
      return {
        status: "False",
        reason: Reasons.failed,
        message: withDetail(`${i.halt ? `alertGate ${i.halt}; ` : ""}${i.progress} machines updated`)
      };
    case "aborted":
    case "aborting":
      return stoppedReady(i, withDetail);
    case "pending":
      return pendingReady(i);
    default:
      return updatingReady(i, withDetail);
  }
}
function stoppedReady(i, withDetail) {
  const reason = i.supersededBy ? Reasons.superseded : i.deleting && !i.stoppedByAbort ? Reasons.deleting : i.windowEnded && !i.stoppedByAbort ? Reasons.maintenanceWindowEnded : i.updateStatus === "aborted" ? Reasons.aborted : Reasons.aborting;
  const why = i.supersededBy ? `superseded by plan ${i.supersededBy}` : i.deleting ? "the plan is being deleted" : i.windowEnded && !i.stoppedByAbort ? "the maintenance window closed with machines in update: they are aborted (spec.maintenanceWindowEnd Abort; a retry plan continues in the next window)" : "the plan was aborted";
  return { status: "False", reason, message: withDetail(`${why}; ${i.progress} machines updated`) };
}
function pendingReady(i) {
  if (!i.valid) return { status: "False", reason: Reasons.invalid, message: problemsNote(i.problems) };
  if (i.paused)
    return {
      status: "False",
      reason: Reasons.paused,
      message: i.waiting ? `the plan is paused; once resumed it waits for plan ${waitingFor(i.olderActive)} to finish` : "the plan is paused"
    };
  if (i.window)
    return {
      status: "False",
      reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow,
      message: i.waiting ? `${i.window}; then it waits for plan ${waitingFor(i.olderActive)} to finish` : i.window
    };
  if (i.waiting)
    return {
      status: "False",
      reason: Reasons.waitingForPreviousPlan,
      message: `waiting for plan ${waitingFor(i.olderActive)} to finish`
    };
  return { status: "False", reason: Reasons.pending, message: "the plan has not started" };
}
function updatingReady(i, withDetail) {
  if (!i.valid)
    return {
      status: "False",
      reason: Reasons.invalid,
      message: `no new machines start until the plan is valid again: ${problemsNote(i.problems)}`
    };
  if (i.paused) return { status: "False", reason: Reasons.paused, message: withDetail(`paused at ${i.progress} machines updated`) };
  if (i.window)
    return {
      status: "False",
      reason: i.windowReason ?? Reasons.waitingForMaintenanceWindow,
      message: withDetail(`${i.window}; ${i.progress} machines updated`)
    };
  return { status: "False", reason: Reasons.updating, message: withDetail(`${i.progress} machines updated`) };
}
function eventsFor(planName, prev, next, rows, d, problems, readyReason) {
  const ev = conditionEvents(prev, next, problems, readyReason);
  for (const p2 of d.supersede) {
    ev.push({ type: "Normal", reason: PlanEventReasons.superseding, message: `superseding plan ${p2}: it is moved to aborting` });
    ev.push({ type: "Warning", reason: PlanEventReasons.superseded, message: `superseded by plan ${planName}: aborting`, plan: p2 });
  }
  const transition = prev.updateStatus !== next.updateStatus ? planTransitionEvent(next, rows) : void 0;
  if (transition) ev.push(transition);
  ev.push(...targetTransitionEvents(prev, rows), ...actionEvents(d));
  return ev;
}
function conditionEvents(prev, next, problems, readyReason) {
  const ev = [];
  const prevValid = prev.conditions?.find((c) => c.type === ConditionTypes.valid);
  const prevReady = prev.conditions?.find((c) => c.type === ConditionTypes.ready);
  if (problems.length > 0 && (prevValid?.status !== "False" || prevValid.message !== problemsNote(problems)))
    ev.push({ type: "Warning", reason: PlanEventReasons.invalid, message: problemsNote(problems) });
  if (readyReason === Reasons.waitingForPreviousPlan && prevReady?.reason !== Reasons.waitingForPreviousPlan)
    ev.push({
      type: "Normal",
      reason: PlanEventReasons.waiting,
      message: next.conditions?.find((c) => c.type === ConditionTypes.ready)?.message ?? ""
    });
  const prevPaused = prev.conditions?.find((c) => c.type === ConditionTypes.paused)?.status === "True";
  const nowPaused = next.conditions?.find((c) => c.type === ConditionTypes.paused)?.status === "True";
  if (nowPaused && !prevPaused) ev.push({ type: "Normal", reason: PlanEventReasons.paused, message: "plan paused: no new machines start" });
  if (!nowPaused && prevPaused) ev.push({ type: "Normal", reason: PlanEventReasons.resumed, message: "plan resumed" });
  return ev;
}
function planTransitionEvent(next, rows) {
  const progress = next.progress ?? "";
  switch (next.updateStatus) {
    case "updating":
      return {
        type: "Normal",
        reason: PlanEventReasons.started,
        message: `plan started: ${next.machines ?? 0} machines in ${rows.length} target(s)`
      };
    case "updated":
      return { type: "Normal", reason: PlanEventReasons.completed, message: `plan updated: ${progress} machines updated` };
    case "failed":
      return {
        type: "Warning",
        reason: PlanEventReasons.failed,
        message: `plan failed at ${progress} machines updated: ${summarizeList(
          rows.filter((r) => r.updateStatus === "failed").map((r) => `${r.name}: ${r.message ?? "failed"}`),
          { maxBytes: MessageBudget.event }
        )}`
      };
    case "aborting":
      return { type: "Normal", reason: PlanEventReasons.aborting, message: `plan aborting at ${progress} machines updated` };
    case "aborted":
      return { type: "Normal", reason: PlanEventReasons.aborted, message: `plan aborted at ${progress} machines updated` };
    default:
      return void 0;
  }
}
function targetTransitionEvents(prev, rows) {
  const ev = [];
  const prevRows = new Map((prev.targets ?? []).map((r) => [`${r.kind}/${r.name}`, r]));
  for (const r of rows) {
    const before = prevRows.get(`${r.kind}/${r.name}`)?.updateStatus ?? "pending";
    if (before === r.updateStatus) continue;
    const what = `${r.kind === "ControlPlane" ? "control plane" : "MachineDeployment"} ${r.name}`;
    if (r.updateStatus === "updating" && before === "pending")
      ev.push({ type: "Normal", reason: PlanEventReasons.targetStarted, message: `${what} started (${r.machines} machines)` });
    if (r.updateStatus === "updated")
      ev.push({ type: "Normal", reason: PlanEventReasons.targetUpdated, message: `${what} updated (${r.updated}/${r.machines} machines)` });
    if (r.updateStatus === "failed")
      ev.push({ type: "Warning", reason: PlanEventReasons.targetFailed, message: `${what} failed: ${r.message ?? ""}` });
  }
  return ev;
}
function actionEvents(d) {
  const ev = d.create.map((c) => ({
    type: "Normal",
    reason: PlanEventReasons.machineUpdateStarted,
    message: `started the update of machine ${c.machine} (${c.target.kind} ${c.target.name}) with updaters ${nameList(c.updaters.map((u) => u.name))}`
  }));
  for (const s of d.scale) {
    if (s.kind === "surge")
      ev.push({
        type: "Normal",
        reason: PlanEventReasons.surged,
        message: `scaled MachineDeployment ${s.name} to ${s.replicas} replicas (maxUnavailable 0: surge by one)`
      });
    else
      ev.push({
        type: "Normal",
        reason: PlanEventReasons.surgeRestored,
        message: `restored MachineDeployment ${s.name}${s.replicas !== void 0 ? ` to ${s.replicas} replicas` : ""}`
      });
  }
  return ev;
}
function metricDeltas(prev, rows, d) {
  const prevRows = new Map((prev.targets ?? []).map((r) => [`${r.kind}/${r.name}`, r]));
  let updated = 0;
  let failed = 0;
  for (const r of rows) {
    const p2 = prevRows.get(`${r.kind}/${r.name}`);
    updated += Math.max(0, (r.updated ?? 0) - (p2?.updated ?? 0));
    failed += Math.max(0, (r.failed ?? 0) - (p2?.failed ?? 0));
  }
  return { started: d.create.length, updated, failed };
}
var TRANSITION_EVENTS = [PlanEventReasons.completed, PlanEventReasons.failed, PlanEventReasons.aborted];

// src/plan-controller/gates.ts
var GateNames = { maintenanceWindow: "maintenanceWindow", alerts: "alerts", soak: "soak", verification: "verification" };
var MEMO_MAX = 256;
var memo = /* @__PURE__ */ new Map();
function validateMemo(specs, now) {
  const key = `${now.toISOString().slice(0, 10)}|${JSON.stringify(specs)}`;
  const hit = memo.get(key);
  if (hit) return hit;
  const problems = validateMaintenanceWindows(specs, now);
  if (memo.size >= MEMO_MAX) memo.delete(memo.keys().next().value);
  memo.set(key, problems);
  return problems;
}
function windowGate(plan2, now) {
  const specs = plan2.spec.maintenanceWindows ?? [];
  const abortAtEnd = plan2.spec.maintenanceWindowEnd === "Abort";
  if (specs.length === 0) return { problems: [], abortAtEnd };
  const problems = validateMemo(specs, now);
  if (problems.length > 0) return { problems, abortAtEnd };
  const st = maintenanceWindowState(specs, now);
  const spec = specs[st.window];
  return st.open ? {
    problems,
    abortAtEnd,
    state: { open: true, nextChange: st.closesAt, message: `window open until ${describeWindowInstant(spec, st.closesAt)}` }
  } : {
    problems,
    abortAtEnd,
    state: { open: false, nextChange: st.opensAt, message: `window closed until ${describeWindowInstant(spec, st.opensAt)}` }
  };
}
function windowStatus(prev, gate, now) {
  if (!gate.state) return void 0;
  const state = gate.state.open ? "Open" : "Closed";
  return {
    state,
    since: prev?.state === state && prev.since ? prev.since : now,
    nextChange: gate.state.nextChange.toISOString(),
    message: gate.state.message
  };
}
function windowEvents(prev, next, abortAtEnd) {
  if (!next || prev?.state === next.state) return [];
  if (next.state === "Open")
    return prev ? [{ type: "Normal", reason: PlanEventReasons.windowOpened, message: `maintenanceWindow: ${next.message}` }] : [];
  const inFlight = abortAtEnd ? "machines in update are aborted (maintenanceWindowEnd Abort)" : "machines in update finish";
  return [
    {
      type: "Normal",
      reason: PlanEventReasons.windowClosed,
      message: `maintenanceWindow: ${next.message}; no new machine starts, ${inFlight}`
    }
  ];
}
var SOAK_MIN_MS = 1e3;
var SOAK_MAX_MS = 24 * 36e5;
function shortDuration(ms2) {
  const s = Math.max(0, Math.floor(ms2 / 1e3));
  const h = Math.floor(s / 3600);
  const m = Math.floor(s % 3600 / 60);
  const sec = s % 60;
  const out = `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${sec ? `${sec}s` : ""}`;
  return out || "0s";
}
function durationProblems(value, path) {
  if (value === void 0 || value === "") return { problems: [] };
  try {
    const ms2 = parseGoDuration(value);
    if (ms2 < SOAK_MIN_MS || ms2 > SOAK_MAX_MS) return { problems: [`${path}: ${value} is outside 1s..24h`] };
    return { problems: [], ms: ms2 };
  } catch (e) {
    if (!(e instanceof InvalidDurationError)) throw e;
    return { problems: [`${path}: ${e.message.slice(0, 120)} (a Go duration such as 10m)`] };
  }
}
function targetVersion(mu2) {
  for (const u of mu2.spec.updaters ?? [])
    for (const r of u.responsibilities ?? [])
      if (r.selectResource === "Machine" && r.path === "/spec/version" && typeof r.value === "string") return r.value;
  return void 0;
}
function nodeInfoOf(m, field2) {
  const v = m["status"]?.nodeInfo?.[field2];
  return typeof v === "string" ? v : void 0;
}
var BOOT_ID_BEFORE_ANNOTATION = "inplace.cluster.x-k8s.io/boot-id-before";
function sameKubeletVersion(have, want) {
  if (have === void 0) return false;
  if (have === want) return true;
  const norm = (v) => v.trim().replace(/^v/, "");
  const [h, w] = [norm(have), norm(want)];
  if (h === w) return true;
  const core = (v) => v.split("+")[0];
  return h.includes("+") !== w.includes("+") && core(h) === core(w);
}
var DEFAULT_VERIFY_TIMEOUT_MS = 10 * 6e4;
function nodeMismatch(machine2, f, label2, want) {
  const have = nodeInfoOf(machine2, f);
  if (f === "kubeletVersion" ? sameKubeletVersion(have, want) : have === want) return void 0;
  return {
    short: `${label2} ${have ?? "unknown"}, want ${want}`,
    long: `Machine.status.nodeInfo.${f} is ${have ?? "unset"}, not ${want}`,
    kubelet: f === "kubeletVersion"
  };
}
function verificationMismatches(mu2, machine2, kubelet) {
  let out;
  const field2 = (f, label2, want) => {
    const m = want === void 0 ? void 0 : nodeMismatch(machine2, f, label2, want);
    if (m) (out ??= []).push(m);
  };
  if (kubelet) field2("kubeletVersion", "kubelet", targetVersion(mu2));
  const ups = mu2.spec.updaters ?? [];
  let osImage;
  let kernel;
  let reboot = false;
  for (const u of ups) {
    const v = u.verify;
    if (!v) continue;
    if (v.osImage !== void 0) osImage = v.osImage;
    if (v.kernelVersion !== void 0) kernel = v.kernelVersion;
    if (v.reboot === true) reboot = true;
  }
  field2("osImage", "osImage", osImage);
  field2("kernelVersion", "kernel", kernel);
  if (reboot) {
    const before = mu2.metadata?.annotations?.[BOOT_ID_BEFORE_ANNOTATION];
    const now = nodeInfoOf(machine2, "bootID");
    if (before === void 0)
      (out ??= []).push({
        short: "bootID before the update unknown",
        long: `the bootID before the update is unknown (no ${BOOT_ID_BEFORE_ANNOTATION} annotation), so the reboot cannot be verified`,
        kubelet: false
      });
    else if (now === void 0 || now === before)
      (out ??= []).push({
        short: `bootID ${now ?? "unknown"} unchanged (no reboot seen)`,
        long: `Machine.status.nodeInfo.bootID is still ${now ?? "unset"} (the node did not reboot)`,
        kubelet: false
      });
  }
  return out ?? [];
}
function soakGate(plan2, mus2, machines2, now, machineByName, memo3, only) {
  const soakSpec = durationProblems(plan2.spec.soak, "spec.soak");
  const verifySpec = durationProblems(plan2.spec.verification?.timeout, "spec.verification.timeout");
  const problems = [...soakSpec.problems, ...verifySpec.problems];
  const ms2 = soakSpec.ms;
  const verifying = plan2.spec.verification?.mode !== "Disabled";
  const verifyMs = verifySpec.ms ?? DEFAULT_VERIFY_TIMEOUT_MS;
  const kubelet = verifying;
  const recorded = plan2.status?.gateFailures ?? [];
  const failed = new Map(recorded.map((f) => [f.machine, f.message]));
  const view = {
    problems,
    mus: mus2,
    soaking: /* @__PURE__ */ new Map(),
    failures: [...recorded],
    holding: /* @__PURE__ */ new Set()
  };
  let copied = false;
  const setMu = (name, m) => {
    if (!copied) {
      view.mus = new Map(mus2);
      copied = true;
    }
    view.mus.set(name, m);
  };
  const byName2 = machineByName ?? new Map(machines2.map((m) => [m.metadata.name ?? "", m]));
  const hold = (mu2, note, until, gate) => {
    view.holding.add(gate);
    const key = `${mu2.spec.target.kind}/${mu2.spec.target.name}`;
    const notes = view.soaking.get(key) ?? [];
    notes.push(note);
    view.soaking.set(key, notes);
    setMu(mu2.spec.machineRef.name, withStatus(mu2, UpdateStatus.updating));
    if (!view.wakeAt || until < view.wakeAt) view.wakeAt = until;
  };
  const fail = (mu2, message, gate) => {
    view.failures.push({ machine: mu2.spec.machineRef.name, message, gate });
    setMu(mu2.spec.machineRef.name, withStatus(mu2, UpdateStatus.failed, message));
  };
  const open = memo3 ? new Set(only ? memo3.soakOpen : []) : void 0;
  for (const name of only ?? mus2.keys()) {
    const mu2 = mus2.get(name);
    if (!mu2) continue;
    open?.delete(name);
    if (mu2.status?.updateStatus !== UpdateStatus.updated) continue;
    open?.add(name);
    const recordedMessage = failed.get(name);
    if (recordedMessage !== void 0) {
      setMu(name, withStatus(mu2, UpdateStatus.failed, recordedMessage));
      continue;
    }
    const machine2 = byName2.get(name);
    if (!machine2) continue;
    const cached = memo3?.soak.get(mu2);
    let done;
    let mismatches;
    if (cached && cached.machine === machine2 && cached.kubelet === kubelet) ({ done, mismatches } = cached);
    else {
      done = Date.parse(mu2.status.completionTime ?? "");
      mismatches = verifying && Number.isFinite(done) ? verificationMismatches(mu2, machine2, kubelet) : [];
      memo3?.soak.set(mu2, { machine: machine2, kubelet, done, mismatches });
    }
    if (!Number.isFinite(done)) {
      open?.delete(name);
      continue;
    }
    if (mismatches.length > 0) {
      if (now.getTime() < done + verifyMs)
        hold(
          mu2,
          `machine ${name} verifying: ${mismatches.map((x) => x.short).join(", ")} (${shortDuration(now.getTime() - done)}/${shortDuration(verifyMs)})`,
          new Date(done + verifyMs),
          GateNames.verification
        );
      else {
        const what = mismatches.every((x) => x.kubelet) ? "the node does not run the new kubelet" : "the node does not show it";
        fail(
          mu2,
          boundMessage(
            `machine ${name} failed verification: ${mismatches.map((x) => x.long).join("; ")}, ${shortDuration(verifyMs)} after its update (the updater reported updated, ${what})`,
            512
          ),
          GateNames.verification
        );
      }
      continue;
    }
    if (ms2 === void 0 || now.getTime() >= done + ms2) {
      open?.delete(name);
      continue;
    }
    const bad = conditionsOf(machine2).filter((c) => (c.type === "Ready" || c.type === "NodeHealthy") && c.status === "False");
    if (bad.length > 0) {
      const why = bad.map((c) => `${c.type}=False${c.reason ? ` (${c.reason}${c.message ? `: ${c.message}` : ""})` : ""}`).join(", ");
      const message = boundMessage(
        `machine ${name} turned unhealthy during its soak (${shortDuration(now.getTime() - done)} of ${shortDuration(ms2)} after its update): ${why}`,
        512
      );
      fail(mu2, message, GateNames.soak);
      continue;
    }
    hold(mu2, `machine ${name} soaking ${shortDuration(now.getTime() - done)}/${shortDuration(ms2)}`, new Date(done + ms2), GateNames.soak);
  }
  if (memo3) memo3.soakOpen = open;
  return view;
}
function withStatus(mu2, updateStatus, message) {
  return {
    ...mu2,
    status: { ...mu2.status, updateStatus, ...message !== void 0 ? { message } : {} }
  };
}
var ALERTS_POLL_MS = 5e3;
var ALERT_HOLD_MAX_MS = 7 * 24 * 36e5;
var MATCHER = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(!=|=)\s*"((?:[^"\\]|\\.)*)"$/;
function parseMatcher(text) {
  const m = MATCHER.exec(text.trim());
  if (!m) return void 0;
  return { name: m[1], negate: m[2] === "!=", value: m[3].replace(/\\(.)/g, "$1") };
}
function alertGate(plan2, result, now) {
  const spec = plan2.spec.alertGate;
  if (!spec) return { problems: [], held: false, halted: false };
  const problems = [];
  let url;
  try {
    url = new URL(spec.url);
  } catch {
  }
  if (!url || url.protocol !== "http:" && url.protocol !== "https:")
    problems.push(`spec.alertGate.url: ${JSON.stringify(spec.url.slice(0, 200))} is not an http(s) URL`);
  const matchers = [];
  (spec.matchers ?? []).forEach((t, i) => {
    const m = parseMatcher(t);
    if (m) matchers.push(m);
    else problems.push(`spec.alertGate.matchers[${i}]: ${JSON.stringify(t.slice(0, 100))} is not name="value" or name!="value"`);
  });
  const hold = durationProblems(spec.holdTimeout, "spec.alertGate.holdTimeout");
  problems.push(...hold.problems);
  if (hold.ms !== void 0 && hold.ms > ALERT_HOLD_MAX_MS) problems.push(`spec.alertGate.holdTimeout: ${spec.holdTimeout} is over 168h`);
  if (result?.secretProblem && !plan2.status?.startTime) problems.push(result.secretProblem);
  if (problems.length > 0) return { problems, held: false, halted: false };
  const prev = plan2.status?.alertGate;
  if (prev?.state === "Halted")
    return { problems, held: true, halted: true, message: prev.message ?? "halted by the alert gate", status: prev };
  let state;
  let message;
  if (!result) [state, message] = ["Unreachable", "alerts not read yet (fail closed)"];
  else if (!result.ok) [state, message] = ["Unreachable", `alert endpoint unreadable, holding the plan (fail closed): ${result.error}`];
  else {
    const firing = result.alerts.filter(
      (a) => a.state === "firing" && matchers.every((m) => (a.labels[m.name] ?? "") === m.value !== m.negate)
    );
    const names = [...new Set(firing.map((a) => a.labels["alertname"] ?? "(no alertname)"))];
    [state, message] = firing.length === 0 ? ["Clear", "no matching alert fires"] : [
      "Firing",
      `alert ${names.slice(0, 5).join(", ")}${names.length > 5 ? ` and ${names.length - 5} more` : ""} firing (${(spec.matchers ?? []).join(", ") || "any alert"})`
    ];
  }
  const holding = state !== "Clear";
  const wasHolding = prev?.state === "Firing" || prev?.state === "Unreachable";
  const since = holding && wasHolding && prev?.since ? prev.since : now.toISOString();
  if (holding && now.getTime() - Date.parse(since) >= hold.ms) {
    const halted = boundMessage(`halted: held longer than holdTimeout ${spec.holdTimeout}: ${message}`, 1024);
    return { problems, held: true, halted: true, message: halted, status: { state: "Halted", since: now.toISOString(), message: halted } };
  }
  return { problems, held: holding, halted: false, message, status: { state, since, message: boundMessage(message, 1024) } };
}
function alertGateEvents(prev, next) {
  if (!next || prev?.state === next.state) return [];
  const msg = next.message ?? "";
  switch (next.state) {
    case "Clear":
      return prev ? [{ type: "Normal", reason: PlanEventReasons.alertGateCleared, message: `alertGate: ${msg}` }] : [];
    case "Halted":
      return [{ type: "Warning", reason: PlanEventReasons.alertGateHalted, message: `alertGate: ${msg}` }];
    default:
      return prev?.state === "Firing" || prev?.state === "Unreachable" ? [] : [{ type: "Warning", reason: PlanEventReasons.alertGateHolding, message: `alertGate: ${msg}; no new machine starts` }];
  }
}

// src/plan-controller/decide/plan-status.ts
var inFlightTotal = (ordered) => ordered.reduce((n, { e }) => n + e.inFlight, 0);
function planUpdateStatus(s, ordered, started2) {
  const rows = ordered.map(({ e }) => e.row);
  const inFlight = inFlightTotal(ordered);
  const allUpdated = rows.every((r) => r.updateStatus === "updated");
  if (s.terminal) return s.prev.updateStatus;
  if (s.stopping) return inFlight > 0 ? "aborting" : started2 && allUpdated && s.valid ? "updated" : "aborted";
  if (s.valid && s.alerts.halted && inFlight === 0 && !(started2 && allUpdated)) return "failed";
  if (!started2 && !s.mayStart) return "pending";
  if (allUpdated) return "updated";
  const reachedActive = ordered.some(
    ({ e }) => (e.row.updateStatus === "pending" || e.row.updateStatus === "updating") && e.reason !== Reasons.waitingForSequence
  );
  return rows.some((r) => r.updateStatus === "failed") && !reachedActive && inFlight === 0 ? "failed" : "updating";
}
function planStatusFields(snap, s, ordered, skipped, started2, updateStatus) {
  const { prev, terminal } = s;
  const rows = ordered.map(({ e }) => e.row);
  const machines2 = rows.reduce((n, r) => n + (r.machines ?? 0), 0);
  const updated = rows.reduce((n, r) => n + (r.updated ?? 0), 0);
  if (terminal) {
    const status3 = { ...prev, conditions: [...prev.conditions ?? []] };
    if (s.generation !== void 0) status3.observedGeneration = s.generation;
    return status3;
  }
  const status2 = {
    ...prev,
    updateStatus,
    targets: rows,
    machines: machines2,
    updatedMachines: updated,
    skippedMachines: skipped,
    progress: `${updated}/${machines2}`
  };
  if (s.generation !== void 0) status2.observedGeneration = s.generation;
  if ((started2 || updateStatus === "updating") && !status2.startTime) status2.startTime = snap.now;
  if (isTerminal(updateStatus)) status2.completionTime = snap.now;
  const ws = windowStatus(prev.maintenanceWindow, s.win, snap.now);
  if (ws) status2.maintenanceWindow = ws;
  else delete status2.maintenanceWindow;
  if (s.soak.failures.length > 0) status2.gateFailures = s.soak.failures.slice(0, 1e3);
  if (s.alerts.status) status2.alertGate = s.alerts.status;
  else delete status2.alertGate;
  return status2;
}
function planConditions(s, ordered, status2, started2, updateStatus, memo3) {
  const { prev, terminal, valid, problems, waiting, paused, olderActive } = s;
  const rows = ordered.map(({ e }) => e.row);
  const windowNote = s.windowClosed ? s.win.state.message : s.alertHeld ? s.alerts.message : void 0;
  const window = windowNote ? { window: windowNote, windowReason: s.windowClosed ? Reasons.waitingForMaintenanceWindow : Reasons.waitingForAlerts } : {};
  const machines2 = rows.reduce((n, r) => n + (r.machines ?? 0), 0);
  const updated = rows.reduce((n, r) => n + (r.updated ?? 0), 0);
  const finalStatus = terminal ? prev.updateStatus : updateStatus;
  const ready = readyCondition({
    updateStatus: finalStatus,
    valid,
    started: started2,
    waiting,
    paused,
    ...window,
    ...s.alertHeld && s.alerts.halted ? { halt: s.alerts.message ?? "halted by the alert gate" } : {},
    windowEnded: s.windowEnded,
    deleting: s.deleting,
    supersededBy: s.supersededBy,
    olderActive,
    problems,
    progress: `${updated}/${machines2}`,
    rows,
    stoppedByAbort: s.phase === UpdatePhase.aborting,
    terminal,
    prevReady: prev.conditions?.find((c) => c.type === ConditionTypes.ready),
    unreported: memo3 ? memoUnreported(memo3, s.mus.values()) : unreportedTaskNotes(s.mus.values())
  });
  const conditions = setPlanConditions(
    status2.conditions ?? [],
    {
      valid,
      problems,
      terminal,
      started: started2,
      waiting,
      paused,
      ...window,
      olderActive,
      ready,
      controlPlane: ordered.filter(({ t }) => t.kind === "ControlPlane").map(({ e }) => e),
      machineDeployments: ordered.filter(({ t }) => t.kind === "MachineDeployment").map(({ e }) => e),
      updateStatus: finalStatus,
      invalidFinal: s.verdict.final && !started2
    },
    s.generation,
    s.now
  );
  return { conditions, ready };
}
function memoUnreported(memo3, mus2) {
  const out = [];
  for (const mu2 of mus2) {
    let note = memo3.unreported.get(mu2);
    if (note === void 0) memo3.unreported.set(mu2, note = unreportedTaskNotes([mu2])[0] ?? null);
    if (note !== null) out.push(note);
  }
  return out;
}

// src/plan-controller/decide/finalizer.ts
function finalizerChange(snap, s, planLabel, ordered, d, started2) {
  const hasFinalizer = snap.plan.metadata?.finalizers?.includes(Finalizers.plan) ?? false;
  if (!s.deleting) return !hasFinalizer && !s.terminal && (s.mayStart || started2) ? "add" : void 0;
  const labelled = snap.machines.some((m) => !isDeleting(m) && m.metadata.labels?.[Labels.planName] === planLabel);
  const undone = inFlightTotal(ordered) === 0 && !labelled && d.unlabel.length === 0 && d.scale.length === 0 && !ordered.some(({ e }) => e.scale);
  return hasFinalizer && undone ? "remove" : void 0;
}

// src/plan-controller/bounds.ts
function parameterDepthProblems(plan2) {
  const problems = [];
  const targets = [...plan2.spec.controlPlane ? [plan2.spec.controlPlane] : [], ...plan2.spec.machineDeployments ?? []];
  for (const t of targets) {
    for (const u of t.updaters ?? []) {
      if (u.parameters !== void 0 && nestedDeeperThan(u.parameters, MAX_PARAMETERS_DEPTH)) {
        problems.push(`updater ${u.name} of ${t.name}: parameters are nested deeper than ${MAX_PARAMETERS_DEPTH} levels`);
      }
    }
  }
  return problems;
}

// src/plan-controller/templates.ts
function taskKindOfRef(ref2) {
  const { group } = parseApiVersion(ref2.apiVersion ?? "");
  try {
    return { group, kind: taskKindOfTemplate(ref2.kind ?? "") };
  } catch {
    return void 0;
  }
}
function templateProblems(ref2, lookup) {
  const tk = taskKindOfRef(ref2);
  if (!tk || !tk.group) return [];
  if (isClusterApiGroup(tk.group)) return [`template ${ref2.kind}: ${taskKindProblem(tk.group, tk.kind, void 0)}`];
  const problems = [];
  if (lookup?.task) {
    const p2 = taskKindProblem(tk.group, tk.kind, lookup.task.crd);
    if (p2) problems.push(`template ${ref2.kind} ${ref2.name}: ${p2}`);
  }
  if (lookup?.bytes !== void 0 && lookup.bytes > MAX_TASK_BYTES) {
    problems.push(`template ${ref2.kind} ${ref2.name} is ${lookup.bytes} bytes, more than the ${MAX_TASK_BYTES} a task may have`);
  }
  return problems;
}

// src/plan-controller/scope.ts
var templateKey = (r) => `${r.apiVersion}/${r.kind}/${r.name}`;
var ownedBy = (o, plan2) => plan2.metadata.uid !== void 0 && o.metadata.ownerReferences?.find((r) => r.controller)?.uid === plan2.metadata.uid;
var KCP_KIND = { apiGroup: KubeadmControlPlanes.group, kind: KubeadmControlPlanes.kind };
var DNS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
function unlookedTemplate(ref2) {
  const { group } = parseApiVersion(ref2.apiVersion ?? "");
  return !group || !/Template$/.test(ref2.kind ?? "") || !DNS_NAME.test(ref2.name ?? "") || isClusterApiGroup(group);
}
function templateRefsOf(plan2) {
  const refs = /* @__PURE__ */ new Map();
  for (const t of [plan2.spec.controlPlane, ...plan2.spec.machineDeployments ?? []]) {
    for (const u of t?.updaters ?? [])
      if (u.updaterUpdateTemplateRef) refs.set(templateKey(u.updaterUpdateTemplateRef), u.updaterUpdateTemplateRef);
  }
  return [...refs.values()];
}
async function lookupTemplate(reader2, ns, ref2) {
  if (unlookedTemplate(ref2)) return { ref: ref2, found: false };
  const { group } = parseApiVersion(ref2.apiVersion);
  const r = await reader2.read(ns, group, ref2.kind, ref2.name, "template");
  if ("notServed" in r) return { ref: ref2, found: false, error: `kind ${ref2.kind} is not served by group ${group} (is its CRD installed?)` };
  if ("unreadable" in r) return { ref: ref2, found: false, error: r.unreadable };
  const out = { ref: ref2, found: r.object !== void 0 };
  if (r.object) out.bytes = Buffer.byteLength(JSON.stringify(r.object["spec"] ?? null), "utf8");
  const tk = taskKindOfRef(ref2);
  if (tk) {
    const crd = await reader2.taskCrd(tk.group, tk.kind);
    out.task = crd ? { crd } : {};
  }
  return out;
}
function ownMachineUpdates(list, plan2, memo3) {
  const name = plan2.metadata.name ?? "";
  const uid = plan2.metadata.uid ?? "";
  const own = (m) => m.spec?.planName === name && ownedBy(m, plan2);
  if (!memo3) return list.filter(own);
  const last = memo3.last;
  const changed2 = last && last.name === name && last.uid === uid ? changedAt(last.input, list) : void 0;
  if (changed2) {
    if (changed2.length === 0) {
      memo3.last = { ...last, input: list };
      return last.out;
    }
    const out2 = [...last.out];
    const at2 = new Int32Array(list.length);
    at2.set(last.at);
    let patched = true;
    for (const i of changed2) {
      const keep = own(list[i]);
      if (i < last.input.length) {
        if (at2[i] >= 0 !== keep) {
          patched = false;
          break;
        }
        if (keep) out2[at2[i]] = list[i];
      } else if (keep) {
        at2[i] = out2.length;
        out2.push(list[i]);
      } else at2[i] = -1;
    }
    if (patched) {
      memo3.last = { name, uid, input: list, out: Object.freeze(out2), at: at2 };
      return out2;
    }
  }
  const out = [];
  const at = new Int32Array(list.length);
  list.forEach((m, i) => {
    at[i] = own(m) ? out.push(m) - 1 : -1;
  });
  memo3.last = { name, uid, input: list, out: Object.freeze(out), at };
  return out;
}
async function buildScope(plan2, reader2, memo3) {
  const ns = plan2.metadata.namespace ?? "";
  const name = plan2.metadata.name ?? "";
  const clusterName = plan2.spec.clusterName;
  const cluster2 = await reader2.cluster(ns, clusterName);
  let controlPlane;
  if (plan2.spec.controlPlane) {
    const ref2 = cluster2 ? clusterControlPlaneRef(cluster2) : void 0;
    const kind = ref2 ? { apiGroup: ref2.apiGroup, kind: ref2.kind } : KCP_KIND;
    controlPlane = { kind };
    const r = await reader2.read(ns, kind.apiGroup, kind.kind, plan2.spec.controlPlane.name, "controlPlane");
    if ("notServed" in r) controlPlane.error = `kind ${kind.kind} is not served (${r.notServed})`;
    else if ("unreadable" in r) controlPlane.error = r.unreadable;
    else if (r.object) controlPlane.object = r.object;
  }
  const templates = [];
  for (const ref2 of templateRefsOf(plan2)) templates.push(await lookupTemplate(reader2, ns, ref2));
  const machineUpdates = ownMachineUpdates(await reader2.machineUpdates(ns, labelValue(name)), plan2, memo3);
  return {
    plan: plan2,
    now: reader2.now(),
    cluster: cluster2,
    controlPlane,
    machineDeployments: await reader2.machineDeployments(
      ns,
      (plan2.spec.machineDeployments ?? []).map((t) => t.name)
    ),
    templates,
    machines: await reader2.machines(ns, clusterName),
    machineUpdates,
    plans: await reader2.plans(ns, clusterName)
  };
}

// src/plan-controller/upgrade-rules.ts
var K8S_VERSION = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
var KUBELET_MAX_SKEW = 3;
function parseVersion(v) {
  if (typeof v !== "string") return void 0;
  const m = K8S_VERSION.exec(v);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } : void 0;
}
var compareVersions = (a, b) => a.major - b.major || a.minor - b.minor || a.patch - b.patch;
var fmt = (v) => `v${v.major}.${v.minor}.${v.patch}`;
function versionValue(target2) {
  let out;
  for (const u of Array.isArray(target2.updaters) ? target2.updaters : []) {
    for (const r of Array.isArray(u.responsibilities) ? u.responsibilities : []) {
      if (r.selectResource === "Machine" && r.path === "/spec/version") out = { value: r.value, updater: u.name ?? "" };
    }
  }
  return out;
}
var lowest = (vs) => [...vs].sort(compareVersions)[0];
function groupAll(machines2, cluster2, cpName) {
  const g = { cluster: cluster2, cpName, machines: machines2, cp: [], anyCp: [], workersOf: /* @__PURE__ */ new Map(), atOf: /* @__PURE__ */ new Map(), slots: [] };
  machines2.forEach((m, i) => {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== cluster2 || isDeleting(m)) return void g.slots.push(void 0);
    const slot = { cp: -1, anyCp: -1, md: void 0, inMd: -1 };
    const cp = labels[Labels.controlPlaneName];
    if (cp !== void 0) {
      slot.anyCp = g.anyCp.push(m) - 1;
      if (cpName !== void 0 && cp === cpName) slot.cp = g.cp.push(m) - 1;
    }
    const md2 = labels[Labels.deploymentName];
    if (md2 !== void 0) {
      let list = g.workersOf.get(md2);
      if (!list) {
        g.workersOf.set(md2, list = []);
        g.atOf.set(md2, []);
      }
      slot.md = md2;
      slot.inMd = list.push(m) - 1;
      g.atOf.get(md2).push(i);
    }
    g.slots.push(slot);
  });
  return g;
}
function sameGroupFacts(a, b) {
  const la = a.metadata.labels;
  const lb = b.metadata.labels;
  return la?.[Labels.clusterName] === lb?.[Labels.clusterName] && la?.[Labels.controlPlaneName] === lb?.[Labels.controlPlaneName] && la?.[Labels.deploymentName] === lb?.[Labels.deploymentName] && isDeleting(a) === isDeleting(b);
}
function patchGrouping(g, machines2) {
  const at = changedAt(g.machines, machines2);
  if (!at) return void 0;
  const out = { ...g, machines: machines2 };
  const copied = /* @__PURE__ */ new Set();
  const own = (list) => {
    if (copied.has(list)) return list;
    const c = [...list];
    copied.add(c);
    return c;
  };
  let workersCopied = false;
  for (const i of at) {
    const was = g.machines[i];
    const m = machines2[i];
    if (!was || !sameGroupFacts(was, m)) return void 0;
    const slot = g.slots[i];
    if (!slot) continue;
    if (slot.cp >= 0) (out.cp = own(out.cp))[slot.cp] = m;
    if (slot.anyCp >= 0) (out.anyCp = own(out.anyCp))[slot.anyCp] = m;
    if (slot.md !== void 0) {
      if (!workersCopied) {
        out.workersOf = new Map(out.workersOf);
        workersCopied = true;
      }
      const list = own(out.workersOf.get(slot.md));
      list[slot.inMd] = m;
      out.workersOf.set(slot.md, list);
    }
  }
  return out;
}
function upgradeProblems(input, groups) {
  const { plan: plan2 } = input;
  const cluster2 = plan2.spec.clusterName;
  const problems = [];
  const parsed = /* @__PURE__ */ new Map();
  const versionOf = (m) => {
    const raw = machineVersion(m);
    if (!parsed.has(raw)) parsed.set(raw, parseVersion(raw));
    return parsed.get(raw);
  };
  const versionsOf = (ms2) => ms2.map(versionOf).filter((v) => !!v);
  const cpName = plan2.spec.controlPlane?.name;
  const grouped = groups?.grouping?.machines === input.machines && groups.grouping.cluster === cluster2 && groups.grouping.cpName === cpName ? groups.grouping : groups ? groups.grouping = groupAll(input.machines, cluster2, cpName) : void 0;
  const cpMachines = grouped ? grouped.cp : [];
  const anyCpMachines = grouped ? grouped.anyCp : [];
  const workers = [];
  const workersOf = grouped ? grouped.workersOf : /* @__PURE__ */ new Map();
  for (const m of grouped ? [] : input.machines) {
    const labels = m.metadata.labels;
    if (labels?.[Labels.clusterName] !== cluster2 || isDeleting(m)) continue;
    const cp = labels[Labels.controlPlaneName];
    if (cp !== void 0) {
      anyCpMachines.push(m);
      if (cpName !== void 0 && cp === cpName) cpMachines.push(m);
    }
    const md2 = labels[Labels.deploymentName];
    if (md2 === void 0) continue;
    workers.push(m);
    let list = workersOf.get(md2);
    if (!list) workersOf.set(md2, list = []);
    list.push(m);
  }
  const checkTarget = (label2, target2, machines2) => {
    const set = versionValue(target2);
    if (!set) return void 0;
    if (!groups) return checkTargetNow(label2, set, machines2);
    const value = JSON.stringify([set.value, set.updater]) ?? "";
    const prev = groups.targets.get(label2);
    if (prev && prev.value === value && sameList(prev.machines, machines2)) {
      problems.push(...prev.problems);
      return prev.want;
    }
    const from = problems.length;
    const want = checkTargetNow(label2, set, machines2);
    groups.targets.set(label2, { machines: machines2, value, problems: problems.slice(from), want });
    return want;
  };
  const checkTargetNow = (label2, set, machines2) => {
    const where = `${label2} updater ${set.updater}: Machine /spec/version`;
    const want = parseVersion(set.value);
    if (!want) {
      const shown = typeof set.value === "string" ? JSON.stringify(set.value.length > 64 ? `${set.value.slice(0, 64)}\u2026` : set.value) : JSON.stringify(set.value)?.slice(0, 64) ?? "nothing";
      problems.push(`${where} ${shown} breaks upgrade rule semver: a Kubernetes version is a string vMAJOR.MINOR.PATCH such as v1.30.1`);
      return void 0;
    }
    const older = machines2.filter((m) => {
      const have = versionOf(m);
      return have && compareVersions(want, have) < 0;
    });
    if (older.length > 0)
      problems.push(
        `${where} ${fmt(want)} breaks upgrade rule no-downgrade: ${older.length} machine(s) run a newer version (${nameOf(older[0])} runs ${machineVersion(older[0])})`
      );
    const low = lowest(versionsOf(machines2));
    if (low && (want.major !== low.major || want.minor > low.minor + 1))
      problems.push(
        `${where} ${fmt(want)} breaks upgrade rule no-skipped-minor: the oldest machine runs v${low.major}.${low.minor}, so the next version is at most v${low.major}.${low.minor + 1}.x`
      );
    return want;
  };
  const cpWant = plan2.spec.controlPlane ? checkTarget(`controlPlane ${plan2.spec.controlPlane.name}`, plan2.spec.controlPlane, cpMachines) : void 0;
  const cpAfter = cpWant ?? parseVersion(input.controlPlane ? cpVersion(input.controlPlane) : void 0) ?? lowest(versionsOf(cpMachines)) ?? lowest(versionsOf(anyCpMachines));
  const mdWant = /* @__PURE__ */ new Map();
  for (const md2 of plan2.spec.machineDeployments ?? []) {
    const mine = workersOf.get(md2.name) ?? [];
    const want = checkTarget(`machineDeployment ${md2.name}`, md2, mine);
    if (!want) continue;
    mdWant.set(md2.name, want);
    if (cpAfter && (want.major > cpAfter.major || want.major === cpAfter.major && want.minor > cpAfter.minor))
      problems.push(
        `machineDeployment ${md2.name}: Machine /spec/version ${fmt(want)} breaks upgrade rule workers-not-ahead-of-control-plane: the control plane runs ${fmt(cpAfter)} after this plan (a kubelet is never a minor newer than its API server)`
      );
  }
  if (cpWant) {
    const outside = (after) => !!after && (after.major !== cpWant.major || cpWant.minor - after.minor > KUBELET_MAX_SKEW);
    const behind = /* @__PURE__ */ new Map();
    if (!groups)
      for (const m of workers) {
        const md2 = m.metadata.labels?.[Labels.deploymentName] ?? "";
        const after = mdWant.get(md2) ?? versionOf(m);
        if (outside(after) && !behind.has(md2)) behind.set(md2, after);
      }
    else {
      const atOf = grouped.atOf;
      const firsts = [];
      const cpKey = fmt(cpWant);
      for (const [md2, list] of workersOf) {
        const want = mdWant.get(md2);
        if (want) {
          if (outside(want)) firsts.push({ at: atOf.get(md2)[0], md: md2, v: want });
          continue;
        }
        let e = groups.skew.get(md2);
        if (!e || e.cp !== cpKey || !sameList(e.machines, list)) {
          e = { machines: list, cp: cpKey, first: list.findIndex((m) => outside(versionOf(m))) };
          groups.skew.set(md2, e);
        }
        if (e.first >= 0) firsts.push({ at: atOf.get(md2)[e.first], md: md2, v: versionOf(list[e.first]) });
      }
      for (const f of firsts.sort((a, b) => a.at - b.at)) behind.set(f.md, f.v);
    }
    for (const [md2, v] of behind)
      problems.push(
        `controlPlane ${cpName}: Machine /spec/version ${fmt(cpWant)} breaks upgrade rule version-skew: MachineDeployment ${md2} stays at ${fmt(v)}, more than ${KUBELET_MAX_SKEW} minors behind (update its workers in the same plan or first)`
      );
  }
  return problems;
}
function sameUpgradeFacts(a, b) {
  const la = a.metadata.labels;
  const lb = b.metadata.labels;
  return a.metadata.name === b.metadata.name && la?.[Labels.clusterName] === lb?.[Labels.clusterName] && la?.[Labels.controlPlaneName] === lb?.[Labels.controlPlaneName] && la?.[Labels.deploymentName] === lb?.[Labels.deploymentName] && isDeleting(a) === isDeleting(b) && machineVersion(a) === machineVersion(b);
}
function memoUpgradeProblems(input, memo3) {
  const generation = input.plan.metadata?.generation;
  if (!memo3 || generation === void 0) return upgradeProblems(input);
  const key = JSON.stringify([
    input.plan.metadata?.uid,
    generation,
    input.controlPlane ? cpVersion(input.controlPlane) ?? null : void 0
  ]);
  const prev = memo3.upgrade;
  const at = prev && prev.key === key ? changedAt(prev.machines, input.machines) : void 0;
  if (at) {
    let same = true;
    for (let k = 0; k < at.length && same; k++) {
      const i = at[k];
      if (i >= prev.machines.length || !sameUpgradeFacts(input.machines[i], prev.machines[i])) same = false;
    }
    if (same) {
      memo3.stats.upgradeHits++;
      memo3.upgrade = { key, machines: input.machines, problems: prev.problems };
      return [...prev.problems];
    }
  }
  memo3.stats.upgradeMisses++;
  if (memo3.upgradeGroups?.key !== key) memo3.upgradeGroups = { key, targets: /* @__PURE__ */ new Map(), skew: /* @__PURE__ */ new Map() };
  const g = memo3.upgradeGroups.grouping;
  if (g && g.cluster === input.plan.spec.clusterName && g.cpName === input.plan.spec.controlPlane?.name)
    memo3.upgradeGroups.grouping = patchGrouping(g, input.machines);
  const problems = upgradeProblems(input, memo3.upgradeGroups);
  memo3.upgrade = { key, machines: input.machines, problems: [...problems] };
  return problems;
}
function sameList(a, b) {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// src/plan-controller/validate.ts
var SELECTABLE_RESOURCES = ["Machine", "InfraMachine", "BootstrapConfig"];
var JSON_POINTER = /^(\/([^/~]|~[01])*)+$/;
var DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
var TEMPLATE_KIND = /^[A-Z][A-Za-z0-9]*Template$/;
var API_VERSION2 = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
function targetsOf(plan2) {
  const out = [];
  if (plan2.spec.controlPlane) out.push({ kind: "ControlPlane", target: plan2.spec.controlPlane });
  for (const md2 of plan2.spec.machineDeployments ?? []) out.push({ kind: "MachineDeployment", target: md2 });
  return out;
}
var label = (t) => `${t.kind === "ControlPlane" ? "controlPlane" : "machineDeployment"} ${t.target.name}`;
function validatePlan(input, memo3) {
  const { plan: plan2 } = input;
  const problems = [];
  const ns = plan2.metadata?.namespace ?? "";
  const parsed = PlanSpecSchema.safeParse(plan2.spec);
  if (!parsed.success) problems.push(...formatIssues(parsed.error, "spec"));
  const spec = plan2.spec;
  const clusterName = spec.clusterName ?? "";
  const targets = targetsOf(plan2);
  if (targets.length === 0) problems.push("spec: a plan needs a controlPlane or at least one machineDeployment");
  if (!input.cluster) problems.push(`Cluster ${ns}/${clusterName} not found`);
  else problems.push(...validateControlPlane(input, clusterName));
  problems.push(...validateMachineDeployments(input, clusterName));
  problems.push(...validateSequences(plan2));
  problems.push(...validateUpdaters(input, targets));
  if (input.machines)
    problems.push(...memoUpgradeProblems({ plan: plan2, machines: input.machines, controlPlane: input.controlPlane?.object }, memo3));
  if (input.prestart) {
    problems.push(...input.prestart.schemaProblems);
    if (!spec.acceptUncoveredChanges) problems.push(...input.prestart.uncovered);
  }
  problems.push(...ownerProblems(input));
  return [...new Set(problems)];
}
function validateControlPlane(input, clusterName) {
  const cp = input.plan.spec.controlPlane;
  if (!cp || !input.cluster) return [];
  const ns = input.plan.metadata?.namespace ?? "";
  const problems = [];
  const ref2 = clusterControlPlaneRef(input.cluster);
  if (ref2 && ref2.name !== cp.name)
    problems.push(
      `controlPlane ${cp.name} is not the control plane of Cluster ${clusterName} (its controlPlaneRef names ${ref2.kind} ${ref2.name})`
    );
  const lookup = input.controlPlane;
  const kind = lookup?.kind.kind ?? "KubeadmControlPlane";
  if (lookup?.error) problems.push(`controlPlane ${cp.name}: cannot look up ${kind}: ${lookup.error}`);
  else if (!lookup?.object) problems.push(`${kind} ${ns}/${cp.name} not found`);
  else {
    const owner = clusterLabel(lookup.object);
    if (owner !== void 0 && owner !== clusterName) problems.push(`${kind} ${cp.name} belongs to Cluster ${owner}, not ${clusterName}`);
  }
  return problems;
}
function validateMachineDeployments(input, clusterName) {
  const ns = input.plan.metadata?.namespace ?? "";
  const byName2 = new Map(input.machineDeployments.map((md2) => [nameOf(md2), md2]));
  const problems = [];
  const seen = /* @__PURE__ */ new Set();
  for (const t of input.plan.spec.machineDeployments ?? []) {
    if (seen.has(t.name)) problems.push(`machineDeployment ${t.name} is listed more than once`);
    seen.add(t.name);
    const md2 = byName2.get(t.name);
    if (!md2) {
      problems.push(`MachineDeployment ${ns}/${t.name} not found`);
      continue;
    }
    const owner = mdClusterName(md2) ?? clusterLabel(md2);
    if (owner !== clusterName) problems.push(`MachineDeployment ${t.name} belongs to Cluster ${owner ?? "(none)"}, not ${clusterName}`);
    if (mdStrategyType(md2) === "OnDelete")
      problems.push(
        `MachineDeployment ${t.name} uses the OnDelete rollout strategy: its machines are not updated in place (remove it from the plan or switch it to RollingUpdate)`
      );
  }
  return problems;
}
function validateSequences(plan2) {
  const cp = plan2.spec.controlPlane;
  if (!cp || typeof cp.sequence !== "number") return [];
  return (plan2.spec.machineDeployments ?? []).filter((md2) => typeof md2.sequence === "number" && md2.sequence <= cp.sequence).map(
    (md2) => `machineDeployment ${md2.name} has sequence ${md2.sequence}, not higher than controlPlane sequence ${cp.sequence}: every control-plane sequence must be lower than every MachineDeployment sequence (Kubernetes version-skew rule)`
  );
}
function validateUpdaters(input, targets) {
  const problems = [];
  const lookups = new Map(input.templates.map((l) => [templateKey(l.ref), l]));
  const ns = input.plan.metadata?.namespace ?? "";
  const policy = input.writePolicy ?? DEFAULT_WRITE_POLICY;
  for (const t of targets) {
    const names = /* @__PURE__ */ new Set();
    const claims = [];
    for (const u of Array.isArray(t.target.updaters) ? t.target.updaters : []) {
      const where = `${label(t)} updater ${u.name}`;
      if (names.has(u.name))
        problems.push(`${label(t)}: updater name ${u.name} is used more than once (updater names are unique per target)`);
      names.add(u.name);
      const ref2 = u.updaterUpdateTemplateRef;
      if (ref2) {
        if (!TEMPLATE_KIND.test(ref2.kind ?? "")) problems.push(`${where}: template kind ${ref2.kind} must end in Template`);
        if (!API_VERSION2.test(ref2.apiVersion ?? "")) problems.push(`${where}: template apiVersion ${ref2.apiVersion} is not group/version`);
        if (!DNS_SUBDOMAIN.test(ref2.name ?? ""))
          problems.push(
            `${where}: template name ${ref2.name} must be the name of an object in the plan's namespace ${ns} (cross-namespace references are not allowed)`
          );
        else {
          const l = lookups.get(templateKey(ref2));
          const refused = templateProblems(ref2, l);
          if (refused.length > 0) problems.push(...refused.map((p2) => `${where}: ${p2}`));
          else if (l?.error) problems.push(`${where}: template ${ref2.kind} ${ref2.name}: ${l.error}`);
          else if (!l?.found && !l?.unchecked) problems.push(`${where}: template ${ref2.kind} ${ns}/${ref2.name} not found`);
        }
      }
      for (const r of Array.isArray(u.responsibilities) ? u.responsibilities : []) {
        if (!SELECTABLE_RESOURCES.includes(r.selectResource))
          problems.push(`${where}: selectResource ${String(r.selectResource)} is not one of ${SELECTABLE_RESOURCES.join(", ")}`);
        if (typeof r.path !== "string" || !JSON_POINTER.test(r.path))
          problems.push(`${where}: path ${String(r.path)} is not a JSON pointer such as /spec/version`);
        else if (SELECTABLE_RESOURCES.includes(r.selectResource)) {
          const why = writeRefusal(policy, r.selectResource, r.path);
          if (why) problems.push(`${where}: ${r.selectResource} ${r.path} is not writable: ${why}`);
        }
        if (r.value === void 0) problems.push(`${where}: responsibility ${r.selectResource} ${r.path} has no value`);
        else problems.push(...planValueSizeProblems(r.value, `${where}: responsibility ${r.selectResource} ${r.path}`));
        if (typeof r.path === "string") claims.push({ updater: u.name, selectResource: r.selectResource, path: r.path });
      }
    }
    problems.push(...overlappingClaims(label(t), claims));
  }
  return problems;
}
function overlappingClaims(where, claims) {
  const problems = [];
  const within = (outer, inner) => inner === outer || inner.startsWith(`${outer}/`);
  claims.forEach((a, i) => {
    for (const b of claims.slice(i + 1)) {
      if (a.selectResource !== b.selectResource || !(within(a.path, b.path) || within(b.path, a.path))) continue;
      problems.push(
        a.updater === b.updater ? `${where} updater ${a.updater}: ${a.selectResource} ${a.path} and ${b.path} overlap` : `${where}: ${a.selectResource} ${a.path} (updater ${a.updater}) overlaps ${b.path} (updater ${b.updater}); a field has one owner`
      );
    }
  });
  return problems;
}

// src/plan-controller/decide/mode.ts
function decideStance(snap, memo3) {
  const plan2 = snap.plan;
  const planName = plan2.metadata?.name ?? "";
  const prev = plan2.status ?? {};
  const now = new Date(snap.now);
  const generation = plan2.metadata?.generation;
  const terminal = isTerminal(prev.updateStatus);
  const mus2 = ownUpdates(snap.machineUpdates, planName, memo3);
  const win = windowGate(plan2, now);
  const machineByName = machineIndex(snap.machines, memo3);
  const soakKey = memo3 ? JSON.stringify([plan2.metadata?.uid, generation, planName, prev.gateFailures ?? []]) : "";
  if (memo3) memo3.delta = void 0;
  const only = memo3 && generation !== void 0 ? soakCandidates(memo3, soakKey, snap.machineUpdates, snap.machines) : void 0;
  const soak = soakGate(plan2, mus2, snap.machines, now, machineByName, memo3, only);
  const alerts = alertGate(plan2, snap.alerts, now);
  const startedBefore = !!prev.startTime || mus2.size > 0;
  const verdict = invalidVerdict({
    problems: [...validatePlan(snap, memo3), ...parameterDepthProblems(plan2), ...win.problems, ...soak.problems, ...alerts.problems],
    started: startedBefore,
    generation,
    prev,
    now: snap.now
  });
  const valid = verdict.problems.length === 0;
  const others = snap.plans.filter((p2) => p2.metadata?.name !== planName && p2.spec.clusterName === plan2.spec.clusterName);
  const olderActive = others.filter((p2) => planAge(p2, plan2) < 0 && !isTerminal(p2.status?.updateStatus));
  const windowClosed = valid && win.state?.open === false;
  const windowEnded = !terminal && (windowClosed && win.abortAtEnd && [...mus2.values()].some((mu2) => machineState(mu2) === "inFlight") || prev.updateStatus === UpdateStatus.aborting && prev.conditions?.find((c) => c.type === ConditionTypes.ready)?.reason === Reasons.maintenanceWindowEnded);
  const deleting = !!plan2.metadata?.deletionTimestamp;
  const phase2 = plan2.spec.updatePhase ?? UpdatePhase.updating;
  const paused = plan2.spec.paused === true;
  const stopping = deleting || phase2 === UpdatePhase.aborting || terminal || windowEnded;
  const waiting = olderActive.length > 0;
  const alertHeld = valid && alerts.held;
  const mayStart = !stopping && valid && !waiting && !paused && !windowClosed && !alertHeld;
  const supersededBy = plan2.metadata?.annotations?.[PlanAnnotations.supersededBy];
  return {
    planName,
    prev,
    now,
    ...generation !== void 0 ? { generation } : {},
    deleting,
    phase: phase2,
    paused,
    terminal,
    mus: mus2,
    win,
    soak,
    alerts,
    verdict,
    problems: verdict.problems,
    valid,
    startedBefore,
    olderActive,
    waiting,
    ...supersededBy !== void 0 ? { supersededBy } : {},
    windowClosed,
    windowEnded,
    alertHeld,
    stopping,
    mayStart,
    mode: stopping ? "stop" : mayStart ? "rollout" : "hold",
    // Soak (gates.ts): the rollout counts a soaking machine in flight and a failed soak failed; a stopping plan starts
    // nothing more, so there its machines count as their MachineUpdates say.
    rolloutMus: stopping ? mus2 : soak.mus,
    machineByName
  };
}

// src/plan-controller/decide/report.ts
function planEvents(s, status2, ordered, d, readyReason) {
  const { prev, terminal } = s;
  const rows = ordered.map(({ e }) => e.row);
  const events = eventsFor(s.planName, prev, status2, terminal ? [] : rows, d, s.problems, readyReason);
  if (terminal) return events;
  events.push(
    ...alreadyAtTargetEvents(
      prev,
      ordered.flatMap(({ e }) => e.skipped)
    )
  );
  events.push(...windowEvents(prev.maintenanceWindow, status2.maintenanceWindow, s.win.abortAtEnd));
  events.push(...alertGateEvents(prev.alertGate, status2.alertGate));
  return events;
}
function requeueAt(s) {
  if (s.terminal) return void 0;
  const wakes = [
    s.win.state?.nextChange,
    s.stopping ? void 0 : s.soak.wakeAt,
    s.alerts.status && !s.stopping ? new Date(s.now.getTime() + ALERTS_POLL_MS) : void 0
  ].filter((x) => !!x);
  return wakes.length > 0 ? new Date(Math.min(...wakes.map((w) => w.getTime()))).toISOString() : void 0;
}
function planMetrics(s, ordered, d) {
  return s.terminal ? { started: 0, updated: 0, failed: 0 } : metricDeltas(
    s.prev,
    ordered.map(({ e }) => e.row),
    d
  );
}

// src/plan-controller/decide/supersede.ts
function supersededPlans(s) {
  if (s.stopping || !s.valid || s.paused || s.windowClosed || s.alertHeld) return [];
  return s.olderActive.filter((p2) => p2.spec.updatePhase !== UpdatePhase.aborting && !p2.metadata?.deletionTimestamp).map((p2) => p2.metadata?.name ?? "");
}

// src/runtime/pure/freeze.ts
function deepFreeze(v) {
  const todo = [v];
  while (todo.length > 0) {
    const x = todo.pop();
    if (x !== null && typeof x === "object" && !Object.isFrozen(x)) {
      Object.freeze(x);
      for (const c of Object.values(x)) if (c !== null && typeof c === "object") todo.push(c);
    }
  }
  return v;
}

// src/plan-controller/concurrency.ts
var targetDisruptive = (updaters) => !(updaters && updaters.length > 0 && updaters.every((u) => u.affectsAvailability === false));
function mdConcurrency(md2, replicas = mdReplicas(md2), disruptive = true) {
  const ru = mdRollingUpdate(md2);
  const fenceposts = resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicas);
  if (!fenceposts.ok) return { ok: false, error: `rollingUpdate: ${fenceposts.error}` };
  if (!disruptive)
    return { ok: true, max: Math.max(1, fenceposts.value.surge + fenceposts.value.unavailable), surge: false, replicas, disruptive };
  const surge = fenceposts.value.unavailable === 0;
  return { ok: true, max: surge ? 1 : fenceposts.value.unavailable, surge, replicas, disruptive };
}
function mdStartBudget(c, unavailable, inUpdate) {
  return Math.max(0, c.max - (c.disruptive ? unavailable : inUpdate));
}
function mdConcurrencyNote(c) {
  if (!c.disruptive)
    return `non-disruptive updaters (affectsAvailability false): not counted against maxUnavailable, no surge; up to ${c.max} in update at once (maxSurge + maxUnavailable, at least 1)`;
  return c.surge ? `surge (maxUnavailable 0): one at a time with ${c.replicas + 1} machines` : `maxUnavailable=${c.max}`;
}

// src/plan-controller/decide/start.ts
function rolloutTarget(scope, t, c, size, halted, ev) {
  const { groups, inFlight, current } = c;
  if (halted) {
    const policy = scope.halt ? "failurePolicy Halt" : `failurePolicy Continue: ${c.failed.length} updates failed, as many as the target has machines`;
    return `halted (${policy}) after the failure of ${failureNote(scope, c.failed.length ? c.failed : groups.aborted)}; waiting for ${inFlight} machine(s) in flight`;
  }
  if (groups.notStarted.length > 0) {
    const r = t.kind === "ControlPlane" ? startControlPlane(scope, c.all, current, groups, size.desired) : startMachineDeployment(scope, size.md, current, groups, size.surged, size.surgeOrig, targetDisruptive(t.target.updaters));
    ev.starts = r.starts;
    if (r.scale) ev.scale = r.scale;
    if (r.starts.length > 0 || r.scale) {
      ev.row.updateStatus = "updating";
      ev.reason = Reasons.updating;
      ev.row.updating = inFlight + r.starts.length;
      ev.inFlight = inFlight + r.starts.length;
      ev.started = true;
    }
    if (r.reason) ev.reason = r.reason;
    return r.message;
  }
  if (!size.allCreated) return `waiting for ${size.desired - current.length} machine(s) to be created`;
  if (!size.settled)
    return `waiting for ${current.length - size.desired} machine(s) to be removed (${current.length} of ${size.desired} replicas)`;
  if (inFlight > 0) return `${inFlight} machine(s) in update: ${nameList(groups.inFlight)}`;
  return void 0;
}
function startControlPlane(scope, all, current, groups, desired) {
  const problems = [];
  for (const m of all) if (isDeleting(m)) problems.push(`machine ${nameOf(m)} is being deleted`);
  for (const m of current) if (!isMachineReady(m)) problems.push(`machine ${nameOf(m)} is not Ready`);
  for (const n of groups.inFlight) problems.push(`machine ${n} is in update`);
  for (const m of current) {
    const other = inUpdateByOther(scope, m);
    if (other) problems.push(`machine ${nameOf(m)} is in update by plan ${other}`);
  }
  if (desired !== void 0 && current.length !== desired) problems.push(`${current.length} of ${desired} control-plane machines exist`);
  if (problems.length > 0)
    return {
      starts: [],
      message: `preflight: ${summarizeList(problems, { maxBytes: MessageBudget.status / 2 })}`,
      reason: groups.inFlight.length ? Reasons.updating : Reasons.preflightFailed
    };
  const next = groups.notStarted[0];
  return { starts: [next], message: `updating ${next} (one control-plane machine at a time)` };
}
function surgeIntent(scope, md2, replicas) {
  const scale = {
    name: nameOf(md2),
    replicas: replicas + 1,
    annotations: { [Annotations.surgeOriginalReplicas]: String(replicas), [Annotations.surgePlan]: scope.planName },
    kind: "surge"
  };
  if (md2.metadata.resourceVersion) scale.resourceVersion = md2.metadata.resourceVersion;
  return {
    starts: [],
    scale,
    reason: Reasons.surging,
    message: `maxUnavailable resolves to 0: surging ${nameOf(md2)} from ${replicas} to ${replicas + 1} replicas`
  };
}
function startMachineDeployment(scope, md2, current, groups, surged, surgeOrig, disruptive) {
  if (!md2) return { starts: [], message: "MachineDeployment not found" };
  const replicas = mdReplicas(md2);
  const orig = surged ? Number(surgeOrig) : replicas;
  const concurrency = mdConcurrency(md2, Number.isInteger(orig) ? orig : replicas, disruptive);
  if (!concurrency.ok) return { starts: [], message: concurrency.error };
  const inFlight = new Set(groups.inFlight);
  const unavailable = current.filter((m) => !isMachineReady(m) || inFlight.has(nameOf(m)) || inUpdateByOther(scope, m) !== void 0);
  const notStarted = new Set(groups.notStarted);
  const candidates = current.filter((m) => notStarted.has(nameOf(m)) && isMachineReady(m) && inUpdateByOther(scope, m) === void 0).map(nameOf);
  let budget;
  let why;
  if (concurrency.surge) {
    if (!surged) return surgeIntent(scope, md2, replicas);
    if (current.length < orig + 1)
      return {
        starts: [],
        reason: Reasons.surging,
        message: `surge: waiting for the extra machine (${current.length} of ${orig + 1} exist)`
      };
    budget = 1 - unavailable.length;
    why = `surge (maxUnavailable 0): one at a time with ${orig + 1} machines`;
  } else {
    budget = mdStartBudget(concurrency, unavailable.length, groups.inFlight.length);
    why = mdConcurrencyNote(concurrency);
  }
  const starts2 = candidates.slice(0, Math.max(0, budget));
  if (starts2.length > 0) return { starts: starts2, message: `${why}; starting ${nameList(starts2)}` };
  const candidateSet = new Set(candidates);
  const notReady = groups.notStarted.filter((n) => !candidateSet.has(n));
  const unavailableNote = unavailable.length ? `${unavailable.length} machine(s) unavailable (${nameList(unavailable.map(nameOf))})` : "no machine unavailable";
  return { starts: [], message: `${why}; ${unavailableNote}${notReady.length ? `; waiting for ${nameList(notReady)} to be Ready` : ""}` };
}

// src/plan-controller/decide/surge.ts
function restoreSurge(t, c, size, mode, halted, ev) {
  const { md: md2 } = size;
  if (!md2 || !size.surged || c.inFlight > 0 || ev.scale) return void 0;
  if (mode !== "stop" && c.groups.notStarted.length > 0 && !halted) return void 0;
  const orig = Number(size.surgeOrig);
  const restore = {
    name: t.target.name,
    annotations: { [Annotations.surgeOriginalReplicas]: null, [Annotations.surgePlan]: null },
    kind: "restore"
  };
  if (Number.isInteger(orig) && mdReplicas(md2) === orig + 1) restore.replicas = orig;
  if (md2.metadata.resourceVersion) restore.resourceVersion = md2.metadata.resourceVersion;
  ev.scale = restore;
  if (ev.row.updateStatus === "updated") ev.row.updateStatus = "updating";
  return `restoring ${t.target.name} to ${orig} replicas after the surge`;
}

// src/plan-controller/decide/targets.ts
function targetScope(snap, s, memo3) {
  const plan2 = snap.plan;
  const targetMus = /* @__PURE__ */ new Map();
  const byKind = /* @__PURE__ */ new Map();
  const cluster2 = plan2.spec.clusterName;
  const crossOf = (name) => {
    const mu2 = s.rolloutMus.get(name);
    return !!mu2 && targetOfMu(cluster2, s.machineByName.get(name), mu2.spec.target.kind, mu2.spec.target.name);
  };
  const delta = memo3?.delta;
  const cross = memo3 && delta && memo3.cross ? memo3.cross : memo3 ? /* @__PURE__ */ new Set() : void 0;
  if (memo3 && delta && memo3.cross) {
    const names = /* @__PURE__ */ new Set();
    for (const i of delta.mus) names.add(snap.machineUpdates[i].spec.machineRef.name);
    for (const i of delta.machines) names.add(snap.machines[i].metadata.name ?? "");
    for (const n of memo3.cross) names.add(n);
    for (const n of names) {
      if (crossOf(n)) cross.add(n);
      else cross.delete(n);
    }
  }
  const full = memo3 !== void 0 && !(delta && memo3.cross);
  for (const mu2 of s.rolloutMus.values()) {
    const { kind, name } = mu2.spec.target;
    let names = byKind.get(kind);
    if (!names) byKind.set(kind, names = /* @__PURE__ */ new Map());
    let list = names.get(name);
    if (!list) names.set(name, list = []);
    list.push(mu2);
    if (full && crossOf(mu2.spec.machineRef.name)) cross.add(mu2.spec.machineRef.name);
  }
  if (memo3) memo3.cross = cross;
  const crossTarget = (cross?.size ?? 0) > 0;
  for (const [kind, names] of byKind) for (const [name, list] of names) targetMus.set(targetKey(kind, name), list);
  const skipping = plan2.spec.rerunMachinesAtTarget !== true && (s.mayStart || s.startedBefore);
  return {
    snap,
    machines: machinesByTarget(plan2.spec.clusterName, snap.machines, memo3),
    targetMus,
    planName: s.planName,
    planLabel: labelValue(s.planName),
    halt: (plan2.spec.failurePolicy ?? "Halt") === "Halt",
    mus: s.rolloutMus,
    atTarget: new Set(skipping ? snap.atTarget ?? [] : []),
    crossTarget
  };
}
function targetOfMu(clusterName, m, kind, name) {
  const labels = m?.metadata.labels;
  if (labels?.[Labels.clusterName] !== clusterName) return false;
  const cp = labels[Labels.controlPlaneName];
  if (cp !== void 0) return kind !== "ControlPlane" || cp !== name;
  const md2 = labels[Labels.deploymentName];
  return md2 !== void 0 && (kind !== "MachineDeployment" || md2 !== name);
}
function evaluateTargets(scope, s, memo3) {
  const targets = targetsOf(scope.snap.plan).filter((t) => typeof t.target?.name === "string");
  const sequences = [...new Set(targets.map((t) => t.target.sequence))].sort((a, b) => a - b);
  const evals = /* @__PURE__ */ new Map();
  if (memo3) {
    const atKey = [...scope.atTarget].join("\n");
    memo3.fast = !scope.crossTarget && memo3.lastCrossFree === true && memo3.lastAtTarget === atKey;
    memo3.lastCrossFree = !scope.crossTarget;
    memo3.lastAtTarget = atKey;
    memo3.mdByName = /* @__PURE__ */ new Map();
    for (const o of scope.snap.machineDeployments) if (!memo3.mdByName.has(nameOf(o))) memo3.mdByName.set(nameOf(o), o);
  }
  let lowerUpdated = true;
  const bySeq = /* @__PURE__ */ new Map();
  for (const t of targets) {
    let g = bySeq.get(t.target.sequence);
    if (!g) bySeq.set(t.target.sequence, g = []);
    g.push(t);
  }
  for (const seq of sequences) {
    const group = bySeq.get(seq);
    for (const t of group)
      evals.set(t, memo3 ? memoEvalTarget(memo3, scope, t, s.mode, lowerUpdated) : evalTarget(scope, t, s.mode, lowerUpdated));
    lowerUpdated = lowerUpdated && group.every((t) => evals.get(t).row.updateStatus === "updated");
  }
  if (memo3) {
    const keys = new Set(targets.map((t) => targetKey(t.kind, t.target.name)));
    for (const key of memo3.targets.keys()) if (!keys.has(key)) memo3.targets.delete(key);
  }
  const ordered = targets.map((t) => ({ t, e: evals.get(t) }));
  if (!s.stopping)
    for (const { t, e } of ordered) {
      const notes = s.soak.soaking.get(targetKey(t.kind, t.target.name));
      if (notes) e.row.message = boundMessage([e.row.message, ...notes].filter((x) => x).join("; "), MessageBudget.status);
    }
  return ordered;
}
function countTarget(scope, t) {
  const key = targetKey(t.kind, t.target.name);
  const all = scope.machines.get(key) ?? [];
  const current = all.some(isDeleting) ? all.filter((m) => !isDeleting(m)) : all;
  const groups = { notStarted: [], inFlight: [], updated: [], failed: [], aborted: [] };
  const skipped = [];
  for (const m of current) {
    const name = nameOf(m);
    const st = machineState(scope.mus.get(name));
    if (st === "notStarted" && scope.atTarget.has(name)) {
      groups.updated.push(name);
      skipped.push(name);
    } else groups[st].push(name);
  }
  const targetMus = scope.targetMus.get(key) ?? [];
  const failedMus = targetMus.filter((mu2) => machineState(mu2) === "failed");
  const currentNames = failedMus.length > 0 ? new Set(current.map(nameOf)) : void 0;
  const failed = failedMus.filter((mu2) => currentNames.has(mu2.spec.machineRef.name) || mu2.spec.updatePhase !== UpdatePhase.aborting).map((mu2) => mu2.spec.machineRef.name);
  return {
    all,
    current,
    groups,
    skipped,
    started: targetMus.length > 0 || skipped.length > 0,
    inFlight: groups.inFlight.length,
    unsuccessful: groups.failed.length + groups.aborted.length,
    failed,
    everFailed: failed.length + groups.aborted.length
  };
}
function sizeTarget(scope, t, current) {
  const { snap } = scope;
  const md2 = t.kind === "MachineDeployment" ? snap.machineDeployments.find((o) => nameOf(o) === t.target.name) : void 0;
  const cp = snap.controlPlane?.object;
  const desired = t.kind === "ControlPlane" ? cp ? cpReplicas(cp) : void 0 : md2 ? mdReplicas(md2) : void 0;
  const surgeOwner = md2?.metadata.annotations?.[Annotations.surgePlan];
  const surgeOrig = md2?.metadata.annotations?.[Annotations.surgeOriginalReplicas];
  const owner = t.kind === "ControlPlane" ? cp : md2;
  const sized = desired !== void 0 && owner?.metadata.annotations?.[Annotations.paused] === void 0;
  return {
    ...md2 ? { md: md2 } : {},
    ...desired !== void 0 ? { desired } : {},
    surged: surgeOrig !== void 0 && (surgeOwner === void 0 || surgeOwner === scope.planName),
    ...surgeOrig !== void 0 ? { surgeOrig } : {},
    allCreated: !sized || current >= desired,
    // Updated means the target settled at its desired size: a scale-down (e.g. after the surge) is still in progress.
    settled: !sized || current === desired,
    // A target whose object does not exist (an invalid plan) has no machines: "0/0 updated" would be a lie.
    missing: t.kind === "ControlPlane" ? !cp : !md2
  };
}
function isHalted(scope, c, size) {
  const breaker = Math.max(1, size.desired ?? c.current.length);
  return scope.halt ? c.everFailed > 0 : c.failed.length >= breaker;
}
function targetVerdict(scope, t, mode, reached, c, size, halted) {
  const allDone = c.groups.notStarted.length === 0 && c.inFlight === 0;
  if (size.missing && !c.started) return { status: "pending", reason: Reasons.pending, message: `${t.kind} ${t.target.name} not found` };
  if (mode === "stop") {
    if (c.inFlight > 0)
      return {
        status: "aborting",
        reason: Reasons.aborting,
        message: `waiting for ${c.inFlight} machine(s) to stop: ${nameList(c.groups.inFlight)}`
      };
    if (allDone && c.unsuccessful === 0 && size.allCreated && c.started) return { status: "updated", reason: Reasons.updated, message: "" };
    if (c.failed.length > 0) return { status: "failed", reason: Reasons.failed, message: `failed: ${failureNote(scope, c.failed)}` };
    return { status: "aborted", reason: Reasons.aborted, message: "" };
  }
  if (allDone && c.unsuccessful === 0 && size.settled && !size.surged) return { status: "updated", reason: Reasons.updated, message: "" };
  if (c.inFlight === 0 && c.everFailed > 0 && (halted || c.groups.notStarted.length === 0 && size.allCreated))
    return { status: "failed", reason: Reasons.failed, message: failedMessage(scope, c, halted) };
  if (c.started || size.surged) return { status: "updating", reason: Reasons.updating, message: "" };
  if (reached) return { status: "pending", reason: Reasons.pending, message: "" };
  return {
    status: "pending",
    reason: Reasons.waitingForSequence,
    message: `waiting for the targets with a lower sequence than ${t.target.sequence} to be updated`
  };
}
function failedMessage(scope, c, halted) {
  const why = halted ? scope.halt ? "halted (failurePolicy Halt); " : `halted: ${c.failed.length} updates failed, as many as the target has machines; ` : "";
  const failed = c.failed.length ? `failed: ${failureNote(scope, c.failed)}` : "";
  const aborted = c.groups.aborted.length ? `${c.failed.length ? "; " : ""}aborted: ${nameList(c.groups.aborted)}` : "";
  return `${why}${failed}${aborted}`;
}
function evalTarget(scope, t, mode, reached) {
  const c = countTarget(scope, t);
  const size = sizeTarget(scope, t, c.current.length);
  const halted = isHalted(scope, c, size);
  const verdict = targetVerdict(scope, t, mode, reached, c, size, halted);
  const ev = {
    row: {
      kind: t.kind,
      name: t.target.name,
      sequence: t.target.sequence,
      updateStatus: verdict.status,
      machines: c.current.length,
      updated: c.groups.updated.length,
      ...c.skipped.length > 0 ? { skipped: c.skipped.length } : {},
      updating: c.inFlight,
      failed: c.failed.length,
      aborted: c.groups.aborted.length
    },
    reason: verdict.reason,
    starts: [],
    inFlight: c.inFlight,
    started: c.started,
    skipped: c.skipped
  };
  let message = verdict.message;
  const open = verdict.status !== "updated" && verdict.status !== "failed";
  if (mode === "rollout" && reached && open) message = rolloutTarget(scope, t, c, size, halted, ev) ?? message;
  else if (mode === "hold" && open && c.inFlight > 0)
    message = `no new machines start; ${c.inFlight} machine(s) in update: ${nameList(c.groups.inFlight)}`;
  message = restoreSurge(t, c, size, mode, halted, ev) ?? message;
  if (message) ev.row.message = boundMessage(message, MessageBudget.status);
  return ev;
}
function ownerOf(scope, t, memo3) {
  if (t.kind === "ControlPlane") return scope.snap.controlPlane?.object;
  return memo3.mdByName?.get(t.target.name) ?? scope.snap.machineDeployments.find((o) => nameOf(o) === t.target.name);
}
function memoEvalTarget(memo3, scope, t, mode, reached) {
  const plan2 = scope.snap.plan;
  const generation = plan2.metadata?.generation;
  if (generation === void 0) return evalTarget(scope, t, mode, reached);
  const tk = targetKey(t.kind, t.target.name);
  const key = `${plan2.metadata?.uid ?? ""}/${generation}/${scope.planName}/${mode}/${reached}`;
  const owner = ownerOf(scope, t, memo3);
  const machines2 = scope.machines.get(tk) ?? [];
  const targetMus = scope.targetMus.get(tk) ?? [];
  const prev = memo3.targets.get(tk);
  let hit = prev !== void 0 && prev.key === key && prev.owner === owner && sameRefs(prev.machines, machines2) && sameRefs(prev.targetMus, targetMus);
  if (hit && memo3.fast) {
    memo3.stats.targetHits++;
    return { ...prev.ev, row: { ...prev.ev.row } };
  }
  const mus2 = new Array(machines2.length);
  const atTarget = new Array(machines2.length);
  for (let i = 0; i < machines2.length; i++) {
    const name = nameOf(machines2[i]);
    mus2[i] = scope.mus.get(name);
    atTarget[i] = scope.atTarget.has(name);
    if (hit && (mus2[i] !== prev.mus[i] || atTarget[i] !== prev.atTarget[i])) hit = false;
  }
  let ev;
  if (hit) {
    memo3.stats.targetHits++;
    ev = prev.ev;
  } else {
    memo3.stats.targetMisses++;
    ev = deepFreeze(evalTarget(scope, t, mode, reached));
  }
  memo3.targets.set(tk, { key, owner, machines: machines2, mus: mus2, atTarget, targetMus, ev });
  return { ...ev, row: { ...ev.row } };
}

// src/plan-controller/decide.ts
function decidePlan(snap, memo3) {
  const stance = decideStance(snap, memo3);
  const supersede = supersededPlans(stance);
  const scope = targetScope(snap, stance, memo3);
  const ordered = evaluateTargets(scope, stance, memo3);
  const started2 = stance.startedBefore || ordered.some(({ e }) => e.skipped.length > 0);
  const { create, scale } = startIntents(stance.planName, ordered, stance.terminal);
  const { label: label2, unlabel } = labelChanges(snap, stance.mus, scope.planLabel, create, memo3);
  const d = {
    problems: stance.problems,
    status: {},
    create,
    abort: abortsOf(snap, stance.mus, stance.stopping, stance.machineByName, memo3),
    label: label2,
    unlabel,
    supersede,
    scale,
    events: [],
    metrics: { started: 0, updated: 0, failed: 0 }
  };
  const updateStatus = planUpdateStatus(stance, ordered, started2);
  const skipped = ordered.reduce((n, { e }) => n + e.skipped.length, 0);
  const status2 = planStatusFields(snap, stance, ordered, skipped, started2, updateStatus);
  const { conditions, ready } = planConditions(stance, ordered, status2, started2, updateStatus, memo3);
  status2.conditions = conditions;
  d.status = status2;
  const finalizer = finalizerChange(snap, stance, scope.planLabel, ordered, d, started2);
  if (finalizer) d.finalizer = finalizer;
  d.events = planEvents(stance, status2, ordered, d, ready.reason);
  const wake = requeueAt(stance);
  if (wake) d.requeueAt = wake;
  d.metrics = planMetrics(stance, ordered, d);
  d.gatesHolding = stance.stopping ? [] : [...stance.soak.holding];
  d.machinesByTarget = scope.machines;
  return d;
}

// src/runtime/pure/set-patch.ts
import { isDeepStrictEqual } from "node:util";
function verifyValues(obj2, items) {
  const want = /* @__PURE__ */ new Map();
  for (const r of items) want.set(r.path, r.value);
  const out = [];
  for (const [path, expected] of want) {
    let actual;
    try {
      actual = getPointer(obj2, path);
    } catch {
      actual = void 0;
    }
    if (!isDeepStrictEqual(actual, expected)) out.push({ path, expected, actual });
  }
  return out;
}

// src/plan-controller/at-target.ts
function targetValues(updaters) {
  if (!Array.isArray(updaters) || updaters.length === 0) return void 0;
  const out = /* @__PURE__ */ new Map();
  for (const u of updaters) {
    const resps = Array.isArray(u.responsibilities) ? u.responsibilities.filter((r) => typeof r.path === "string" && JSON_POINTER.test(r.path) && r.value !== void 0) : [];
    if (resps.length === 0) return void 0;
    for (const r of resps) {
      let list = out.get(r.selectResource);
      if (!list) out.set(r.selectResource, list = []);
      list.push({ path: r.path, value: r.value });
    }
  }
  return out;
}
function machineAtTarget(m, values, lookup) {
  const ns = m.metadata.namespace ?? "";
  for (const [sel, items] of values) {
    let obj2;
    if (sel === "Machine") obj2 = m;
    else {
      const ref2 = sel === "InfraMachine" ? machineInfraRef(m) : machineBootstrapRef(m);
      obj2 = ref2 ? lookup(ns, ref2) : void 0;
    }
    if (!obj2 || verifyValues(obj2, items).length > 0) return false;
  }
  return true;
}
var AtTargetMemo = class {
  /**
   * @param maxEntries the most machines remembered (then it starts over)
   * @param slack entries past the current candidates kept before they are swept (machinesAtTarget)
   */
  constructor(maxEntries = 2e5, slack = 1024) {
    this.maxEntries = maxEntries;
    this.slack = slack;
  }
  maxEntries;
  slack;
  generation;
  entries = /* @__PURE__ */ new Map();
  /**
   * The last call's machines and, per position, what was found for that Machine object (before the MachineUpdate
   * check): a machine that is the same object at the same position is answered without a lookup (refs: only while the
   * referenced kinds' stores are unchanged, `stamp`).
   */
  last;
  /**
   * excluded()'s last input and set (patched in place while the updates are patches of the last list), and the names
   * it added since machinesAtTarget last read it (undefined: the set was rebuilt, so it may also have lost names).
   */
  excl;
  added;
  /** Answers served from the memo (for tests and metrics). */
  hits = 0;
  /** Answers computed. */
  misses = 0;
  /** Number of machines remembered. */
  get size() {
    return this.entries.size;
  }
  /** Forgets everything when the plan's generation (its values) changed. */
  begin(generation) {
    if (generation !== this.generation) {
      this.entries.clear();
      this.last = void 0;
    }
    this.generation = generation;
  }
  /** machineAtTarget, answered from the memo while the objects it reads are unchanged. */
  check(m, values, lookup) {
    const ns = m.metadata.namespace ?? "";
    const rv = m.metadata.resourceVersion;
    const name = nameOf(m);
    const hit = this.entries.get(name);
    if (hit && rv !== void 0 && hit.rv === rv && hit.values === values.size) {
      let same = true;
      for (const r of hit.refs) {
        if (lookup(ns, r.ref)?.metadata.resourceVersion !== r.rv) {
          same = false;
          break;
        }
      }
      if (same) {
        this.hits++;
        return hit.atTarget;
      }
    }
    this.misses++;
    const atTarget = machineAtTarget(m, values, lookup);
    let keyed = rv !== void 0;
    const refs = [];
    for (const sel of values.keys()) {
      if (sel === "Machine") continue;
      const ref2 = sel === "InfraMachine" ? machineInfraRef(m) : machineBootstrapRef(m);
      if (!ref2) continue;
      const obj2 = lookup(ns, ref2);
      if (obj2 && obj2.metadata.resourceVersion === void 0) keyed = false;
      refs.push({ ref: ref2, rv: obj2?.metadata.resourceVersion });
    }
    if (keyed) {
      if (this.entries.size >= this.maxEntries && !this.entries.has(name)) this.entries.clear();
      this.entries.set(name, { rv, values: values.size, refs, atTarget });
    } else this.entries.delete(name);
    return atTarget;
  }
  /**
   * The names of the machines these MachineUpdates are for (machinesAtTarget's `exclude`): last call's set, with the
   * names of the positions holding new objects added, when the list is a patch of the last (store.ts keeps objects in
   * place and appends new ones); built afresh otherwise (an update removed or moved).
   */
  excluded(mus2) {
    const last = this.excl;
    const at = last ? changedAt(last.mus, mus2) : void 0;
    if (at && at.every((i) => i >= last.mus.length || last.mus[i].spec.machineRef.name === mus2[i].spec.machineRef.name)) {
      for (const i of at) {
        const name = mus2[i].spec.machineRef.name;
        if (!last.set.has(name)) {
          last.set.add(name);
          this.added?.add(name);
        }
      }
      this.excl = { mus: mus2, set: last.set };
      return last.set;
    }
    const set = new Set(mus2.map((m) => m.spec.machineRef.name));
    this.excl = { mus: mus2, set };
    this.added = void 0;
    return set;
  }
  /**
   * The names excluded() added since the last call of this (then it starts collecting again), or undefined when
   * `exclude` is not the set excluded() keeps or that set was rebuilt since.
   */
  takeAdded(exclude) {
    const added = this.excl?.set === exclude && this.lastExclude === exclude ? this.added : void 0;
    this.added = /* @__PURE__ */ new Set();
    this.lastExclude = exclude;
    return added;
  }
  lastExclude;
  /** Drops the entries of machines not in `seen` (deleted, moved to another cluster, or now with a MachineUpdate). */
  retain(seen) {
    if (this.entries.size <= seen.size) return;
    for (const name of this.entries.keys()) if (!seen.has(name)) this.entries.delete(name);
  }
};
function machinesAtTarget(plan2, machines2, lookup, exclude = /* @__PURE__ */ new Set(), memo3, stamp) {
  memo3?.begin(plan2.metadata?.generation);
  const valuesByTarget = /* @__PURE__ */ new Map();
  for (const t of targetsOf(plan2)) {
    if (typeof t.target?.name !== "string") continue;
    const values = targetValues(t.target.updaters);
    if (values) valuesByTarget.set(targetKey(t.kind, t.target.name), values);
  }
  const out = [];
  let candidates = 0;
  if (valuesByTarget.size === 0) return out;
  const clusterKey = Labels.clusterName;
  const clusterName = plan2.spec.clusterName;
  const last = memo3?.last;
  const refsSame = stamp !== void 0 && last?.stamp === stamp;
  const states = memo3 ? new Uint8Array(machines2.length) : void 0;
  const added = memo3?.takeAdded(exclude);
  for (let i = 0; i < machines2.length; i++) {
    const m = machines2[i];
    const same = last !== void 0 && last.machines[i] === m;
    if (added && same && last.states[i] === NEW) continue;
    const name = nameOf(m);
    if (added && same ? added.size > 0 && added.has(name) : exclude.has(name)) continue;
    const was = same ? last.states[i] : NEW;
    if (was === NONE || was === AT_M || was === NOT_M || refsSame && (was === AT_R || was === NOT_R)) {
      states[i] = was;
      if (was === NONE) continue;
      candidates++;
      if (was === AT_M || was === AT_R) out.push(name);
      continue;
    }
    const k = m.metadata.labels?.[clusterKey] !== clusterName ? void 0 : targetOfMachine(m);
    const values = k === void 0 ? void 0 : valuesByTarget.get(k);
    if (!values || isDeleting(m)) {
      if (states) states[i] = NONE;
      continue;
    }
    candidates++;
    const at = memo3 ? memo3.check(m, values, lookup) : machineAtTarget(m, values, lookup);
    if (at) out.push(name);
    if (states) states[i] = values.size === 1 && values.has("Machine") ? at ? AT_M : NOT_M : at ? AT_R : NOT_R;
  }
  if (memo3) {
    memo3.last = { machines: machines2, states, stamp };
    if (memo3.size > candidates + Math.max(memo3.slack, candidates / 4)) {
      const seen = /* @__PURE__ */ new Set();
      for (let i = 0; i < machines2.length; i++) if (states[i] !== NEW && states[i] !== NONE) seen.add(nameOf(machines2[i]));
      memo3.retain(seen);
    }
  }
  return out.sort();
}
var NEW = 0;
var NONE = 1;
var AT_M = 2;
var NOT_M = 3;
var AT_R = 4;
var NOT_R = 5;

// src/plan-controller/testkit.ts
var NS = "fleet-a";
var CLUSTER = "cluster1";
var NOW = "2026-01-01T00:10:00Z";
var versionUpdater = (over = {}) => ({
  name: "version",
  sequence: 1,
  responsibilities: [{ selectResource: "Machine", path: "/spec/version", value: "v1.30.1" }],
  ...over
});
var target = (name, sequence, updaters = [versionUpdater()]) => ({
  name,
  sequence,
  updaters
});
function plan(o = {}) {
  const p2 = {
    apiVersion: API_VERSION,
    kind: "InPlaceUpdatePlan",
    metadata: {
      name: o.name ?? "p1",
      namespace: NS,
      generation: 1,
      creationTimestamp: o.created ?? "2026-01-01T00:00:00Z",
      finalizers: o.finalizers ?? [],
      ...o.annotations ? { annotations: o.annotations } : {}
    },
    spec: { clusterName: CLUSTER, updatePhase: o.phase ?? "updating", paused: o.paused ?? false, failurePolicy: o.failurePolicy ?? "Halt" }
  };
  if (o.cp !== null) p2.spec.controlPlane = o.cp ?? target("cluster1-cp", 1);
  const mds = o.mds ?? [target("cluster1-md-0", 2)];
  if (mds.length) p2.spec.machineDeployments = mds;
  if (o.status) p2.status = o.status;
  if (o.deleting) p2.metadata.deletionTimestamp = "2026-01-01T00:05:00Z";
  return p2;
}
var cluster = (cpRef = {
  apiGroup: "controlplane.cluster.x-k8s.io",
  kind: "KubeadmControlPlane",
  name: "cluster1-cp"
}) => ({
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  metadata: { name: CLUSTER, namespace: NS },
  spec: cpRef ? { controlPlaneRef: cpRef } : {}
});
var kcp = (name = "cluster1-cp", replicas = 3, version = "v1.30.0") => ({
  apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
  kind: "KubeadmControlPlane",
  metadata: { name, namespace: NS, labels: { [Labels.clusterName]: CLUSTER } },
  spec: { replicas, version }
});
function md(name = "cluster1-md-0", o = {}) {
  const rollingUpdate = { maxUnavailable: o.maxUnavailable ?? 1 };
  if (o.maxSurge !== void 0) rollingUpdate.maxSurge = o.maxSurge;
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachineDeployment",
    metadata: {
      name,
      namespace: NS,
      resourceVersion: "7",
      labels: { [Labels.clusterName]: o.clusterName ?? CLUSTER },
      ...o.annotations ? { annotations: o.annotations } : {}
    },
    spec: {
      clusterName: o.clusterName ?? CLUSTER,
      replicas: o.replicas ?? 3,
      rollout: { strategy: o.strategy === "OnDelete" ? { type: "OnDelete" } : { type: "RollingUpdate", rollingUpdate } },
      template: { spec: { clusterName: CLUSTER, version: o.version ?? "v1.30.0" } }
    }
  };
}
function machine(name, o = {}) {
  const labels = { [Labels.clusterName]: CLUSTER, ...o.labels };
  if (o.cp) Object.assign(labels, { [Labels.controlPlane]: "", [Labels.controlPlaneName]: o.cp });
  if (o.md) Object.assign(labels, { [Labels.deploymentName]: o.md, [Labels.setName]: `${o.md}-abc` });
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Machine",
    metadata: {
      name,
      namespace: NS,
      labels,
      ...o.annotations ? { annotations: o.annotations } : {},
      ...o.deleting ? { deletionTimestamp: NOW } : {}
    },
    spec: { clusterName: CLUSTER, version: o.version ?? "v1.30.0" },
    status: { conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True", reason: "Ready", lastTransitionTime: NOW }] }
  };
}
var machines = (prefix, n, o) => Array.from({ length: n }, (_, i) => machine(`${prefix}-${i}`, o));
function mu(machineName, status2, o = {}) {
  const planName = o.plan ?? "p1";
  return {
    apiVersion: API_VERSION,
    kind: "MachineUpdate",
    metadata: {
      name: machineUpdateName(planName, machineName),
      namespace: NS,
      creationTimestamp: "2026-01-01T00:01:00Z",
      labels: { [Labels.planName]: labelValue(planName) }
    },
    spec: {
      planName,
      clusterName: CLUSTER,
      target: { kind: o.kind ?? "MachineDeployment", name: o.target ?? "cluster1-md-0" },
      machineRef: { name: machineName },
      updatePhase: o.phase ?? "updating",
      updaters: [versionUpdater()]
    },
    status: { updateStatus: status2, ...o.message ? { message: o.message } : {} }
  };
}
function snapshot(o = {}) {
  const p2 = o.plan ?? plan();
  const k = o.kcp === null ? void 0 : o.kcp ?? kcp();
  return {
    plan: p2,
    now: NOW,
    cluster: o.cluster === null ? void 0 : o.cluster ?? cluster(),
    controlPlane: { kind: { apiGroup: "controlplane.cluster.x-k8s.io", kind: "KubeadmControlPlane" }, ...k ? { object: k } : {} },
    machineDeployments: o.mds ?? [md()],
    machines: o.machines ?? [
      ...machines("cluster1-cp", 3, { cp: "cluster1-cp" }),
      ...machines("cluster1-md-0", 3, { md: "cluster1-md-0" })
    ],
    machineUpdates: o.mus ?? [],
    plans: o.plans ?? [p2],
    templates: o.templates ?? []
  };
}
var cpUpdated = () => [0, 1, 2].map((i) => mu(`cluster1-cp-${i}`, "updated", { kind: "ControlPlane", target: "cluster1-cp" }));
var started = { finalizers: [Finalizers.plan], status: { updateStatus: "updating", startTime: "2026-01-01T00:00:30Z" } };

// bench/decide-cpu.ts
var argv = process.argv.slice(2);
var opt = (name, dflt) => argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : dflt;
var total = opt("machines", 1e4);
var mdSize = opt("md-size", 50);
var runs = opt("runs", 30);
var useMemo = argv.includes("--memo");
var changed = argv.includes("--change") ? opt("change", 1) : argv.includes("--change-one") ? 1 : 0;
var changeOne = changed > 0;
var mdNames = Array.from({ length: Math.ceil(total / mdSize) }, (_, i) => `cluster1-md-${i}`);
var ms = [...machines("cluster1-cp", 3, { cp: "cluster1-cp" })];
var mus = [...cpUpdated()];
for (const name of mdNames) {
  const own = machines(name, mdSize, { md: name });
  own.forEach((m, i) => m.metadata.resourceVersion = String(i + 1));
  ms.push(...own);
  const half = Math.floor(mdSize / 2);
  for (let i = 0; i < half; i++) {
    mus.push(mu(`${name}-${i}`, "updated", { target: name }));
    own[i]["status"]["nodeInfo"] = { kubeletVersion: "v1.30.1" };
  }
  mus.push(mu(`${name}-${half}`, "updating", { target: name }));
}
for (const m of mus) {
  m.status = { ...m.status, completionTime: "2026-01-01T00:09:00Z" };
  m.metadata.ownerReferences = [{ apiVersion: "x", kind: "InPlaceUpdatePlan", name: "p1", uid: "uid-1", controller: true }];
}
var p = plan({ ...started, mds: mdNames.map((n) => target(n, 2)) });
p.metadata.uid = "uid-1";
var base = snapshot({ plan: p, kcp: kcp(), mds: mdNames.map((n) => md(n, { replicas: mdSize })), machines: ms, mus });
var memo2 = new AtTargetMemo();
var storeMus = Object.freeze([...mus]);
var reader = {
  now: () => base.now,
  cluster: async () => base.cluster,
  machineDeployments: async () => base.machineDeployments,
  machines: async () => ms,
  machineUpdates: async () => storeMus,
  plans: async () => base.plans,
  read: async () => ({ object: base.controlPlane?.object }),
  taskCrd: async () => void 0
};
var decideMemo = useMemo ? new DecideMemo() : void 0;
var muIndex = new Map(mus.map((m, i) => [m.spec.machineRef.name, i]));
var machineIndex2 = new Map(ms.map((m, i) => [m.metadata.name ?? "", i]));
var times2 = [];
var cpu = [];
var starts = 0;
for (let r = 0; r < runs; r++) {
  for (let c2 = 0; c2 < changed; c2++) {
    const k = r * changed + c2;
    const name = `${mdNames[k % mdNames.length]}-${Math.floor(mdSize / 2) + Math.floor(k / mdNames.length) % Math.ceil(mdSize / 2)}`;
    const mi = machineIndex2.get(name);
    const m = ms[mi];
    ms[mi] = {
      ...m,
      metadata: { ...m.metadata, resourceVersion: String(Number(m.metadata.resourceVersion ?? 0) + 1) },
      spec: { ...m["spec"], version: "v1.30.1" }
    };
    const ui = muIndex.get(name);
    if (ui !== void 0) mus[ui] = { ...mus[ui], status: { ...mus[ui].status } };
  }
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  if (changed > 0 || r === 0) storeMus = Object.freeze([...mus]);
  const scoped = await buildScope(p, reader, decideMemo?.ownFilter);
  const snap = { ...base, machines: [...ms], machineUpdates: scoped.machineUpdates };
  snap.atTarget = machinesAtTarget(
    p,
    snap.machines,
    () => void 0,
    useMemo ? memo2.excluded(snap.machineUpdates) : new Set(snap.machineUpdates.map((m) => m.spec.machineRef.name)),
    memo2
  );
  const d = decidePlan(snap, decideMemo);
  times2.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1e3);
  starts = d.create.length;
}
times2.sort((a, b) => a - b);
cpu.sort((a, b) => a - b);
var reuse = decideMemo ? `; memo: targets ${decideMemo.stats.targetHits} reused / ${decideMemo.stats.targetMisses} evaluated, upgrade rules ${decideMemo.stats.upgradeHits} / ${decideMemo.stats.upgradeMisses}` : "";
process.stdout.write(
  `${ms.length} machines in ${mdNames.length} MachineDeployments (${NS}), ${mus.length} MachineUpdates${useMemo ? ", memo" : ""}${changeOne ? `, ${changed} target(s) changed per run` : ""}: decision median ${times2[Math.floor(runs / 2)].toFixed(1)} ms, min ${times2[0].toFixed(1)} ms over ${runs} runs (CPU median ${cpu[Math.floor(runs / 2)].toFixed(1)} ms, the process's: GC threads included); ${starts} starts${reuse}
`
);
