// Pure helpers over RBAC PolicyRules: normalising what components declare and answering "is this call allowed?".
import type { PolicyRule } from '../src/runtime/pure/types.js';

// The runtime's rules have one home (src/runtime/rbac.ts); re-exported for the tests and tools that read them here.
export { EVENT_RULES, LEADER_ELECTION_RULES } from '../src/runtime/rbac.js';

const VERB_ORDER = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const verbRank = (v: string): number => {
  const i = VERB_ORDER.indexOf(v);
  return i < 0 ? VERB_ORDER.length : i;
};

/** One (group, resource, resourceName?) with its verbs: the unit rules are merged and compared on. */
export interface FlatRule {
  apiGroup: string;
  resource: string;
  resourceName?: string;
  verbs: string[];
}

/**
 * Flattens and merges rules: one entry per group/resource(/name) with the union of verbs, sorted, so
 * the synthesized roles are stable whatever order components declare their rules in.
 */
export function normalizeRules(rules: readonly PolicyRule[]): FlatRule[] {
  const byKey = new Map<string, FlatRule>();
  for (const r of rules) {
    const names = r.resourceNames && r.resourceNames.length > 0 ? r.resourceNames : [undefined];
    for (const apiGroup of r.apiGroups) {
      for (const resource of r.resources) {
        for (const resourceName of names) {
          const key = `${apiGroup}|${resource}|${resourceName ?? ''}`;
          const cur = byKey.get(key) ?? { apiGroup, resource, ...(resourceName ? { resourceName } : {}), verbs: [] };
          for (const v of r.verbs) if (!cur.verbs.includes(v)) cur.verbs.push(v);
          byKey.set(key, cur);
        }
      }
    }
  }
  const out = [...byKey.values()];
  for (const r of out) r.verbs.sort((a, b) => verbRank(a) - verbRank(b) || a.localeCompare(b));
  return out.sort(
    (a, b) =>
      a.apiGroup.localeCompare(b.apiGroup) ||
      a.resource.localeCompare(b.resource) ||
      (a.resourceName ?? '').localeCompare(b.resourceName ?? ''),
  );
}

/** True for rules that belong in the component's own namespace, never cluster-wide: the leader-election Lease. */
export const isOwnNamespaceRule = (r: FlatRule): boolean => r.apiGroup === 'coordination.k8s.io' && r.resource === 'leases';

/** Problems that make a rule set not least-privilege: wildcards and empty fields. Empty when fine. */
export function ruleProblems(rules: readonly PolicyRule[]): string[] {
  const problems: string[] = [];
  rules.forEach((r, i) => {
    if (r.apiGroups.includes('*')) problems.push(`rule ${i}: apiGroups contains '*'`);
    if (r.resources.some((x) => x.includes('*'))) problems.push(`rule ${i}: resources contain a wildcard (${r.resources.join(', ')})`);
    if (r.verbs.includes('*')) problems.push(`rule ${i}: verbs contain '*'`);
    if (r.apiGroups.length === 0 || r.resources.length === 0 || r.verbs.length === 0)
      problems.push(`rule ${i}: empty apiGroups, resources or verbs`);
  });
  return problems;
}

/**
 * True when `rules` allow `verb` on `group`/`resource` (resource may carry a subresource, e.g. `machines/status`),
 * optionally for one object name — the same matching the RBAC authorizer does, minus wildcards (never used here).
 */
export function allows(rules: readonly PolicyRule[], verb: string, group: string, resource: string, name?: string): boolean {
  return rules.some(
    (r) =>
      r.apiGroups.includes(group) &&
      r.resources.includes(resource) &&
      r.verbs.includes(verb) &&
      (!r.resourceNames || r.resourceNames.length === 0 || (name !== undefined && r.resourceNames.includes(name))),
  );
}
