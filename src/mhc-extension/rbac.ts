// RBAC the MHC extension needs: exactly the calls it makes (cdk8s synthesizes its Role from this list).
import type { PolicyRule } from '../runtime/types.js';

const read = ['get', 'list', 'watch'];

/** The MHC extension's RBAC rules (no wildcards). */
export const rbac: PolicyRule[] = [
  // CAPI: read MHCs; read Machines and patch their annotations (skip-remediation, remediate-machine, prior state).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinehealthchecks'], verbs: read },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: [...read, 'patch'] },
  // MachineUpdates: read; the HealthCheckSucceeded condition goes through the status subresource.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: read },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates/status'], verbs: ['patch'] },
  // Events on Machines and MHCs; Lease for leader election.
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];
