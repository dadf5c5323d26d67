// Typed read accessors for the Cluster API v1beta2 fields this project relies on. Pure.
import type { Condition, KubeObject } from '../meta.js';
import { Labels } from '../constants.js';
import type { IntOrString } from './intstr.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const intOrStr = (v: unknown): IntOrString | undefined => (typeof v === 'number' || typeof v === 'string' ? v : undefined);

/** Reads a nested field by keys, undefined when any step is missing. */
export function field(o: unknown, ...keys: string[]): unknown {
  let cur: unknown = o;
  for (const k of keys) cur = obj(cur)?.[k];
  return cur;
}

/** Name of an object (empty string when absent). */
export const nameOf = (o: KubeObject): string => o.metadata.name ?? '';
/** True when the object has a deletionTimestamp. */
export const isDeleting = (o: KubeObject): boolean => !!o.metadata.deletionTimestamp;

/** The conditions of an object's status (v1beta2 metav1.Conditions). */
export const conditionsOf = (o: KubeObject): Condition[] => {
  const c = field(o, 'status', 'conditions');
  return Array.isArray(c) ? (c as Condition[]) : [];
};
/** True when the object's condition of `type` has status True. */
export const conditionTrue = (o: KubeObject, type: string): boolean => conditionsOf(o).some((c) => c.type === type && c.status === 'True');
/** A Machine is Ready when its v1beta2 `Ready` condition is True. */
export const isMachineReady = (m: KubeObject): boolean => conditionTrue(m, 'Ready');
/** A Machine's desired Kubernetes version (spec.version). */
export const machineVersion = (m: KubeObject): string | undefined => str(field(m, 'spec', 'version'));
/** Reference {apiGroup, kind, name} of a v1beta2 object reference field. */
export interface ContractRef {
  apiGroup: string;
  kind: string;
  name: string;
}
const ref = (v: unknown): ContractRef | undefined => {
  const o = obj(v);
  const apiGroup = str(o?.apiGroup);
  const kind = str(o?.kind);
  const name = str(o?.name);
  return apiGroup !== undefined && kind && name ? { apiGroup, kind, name } : undefined;
};
/** Machine.spec.infrastructureRef. */
export const machineInfraRef = (m: KubeObject): ContractRef | undefined => ref(field(m, 'spec', 'infrastructureRef'));
/** Machine.spec.bootstrap.configRef. */
export const machineBootstrapRef = (m: KubeObject): ContractRef | undefined => ref(field(m, 'spec', 'bootstrap', 'configRef'));
/** The infrastructure template an owner stamps machines from: MachineDeployment spec.template.spec.infrastructureRef, KubeadmControlPlane spec.machineTemplate.spec.infrastructureRef. */
export const ownerInfraTemplateRef = (o: KubeObject): ContractRef | undefined =>
  ref(field(o, 'spec', 'template', 'spec', 'infrastructureRef')) ?? ref(field(o, 'spec', 'machineTemplate', 'spec', 'infrastructureRef'));
/** The bootstrap template a MachineDeployment stamps machines from (spec.template.spec.bootstrap.configRef). */
export const ownerBootstrapTemplateRef = (o: KubeObject): ContractRef | undefined =>
  ref(field(o, 'spec', 'template', 'spec', 'bootstrap', 'configRef'));
/** Cluster.spec.controlPlaneRef. */
export const clusterControlPlaneRef = (c: KubeObject): ContractRef | undefined => ref(field(c, 'spec', 'controlPlaneRef'));

/** The cluster a labelled CAPI object belongs to. */
export const clusterLabel = (o: KubeObject): string | undefined => o.metadata.labels?.[Labels.clusterName];
/** The control plane a Machine belongs to (label), when it is a control-plane machine. */
export const controlPlaneNameOf = (m: KubeObject): string | undefined => m.metadata.labels?.[Labels.controlPlaneName];
/** The MachineDeployment a Machine belongs to (label). */
export const deploymentNameOf = (m: KubeObject): string | undefined => m.metadata.labels?.[Labels.deploymentName];

/** A MachineDeployment's desired replicas (spec.replicas; CAPI defaults it to 1 when unset). */
export const mdReplicas = (md: KubeObject): number => num(field(md, 'spec', 'replicas')) ?? 1;
/** A MachineDeployment's clusterName. */
export const mdClusterName = (md: KubeObject): string | undefined => str(field(md, 'spec', 'clusterName'));
/** A MachineDeployment's rollout strategy type (RollingUpdate when unset, CAPI's default). */
export const mdStrategyType = (md: KubeObject): string => str(field(md, 'spec', 'rollout', 'strategy', 'type')) ?? 'RollingUpdate';
/** A MachineDeployment's rollingUpdate maxSurge / maxUnavailable as written (undefined = CAPI default). */
export const mdRollingUpdate = (md: KubeObject): { maxSurge?: IntOrString; maxUnavailable?: IntOrString } => {
  const ru = field(md, 'spec', 'rollout', 'strategy', 'rollingUpdate');
  const maxSurge = intOrStr(field(ru, 'maxSurge'));
  const maxUnavailable = intOrStr(field(ru, 'maxUnavailable'));
  return { ...(maxSurge !== undefined ? { maxSurge } : {}), ...(maxUnavailable !== undefined ? { maxUnavailable } : {}) };
};
/** A MachineDeployment's desired Kubernetes version (spec.template.spec.version). */
export const mdVersion = (md: KubeObject): string | undefined => str(field(md, 'spec', 'template', 'spec', 'version'));
/** A control plane's desired replicas (KubeadmControlPlane spec.replicas), when set. */
export const cpReplicas = (cp: KubeObject): number | undefined => num(field(cp, 'spec', 'replicas'));
/** A control plane's desired Kubernetes version (KubeadmControlPlane spec.version). */
export const cpVersion = (cp: KubeObject): string | undefined => str(field(cp, 'spec', 'version'));
