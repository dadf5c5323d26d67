// Resolves a kind given on the command line (`Kind` or `Kind.group`) to a served resource.
import { GROUP, SAMPLES_GROUP, type ResourceType } from '../../api/index.js';
import type { KubeClient } from '../../runtime/pure/types.js';

/**
 * The served resource of `Kind.group`, or of `Kind` in the platform's group or the samples' group.
 * Throws naming what was tried when the kind is not served.
 */
export async function resolveTaskKind(client: KubeClient, spec: string): Promise<ResourceType> {
  const dot = spec.indexOf('.');
  const kind = dot < 0 ? spec : spec.slice(0, dot);
  const groups = dot < 0 ? [GROUP, SAMPLES_GROUP] : [spec.slice(dot + 1)];
  const errors: string[] = [];
  for (const g of groups) {
    try {
      return await client.resolve(g, kind);
    } catch (err) {
      errors.push(`${kind}.${g}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new Error(`kind ${spec} is not served (tried ${errors.join('; ')}); give it as Kind.group`);
}
