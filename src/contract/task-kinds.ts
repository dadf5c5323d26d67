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

/**
 * Why a template object read at run time must not become a task (undefined when it may): its content cannot be judged
 * (judgeTemplate), or its spec is over MAX_TASK_BYTES. `what` names the template in the sentence.
 */
export function templateTaskProblem(what: string, template: unknown): string | undefined {
  const j = judgeTemplate(template);
  if ('unjudged' in j) return `${what} cannot be judged: ${j.unjudged}`;
  return j.bytes > MAX_TASK_BYTES ? `${what} is ${j.bytes} bytes, more than the ${MAX_TASK_BYTES} a task may have` : undefined;
}

/** A template object as the source of tasks: the size of its spec as JSON, or why its content cannot be judged. */
export type TemplateJudgement = { bytes: number } | { unjudged: string };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Judges a template object as read (the plan's validation, a campaign's pre-check, the machine task controller): a
 * FooTemplate has spec.template.spec (docs/contract.md), which every task is made from. An object without it — a
 * partial or metadata-only read, a truncated object, a malformed template — cannot be measured: measuring what is
 * there would take it for small. Callers refuse an unjudged template (fail closed), never treat it as fitting.
 */
export function judgeTemplate(tpl: unknown): TemplateJudgement {
  if (!isRecord(tpl)) return { unjudged: 'the object read is not an object' };
  if (tpl['kind'] === 'PartialObjectMetadata') return { unjudged: 'only its metadata was read' };
  const spec = tpl['spec'];
  if (!isRecord(spec)) return { unjudged: 'it has no spec (a partial read, or not a template)' };
  const template = spec['template'];
  if (!isRecord(template) || !isRecord(template['spec']))
    return { unjudged: 'it has no spec.template.spec, which every task is made from (docs/contract.md)' };
  let json: string | undefined;
  try {
    json = JSON.stringify(spec);
  } catch (err) {
    return { unjudged: `its spec cannot be serialised (${String(err).slice(0, 120)})` };
  }
  return { bytes: Buffer.byteLength(json, 'utf8') };
}
