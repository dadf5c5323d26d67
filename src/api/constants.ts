// Every label, annotation, finalizer, condition type and reason the platform uses, in one place.
// Values under cluster.x-k8s.io are Cluster API's own (docs/design.md §9); the rest belong to this project.

/** API group of the platform's own kinds. */
export const GROUP = 'inplace.cluster.x-k8s.io';
/** Version of the platform's own kinds. */
export const VERSION = 'v1alpha1';
/** apiVersion string of the platform's own kinds. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** API group of the sample updaters' own task and template kinds. */
export const SAMPLES_GROUP = `samples.${GROUP}`;

/** Labels the platform reads or writes. */
export const Labels = {
  /** CAPI: the cluster a Machine (and every task) belongs to. Contract C1. */
  clusterName: 'cluster.x-k8s.io/cluster-name',
  /** CAPI: present (empty value) on control-plane machines. */
  controlPlane: 'cluster.x-k8s.io/control-plane',
  /** CAPI: name of the control plane owning a machine. */
  controlPlaneName: 'cluster.x-k8s.io/control-plane-name',
  /** CAPI: name of the MachineDeployment owning a machine. */
  deploymentName: 'cluster.x-k8s.io/deployment-name',
  /** CAPI: name of the MachineSet owning a machine. */
  setName: 'cluster.x-k8s.io/set-name',
  /** Plan a Machine is being updated by (present only while in update), and plan of a task / MachineUpdate. Contract C1. */
  planName: `${GROUP}/plan-name`,
  /** Machine a MachineUpdate or task is for. Contract C1. */
  machineName: `${GROUP}/machine-name`,
  /** Updater a task is for; generic-kind updaters select on it. Contract C1. */
  updaterName: `${GROUP}/updater-name`,
  /** Target (control plane or MachineDeployment) name of a MachineUpdate. */
  targetName: `${GROUP}/target-name`,
  /** Who asked for a MachineUpdate that no plan owns: `runtime-extension` (Cluster API's UpdateMachine hook). */
  requestedBy: `${GROUP}/requested-by`,
} as const;

/** The value of Labels.requestedBy on MachineUpdates the runtime extension creates. */
export const REQUESTED_BY_RUNTIME_EXTENSION = 'runtime-extension';

/** Annotations the platform reads or writes. */
export const Annotations = {
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
  /**
   * On a task: when the machine task controller asked it to abort (RFC 3339), set with spec.updatePhase aborting. The
   * abort grace period counts from it, so a controller restart does not reset the bound.
   */
  abortRequestedAt: `${GROUP}/abort-requested-at`,
  /** CAPI: the MHC skips remediation of a machine carrying it. */
  skipRemediation: 'cluster.x-k8s.io/skip-remediation',
  /** CAPI: manual remediation trigger; the MHC marks the machine unhealthy and remediates it. */
  remediateMachine: 'cluster.x-k8s.io/remediate-machine',
  /** CAPI: pauses reconciliation of an object. */
  paused: 'cluster.x-k8s.io/paused',
  /** CAPI (InPlaceUpdates): on a Machine (and its infra/bootstrap objects) while Cluster API updates it in place. */
  capiUpdateInProgress: 'in-place-updates.internal.cluster.x-k8s.io/update-in-progress',
} as const;

/** Finalizers the platform owns. */
export const Finalizers = {
  /** On an InPlaceUpdatePlan: deletion aborts the plan first and completes once every machine is terminal. */
  plan: `${GROUP}/plan`,
} as const;

/** Condition types on the platform's kinds. */
export const ConditionTypes = {
  /** Plan: the spec passed validation (False lists every problem). */
  valid: 'Valid',
  /** Plan: the control-plane target's rollout. */
  controlPlaneUpdate: 'ControlPlaneUpdate',
  /** Plan: the MachineDeployment targets' rollout. */
  machineDeploymentUpdate: 'MachineDeploymentUpdate',
  /** Plan / MachineUpdate / task: True once the object reached `updated`; usable with `kubectl wait --for=condition=Ready`. */
  ready: 'Ready',
  /** Plan: spec.paused is set. */
  paused: 'Paused',
  /**
   * Plan: True once the plan failed (reason Failed) or ended invalid before starting (reason Invalid, final for its
   * generation); usable with `kubectl wait --for=condition=Failed`. False carries the Ready reason.
   */
  failed: 'Failed',
  /**
   * Plan / campaign (kstatus, abnormal-true): True while the object moves towards its spec's end (pending, updating,
   * paused, waiting on a gate, aborting); the reason is the Ready reason. kstatus computes InProgress from it.
   */
  reconciling: 'Reconciling',
  /**
   * Plan / campaign (kstatus, abnormal-true): True once the object will not reach `updated` without a person (failed,
   * aborted, ended or held invalid, a campaign halted); the reason says which. kstatus computes Failed from it.
   */
  stalled: 'Stalled',
  /** MachineUpdate: progress of the in-place update of this machine. */
  inPlaceUpdate: 'InPlaceUpdate',
  /** MachineUpdate: the MHC extension's health verdict for a machine in update. */
  healthCheckSucceeded: 'HealthCheckSucceeded',
} as const;

/** Condition reasons (CamelCase, stable: tools match on them). */
export const Reasons = {
  valid: 'Valid',
  invalid: 'Invalid',
  superseded: 'Superseded',
  waitingForPreviousPlan: 'WaitingForPreviousPlan',
  waitingForSequence: 'WaitingForSequence',
  pending: 'Pending',
  updating: 'Updating',
  updated: 'Updated',
  aborting: 'Aborting',
  aborted: 'Aborted',
  failed: 'Failed',
  halted: 'Halted',
  paused: 'Paused',
  notPaused: 'NotPaused',
  /** Plan: outside every spec.maintenanceWindows window, no new machine starts. */
  waitingForMaintenanceWindow: 'WaitingForMaintenanceWindow',
  /** Plan: an alert matching spec.alertGate fires, or its endpoint cannot be read: no new machine starts. */
  waitingForAlerts: 'WaitingForAlerts',
  /** Plan: machines still in update when a window closed were aborted (spec.maintenanceWindowEnd Abort). */
  maintenanceWindowEnded: 'MaintenanceWindowEnded',
  deleting: 'Deleting',
  preflightFailed: 'PreflightFailed',
  surging: 'Surging',
  onDeleteStrategy: 'OnDeleteStrategy',
  noTarget: 'NoTarget',
  committing: 'Committing',
  commitFailed: 'CommitFailed',
  taskCreateFailed: 'TaskCreateFailed',
  templateNotFound: 'TemplateNotFound',
  machineNotFound: 'MachineNotFound',
  waitingForUpdater: 'WaitingForUpdater',
  /** MachineUpdate: a task got no first status from any updater within the machine task controller's limit. */
  updaterNotReporting: 'UpdaterNotReporting',
  /**
   * MachineUpdate: ended aborted because its updater did not end its task within the abort grace period after being
   * asked to abort (never answered, ignores the abort, or is gone); nothing committed.
   */
  abortTimedOut: 'AbortTimedOut',
  inPlaceUpdateTimedOut: 'InPlaceUpdateTimedOut',
  inPlaceUpdateFailed: 'InPlaceUpdateFailed',
  withinInPlaceUpdateTimeout: 'WithinInPlaceUpdateTimeout',
  remediationBlocked: 'RemediationBlocked',
  remediationTriggered: 'RemediationTriggered',
  /** Event on a MachineUpdate: the task of an updater was created. */
  taskCreated: 'TaskCreated',
  /** A commit failed after a write and every written object was restored (C8). */
  commitRolledBack: 'CommitRolledBack',
  /** A commit failed and a written object could not be restored: operator action needed (C8). */
  commitRestoreFailed: 'CommitRestoreFailed',
  /** A MachineUpdate not controlled by an existing plan that labelled its machine: never acted on. */
  notOwnedByPlan: 'NotOwnedByPlan',
  /** A template's task kind does not declare the updater contract, or is a Cluster API kind. */
  taskKindRefused: 'TaskKindRefused',
  /** A MachineUpdate ended updated with every value already on the objects: verified, nothing written. */
  alreadyInPlace: 'AlreadyInPlace',
} as const;

/** Plan / MachineUpdate / task status values. */
export const UpdateStatus = {
  pending: 'pending',
  updating: 'updating',
  updated: 'updated',
  aborting: 'aborting',
  aborted: 'aborted',
  failed: 'failed',
} as const;

/** Terminal statuses: never left once reached (contract C4). */
export const TERMINAL_STATUSES: readonly string[] = [UpdateStatus.updated, UpdateStatus.aborted, UpdateStatus.failed];
/** True when an update status is terminal. */
export const isTerminal = (s: string | undefined): boolean => s !== undefined && TERMINAL_STATUSES.includes(s);

/** spec.updatePhase values. */
export const UpdatePhase = { updating: 'updating', aborting: 'aborting' } as const;

/** Annotations on plans (written by the plan controller). */
export const PlanAnnotations = {
  /** On an InPlaceUpdatePlan moved to `aborting` because a newer plan of the same cluster superseded it: the newer plan's name. */
  supersededBy: `${GROUP}/superseded-by`,
} as const;

/** Reasons of the Kubernetes Events the plan controller records on plans (stable: tools match on them). */
export const PlanEventReasons = {
  /** The plan passed validation and started (or resumed from pending). */
  started: 'PlanStarted',
  /** The plan failed validation; the message lists every problem. */
  invalid: 'PlanInvalid',
  /** The plan waits until an older plan of the same cluster is terminal. */
  waiting: 'WaitingForPreviousPlan',
  /** This plan moved an older plan of the same cluster to aborting. */
  superseding: 'SupersedingPlan',
  /** This plan was moved to aborting by a newer plan of the same cluster. */
  superseded: 'Superseded',
  /** A target (control plane / MachineDeployment) started. */
  targetStarted: 'TargetStarted',
  /** Every current machine of a target is updated. */
  targetUpdated: 'TargetUpdated',
  /** A target failed (Halt after a failure, or Continue with failures once every machine is done). */
  targetFailed: 'TargetFailed',
  /** The update of a machine started (a MachineUpdate was created). */
  machineUpdateStarted: 'MachineUpdateStarted',
  /** Machines whose objects already carried every value of the plan were counted as updated without running updaters. */
  alreadyAtTarget: 'MachinesAlreadyAtTarget',
  /** A MachineDeployment was scaled up by one for maxUnavailable 0. */
  surged: 'Surged',
  /** A surged MachineDeployment's replica count was restored. */
  surgeRestored: 'SurgeRestored',
  /** The plan is aborting. */
  aborting: 'PlanAborting',
  /** The plan ended aborted. */
  aborted: 'PlanAborted',
  /** The plan ended updated. */
  completed: 'PlanCompleted',
  /** The plan ended failed. */
  failed: 'PlanFailed',
  /** The plan was paused. */
  paused: 'PlanPaused',
  /** The plan was resumed. */
  resumed: 'PlanResumed',
  /** spec.alertGate started holding the plan (an alert fires, or the endpoint cannot be read). */
  alertGateHolding: 'AlertGateHolding',
  /** spec.alertGate no longer holds the plan. */
  alertGateCleared: 'AlertGateCleared',
  /** spec.alertGate held the plan longer than its holdTimeout: the plan halts. */
  alertGateHalted: 'AlertGateHalted',
  /** A maintenance window of the plan opened: machines may start. */
  windowOpened: 'MaintenanceWindowOpened',
  /** A maintenance window of the plan closed (or the plan first saw it closed): no new machine starts. */
  windowClosed: 'MaintenanceWindowClosed',
  /** On the newest finished plan of a cluster: finished plans were deleted (their TTL, plan pruning, or their campaign). */
  pruned: 'PlansPruned',
  /** On a finished plan beyond the history limit: its MachineUpdates and tasks were deleted; the plan and its status stay. */
  machineUpdatesPruned: 'MachineUpdatesPruned',
} as const;

/** Labels and annotations on the plans a campaign creates (written by the campaign controller). */
export const CampaignLabels = {
  /** On a campaign's plan: the campaign's name. */
  campaign: `${GROUP}/campaign-name`,
  /** On a campaign's plan: the wave it was started in (0 = the canaries). */
  wave: `${GROUP}/campaign-wave`,
  /** On a campaign's plan the campaign paused (so that resume lifts only the campaign's own pause, never an operator's). */
  pausedByCampaign: `${GROUP}/paused-by-campaign`,
} as const;

/** Reasons of the Kubernetes Events the campaign controller records on campaigns (stable: tools match on them). */
export const CampaignEventReasons = {
  /** The campaign's selection or template has problems; nothing starts. */
  invalid: 'CampaignInvalid',
  /** A wave (0 = the canaries) started: its plans were created. */
  waveStarted: 'WaveStarted',
  /** Every plan of a wave is terminal; the soak (if any) starts. */
  waveFinished: 'WaveFinished',
  /** The campaign halted: a canary failed or the failure budget is spent. */
  halted: 'CampaignHalted',
  /** Every selected cluster is done. */
  completed: 'CampaignCompleted',
  /** The campaign is aborting its plans. */
  aborting: 'CampaignAborting',
  /** The campaign ended aborted. */
  aborted: 'CampaignAborted',
  /** The campaign was paused / resumed. */
  paused: 'CampaignPaused',
  resumed: 'CampaignResumed',
} as const;

/** Reasons of the Kubernetes Events the MHC extension records (besides Reasons.remediationTriggered / remediationBlocked). */
export const MhcEventReasons = {
  /** On a MachineHealthCheck (Warning): the in-place-update-timeout annotation is not a positive Go duration; the MHC is ignored. */
  invalidInPlaceUpdateTimeout: 'InvalidInPlaceUpdateTimeout',
  /** On a MachineHealthCheck (Warning): spec.remediation.triggerIf cannot be evaluated; the MHC is ignored. */
  invalidRemediationTrigger: 'InvalidRemediationTrigger',
} as const;
