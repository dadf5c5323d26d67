// Installing CRDs and applying YAML files through the client (what `kubectl apply -f` does, for the demo).
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { CustomResourceDefinitions, parseApiVersion, type KubeObject, type ResourceType } from '../api/index.js';
import { isAlreadyExists, isNotFound } from '../runtime/pure/errors.js';
import type { KubeClient } from '../runtime/pure/types.js';
import type { RestClient } from '../runtime/client.js';
import { CliError } from './verb.js';

/** Parses every non-empty YAML document of a file; a syntax error becomes a CliError naming the file and line. */
export function readYamlDocs(path: string): KubeObject[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CliError(
      code === 'ENOENT' ? `file "${path}" does not exist` : `cannot read "${path}": ${(e as Error).message}`,
      'check the path (relative paths are resolved from the current directory)',
    );
  }
  const docs = parseAllDocuments(text);
  const out: KubeObject[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) {
      const e = d.errors[0]!;
      throw new CliError(
        `"${path}" is not valid YAML: ${e.message.split('\n')[0]}`,
        'fix the YAML syntax (kubectl apply --dry-run=client -f FILE shows the same problem)',
      );
    }
    const obj = d.toJSON() as unknown;
    if (obj === null || obj === undefined) continue;
    if (typeof obj !== 'object' || Array.isArray(obj)) throw new CliError(`"${path}" contains a document that is not a Kubernetes object`);
    out.push(obj as KubeObject);
  }
  return out;
}

/** Creates or replaces one object; returns the stored object. */
export async function createOrReplace(client: KubeClient, res: ResourceType, obj: KubeObject): Promise<KubeObject> {
  try {
    return await client.create(res, obj);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    const cur = await client.get(res, res.namespaced ? obj.metadata.namespace : undefined, obj.metadata.name ?? '');
    return client.update(res, { ...obj, metadata: { ...obj.metadata, resourceVersion: cur?.metadata.resourceVersion } });
  }
}

/** Installs the CRDs of `files` and waits until each is Established and served. */
export async function installCrds(client: RestClient, files: readonly string[], timeoutMs = 30_000): Promise<string[]> {
  const names: string[] = [];
  for (const f of files) {
    for (const doc of readYamlDocs(f)) {
      if (doc.kind !== 'CustomResourceDefinition') continue;
      await createOrReplace(client, CustomResourceDefinitions, doc);
      names.push(doc.metadata.name ?? '');
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await client.get(CustomResourceDefinitions, undefined, name);
      const conds = (crd?.['status'] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
      if (conds.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new CliError(`CRD ${name} did not become Established within ${timeoutMs / 1000}s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  client.invalidateDiscovery();
  return names;
}

/** The served resource of an object, through discovery (a clear error when its kind is not installed). */
export async function resourceFor(client: KubeClient, obj: KubeObject): Promise<ResourceType> {
  if (!obj.apiVersion || !obj.kind) throw new CliError(`object ${obj.metadata?.name ?? '(unnamed)'} has no apiVersion or kind`);
  const { group } = parseApiVersion(obj.apiVersion);
  try {
    return await client.resolve(group, obj.kind);
  } catch (e) {
    if (isNotFound(e) || /not found|no resource|not served/i.test((e as Error).message)) {
      throw new CliError(`the API server does not serve ${obj.kind} (${obj.apiVersion})`, 'install its CRD first');
    }
    throw e;
  }
}

/**
 * Applies every object of a YAML file (create, or replace when it exists); `namespace` fills namespaced objects
 * without one, or replaces theirs when `overrideNamespace` (tests running an example in their own namespace).
 */
export async function applyFile(client: KubeClient, path: string, namespace?: string, overrideNamespace = false): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const doc of readYamlDocs(path)) {
    const res = await resourceFor(client, doc);
    if (res.namespaced && namespace && (overrideNamespace || !doc.metadata.namespace)) doc.metadata.namespace = namespace;
    out.push(await createOrReplace(client, res, doc));
  }
  return out;
}
