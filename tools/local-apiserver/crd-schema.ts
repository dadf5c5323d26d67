/**
 * The checks a real kube-apiserver (apiextensions-apiserver, 1.32 line) makes on a CRD's openAPIV3Schema when the CRD
 * is created or updated: the structural-schema invariants and completeness, the defaults (they must validate and
 * survive pruning), and the OpenAPI-level rules (unsupported keywords, `x-kubernetes-preserve-unknown-fields` only
 * true, list-type and map-keys rules), each with the real server's field path and wording.
 */
import { RE2JS } from '@bufbuild/re2';
import { fieldErrorString, type FieldError } from './errors.js';
import { jsonEqual } from './json.js';
import { prune, validate, type Schema } from './schema.js';

type Obj = Record<string, unknown>;

/** Evaluates a schema's x-kubernetes-validations over a value (crd.ts's celValidate; passed in to keep modules acyclic). */
export type RuleCheck = (value: unknown, schema: Schema, path: string, errs: FieldError[]) => void;

/**
 * Which checks apply. On create all do; on update a real server does not tighten what the stored CRD already
 * violated (`requireStructuralSchema(old)` and its siblings), so a category the old CRD fails is relaxed.
 */
export interface SchemaCheckOptions {
  /** The structural invariants and completeness, and (when they hold) the defaults' validity. */
  structural: boolean;
  /** Defaults must not have fields pruning would drop. */
  prunedDefaults: boolean;
  /** Items of a list-type set are atomic. */
  atomicSetType: boolean;
  /** Items of a list-type set/map and map keys are not nullable; map keys are required or defaulted. */
  mapListKeys: boolean;
  /** `type` is one of the OpenAPI v3 types. */
  validPropertyType: boolean;
}

/** Every check on (a create). */
export const ALL_SCHEMA_CHECKS: Readonly<SchemaCheckOptions> = Object.freeze({
  structural: true,
  prunedDefaults: true,
  atomicSetType: true,
  mapListKeys: true,
  validPropertyType: true,
});

type Category = keyof SchemaCheckOptions | 'always';

interface Tagged {
  err: FieldError;
  cat: Category;
}

const OPENAPI_V3_TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];
const META_FIELDS = new Set(['metadata', 'kind', 'apiVersion']);

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A field of the schema that Go would see as set (the stored form already dropped omitempty zero values). */
function has(s: Obj, k: string): boolean {
  const v = s[k];
  if (v === undefined || v === null || v === false || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

function forbidden(field: string, detail: string): FieldError {
  return { type: 'FieldValueForbidden', field, detail };
}
function required(field: string, detail: string): FieldError {
  return { type: 'FieldValueRequired', field, detail };
}
function invalid(field: string, value: unknown, detail: string, rendered?: string): FieldError {
  return { type: 'FieldValueInvalid', field, value, hasValue: true, detail, ...(rendered !== undefined ? { rendered } : {}) };
}
function notSupported(field: string, value: unknown, supported: string[]): FieldError {
  return {
    type: 'FieldValueNotSupported',
    field,
    value,
    hasValue: true,
    detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  };
}

/** Go's `%#v` of a decoded JSON value (how a field error renders a map or a list it carries). */
export function goValueString(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (Array.isArray(v)) return `[]interface {}{${v.map(goValueString).join(', ')}}`;
  if (isObj(v))
    return `map[string]interface {}{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${goValueString(v[k])}`)
      .join(', ')}}`;
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

/** How a field error renders a default: strings, numbers and booleans plainly, maps and lists in Go syntax. */
function defaultValue(path: string, v: unknown, detail: string): FieldError {
  return typeof v === 'object' && v !== null ? invalid(path, v, detail, goValueString(v)) : invalid(path, v, detail);
}

// ---------------------------------------------------------------- can the schema be made structural at all

/** Why apiextensions' NewStructural cannot convert the schema (it then skips the structural checks), if it cannot. */
function conversionError(s: Obj): string | undefined {
  if (Array.isArray(s.items)) return "OpenAPIV3Schema 'items' must be a schema, but is an array";
  if (s['x-kubernetes-preserve-unknown-fields'] === false)
    return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined";
  const unsupported: [string, string][] = [
    ['id', 'id'],
    ['$schema', 'schema'],
    ['$ref', '$ref'],
    ['patternProperties', 'patternProperties'],
    ['dependencies', 'dependencies'],
    ['additionalItems', 'additionalItems'],
    ['definitions', 'definitions'],
  ];
  for (const [k, name] of unsupported)
    if (s[k] !== undefined && s[k] !== null && s[k] !== '') return `OpenAPIV3Schema '${name}' is not supported`;
  for (const sub of children(s)) {
    const e = conversionError(sub);
    if (e) return e;
  }
  return undefined;
}

/** The sub-schemas of a schema (properties, items, additionalProperties, the junctors). */
function children(s: Obj): Obj[] {
  const out: Obj[] = [];
  if (isObj(s.properties)) for (const v of Object.values(s.properties)) if (isObj(v)) out.push(v);
  if (isObj(s.items)) out.push(s.items);
  if (isObj(s.additionalProperties)) out.push(s.additionalProperties);
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(s[k])) for (const v of s[k] as unknown[]) if (isObj(v)) out.push(v);
  if (isObj(s.not)) out.push(s.not);
  return out;
}

// ---------------------------------------------------------------- structural invariants

type Level = 'root' | 'item' | 'field';

/** True for `anyOf: [{type: integer}, {type: string}]` with nothing else in the branches (the int-or-string form). */
function isIntOrStringAnyOf(anyOf: unknown): boolean {
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return false;
  const only = (b: unknown, t: string): boolean => isObj(b) && b.type === t && Object.keys(b).every((k) => k === 'type' || !has(b, k));
  return only(anyOf[0], 'integer') && only(anyOf[1], 'string');
}

function invariants(s: Obj, lvl: Level, path: string, out: FieldError[]): void {
  const type = typeof s.type === 'string' ? s.type : '';
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const props = isObj(s.properties) ? (s.properties as Record<string, Obj>) : undefined;
  if (type === 'array' && !isObj(s.items)) out.push(required(`${path}.items`, 'must be specified'));
  if (isObj(s.items)) invariants(s.items, 'item', `${path}.items`, out);
  for (const [k, v] of Object.entries(props ?? {})) if (isObj(v)) invariants(v, 'field', `${path}.properties[${k}]`, out);
  if (s.additionalProperties !== undefined && s.additionalProperties !== null) {
    if (lvl === 'root') out.push(forbidden(`${path}.additionalProperties`, 'must not be used at the root'));
    if (isObj(s.additionalProperties)) invariants(s.additionalProperties, 'field', `${path}.additionalProperties`, out);
  }
  if (intOrString && preserve)
    out.push(invalid(`${path}.x-kubernetes-preserve-unknown-fields`, true, 'must be false if x-kubernetes-int-or-string is true'));
  if (intOrString && embedded)
    out.push(invalid(`${path}.x-kubernetes-embedded-resource`, true, 'must be false if x-kubernetes-int-or-string is true'));
  const allOf = Array.isArray(s.allOf) ? (s.allOf as unknown[]) : [];
  valueValidation(s, isIntOrStringAnyOf(s.anyOf), isObj(allOf[0]) && isIntOrStringAnyOf(allOf[0].anyOf), path, out);
  const checkMetadata = lvl === 'root' || embedded;
  if (embedded && type !== 'object') {
    const detail = 'must be object if x-kubernetes-embedded-resource is true';
    out.push(type ? invalid(`${path}.type`, type, detail) : required(`${path}.type`, detail));
  } else if (!type && !intOrString && !preserve) {
    const where = { root: 'at the root', item: 'for specified array items', field: 'for specified object fields' }[lvl];
    out.push(required(`${path}.type`, `must not be empty ${where}`));
  }
  if (embedded && s.additionalProperties !== undefined && s.additionalProperties !== null)
    out.push(forbidden(`${path}.additionalProperties`, 'must not be used if x-kubernetes-embedded-resource is set'));
  if (lvl === 'root' && type && type !== 'object') out.push(invalid(`${path}.type`, type, 'must be object at the root'));
  for (const k of ['kind', 'apiVersion'])
    if (checkMetadata && props && isObj(props[k]) && props[k].type !== 'string')
      out.push(invalid(`${path}.properties[${k}].type`, props[k].type ?? '', 'must be string'));
  const metadata = props?.metadata;
  if (isObj(metadata)) {
    const mpath = `${path}.properties[metadata]`;
    if (checkMetadata && metadata.type !== 'object') out.push(invalid(`${mpath}.type`, metadata.type ?? '', 'must be object'));
    if (lvl === 'root') {
      // Only `name` and `generateName` may be restricted (ObjectMeta is validated by the server itself).
      const mprops = isObj(metadata.properties) ? Object.keys(metadata.properties) : [];
      const onlyNames = mprops.length > 0 && mprops.every((k) => k === 'name' || k === 'generateName');
      const extra = Object.keys(metadata).filter(
        (k) => k !== 'type' && k !== 'default' && !(k === 'properties' && onlyNames) && has(metadata, k),
      );
      // `properties: {}` is left out: an empty map the stored form drops anyway.
      if (extra.some((k) => k !== 'properties' || mprops.length > 0))
        out.push(forbidden(mpath, 'must not specify anything other than name and generateName, but metadata is implicitly specified'));
    }
  }
  if (embedded && !preserve && !(props && Object.keys(props).length))
    out.push(
      required(
        `${path}.properties`,
        'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields',
      ),
    );
}

function valueValidation(v: Obj, skipAnyOf: boolean, skipFirstAllOfAnyOf: boolean, path: string, out: FieldError[]): void {
  if (!skipAnyOf && Array.isArray(v.anyOf))
    v.anyOf.forEach((b, i) => isObj(b) && nestedValueValidation(b, false, false, `${path}.anyOf[${i}]`, out));
  if (Array.isArray(v.allOf))
    v.allOf.forEach((b, i) => isObj(b) && nestedValueValidation(b, skipFirstAllOfAnyOf && i === 0, false, `${path}.allOf[${i}]`, out));
  if (Array.isArray(v.oneOf)) v.oneOf.forEach((b, i) => isObj(b) && nestedValueValidation(b, false, false, `${path}.oneOf[${i}]`, out));
  if (isObj(v.not)) nestedValueValidation(v.not, false, false, `${path}.not`, out);
  if (typeof v.pattern === 'string' && v.pattern) {
    const why = re2Error(v.pattern);
    if (why) out.push(invalid(`${path}.pattern`, v.pattern, `must be a valid regular expression, but isn't: ${why}`));
  }
}

/** Go's regexp (RE2) error for a pattern, if it does not compile: a lookahead compiles in JavaScript, not there. */
function re2Error(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Inside allOf/anyOf/oneOf/not only value validations: no type, default, description, extensions. */
function nestedValueValidation(n: Obj, skipAnyOf: boolean, skipAllOfAnyOf: boolean, path: string, out: FieldError[]): void {
  valueValidation(n, skipAnyOf, skipAllOfAnyOf, path, out);
  if (isObj(n.items)) nestedValueValidation(n.items, false, false, `${path}.items`, out);
  const props = isObj(n.properties) ? (n.properties as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(props)) if (isObj(v)) nestedValueValidation(v, false, false, `${path}.properties[${k}]`, out);
  if (has(n, 'type')) out.push(forbidden(`${path}.type`, 'must be empty to be structural'));
  // `additionalProperties: false` converts to nothing there; a schema or `true` is an additionalProperties.
  if (isObj(n.additionalProperties) || n.additionalProperties === true)
    out.push(forbidden(`${path}.additionalProperties`, 'must be undefined to be structural'));
  if (n.default !== undefined && n.default !== null) out.push(forbidden(`${path}.default`, 'must be undefined to be structural'));
  if (has(n, 'title')) out.push(forbidden(`${path}.title`, 'must be empty to be structural'));
  if (has(n, 'description')) out.push(forbidden(`${path}.description`, 'must be empty to be structural'));
  if (n.nullable === true) out.push(forbidden(`${path}.nullable`, 'must be false to be structural'));
  if (n['x-kubernetes-preserve-unknown-fields'] === true)
    out.push(forbidden(`${path}.x-kubernetes-preserve-unknown-fields`, 'must be false to be structural'));
  if (n['x-kubernetes-embedded-resource'] === true)
    out.push(forbidden(`${path}.x-kubernetes-embedded-resource`, 'must be false to be structural'));
  if (n['x-kubernetes-int-or-string'] === true) out.push(forbidden(`${path}.x-kubernetes-int-or-string`, 'must be false to be structural'));
  if (has(n, 'x-kubernetes-list-map-keys')) out.push(forbidden(`${path}.x-kubernetes-list-map-keys`, 'must be empty to be structural'));
  if (n['x-kubernetes-list-type'] !== undefined && n['x-kubernetes-list-type'] !== null)
    out.push(forbidden(`${path}.x-kubernetes-list-type`, 'must be undefined to be structural'));
  if (n['x-kubernetes-map-type'] !== undefined && n['x-kubernetes-map-type'] !== null)
    out.push(forbidden(`${path}.x-kubernetes-map-type`, 'must be undefined to be structural'));
  if (has(n, 'x-kubernetes-validations')) out.push(forbidden(`${path}.x-kubernetes-validations`, 'must be empty to be structural'));
  if ('metadata' in props) out.push(forbidden(`${path}.properties[metadata]`, 'must not be specified in a nested context'));
}

// ---------------------------------------------------------------- completeness (from the root's junctors only, as upstream)

function completeness(v: Obj, s: Obj | undefined, sPath: string, vPath: string, out: FieldError[]): void {
  if (!s) {
    out.push(required(sPath, `because it is defined in ${vPath}`));
    return;
  }
  if (isObj(v.not)) nestedCompleteness(v.not, s, sPath, `${vPath}.not`, out);
  for (const k of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(v[k])) (v[k] as unknown[]).forEach((b, i) => isObj(b) && nestedCompleteness(b, s, sPath, `${vPath}.${k}[${i}]`, out));
}

function nestedCompleteness(v: Obj, s: Obj | undefined, sPath: string, vPath: string, out: FieldError[]): void {
  if (!s) {
    out.push(required(sPath, `because it is defined in ${vPath}`));
    return;
  }
  completeness(v, s, sPath, vPath, out);
  if (isObj(v.items)) nestedCompleteness(v.items, isObj(s.items) ? s.items : undefined, `${sPath}.items`, `${vPath}.items`, out);
  const sProps = isObj(s.properties) ? (s.properties as Record<string, unknown>) : {};
  for (const [k, vf] of Object.entries(isObj(v.properties) ? v.properties : {})) {
    if (!isObj(vf)) continue;
    const sf = sProps[k];
    if (!isObj(sf)) out.push(required(`${sPath}.properties[${k}]`, `because it is defined in ${vPath}.properties[${k}]`));
    else nestedCompleteness(vf, sf, `${sPath}.properties[${k}]`, `${vPath}.properties[${k}]`, out);
  }
}

// ---------------------------------------------------------------- defaults

function defaults(
  s: Obj,
  path: string,
  isRoot: boolean,
  insideMeta: boolean,
  requirePruned: boolean,
  rules: RuleCheck | undefined,
  out: Tagged[],
): void {
  const embedded = isRoot || s['x-kubernetes-embedded-resource'] === true;
  if (embedded) insideMeta = false;
  // Defaults inside metadata are refused by the OpenAPI walk ("must not be set in top-level metadata").
  if (s.default !== undefined && s.default !== null && !insideMeta) {
    const dflt = s.default;
    if (requirePruned) {
      const pruned = structuredClone(dflt);
      prune(pruned, s as Schema, '', [], embedded);
      if (!jsonEqual(pruned, dflt))
        out.push({ err: defaultValue(`${path}.default`, dflt, 'must not have unknown fields'), cat: 'prunedDefaults' });
    }
    // Validated as a document of its own: kube-openapi names a field relative to the default (the message says
    // "a in body …", " in body …" for the default itself) and the field path appends that name to `….default`
    // (`….default.a`, `….default.[0]`).
    const errs: FieldError[] = [];
    validate(dflt, s as Schema, '', errs);
    for (const e of errs) e.field = e.field ? `${path}.default.${e.field}` : `${path}.default`;
    // A real server runs the rules over the default once the schema passed, as on a create.
    if (!errs.length) rules?.(dflt, s as Schema, `${path}.default`, errs);
    for (const err of errs) out.push({ err, cat: 'structural' });
  }
  if (isObj(s.items)) defaults(s.items, `${path}.items`, false, insideMeta, requirePruned, rules, out);
  for (const [k, v] of Object.entries(isObj(s.properties) ? s.properties : {}))
    if (isObj(v)) defaults(v, `${path}.properties[${k}]`, false, insideMeta || (embedded && META_FIELDS.has(k)), requirePruned, rules, out);
}

// ---------------------------------------------------------------- OpenAPI-level rules (every schema node)

interface WalkCtx {
  root: boolean;
  insideResourceMeta: boolean;
  /** Why defaults are not allowed here, when they are not. */
  noDefaults?: string;
}

function openapi(s: Obj, path: string, ctx: WalkCtx, opts: Readonly<SchemaCheckOptions>, out: Tagged[]): void {
  const push = (err: FieldError, cat: Category = 'always'): void => void out.push({ err, cat });
  const type = typeof s.type === 'string' ? s.type : '';
  if (type && !OPENAPI_V3_TYPES.includes(type) && opts.validPropertyType)
    push(notSupported(`${path}.type`, type, OPENAPI_V3_TYPES), 'validPropertyType');
  if (s.default !== undefined && s.default !== null && ctx.noDefaults !== undefined)
    push(forbidden(`${path}.default`, `must not be set ${ctx.noDefaults}`));
  if (has(s, 'id')) push(forbidden(`${path}.id`, 'id is not supported'));
  if (s.additionalItems !== undefined && s.additionalItems !== null)
    push(forbidden(`${path}.additionalItems`, 'additionalItems is not supported'));
  if (isObj(s.patternProperties) && Object.keys(s.patternProperties).length)
    push(forbidden(`${path}.patternProperties`, 'patternProperties is not supported'));
  if (isObj(s.definitions) && Object.keys(s.definitions).length) push(forbidden(`${path}.definitions`, 'definitions is not supported'));
  if (s.dependencies !== undefined && s.dependencies !== null) push(forbidden(`${path}.dependencies`, 'dependencies is not supported'));
  if (has(s, '$ref')) push(forbidden(`${path}.$ref`, '$ref is not supported'));
  if (type === 'null') push(forbidden(`${path}.type`, 'type cannot be set to null, use nullable as an alternative'));
  if (Array.isArray(s.items) && s.items.length) push(forbidden(`${path}.items`, 'items must be a schema object and not an array'));
  if (ctx.insideResourceMeta && s['x-kubernetes-embedded-resource'] === true)
    push(forbidden(`${path}.x-kubernetes-embedded-resource`, 'must not be used inside of resource meta'));
  if (s.uniqueItems === true)
    push(forbidden(`${path}.uniqueItems`, 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'));
  const props = isObj(s.properties) ? (s.properties as Record<string, unknown>) : {};
  if (s.additionalProperties !== undefined && s.additionalProperties !== null) {
    if (Object.keys(props).length && s.additionalProperties !== true)
      push(forbidden(`${path}.additionalProperties`, 'additionalProperties and properties are mutual exclusive'));
    if (isObj(s.additionalProperties)) {
      const sub: WalkCtx = { ...ctx, root: false };
      if (ctx.insideResourceMeta) sub.noDefaults = 'inside additionalProperties applying to object metadata';
      openapi(s.additionalProperties, `${path}.additionalProperties`, sub, opts, out);
    }
  }
  for (const [k, v] of Object.entries(props)) {
    if (!isObj(v)) continue;
    const sub: WalkCtx = { ...ctx, root: false };
    if ((ctx.root || s['x-kubernetes-embedded-resource'] === true) && META_FIELDS.has(k)) {
      sub.insideResourceMeta = true;
      if (ctx.root) sub.noDefaults = `in top-level ${k}`;
    }
    openapi(v, `${path}.properties[${k}]`, sub, opts, out);
  }
  const nested: WalkCtx = { ...ctx, root: false };
  if (isObj(s.not)) openapi(s.not, `${path}.not`, nested, opts, out);
  for (const k of ['allOf', 'oneOf', 'anyOf'])
    if (Array.isArray(s[k])) (s[k] as unknown[]).forEach((b, i) => isObj(b) && openapi(b, `${path}.${k}[${i}]`, nested, opts, out));
  if (isObj(s.items)) openapi(s.items, `${path}.items`, nested, opts, out);
  if (s['x-kubernetes-preserve-unknown-fields'] === false)
    push(invalid(`${path}.x-kubernetes-preserve-unknown-fields`, false, 'must be true or undefined'));
  listAndMapTypes(s, path, type, opts, push);
  validationRules(s, path, push);
}

function listAndMapTypes(
  s: Obj,
  path: string,
  type: string,
  opts: Readonly<SchemaCheckOptions>,
  push: (e: FieldError, c?: Category) => void,
): void {
  const mapType = s['x-kubernetes-map-type'];
  if (mapType !== undefined && mapType !== null) {
    if (type !== 'object') {
      const d = 'must be object if x-kubernetes-map-type is specified';
      push(type ? invalid(`${path}.type`, type, d) : required(`${path}.type`, d));
    }
    if (mapType !== 'atomic' && mapType !== 'granular')
      push(notSupported(`${path}.x-kubernetes-map-type`, mapType, ['atomic', 'granular']));
  }
  const listType = s['x-kubernetes-list-type'];
  const hasListType = listType !== undefined && listType !== null;
  const items = isObj(s.items) ? s.items : undefined;
  if (hasListType && type !== 'array') {
    const d = 'must be array if x-kubernetes-list-type is specified';
    push(type ? invalid(`${path}.type`, type, d) : required(`${path}.type`, d));
  } else if (opts.atomicSetType && listType === 'set' && items) {
    const d = 'must be atomic as item of a list with x-kubernetes-list-type=set';
    const itemList = items['x-kubernetes-list-type'];
    if (items.type === 'array' && itemList !== undefined && itemList !== null && itemList !== 'atomic')
      push(invalid(`${path}.items.x-kubernetes-list-type`, itemList, d), 'atomicSetType');
    // Upstream passes the item's list type here (usually unset: a nil pointer, rendered as the string "null").
    if (items.type === 'object' && items['x-kubernetes-map-type'] !== 'atomic')
      push(invalid(`${path}.items.x-kubernetes-map-type`, itemList ?? 'null', d), 'atomicSetType');
  }
  if (hasListType && listType !== 'atomic' && listType !== 'set' && listType !== 'map')
    push(notSupported(`${path}.x-kubernetes-list-type`, listType, ['atomic', 'set', 'map']));
  const keys = Array.isArray(s['x-kubernetes-list-map-keys']) ? (s['x-kubernetes-list-map-keys'] as unknown[]).map(String) : [];
  if (keys.length) {
    const d = 'must be map if x-kubernetes-list-map-keys is non-empty';
    if (!hasListType) push(required(`${path}.x-kubernetes-list-type`, d));
    else if (listType !== 'map') push(invalid(`${path}.x-kubernetes-list-type`, listType, d));
  }
  if (listType === 'map') {
    if (!keys.length) push(required(`${path}.x-kubernetes-list-map-keys`, 'must not be empty if x-kubernetes-list-type is map'));
    if (s.items === undefined || s.items === null) push(required(`${path}.items`, 'must have a schema if x-kubernetes-list-type is map'));
    if (items && items.type !== 'object')
      push(invalid(`${path}.items.type`, items.type ?? '', "must be object if parent array's x-kubernetes-list-type is map"));
    if (items && items.type === 'object') {
      const iprops = isObj(items.properties) ? (items.properties as Record<string, Obj>) : {};
      const rendered = `[]string{${keys.map((k) => JSON.stringify(k)).join(', ')}}`;
      const seen = new Set<string>();
      for (const k of keys) {
        const p = iprops[k];
        if (isObj(p)) {
          if (p.type === 'array' || p.type === 'object')
            push(
              invalid(
                `${path}.items.properties[${k}].type`,
                items.type,
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
              ),
            );
        } else push(invalid(`${path}.x-kubernetes-list-map-keys`, keys, 'entries must all be names of item properties', rendered));
        if (seen.has(k)) push(invalid(`${path}.x-kubernetes-list-map-keys`, keys, 'must not contain duplicate entries', rendered));
        seen.add(k);
      }
    }
  }
  if (opts.mapListKeys && items && (listType === 'set' || listType === 'map')) {
    if (items.nullable === true)
      push(forbidden(`${path}.items.nullable`, `cannot be nullable when x-kubernetes-list-type is ${listType}`), 'mapListKeys');
    if (listType === 'map') {
      const req = new Set(Array.isArray(items.required) ? (items.required as unknown[]).map(String) : []);
      const iprops = isObj(items.properties) ? (items.properties as Record<string, Obj>) : {};
      for (const k of keys) {
        const p = iprops[k];
        if (!isObj(p)) continue;
        if (!req.has(k) && (p.default === undefined || p.default === null))
          push(
            required(
              `${path}.items.properties[${k}].default`,
              'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property',
            ),
            'mapListKeys',
          );
        if (p.nullable === true)
          push(
            forbidden(
              `${path}.items.properties[${k}].nullable`,
              'this property is in x-kubernetes-list-map-keys, so it cannot be nullable',
            ),
            'mapListKeys',
          );
      }
    }
  }
}

/** The shape of each x-kubernetes-validations entry (compilation and cost are checked in crd.ts). */
function validationRules(s: Obj, path: string, push: (e: FieldError) => void): void {
  const rules = Array.isArray(s['x-kubernetes-validations']) ? (s['x-kubernetes-validations'] as unknown[]) : [];
  const newline = /[\n\r]+/;
  rules.forEach((r, i) => {
    if (!isObj(r)) return;
    const p = `${path}.x-kubernetes-validations[${i}]`;
    const rule = typeof r.rule === 'string' ? r.rule.trim() : '';
    const message = typeof r.message === 'string' ? r.message : '';
    if (!rule) push(required(`${p}.rule`, 'rule is not specified'));
    else if (message.length && !message.trim()) push(invalid(`${p}.message`, message, 'message must be non-empty if specified'));
    else if (newline.test(message.trim())) push(invalid(`${p}.message`, message, 'message must not contain line breaks'));
    else if (newline.test(rule) && !message.trim())
      push(required(`${p}.message`, 'message must be specified if rule contains line breaks'));
    const expr = typeof r.messageExpression === 'string' ? r.messageExpression : '';
    if (expr.length && !expr.trim()) push(required(`${p}.messageExpression`, 'messageExpression must be non-empty if specified'));
    const reasons = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'];
    if (typeof r.reason === 'string' && !reasons.includes(r.reason)) push(notSupported(`${p}.reason`, r.reason, reasons));
    const fp = typeof r.fieldPath === 'string' ? r.fieldPath : '';
    if (fp.length && !fp.trim()) push(invalid(`${p}.fieldPath`, fp, 'fieldPath must be non-empty if specified'));
    if (newline.test(fp)) push(invalid(`${p}.fieldPath`, fp, 'fieldPath must not contain line breaks'));
  });
}

// ---------------------------------------------------------------- entry points

/**
 * The errors a real server reports for one openAPIV3Schema at `base` (e.g. `spec.validation.openAPIV3Schema`), in its
 * order: root nullable, the structural errors (sorted, as upstream sorts them), the defaults' (only once the schema
 * is structural), then the OpenAPI-level ones. `rules` checks a default against the schema's rules once it passed the
 * schema (the rules must be compiled).
 */
export function crdSchemaErrors(
  schema: Schema,
  base: string,
  opts: SchemaCheckOptions = ALL_SCHEMA_CHECKS,
  rules?: RuleCheck,
): FieldError[] {
  return taggedErrors(schema as unknown as Obj, base, opts, rules).map((t) => t.err);
}

function taggedErrors(s: Obj, base: string, opts: Readonly<SchemaCheckOptions>, rules?: RuleCheck): Tagged[] {
  const out: Tagged[] = [];
  if (s.nullable === true) out.push({ err: forbidden(`${base}.nullable`, 'nullable cannot be true at the root'), cat: 'always' });
  const conv = conversionError(s);
  let initError: Tagged | undefined;
  if (conv !== undefined) initError = { err: invalid(base, '', conv), cat: 'structural' };
  else if (opts.structural) {
    const st: FieldError[] = [];
    invariants(s, 'root', base, st);
    completeness(s, s, base, base, st);
    const keyed = st.map((e) => [fieldErrorString(e), e] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [, err] of keyed) out.push({ err, cat: 'structural' });
    if (!st.length) defaults(s, base, true, false, opts.prunedDefaults, rules, out);
  }
  const before = out.length;
  openapi(s, base, { root: true, insideResourceMeta: false }, opts, out);
  // NewStructural's own error overlaps the OpenAPI-level ones: shown only when nothing else was found.
  if (initError && out.length === 0 && before === 0) out.push(initError);
  return out;
}

/**
 * The checks an update must still pass: those the stored CRD's schema passes (a real server does not tighten
 * validation on what it already persisted).
 */
export function updateSchemaChecks(oldSchemas: readonly Schema[]): SchemaCheckOptions {
  const opts: SchemaCheckOptions = { ...ALL_SCHEMA_CHECKS };
  for (const s of oldSchemas) {
    for (const t of taggedErrors(s as unknown as Obj, '', ALL_SCHEMA_CHECKS)) if (t.cat !== 'always') opts[t.cat] = false;
    if (conversionError(s as unknown as Obj) !== undefined) opts.structural = false;
  }
  return opts;
}
