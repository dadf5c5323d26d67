// Garbage collection of template clones. Aligning a target's owners (owners-act.ts) clones its infrastructure /
// bootstrap templates as `<plan>-<template>`, owned by the Cluster: without collection one set per plan piled up for the
// Cluster's lifetime. A clone goes when its plan is gone (or being deleted, finalizer path: a plan pruned by the
// history limit goes the same way) and nothing refers to it any more; a clone still referenced stays until a later
// plan deletion finds it unreferenced (the sweep covers every clone of the cluster whose plan is gone).
//
// Referencing is what CAPI could still read: the owners' templates (MachineDeployment, KubeadmControlPlane), the
// MachineSets' templates (old MachineSets included: scaling one up stamps machines from its template), and the
// InfraMachines' cloned-from annotations (KCP compares them with its infrastructureRef). Pure: the controller lists,
// this decides, the controller deletes with a uid precondition.
import type { KubeObject } from '../../api/index.js';
import { Labels } from '../../api/index.js';
import { nameOf, ownerBootstrapTemplateRef, ownerInfraTemplateRef } from '../../api/capi/index.js';
import { CLONED_BY_PLAN, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME } from '../../rules/owners.js';

/** Key of a template by kind and name (the API group is left out: a clone keeps its source's kind and group). */
export const templateKey = (kind: string, name: string): string => `${kind}/${name}`;

/** Templates referenced by owners and MachineSets (their template refs) and by InfraMachines (cloned-from annotations). */
export function referencedTemplates(owners: readonly KubeObject[], infraMachines: readonly KubeObject[]): Set<string> {
  const out = new Set<string>();
  for (const o of owners)
    for (const r of [ownerInfraTemplateRef(o), ownerBootstrapTemplateRef(o)]) if (r) out.add(templateKey(r.kind, r.name));
  for (const im of infraMachines) {
    const a = im.metadata.annotations ?? {};
    const name = a[CLONED_FROM_NAME];
    const kind = (a[CLONED_FROM_GROUPKIND] ?? '').split('.')[0];
    if (name && kind) out.add(templateKey(kind, name));
  }
  return out;
}

/** True when the clone belongs to `clusterName` (owned by the Cluster, or labelled with its name). */
function ofCluster(clone: KubeObject, clusterName: string): boolean {
  if (clone.metadata.labels?.[Labels.clusterName] === clusterName) return true;
  return (clone.metadata.ownerReferences ?? []).some((r) => r.kind === 'Cluster' && r.name === clusterName);
}

/** Inputs of clonesToDelete. */
export interface CloneGcInput {
  /** Objects of the template kinds in the namespace (clones are those with the cloned-by-plan annotation). */
  templates: readonly KubeObject[];
  clusterName: string;
  /** Plans of the namespace that exist and are not being deleted (their clones are theirs to keep). */
  livePlans: ReadonlySet<string>;
  /** templateKey of every template something still refers to (referencedTemplates). */
  referenced: ReadonlySet<string>;
}

/** The clones of the cluster whose plan is gone or being deleted and that nothing refers to (never a referenced one). */
export function clonesToDelete(i: CloneGcInput): KubeObject[] {
  return i.templates.filter((t) => {
    const by = t.metadata.annotations?.[CLONED_BY_PLAN];
    if (!by || i.livePlans.has(by) || !t.kind) return false;
    if (t.metadata.deletionTimestamp || !ofCluster(t, i.clusterName)) return false;
    return !i.referenced.has(templateKey(t.kind, nameOf(t)));
  });
}
