// zod schemas for runtime validation of the platform's kinds. Each is checked against the type generated
// from the CRD at compile time (see the Assert* lines at the bottom): a drift between the two fails `tsc`.
import { z } from 'zod';
import type { InPlaceUpdatePlan, MachineUpdate, UpdaterUpdateTask } from './generated/index.js';
import type { Condition, ObjectMeta } from './meta.js';

const int = z.number().int();
const jsonPointer = z
  .string()
  .min(2)
  .max(1024)
  .regex(/^(\/([^/~]|~[01])*)+$/, 'must be a JSON pointer such as /spec/version');
const dnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label (lowercase letters, digits, "-")');
const objectName = z.string().min(1).max(253);
const status = z.enum(['pending', 'updating', 'updated', 'aborting', 'aborted', 'failed']);
const phase = z.enum(['updating', 'aborting']);
const times = { startTime: z.string().optional(), completionTime: z.string().optional() };

/** metav1.OwnerReference. */
export const OwnerReferenceSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
/** The metadata subset the platform reads; unknown keys pass through untouched. */
export const ObjectMetaSchema: z.ZodType<ObjectMeta> = z.looseObject({
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
  managedFields: z.array(z.unknown()).optional(),
});
/** metav1.Condition. */
export const ConditionSchema = z.object({
  type: z.string().min(1),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: int.optional(),
  lastTransitionTime: z.string(),
  reason: z.string().min(1),
  message: z.string().optional(),
});
/** A change an updater owns (selectResource + JSON pointer + any JSON value). */
export const ResponsibilitySchema = z.object({
  selectResource: z.enum(['Machine', 'InfraMachine', 'BootstrapConfig']),
  path: jsonPointer,
  value: z.unknown(),
});
/** One updater entry of a plan target. */
export const UpdaterSchema = z.object({
  name: dnsLabel,
  sequence: int.min(1).max(1000),
  verify: z
    .object({
      osImage: z.string().min(1).max(256).optional(),
      kernelVersion: z.string().min(1).max(256).optional(),
      reboot: z.boolean().optional(),
    })
    .optional(),
  updaterUpdateTemplateRef: z
    .object({
      apiVersion: z.string().min(1),
      kind: z.string().regex(/^[A-Z][A-Za-z0-9]*Template$/, 'must be a kind ending in Template'),
      name: objectName,
    })
    .optional(),
  responsibilities: z.array(ResponsibilitySchema).min(1).max(64),
  parameters: z.record(z.string(), z.unknown()).optional(),
});
/** A plan target (control plane or MachineDeployment). */
export const TargetSchema = z.object({ name: objectName, sequence: int.min(1).max(1000), updaters: z.array(UpdaterSchema).min(1).max(32) });
/** One recurring maintenance window (shape only: the calendar checks are validateMaintenanceWindows, src/api/windows.ts). */
export const MaintenanceWindowSchema = z.object({
  days: z.array(z.string().max(3)).max(7).optional(),
  start: z.string().max(5),
  duration: z.string().max(32),
  timeZone: z.string().max(64),
});
/** InPlaceUpdatePlan.spec. */
export const PlanSpecSchema = z.object({
  clusterName: objectName,
  updatePhase: phase.optional(),
  paused: z.boolean().optional(),
  failurePolicy: z.enum(['Halt', 'Continue']).optional(),
  acceptUncoveredChanges: z.boolean().optional(),
  rerunMachinesAtTarget: z.boolean().optional(),
  ttlSecondsAfterFinished: int.min(0).max(31_536_000).optional(),
  soak: z.string().max(32).optional(),
  verification: z.object({ mode: z.enum(['Enabled', 'Disabled']).optional(), timeout: z.string().max(32).optional() }).optional(),
  alertGate: z
    .object({
      url: z.string().max(2048),
      matchers: z.array(z.string().max(256)).max(16).optional(),
      holdTimeout: z.string().max(32),
      secretRef: z.object({ name: z.string().min(1).max(253) }).optional(),
    })
    .optional(),
  maintenanceWindows: z.array(MaintenanceWindowSchema).max(32).optional(),
  maintenanceWindowEnd: z.enum(['Finish', 'Abort']).optional(),
  controlPlane: TargetSchema.optional(),
  machineDeployments: z.array(TargetSchema).max(500).optional(),
});
const countFields = {
  machines: int.optional(),
  updated: int.optional(),
  updating: int.optional(),
  failed: int.optional(),
  aborted: int.optional(),
};
/** InPlaceUpdatePlan.status. */
export const PlanStatusSchema = z.object({
  updateStatus: status.optional(),
  observedGeneration: int.optional(),
  ...times,
  progress: z.string().optional(),
  machines: int.optional(),
  updatedMachines: int.optional(),
  skippedMachines: int.optional(),
  targets: z
    .array(
      z.object({
        kind: z.enum(['ControlPlane', 'MachineDeployment']),
        name: z.string(),
        sequence: int,
        updateStatus: status,
        ...countFields,
        skipped: int.optional(),
        message: z.string().optional(),
      }),
    )
    .optional(),
  gateFailures: z
    .array(z.object({ machine: z.string().max(253), gate: z.enum(['soak', 'verification']).optional(), message: z.string().max(1024) }))
    .max(1000)
    .optional(),
  givenUp: z
    .array(
      z.object({
        machine: z.string().max(253),
        updater: z.string().max(253),
        task: z.string().max(317).optional(),
        state: z.enum(['NotStarted', 'Unknown']),
        message: z.string().max(1024).optional(),
      }),
    )
    .max(1000)
    .optional(),
  alertGate: z
    .object({
      state: z.enum(['Clear', 'Firing', 'Unreachable', 'Halted']),
      since: z.string().optional(),
      message: z.string().max(1024).optional(),
    })
    .optional(),
  maintenanceWindow: z
    .object({
      state: z.enum(['Open', 'Closed']),
      since: z.string().optional(),
      nextChange: z.string().optional(),
      message: z.string().max(256).optional(),
    })
    .optional(),
  conditions: z.array(ConditionSchema).optional(),
});
/** InPlaceUpdatePlan. */
export const InPlaceUpdatePlanSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: PlanSpecSchema,
  status: PlanStatusSchema.optional(),
});
/** MachineUpdate. */
export const MachineUpdateSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.object({
    planName: objectName,
    clusterName: objectName,
    target: z.object({ kind: z.enum(['ControlPlane', 'MachineDeployment']), name: objectName }),
    machineRef: z.object({ name: objectName }),
    updatePhase: phase.optional(),
    updaters: z.array(UpdaterSchema).min(1).max(32),
  }),
  status: z
    .object({
      updateStatus: z.enum(['', 'updating', 'updated', 'aborting', 'aborted', 'failed']).optional(),
      observedGeneration: int.optional(),
      currentUpdater: z.string().optional(),
      tasks: z
        .array(
          z.object({
            updater: z.string(),
            apiVersion: z.string(),
            kind: z.string(),
            name: z.string(),
            updateStatus: z.string().optional(),
            ...times,
          }),
        )
        .optional(),
      ...times,
      message: z.string().optional(),
      conditions: z.array(ConditionSchema).optional(),
    })
    .optional(),
});
/** The generic UpdaterUpdateTask. */
export const UpdaterUpdateTaskSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema.optional(),
  spec: z.object({
    updaterName: dnsLabel,
    updatePhase: phase.optional(),
    machineRef: z.object({ name: objectName }),
    responsibilities: z.array(ResponsibilitySchema).max(64).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
  status: z
    .object({
      updateStatus: z.enum(['updating', 'updated', 'aborted', 'failed']).optional(),
      observedGeneration: int.optional(),
      ...times,
      conditions: z.array(ConditionSchema).optional(),
    })
    .optional(),
});

// Compile-time drift check between the zod schemas and the types generated from crds/.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
export type _PlanMatches = Assert<Same<z.infer<typeof InPlaceUpdatePlanSchema>, InPlaceUpdatePlan>>;
export type _MachineUpdateMatches = Assert<Same<z.infer<typeof MachineUpdateSchema>, MachineUpdate>>;
export type _TaskMatches = Assert<Same<z.infer<typeof UpdaterUpdateTaskSchema>, UpdaterUpdateTask>>;
export type _ConditionMatches = Assert<Same<z.infer<typeof ConditionSchema>, Condition>>;

/** Formats zod issues as "path: message" lines, every problem listed. */
export function formatIssues(error: z.ZodError, prefix = ''): string[] {
  return error.issues.map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || '(root)'}: ${i.message}`);
}
