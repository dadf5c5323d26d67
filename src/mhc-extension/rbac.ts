// RBAC the MHC extension needs: exactly the calls it makes (cdk8s synthesizes its Role from this list); Events and
// the leader-election Lease come from the runtime (componentRbac), the same for every component.
import { componentRbac } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

const read = ['get', 'list', 'watch'];

/** The MHC extension's RBAC rules, runtime rules included (no wildcards). */
export const rbac: PolicyRule[] = componentRbac([
  // CAPI: read MHCs; read Machines and patch their annotations (skip-remediation, remediate-machine, prior state).
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machinehealthchecks'], verbs: read },
  { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: [...read, 'patch'] },
  // MachineUpdates: read; the HealthCheckSucceeded condition goes through the status subresource.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates'], verbs: read },
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['machineupdates/status'], verbs: ['patch'] },
  // Plans: read (watched), only to know whether the plan a machine's label names still exists: that plan's unlabel
  // restores skip-remediation (it protected the machine as it labelled it); once it is gone, the extension restores.
  { apiGroups: ['inplace.cluster.x-k8s.io'], resources: ['inplaceupdateplans'], verbs: read },
]);
