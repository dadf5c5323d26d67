// Typed accessors for the contract fields of a task (generic or custom kind). The platform, the SDK and the
// conformance kit all read and build tasks through these, so they agree with docs/contract.md by construction.
import { createHash } from 'node:crypto';
import {
  API_VERSION,
  GROUP,
  ConditionTypes,
  Labels,
  UpdatePhase,
  isTerminal,
  type Condition,
  type KubeObject,
  type OwnerReference,
  type Responsibility,
} from '../api/index.js';

/** spec.updatePhase values (C2). */
export type TaskPhase = 'updating' | 'aborting';
/** status.updateStatus values an updater writes (C4). */
export type TaskUpdateStatus = 'updating' | 'updated' | 'aborted' | 'failed';

/** The contract fields of a task's spec (C2, C3), plus whatever the task kind adds. */
export interface TaskSpec {
  updatePhase?: TaskPhase;
  machineRef: { name: string };
  responsibilities?: Responsibility[];
  /** Generic kind only: the updater the task is routed to. */
  updaterName?: string;
  /** Generic kind only: the plan's updater parameters. */
  parameters?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The contract fields of a task's status (C4-C6), plus whatever the task kind adds. */
export interface TaskStatus {
  updateStatus?: TaskUpdateStatus;
  observedGeneration?: number;
  startTime?: string;
  completionTime?: string;
  conditions?: Condition[];
  [key: string]: unknown;
}

/** A task object of any kind that satisfies the contract. */
export interface Task extends KubeObject {
  spec: TaskSpec;
  status?: TaskStatus;
}

/** What the C1 labels are made of. */
export interface TaskLabelInputs {
  cluster: string;
  plan: string;
  machine: string;
  updater: string;
}

const MAX_NAME = 253;
const MAX_LABEL_VALUE = 63;
const hash = (s: string, n: number): string => createHash('sha256').update(s).digest('hex').slice(0, n);
const trimEnd = (s: string): string => s.replace(/[^a-z0-9A-Z]+$/, '');

/**
 * A label value for `s`: `s` itself when it fits (≤ 63 characters), else a readable prefix plus a hash of the
 * whole, so long machine names still make valid, stable labels.
 */
export function toLabelValue(s: string): string {
  return shortenName(s, MAX_LABEL_VALUE);
}

/** Shortens `s` to at most `max` characters, keeping it unique by a hash of the whole; used for every derived name. */
export function shortenName(s: string, max: number, hashOf: string = s): string {
  if (s.length <= max) return s;
  return `${trimEnd(s.slice(0, max - 11))}-${hash(hashOf, 10)}`;
}

/** The contract labels (C1) of a task. */
export function taskLabels(i: TaskLabelInputs): Record<string, string> {
  return {
    [Labels.clusterName]: toLabelValue(i.cluster),
    [Labels.planName]: toLabelValue(i.plan),
    [Labels.machineName]: toLabelValue(i.machine),
    [Labels.updaterName]: toLabelValue(i.updater),
  };
}

/** The C1 label keys, in the order the contract lists them. */
export const TASK_LABEL_KEYS: readonly string[] = [Labels.clusterName, Labels.planName, Labels.machineName, Labels.updaterName];

/**
 * The deterministic task name of an updater on a machine in a plan (C9): `<machine>.<updater>.<hash>`, the hash (8 hex)
 * of plan, machine and updater together, so that two plans never share a task (an earlier plan's tasks stay as its
 * record) while a restarted platform finds the one it created. Updater names are DNS labels (no dots); too-long names
 * keep a readable prefix and end in a hash of all three, staying a DNS-1123 subdomain of at most 253 characters.
 */
export function taskName(planName: string, machineName: string, updaterName: string): string {
  const tuple = `${planName}/${machineName}/${updaterName}`;
  return shortenName(`${machineName}.${updaterName}.${hash(tuple, 8)}`.toLowerCase(), MAX_NAME, tuple);
}

/** spec.updatePhase of a task (C2); absent means updating (the CRD default). */
export const taskPhase = (task: Task): TaskPhase => (task.spec?.updatePhase === UpdatePhase.aborting ? 'aborting' : 'updating');

/** metadata.generation of a task (1 when the server did not report one). */
export const taskGeneration = (task: KubeObject): number => task.metadata.generation ?? 1;

/**
 * The task's status when it answers the current generation (C5: observedGeneration ≥ metadata.generation),
 * else undefined: a status that is behind must be ignored.
 */
export function taskStatus(task: Task): TaskStatus | undefined {
  const st = task.status;
  if (!st || st.observedGeneration === undefined) return undefined;
  return st.observedGeneration >= taskGeneration(task) ? st : undefined;
}

/** status.updateStatus when current (C5), else undefined. */
export const taskUpdateStatus = (task: Task): TaskUpdateStatus | undefined => taskStatus(task)?.updateStatus;

/** The task's Ready condition (C6), if any. */
export const taskReadyCondition = (task: Task): Condition | undefined =>
  task.status?.conditions?.find((c) => c.type === ConditionTypes.ready);

/** The human message of the task's Ready condition (C6); on failed it says why. */
export const taskReadyMessage = (task: Task): string | undefined => taskReadyCondition(task)?.message || undefined;

/** True when the task's current status (C5) is terminal (C4). */
export const isTaskTerminal = (task: Task): boolean => isTerminal(taskUpdateStatus(task));

/** Thrown when a template kind does not follow the `FooTemplate` -> `Foo` convention. */
export class TemplateKindError extends Error {
  constructor(kind: string) {
    super(`template kind ${JSON.stringify(kind)} must end in "Template" (CAPI template convention: FooTemplate creates Foo)`);
    this.name = 'TemplateKindError';
  }
}

/** The task kind a template kind creates: `FooTemplate` -> `Foo`. */
export function taskKindOfTemplate(templateKind: string): string {
  if (!templateKind.endsWith('Template') || templateKind.length === 'Template'.length) throw new TemplateKindError(templateKind);
  return templateKind.slice(0, -'Template'.length);
}

/** The controller ownerReference of a task to its MachineUpdate (C1). */
export function machineUpdateOwnerRef(mu: KubeObject): OwnerReference {
  if (!mu.metadata.name || !mu.metadata.uid) throw new Error('machineUpdateOwnerRef: the MachineUpdate needs a name and a uid');
  return {
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    name: mu.metadata.name,
    uid: mu.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The controller ownerReference of an object, if any. */
export const controllerOf = (obj: KubeObject): OwnerReference | undefined =>
  obj.metadata.ownerReferences?.find((r) => r.controller === true);

/** Name of the MachineUpdate that controls a task (C1), if any. */
export function owningMachineUpdate(task: KubeObject): string | undefined {
  const ref = controllerOf(task);
  return ref && ref.kind === 'MachineUpdate' && ref.apiVersion.startsWith(`${GROUP}/`) ? ref.name : undefined;
}

/** What every task is built from, generic or templated. */
export interface TaskInputs {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  owner: OwnerReference;
  updatePhase: TaskPhase;
  machineName: string;
  responsibilities: Responsibility[];
}

const contractSpec = (i: TaskInputs): Pick<TaskSpec, 'updatePhase' | 'machineRef' | 'responsibilities'> => ({
  updatePhase: i.updatePhase,
  machineRef: { name: i.machineName },
  responsibilities: structuredClone(i.responsibilities),
});

const contractMetadata = (
  i: TaskInputs,
  extra?: { labels?: Record<string, string>; annotations?: Record<string, string> },
): KubeObject['metadata'] => ({
  name: i.name,
  namespace: i.namespace,
  labels: { ...(extra?.labels ?? {}), ...i.labels },
  ...(extra?.annotations && Object.keys(extra.annotations).length ? { annotations: { ...extra.annotations } } : {}),
  ownerReferences: [i.owner],
});

/** A generic `UpdaterUpdateTask` (routed by spec.updaterName and the updater-name label). */
export function buildGenericTask(i: TaskInputs & { updaterName: string; parameters?: Record<string, unknown> }): Task {
  return {
    apiVersion: API_VERSION,
    kind: 'UpdaterUpdateTask',
    metadata: contractMetadata(i),
    spec: {
      updaterName: i.updaterName,
      ...contractSpec(i),
      ...(i.parameters && Object.keys(i.parameters).length ? { parameters: structuredClone(i.parameters) } : {}),
    },
  };
}

/**
 * A task from a template (CAPI template convention): `spec.template.spec` is copied, `spec.template.metadata`
 * labels and annotations too, then the contract fields are set (they win over anything the template says).
 */
export function buildTaskFromTemplate(template: KubeObject, i: TaskInputs): Task {
  const tpl = (
    template.spec as
      | {
          template?: {
            spec?: Record<string, unknown>;
            metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
          };
        }
      | undefined
  )?.template;
  if (!template.apiVersion || !template.kind) throw new Error('buildTaskFromTemplate: the template needs apiVersion and kind');
  return {
    apiVersion: template.apiVersion,
    kind: taskKindOfTemplate(template.kind),
    metadata: contractMetadata(i, tpl?.metadata),
    spec: { ...structuredClone(tpl?.spec ?? {}), ...contractSpec(i) },
  };
}
