// Checks objects against a CRD's structural schema the way kube-apiserver would: which fields it would prune, and
// whether it would reject the object (ajv over the OpenAPI v3 schema; formats are not checked).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Ajv } from 'ajv';
import type { KubeObject } from '../../src/api/index.js';
import type { Crd, Schema } from './schema-compare.js';

/** Paths of `value` that `schema` does not declare (kube-apiserver would drop them). */
export function prunedPaths(value: unknown, schema: Schema, path = ''): string[] {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) return [];
  if (Array.isArray(value)) return schema.items ? value.flatMap((v, i) => prunedPaths(v, schema.items!, `${path}/${i}`)) : [];
  if (!value || typeof value !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (path === '' && k === 'metadata') continue;
    const child = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
    if (!child) out.push(`${path}/${k}`);
    else out.push(...prunedPaths(v, child, `${path}/${k}`));
  }
  return out;
}

const loaded = new Map<string, Map<string, Crd>>();

/** Loads the CRDs of a directory, keyed by `<group>/<kind>` (cached per directory: the real ones are large). */
export function loadCrdsByKind(dir: string): Map<string, Crd> {
  const cached = loaded.get(dir);
  if (cached) return cached;
  const out = new Map<string, Crd>();
  loaded.set(dir, out);
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const crd = doc.toJS() as Crd | null;
      if (crd?.kind === 'CustomResourceDefinition') out.set(`${crd.spec.group}/${String(crd.spec.names['kind'])}`, crd);
    }
  }
  return out;
}

const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
const compiled = new WeakMap<Schema, ReturnType<typeof ajv.compile>>();

/** Problems kube-apiserver would have with `obj` under `crds` (pruned fields and validation errors), or [] when none. */
export function schemaProblems(obj: KubeObject, crds: Map<string, Crd>, part: 'all' | 'spec' = 'all'): string[] {
  const [group, version] = (obj.apiVersion ?? '').split('/');
  const crd = crds.get(`${group}/${obj.kind}`);
  if (!crd) return [`no CRD for ${obj.apiVersion} ${obj.kind}`];
  const v = crd.spec.versions.find((x) => x.name === version);
  if (!v) return [`${crd.metadata.name} does not serve ${version}`];
  const schema = v.schema.openAPIV3Schema;
  const body = part === 'spec' ? { ...obj, status: undefined } : obj;
  const clean = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  const problems = prunedPaths(clean, schema).map((p) => `${obj.kind} ${obj.metadata.name}: ${p} would be pruned`);
  let validate = compiled.get(schema);
  if (!validate)
    compiled.set(schema, (validate = ajv.compile({ ...schema, properties: { ...schema.properties, metadata: { type: 'object' } } })));
  if (!validate(clean))
    problems.push(...(validate.errors ?? []).map((e) => `${obj.kind} ${obj.metadata.name}: ${e.instancePath} ${e.message ?? ''}`));
  return problems;
}
