// Helpers to read synthesized manifests in tests: parse the YAML, find objects, compute a component's effective RBAC.
import { parseAllDocuments } from 'yaml';
import type { PolicyRule } from '../../src/runtime/pure/types.js';
import type { ManifestFile } from '../../cdk8s/synth.js';

/** A parsed manifest object. */
export interface K8sDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}

/** Every object of the files, in order. */
export function docsOf(files: readonly ManifestFile[]): K8sDoc[] {
  return files.flatMap((f) =>
    parseAllDocuments(f.content)
      .map((d) => d.toJSON() as K8sDoc)
      .filter((d) => d),
  );
}

/**
 * What a component's ServiceAccount is granted: the rules of every ClusterRole aggregated into its bound
 * ClusterRole (label aggregate-to-<component>) plus the Roles bound to it (leader election).
 */
export function effectiveRules(docs: readonly K8sDoc[], component: string): PolicyRule[] {
  const sa = `inplace-${component}`;
  const boundRoles = docs
    .filter(
      (d) =>
        (d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding') &&
        (d['subjects'] as { name: string }[] | undefined)?.some((s) => s.name === sa),
    )
    .map((d) => d['roleRef'] as { kind: string; name: string });
  const rules: PolicyRule[] = [];
  for (const ref of boundRoles) {
    const role = docs.find((d) => d.kind === ref.kind && d.metadata.name === ref.name);
    if (!role) throw new Error(`${ref.kind} ${ref.name} bound to ${sa} is not in the manifests`);
    rules.push(...((role['rules'] as PolicyRule[] | undefined) ?? []));
    const agg = role['aggregationRule'] as { clusterRoleSelectors: { matchLabels: Record<string, string> }[] } | undefined;
    for (const sel of agg?.clusterRoleSelectors ?? []) {
      for (const d of docs) {
        if (d.kind !== 'ClusterRole' || d === role) continue;
        if (Object.entries(sel.matchLabels).every(([k, v]) => d.metadata.labels?.[k] === v))
          rules.push(...((d['rules'] as PolicyRule[] | undefined) ?? []));
      }
    }
  }
  return rules;
}
