// What the runtime itself needs from RBAC, so that components can add it to their own rules.
import type { PolicyRule } from './types.js';

/**
 * RBAC rules the runtime needs besides list/watch of the watched kinds: Events (create, and patch for
 * aggregated repeats) and, with leader election, Leases (get, create, update).
 */
export function runtimeRbac(opts: { leaderElection?: boolean } = {}): PolicyRule[] {
  const rules: PolicyRule[] = [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }];
  if (opts.leaderElection ?? true) rules.push({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] });
  return rules;
}
