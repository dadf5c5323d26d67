// Which task kinds the platform creates (docs/contract.md "Custom task kinds and templates"): a kind is honoured only
// when its CRD declares the updater contract by a label, and never in a Cluster API group. Without this a plan naming
// e.g. KubeadmConfigTemplate would make the platform create KubeadmConfigs as "tasks". Pure.
import { GROUP, type KubeObject } from '../api/index.js';
import { CONTRACT_VERSION } from './rules.js';

/** The label a task kind's CRD carries to declare that it implements the updater contract. */
export const UPDATER_CONTRACT_LABEL = `${GROUP}/updater-contract`;
/** The value of UPDATER_CONTRACT_LABEL this platform honours (the contract version). */
export const UPDATER_CONTRACT_VALUE = CONTRACT_VERSION;
/** Largest task (or template) the platform creates, as serialised JSON; the API server's limits are near 1.5 MiB. */
export const MAX_TASK_BYTES = 256 * 1024;

/** True for Cluster API's own groups (cluster.x-k8s.io and its subgroups), except this platform's inplace group and subgroups. */
export function isClusterApiGroup(group: string): boolean {
  const g = group.toLowerCase();
  if (g === GROUP || g.endsWith(`.${GROUP}`)) return false;
  return g === 'cluster.x-k8s.io' || g.endsWith('.cluster.x-k8s.io');
}

/** The name of the CRD of a kind: `<plural>.<group>`. */
export const crdName = (plural: string, group: string): string => `${plural}.${group}`;

/**
 * Why the task kind `kind` of `group` must not be created (undefined when it may): a Cluster API group, no CRD,
 * or a CRD without UPDATER_CONTRACT_LABEL=UPDATER_CONTRACT_VALUE. `crd` is the kind's CRD, when it exists.
 */
export function taskKindProblem(group: string, kind: string, crd: KubeObject | undefined): string | undefined {
  if (isClusterApiGroup(group))
    return `task kind ${kind}.${group} is in a Cluster API group: the platform never creates Cluster API objects as tasks`;
  if (!crd) return `task kind ${kind}.${group} has no CustomResourceDefinition (is the updater installed?)`;
  const label = crd.metadata.labels?.[UPDATER_CONTRACT_LABEL];
  if (label !== UPDATER_CONTRACT_VALUE) {
    return `task kind ${kind}.${group}: its CustomResourceDefinition ${crd.metadata.name ?? ''} does not declare the updater contract (label ${UPDATER_CONTRACT_LABEL}=${UPDATER_CONTRACT_VALUE}${label !== undefined ? `, found ${JSON.stringify(label)}` : ''})`;
  }
  return undefined;
}

/** Why an object is too large to be a task (undefined when it fits MAX_TASK_BYTES). */
export function taskSizeProblem(what: string, obj: unknown): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(obj ?? null), 'utf8');
  return bytes > MAX_TASK_BYTES ? `${what} is ${bytes} bytes, more than the ${MAX_TASK_BYTES} a task may have` : undefined;
}
