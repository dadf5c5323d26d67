// Compares a fixture CRD with the real upstream CRD: every path the fixture declares must exist in the real CRD
// with the same validation, defaulting and pruning behaviour. Returns the differences (empty = equivalent).
import type { KubeObject } from '../../src/api/index.js';

type Schema = Record<string, unknown> & {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  required?: string[];
};

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  subresources?: unknown;
  schema: { openAPIV3Schema: Schema };
}

interface Crd extends KubeObject {
  spec: { group: string; scope: string; names: Record<string, unknown>; versions: CrdVersion[] };
}

/** Keywords whose values must be identical at every path the fixture declares. */
const COMPARED = [
  'type',
  'format',
  'anyOf',
  'enum',
  'default',
  'nullable',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
] as const;

const canon = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.entries(x as Record<string, unknown>)
            .filter(([k]) => k !== 'description')
            .sort(([a], [b]) => a.localeCompare(b)),
        )
      : x,
  );

const sorted = (a: string[] | undefined): string => JSON.stringify([...(a ?? [])].sort());

/** How a node prunes unknown fields: by a property list, by a map value schema, or not at all. */
const pruningShape = (s: Schema): string =>
  s['x-kubernetes-preserve-unknown-fields'] === true
    ? 'preserve'
    : s.properties
      ? 'properties'
      : s.additionalProperties !== undefined
        ? 'additionalProperties'
        : s.type === 'object'
          ? 'opaque-object'
          : 'leaf';

/** Walks the fixture schema and reports every divergence from the real one. */
export function compareSchemas(fixture: Schema, real: Schema | undefined, path: string, out: string[]): void {
  if (!real) {
    out.push(`${path || '/'}: not in the real CRD`);
    return;
  }
  for (const key of COMPARED) {
    if (canon(fixture[key]) !== canon(real[key])) out.push(`${path || '/'}: ${key} is ${canon(fixture[key])}, real ${canon(real[key])}`);
  }
  if (sorted(fixture.required) !== sorted(real.required))
    out.push(`${path || '/'}: required is ${sorted(fixture.required)}, real ${sorted(real.required)}`);
  for (const r of fixture.required ?? []) if (!fixture.properties?.[r]) out.push(`${path}/${r}: required but not declared`);
  const [fs, rs] = [pruningShape(fixture), pruningShape(real)];
  // A fixture may declare fewer properties, but an object must prune the same way (never opaque where real is typed).
  if (fs !== rs) out.push(`${path || '/'}: pruning shape is ${fs}, real ${rs}`);
  for (const [k, child] of Object.entries(fixture.properties ?? {})) compareSchemas(child, real.properties?.[k], `${path}/${k}`, out);
  if (fixture.items) compareSchemas(fixture.items, real.items, `${path}[]`, out);
  if (fixture.additionalProperties && typeof fixture.additionalProperties === 'object') {
    const ra = typeof real.additionalProperties === 'object' ? real.additionalProperties : undefined;
    compareSchemas(fixture.additionalProperties, ra, `${path}{}`, out);
  }
}

/** Compares two CRDs: identity, served/storage versions, subresources, and each fixture version's schema. */
export function compareCrds(fixture: Crd, real: Crd): string[] {
  const out: string[] = [];
  const eq = (what: string, a: unknown, b: unknown): void => {
    if (canon(a) !== canon(b)) out.push(`${what}: ${canon(a)}, real ${canon(b)}`);
  };
  eq('metadata.name', fixture.metadata.name, real.metadata.name);
  eq('spec.group', fixture.spec.group, real.spec.group);
  eq('spec.scope', fixture.spec.scope, real.spec.scope);
  eq('spec.names', fixture.spec.names, real.spec.names);
  const summary = (c: Crd): unknown =>
    c.spec.versions.map((v) => ({
      name: v.name,
      served: v.served,
      storage: v.storage,
      deprecated: v.deprecated ?? false,
      subresources: v.subresources ?? {},
    }));
  eq('spec.versions', summary(fixture), summary(real));
  for (const v of fixture.spec.versions) {
    const rv = real.spec.versions.find((x) => x.name === v.name);
    if (!rv) continue;
    const diffs: string[] = [];
    compareSchemas(v.schema.openAPIV3Schema, rv.schema.openAPIV3Schema, '', diffs);
    out.push(...diffs.map((d) => `${v.name} ${d}`));
  }
  return out;
}

/** Every property path the fixture declares (for coverage assertions). */
export function schemaPaths(s: Schema, path = ''): string[] {
  const here = [path || '/'];
  const kids = Object.entries(s.properties ?? {}).flatMap(([k, c]) => schemaPaths(c, `${path}/${k}`));
  const items = s.items ? schemaPaths(s.items, `${path}[]`) : [];
  return [...here, ...kids, ...items];
}

export type { Crd, Schema };
