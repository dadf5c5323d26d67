// RBAC the plan controller needs: exactly the calls it makes (cdk8s synthesizes its Role from this list).
import type { PolicyRule } from '../runtime/types.js';

const read = ['get', 'list', 'watch'];

/** The plan controller's RBAC rules (no wildcards). */
export const rbac: PolicyRule[] = [
  // Plans: read, add/remove the finalizer, move older plans to aborting (supersede), write status.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: [...read, 'patch', 'update'] },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans/status'], verbs: ['get', 'patch', 'update'] },
  // Owner references with blockOwnerDeletion on MachineUpdates need update on the owner's finalizers subresource.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans/finalizers'], verbs: ['update'] },
  // MachineUpdates: created per machine, moved to aborting.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: [...read, 'create', 'patch'] },
  // CAPI: read the cluster and control plane; label machines in update; surge/restore MachineDeployments.
  { apiGroups: ['cluster.x-k8s.io'], resources: ['clusters'], verbs: read },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: [...read, 'patch'] },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinedeployments'], verbs: [...read, 'patch'] },
  { apiGroups: ['controlplane.cluster.x-k8s.io'], resources: ['kubeadmcontrolplanes'], verbs: read },
  // Template kinds named by plans must be readable to validate that they exist (add rules for third-party template kinds).
  { apiGroups: ['samples.inplace.cluster.x-k8s.io'], resources: ['kubernetesversionupdatetasktemplates', 'osimageupdatetasktemplates'], verbs: read },
  // A template's task kind is accepted only when its CRD declares the updater contract (label).
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'] },
  // Events for every transition; Lease for leader election.
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
