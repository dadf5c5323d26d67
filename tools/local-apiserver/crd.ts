/** CustomResourceDefinition handling: validation at registration, CRD -> ResourceDef, and CEL rule evaluation on writes. */
import { CelError, compileCel, type CelProgram } from './cel.js';
import { ruleCostProblems } from './cel-cost.js';
import type { FieldError } from './errors.js';
import { jsonEqual } from './json.js';
import type { PrinterColumn, ResourceDef, VersionDef } from './resources.js';
import { ALL_SCHEMA_CHECKS, crdSchemaErrors, updateSchemaChecks, type SchemaCheckOptions } from './crd-schema.js';
import type { Schema } from './schema.js';

type Obj = Record<string, unknown>;

interface CompiledRule {
  program: CelProgram;
  message: string;
  messageProgram?: CelProgram;
  reason: string;
  fieldPath: string;
  rule: string;
}

const compiled = new WeakMap<Schema, CompiledRule[]>();

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep equality of JSON values regardless of key order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (!isObj(a) || !isObj(b)) return false;
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameJson(a[k], b[k]));
}

function walkRules(schema: Schema, path: string, errs: FieldError[]): void {
  const rules = schema['x-kubernetes-validations'];
  if (Array.isArray(rules) && rules.length) {
    const out: CompiledRule[] = [];
    rules.forEach((r, i) => {
      const rulePath = `${path}.x-kubernetes-validations[${i}].rule`;
      try {
        const program = compileCel(String(r.rule), schema);
        let messageProgram: CelProgram | undefined;
        if (r.messageExpression) {
          try {
            messageProgram = compileCel(r.messageExpression);
          } catch {
            messageProgram = undefined;
          }
        }
        out.push({
          program,
          message: r.message ?? '',
          ...(messageProgram ? { messageProgram } : {}),
          reason: r.reason ?? 'FieldValueInvalid',
          fieldPath: r.fieldPath ?? '',
          rule: String(r.rule),
        });
      } catch (e) {
        errs.push({
          type: 'FieldValueInvalid',
          field: rulePath,
          value: r.rule,
          hasValue: true,
          detail: `compilation failed: ERROR: ${(e as Error).message}`,
        });
      }
    });
    compiled.set(schema, out);
  }
  for (const [k, v] of Object.entries(schema.properties ?? {})) walkRules(v, `${path}.properties[${k}]`, errs);
  if (schema.items) walkRules(schema.items, `${path}.items`, errs);
  if (isObj(schema.additionalProperties)) walkRules(schema.additionalProperties as Schema, `${path}.additionalProperties`, errs);
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** How much of a CRD's schemas crdToResource checks. */
export interface CrdCheck {
  /**
   * Check the schemas as a real server does on a write (structural, defaults, OpenAPI rules, CEL compilation and
   * cost). Off when serving a CRD already stored (a persisted CRD from before a check was added is still served).
   * @default true
   */
  schemas?: boolean;
  /** The stored CRD on an update: what its schemas already violate is not required of the new ones. */
  old?: Obj;
}

/** The openAPIV3Schemas of a CRD's versions. */
function crdSchemas(crd: Obj): Schema[] {
  const versions = isObj(crd.spec) && Array.isArray(crd.spec.versions) ? (crd.spec.versions as unknown[]) : [];
  return versions.flatMap((v) => {
    const s = isObj(v) && isObj(v.schema) ? v.schema.openAPIV3Schema : undefined;
    return isObj(s) ? [s as Schema] : [];
  });
}

/** Checks a default against the schema's rules, as on a create (the rules compiled by walkRules). */
function defaultRules(value: unknown, schema: Schema, path: string, errs: FieldError[]): void {
  celValidate(value, undefined, schema, path, errs);
}

/** Validates a CRD and builds its ResourceDef; returns field errors instead when the CRD is not acceptable. */
export function crdToResource(crd: Obj, check: CrdCheck = {}): { def?: ResourceDef; errors: FieldError[] } {
  const checkSchemas = check.schemas !== false;
  const schemaChecks: Readonly<SchemaCheckOptions> = check.old ? updateSchemaChecks(crdSchemas(check.old)) : ALL_SCHEMA_CHECKS;
  const errs: FieldError[] = [];
  const spec = (crd.spec ?? {}) as Obj;
  const names = (spec.names ?? {}) as Obj;
  const group = String(spec.group ?? '');
  const plural = String(names.plural ?? '');
  const kind = String(names.kind ?? '');
  const meta = (crd.metadata ?? {}) as Obj;
  const req = (field: string): void => {
    errs.push({ type: 'FieldValueRequired', field, detail: '' });
  };
  if (!group) req('spec.group');
  else if (!DNS1123_SUBDOMAIN.test(group) || !group.includes('.'))
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.group',
      value: group,
      hasValue: true,
      detail: 'should be a domain with at least one dot',
    });
  if (!plural) req('spec.names.plural');
  else if (!DNS1035_LABEL.test(plural))
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.names.plural',
      value: plural,
      hasValue: true,
      detail: "a DNS-1035 label must consist of lower case alphanumeric characters or '-'",
    });
  if (!kind) req('spec.names.kind');
  if (meta.name !== `${plural}.${group}`)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'metadata.name',
      value: meta.name,
      hasValue: true,
      detail: 'must be spec.names.plural+"."+spec.group',
    });
  const scope = spec.scope;
  if (scope !== 'Namespaced' && scope !== 'Cluster')
    errs.push({
      type: 'FieldValueNotSupported',
      field: 'spec.scope',
      value: scope ?? '',
      hasValue: true,
      detail: 'supported values: "Cluster", "Namespaced"',
    });
  const versionsRaw = Array.isArray(spec.versions) ? (spec.versions as Obj[]) : [];
  if (!versionsRaw.length)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.versions',
      value: [],
      hasValue: true,
      detail: 'must have exactly one version marked as storage version',
    });
  const storage = versionsRaw.filter((v) => v.storage === true);
  if (versionsRaw.length && storage.length !== 1)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.versions',
      value: versionsRaw.map((v) => v.name),
      hasValue: true,
      detail: 'must have exactly one version marked as storage version',
    });
  const conversion = (spec.conversion ?? {}) as Obj;
  if (conversion.strategy && conversion.strategy !== 'None') {
    errs.push({
      type: 'FieldValueNotSupported',
      field: 'spec.conversion.strategy',
      value: conversion.strategy,
      hasValue: true,
      detail: 'supported values: "None" (the local API server has no conversion webhooks)',
    });
  }
  let status = false;
  let scale: ResourceDef['scale'];
  const schemaOf = (v: Obj): Schema | undefined => ((v.schema as Obj | undefined)?.openAPIV3Schema ?? undefined) as Schema | undefined;
  // kube-apiserver converts a CRD whose versions all have the same schema to one top-level schema before validating
  // it, so its errors name `spec.validation.openAPIV3Schema…`, once, whatever the number of versions.
  const first = versionsRaw[0] ? schemaOf(versionsRaw[0]) : undefined;
  const shared = first !== undefined && versionsRaw.every((v) => sameJson(schemaOf(v), first));
  const versions: VersionDef[] = versionsRaw.map((v, i) => {
    const schema = schemaOf(v);
    const base = shared ? 'spec.validation.openAPIV3Schema' : `spec.versions[${i}].schema.openAPIV3Schema`;
    if (!schema) req(base);
    else if (checkSchemas && (!shared || i === 0)) {
      // Rules are compiled first: a default is checked against them too.
      const ruleErrs: FieldError[] = [];
      walkRules(schema, base, ruleErrs);
      const schemaErrs = crdSchemaErrors(schema, base, schemaChecks, defaultRules);
      errs.push(...schemaErrs);
      // A real server compiles the rules and estimates their cost only once the schema itself is sound.
      if (!schemaErrs.length) errs.push(...ruleErrs, ...ruleCostProblems(schema, base).errors);
    } else walkRules(schema, base, []); // compiles this version's rules; their errors were reported for the first
    const subs = (v.subresources ?? {}) as Obj;
    if (subs.status !== undefined) status = true;
    if (isObj(subs.scale)) {
      const sc = subs.scale;
      scale = {
        specReplicasPath: String(sc.specReplicasPath ?? ''),
        statusReplicasPath: String(sc.statusReplicasPath ?? ''),
        ...(sc.labelSelectorPath ? { labelSelectorPath: String(sc.labelSelectorPath) } : {}),
      };
    }
    const columns: PrinterColumn[] = ((v.additionalPrinterColumns ?? []) as Obj[]).map((c) => ({
      name: String(c.name),
      type: String(c.type ?? 'string'),
      ...(c.format ? { format: String(c.format) } : {}),
      ...(c.description ? { description: String(c.description) } : {}),
      priority: Number(c.priority ?? 0),
      jsonPath: String(c.jsonPath ?? ''),
    }));
    return {
      name: String(v.name),
      served: v.served !== false,
      storage: v.storage === true,
      ...(schema ? { schema } : {}),
      columns,
      ...(v.deprecated ? { deprecated: true } : {}),
      ...(typeof v.deprecationWarning === 'string' ? { deprecationWarning: v.deprecationWarning } : {}),
    };
  });
  if (errs.length) return { errors: errs };
  return {
    errors: [],
    def: {
      group,
      plural,
      singular: String(names.singular ?? kind.toLowerCase()),
      kind,
      listKind: String(names.listKind ?? `${kind}List`),
      namespaced: scope === 'Namespaced',
      shortNames: (names.shortNames as string[] | undefined) ?? [],
      categories: (names.categories as string[] | undefined) ?? [],
      versions,
      storageVersion: storage[0] ? String(storage[0].name) : versions[0]!.name,
      statusSubresource: status,
      ...(scale ? { scale } : {}),
      builtin: false,
      hasGeneration: true,
      clearStatusOnCreate: status,
      strategicMerge: false,
      crdName: String(meta.name),
    },
  };
}

function keyOf(item: unknown, keys: string[]): string | undefined {
  if (!isObj(item)) return undefined;
  return JSON.stringify(keys.map((k) => item[k] ?? null));
}

function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Schema error types after which a real apiextensions-apiserver does not evaluate CEL rules (type, required, enum, size). */
const BLOCKING_ERROR_TYPES = new Set([
  'FieldValueNotSupported',
  'FieldValueRequired',
  'FieldValueTooLong',
  'FieldValueTooMany',
  'FieldValueTypeInvalid',
]);

/** Detail of the fieldless cause a real server adds when it skipped the CEL rules. */
export const CEL_SKIPPED_DETAIL =
  'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation';

/** True when the schema errors stop CEL evaluation (the registry strategy's rule). */
export function hasBlockingError(errs: readonly FieldError[]): boolean {
  return errs.some((e) => BLOCKING_ERROR_TYPES.has(e.type));
}

const ruleful = new WeakMap<Schema, boolean>();

/** True when the schema declares a rule anywhere (a real server builds no CEL validator, and adds no notice, otherwise). */
export function schemaHasRules(schema: Schema): boolean {
  let has = ruleful.get(schema);
  if (has === undefined) {
    has =
      (schema['x-kubernetes-validations']?.length ?? 0) > 0 ||
      Object.values(schema.properties ?? {}).some(schemaHasRules) ||
      (schema.items !== undefined && schemaHasRules(schema.items)) ||
      (isObj(schema.additionalProperties) && schemaHasRules(schema.additionalProperties as Schema));
    ruleful.set(schema, has);
  }
  return has;
}

/** The cause a real server appends instead of the CEL results: a nil path and a nil value, rendered as Go does. */
export function celSkippedNotice(): FieldError {
  return { type: 'FieldValueInvalid', field: '<nil>', value: 'null', hasValue: true, detail: CEL_SKIPPED_DETAIL };
}

/** Evaluates x-kubernetes-validations over a value (and its correlated old value for transition rules). */
export function celValidate(value: unknown, old: unknown, schema: Schema | undefined, path: string, errs: FieldError[]): void {
  // A subtree without rules has nothing to evaluate: most of an object (the walk was a fifth of the write's CPU).
  if (!schema || value === undefined || value === null || !schemaHasRules(schema)) return;
  const rules = compiled.get(schema);
  if (rules) {
    const unchanged = old !== undefined && jsonEqual(value, old);
    for (const r of rules) {
      if (r.program.usesOldSelf && old === undefined) continue;
      // CEL ratcheting: a non-transition rule is not re-evaluated on an unchanged value.
      if (unchanged && !r.program.usesOldSelf) continue;
      const field = r.fieldPath ? joinPath(path, r.fieldPath.replace(/^\./, '')) : path;
      const typeValue = schema.type ?? (schema['x-kubernetes-int-or-string'] ? 'integer-or-string' : 'object');
      try {
        const ok = r.program.eval(value, old);
        if (ok !== true) {
          let message = r.message || `failed rule: ${r.rule}`;
          if (r.messageProgram) {
            try {
              const m = r.messageProgram.eval(value, old);
              if (typeof m === 'string' && m) message = m;
            } catch {
              /* fall back to message */
            }
          }
          if (r.reason === 'FieldValueInvalid')
            errs.push({ type: 'FieldValueInvalid', field, value: typeValue, hasValue: true, detail: message });
          else errs.push({ type: r.reason, field, detail: message });
        }
      } catch (e) {
        if (!(e instanceof CelError)) throw e;
        errs.push({
          type: 'FieldValueInvalid',
          field,
          value: typeValue,
          hasValue: true,
          detail: `${e.message} evaluating rule: ${r.rule}`,
        });
      }
    }
  }
  if (Array.isArray(value)) {
    if (!schema.items) return;
    let oldByKey: Map<string, unknown> | undefined;
    const keys = schema['x-kubernetes-list-map-keys'];
    if (schema['x-kubernetes-list-type'] === 'map' && keys && Array.isArray(old)) {
      oldByKey = new Map();
      for (const o of old) {
        const k = keyOf(o, keys);
        if (k !== undefined) oldByKey.set(k, o);
      }
    }
    value.forEach((v, i) => {
      const k = oldByKey && keys ? keyOf(v, keys) : undefined;
      celValidate(v, k !== undefined ? oldByKey!.get(k) : undefined, schema.items, `${path}[${i}]`, errs);
    });
    return;
  }
  if (isObj(value)) {
    const oldObj = isObj(old) ? old : undefined;
    for (const [k, v] of Object.entries(value)) {
      const sub = schema.properties?.[k] ?? (isObj(schema.additionalProperties) ? (schema.additionalProperties as Schema) : undefined);
      if (sub) celValidate(v, oldObj?.[k], sub, joinPath(path, k), errs);
    }
  }
}

// ---------------------------------------------------------------- stored form

// kube-apiserver decodes a CRD into Go structs whose optional fields carry `omitempty` and encodes it again when it
// stores it: an empty string, false, empty list or empty map in those fields does not survive (a sample CRD's
// `status.properties: {}` came back without `properties`), and a null never does. Fields that are pointers keep
// their zero value (`minimum: 0`, `maximum: 0`, `labelSelectorPath: ""`).
const SCHEMA_STRINGS = new Set(['id', '$schema', 'description', 'type', 'format', 'title', 'pattern']);
const SCHEMA_BOOLS = new Set([
  'exclusiveMaximum',
  'exclusiveMinimum',
  'uniqueItems',
  'nullable',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
]);
const SCHEMA_LISTS = new Set(['enum', 'required', 'x-kubernetes-list-map-keys']);
const SCHEMA_SCHEMA_LISTS = new Set(['allOf', 'oneOf', 'anyOf']);
const SCHEMA_SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions']);
const SCHEMA_ONE = new Set(['not', 'items', 'additionalProperties', 'additionalItems']);

function storedSchema(s: unknown): unknown {
  if (!isObj(s)) return s;
  const out: Obj = {};
  for (const [k, v] of Object.entries(s)) {
    if (v === null || v === undefined) continue;
    if (SCHEMA_STRINGS.has(k) && v === '') continue;
    if (SCHEMA_BOOLS.has(k) && v === false) continue;
    if ((SCHEMA_LISTS.has(k) || SCHEMA_SCHEMA_LISTS.has(k) || k === 'x-kubernetes-validations') && Array.isArray(v) && !v.length) continue;
    if ((SCHEMA_SCHEMA_MAPS.has(k) || k === 'dependencies') && isObj(v) && !Object.keys(v).length) continue;
    if (SCHEMA_SCHEMA_LISTS.has(k) && Array.isArray(v)) out[k] = v.map(storedSchema);
    else if ((SCHEMA_SCHEMA_MAPS.has(k) || k === 'dependencies') && isObj(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([n, x]) => [n, isObj(x) ? storedSchema(x) : x]));
    else if (SCHEMA_ONE.has(k)) out[k] = Array.isArray(v) ? v.map(storedSchema) : storedSchema(v);
    else if (k === 'x-kubernetes-validations' && Array.isArray(v))
      out[k] = v.map((r) => dropEmpty(r, ['message', 'messageExpression', 'fieldPath']));
    else out[k] = v;
  }
  return out;
}

/** `o` without the listed keys whose value is "", false, 0, null or absent (Go's omitempty on plain fields). */
function dropEmpty(o: unknown, keys: string[]): unknown {
  if (!isObj(o)) return o;
  const out: Obj = { ...o };
  for (const k of keys) if (out[k] === '' || out[k] === false || out[k] === 0 || out[k] === null) delete out[k];
  return out;
}

/**
 * A CRD as kube-apiserver stores it: the spec's empty optional fields dropped as the Go types' `omitempty` does
 * (schemas at every depth, versions, printer columns, names) and the v1 defaults set (`names.singular`,
 * `names.listKind`, `conversion.strategy: None`). Pure; the input is not changed. Used by the embedded server when it
 * stores a CRD and by the test environment when it compares a cluster's CRD with a file.
 */
export function storedCrdForm<T>(crd: T): T {
  if (!isObj(crd) || !isObj(crd.spec)) return crd;
  const spec: Obj = { ...crd.spec };
  if (spec.preserveUnknownFields === false) delete spec.preserveUnknownFields;
  if (isObj(spec.names)) {
    const names = dropEmpty(spec.names, ['singular', 'listKind']) as Obj;
    for (const k of ['shortNames', 'categories']) if (Array.isArray(names[k]) && !(names[k] as unknown[]).length) delete names[k];
    if (typeof names.kind === 'string' && names.kind) {
      names.singular ??= names.kind.toLowerCase();
      names.listKind ??= `${names.kind}List`;
    }
    spec.names = names;
  }
  if (spec.conversion === undefined || spec.conversion === null) spec.conversion = { strategy: 'None' };
  if (Array.isArray(spec.versions)) {
    spec.versions = spec.versions.map((v: unknown) => {
      if (!isObj(v)) return v;
      const out = dropEmpty(v, ['deprecated']) as Obj;
      for (const k of ['schema', 'subresources', 'deprecationWarning']) if (out[k] === null) delete out[k];
      for (const k of ['additionalPrinterColumns', 'selectableFields'])
        if (Array.isArray(out[k]) && !(out[k] as unknown[]).length) delete out[k];
      if (isObj(out.schema) && isObj(out.schema.openAPIV3Schema))
        out.schema = { ...out.schema, openAPIV3Schema: storedSchema(out.schema.openAPIV3Schema) };
      if (Array.isArray(out.additionalPrinterColumns))
        out.additionalPrinterColumns = out.additionalPrinterColumns.map((c: unknown) =>
          dropEmpty(c, ['format', 'description', 'priority']),
        );
      return out;
    });
  }
  return { ...crd, spec } as T;
}
