// RBAC the machine task controller needs: exactly the calls it makes (no wildcards). A third-party task kind
// needs one more rule for its group — pass it to createMachineTaskController({ extraRbac }) / the cdk8s option.
import type { PolicyRule } from '../runtime/index.js';

/** Verbs to run tasks of a kind: create them, watch them, set updatePhase, replace an earlier update's task. */
const TASK_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
/** Verbs to read templates (copied into tasks). */
const READ = ['get', 'list', 'watch'];

/** The rules for the task and template kinds of one API group (for third-party updaters). */
export function taskKindRules(apiGroup: string, taskPlurals: string[], templatePlurals: string[]): PolicyRule[] {
  return [
    { apiGroups: [apiGroup], resources: taskPlurals, verbs: TASK_VERBS },
    ...(templatePlurals.length ? [{ apiGroups: [apiGroup], resources: templatePlurals, verbs: READ }] : []),
  ];
}

/** The controller's rules with the generic task kind and the sample updaters' kinds. */
export const rbac: PolicyRule[] = [
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: READ },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates/status'], verbs: ['get', 'patch', 'update'] },
  // Task kinds must declare the updater contract on their CRD.
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
  // Only plans drive machines: a MachineUpdate is acted on only when the plan that controls it exists.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: READ },
  ...taskKindRules('inplace.cluster.x-k8s.io', ['updaterupdatetasks'], []),
  ...taskKindRules('samples.inplace.cluster.x-k8s.io', ['kubernetesversionupdatetasks', 'osimageupdatetasks'], ['kubernetesversionupdatetasktemplates', 'osimageupdatetasktemplates']),
  // Commit (C8): the Machine and the InfraMachine / BootstrapConfig kinds the fleet uses.
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['infrastructure.cluster.x-k8s.io'], resources: ['devmachines'], verbs: ['get', 'patch'] },
  { apiGroups: ['bootstrap.cluster.x-k8s.io'], resources: ['kubeadmconfigs'], verbs: ['get', 'patch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
