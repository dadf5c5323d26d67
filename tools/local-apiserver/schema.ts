/** Structural-schema pruning, defaulting and validation of custom resources, as apiextensions-apiserver does it. */
import type { FieldError } from './errors.js';

/** The OpenAPI v3 subset allowed in a CRD structural schema. */
export interface Schema {
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  not?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: Array<{
    rule: string;
    message?: string;
    messageExpression?: string;
    reason?: string;
    fieldPath?: string;
    optionalOldSelf?: boolean;
  }>;
}

type Obj = Record<string, unknown>;

/** Fields of ObjectMeta; anything else under `metadata` is unknown and dropped. */
export const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);
const EMBEDDED_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'uid',
]);

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An object or an array: what pruning, defaulting and the walks below descend into. */
function isNode(v: unknown): boolean {
  return typeof v === 'object' && v !== null;
}

/** Unicode code points of a string (kube-openapi's length), without an array of them. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Removes fields the schema does not declare; records their paths in `unknown` (for fieldValidation). */
export function prune(value: unknown, schema: Schema | undefined, path: string, unknown: string[], root = false): void {
  if (!schema) return;
  // A scalar has nothing to prune: its path (a string built per field) is only made for an object or an array.
  if (Array.isArray(value)) {
    if (schema.items) for (let i = 0; i < value.length; i++) if (isNode(value[i])) prune(value[i], schema.items, `${path}[${i}]`, unknown);
    return;
  }
  if (!isObj(value)) return;
  const embedded = root || schema['x-kubernetes-embedded-resource'] === true;
  if (embedded && isObj(value.metadata)) pruneMeta(value.metadata, joinPath(path, 'metadata'), unknown, root);
  const props = schema.properties;
  const addl = schema.additionalProperties;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    if (embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) {
      if (key !== 'metadata' && props?.[key]) prune(value[key], props[key], joinPath(path, key), unknown);
      continue;
    }
    const sub = props?.[key];
    if (sub) {
      if (isNode(value[key])) prune(value[key], sub, joinPath(path, key), unknown);
    } else if (isObj(addl)) {
      if (isNode(value[key])) prune(value[key], addl, joinPath(path, key), unknown);
    } else if (addl === true || preserve) {
      continue;
    } else {
      unknown.push(joinPath(path, key));
      delete value[key];
    }
  }
}

function pruneMeta(meta: Obj, path: string, unknown: string[], root: boolean): void {
  const allowed = root ? OBJECT_META_FIELDS : EMBEDDED_META_FIELDS;
  for (const key of Object.keys(meta)) {
    if (!allowed.has(key)) {
      if (root) unknown.push(joinPath(path, key));
      delete meta[key];
    }
  }
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/**
 * What defaulting visits under a schema, worked out once per schema object (schemas are never mutated): the properties
 * that have a default or one below them, and whether the items or the additional properties do. Null when nothing
 * below has a default: defaulting then skips the subtree instead of walking every property of the schema for every
 * object of a write (a CAPI Machine's schema declares hundreds, of which a few have defaults).
 */
interface DefaultPlan {
  props: [string, Schema][];
  items: Schema | undefined;
  additional: Schema | undefined;
}

const defaultPlans = new WeakMap<Schema, DefaultPlan | null>();

function defaultPlan(schema: Schema): DefaultPlan | null {
  let plan = defaultPlans.get(schema);
  if (plan !== undefined) return plan;
  const props: [string, Schema][] = [];
  for (const [key, sub] of Object.entries(schema.properties ?? {}))
    if (sub.default !== undefined || defaultPlan(sub)) props.push([key, sub]);
  const items = schema.items && defaultPlan(schema.items) ? schema.items : undefined;
  const addl = schema.additionalProperties;
  const additional = isObj(addl) && defaultPlan(addl as Schema) ? (addl as Schema) : undefined;
  plan = props.length || items || additional ? { props, items, additional } : null;
  defaultPlans.set(schema, plan);
  return plan;
}

/** Applies `default`s (including inside array items and maps); nulls of non-nullable fields are dropped first. */
export function applyDefaults(value: unknown, schema: Schema | undefined): void {
  if (!schema) return;
  const plan = defaultPlan(schema);
  if (!plan) return;
  if (Array.isArray(value)) {
    if (plan.items) for (const v of value) applyDefaults(v, plan.items);
    return;
  }
  if (!isObj(value)) return;
  for (const [key, sub] of plan.props) {
    if (value[key] === null && !sub.nullable && sub.default !== undefined) delete value[key];
    if (value[key] === undefined && sub.default !== undefined) value[key] = clone(sub.default);
    if (value[key] !== undefined) applyDefaults(value[key], sub);
  }
  if (plan.additional) {
    for (const key of Object.keys(value)) {
      if (schema.properties?.[key]) continue;
      applyDefaults(value[key], plan.additional);
    }
  }
}

/** Drops `null` values of non-nullable fields (apiextensions prunes them before defaulting). */
export function dropNulls(value: unknown, schema: Schema | undefined): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    if (schema.items) for (const v of value) dropNulls(v, schema.items);
    return;
  }
  if (!isObj(value)) return;
  if (schema.properties) {
    for (const [key, sub] of Object.entries(schema.properties)) {
      if (value[key] === null && !sub.nullable && sub.default !== undefined) delete value[key];
      else if (value[key] !== undefined) dropNulls(value[key], sub);
    }
  }
}

function jsType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(t: string, v: unknown): boolean {
  const actual = jsType(v);
  if (t === 'number') return actual === 'number' || actual === 'integer';
  return t === actual;
}

const DATE_TIME_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const BYTE_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UUID_RE = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;
const IPV4_RE = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/** String formats kube-openapi checks; unknown formats are accepted as real apiextensions does. */
function formatOk(format: string, v: string): boolean {
  switch (format) {
    case 'date-time':
      return DATE_TIME_RE.test(v) && !Number.isNaN(Date.parse(v.replace(' ', 'T')));
    case 'date':
      return DATE_RE.test(v);
    case 'byte':
      return BYTE_RE.test(v);
    case 'uuid':
      return UUID_RE.test(v);
    case 'ipv4':
      return IPV4_RE.test(v);
    case 'int-or-string':
      return true;
    default:
      return true;
  }
}

const regexCache = new Map<string, RegExp | null>();
function compileRe(p: string): RegExp | null {
  let re = regexCache.get(p);
  if (re === undefined) {
    try {
      re = new RegExp(p, 'u');
    } catch {
      try {
        re = new RegExp(p);
      } catch {
        re = null;
      }
    }
    regexCache.set(p, re);
  }
  return re;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ka = Object.keys(a as Obj);
  const kb = Object.keys(b as Obj);
  return ka.length === kb.length && ka.every((k) => deepEqual((a as Obj)[k], (b as Obj)[k]));
}

function goFormat(v: unknown): string {
  if (isObj(v))
    return `map[string]interface {}{${Object.entries(v)
      .map(([k, x]) => `"${k}":${typeof x === 'string' ? JSON.stringify(x) : JSON.stringify(x)}`)
      .join(', ')}}`;
  return JSON.stringify(v);
}

function inv(field: string, value: unknown, detail: string): FieldError {
  return { type: 'FieldValueInvalid', field, value, hasValue: true, detail };
}

/** Validates a value against a structural schema, appending k8s-style field errors. */
export function validate(value: unknown, schema: Schema | undefined, path: string, errs: FieldError[], old?: unknown): void {
  if (!schema) return;
  // `old` (an update's stored version, subtrees shared with `value` where equal): every error inside a subtree the
  // update left as it was would be ratcheted away, so the subtree is not walked (most of an object on a status write).
  if (old !== undefined && value === old) return;
  if (!typeOk(value, schema, path, errs)) return;
  if (schema.enum && !schema.enum.some((e) => deepEqual(e, value))) {
    errs.push({
      type: 'FieldValueNotSupported',
      field: path,
      value,
      hasValue: true,
      detail: `supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`,
    });
  }
  if (typeof value === 'string') validateString(value, schema, path, errs);
  if (typeof value === 'number') validateNumber(value, schema, path, errs);
  if (Array.isArray(value)) validateArray(value, schema, path, errs, old);
  if (isObj(value)) validateObject(value, schema, path, errs, old);
  validateCombinators(value, schema, path, errs);
}

/** The type check (null, int-or-string, type): false when the value has the wrong type (nothing more is checked). */
function typeOk(value: unknown, schema: Schema, path: string, errs: FieldError[]): boolean {
  const name = path;
  if (value === null) {
    // null ends the walk: allowed (nullable, or no type), or a type error.
    if (schema.nullable || (!schema.type && !schema['x-kubernetes-int-or-string'])) return false;
    errs.push({
      type: 'FieldValueTypeInvalid',
      field: path,
      value: 'null',
      hasValue: true,
      detail: `${name} in body must be of type ${schema.type ?? 'object'}: "null"`,
    });
    return false;
  }
  if (schema['x-kubernetes-int-or-string']) {
    const t = jsType(value);
    if (t !== 'integer' && t !== 'string') {
      errs.push({
        type: 'FieldValueTypeInvalid',
        field: path,
        value: t,
        hasValue: true,
        detail: `${name} in body must be of type integer,string: "${t}"`,
      });
      return false;
    }
  } else if (schema.type && !typeMatches(schema.type, value)) {
    const t = jsType(value);
    errs.push({
      type: 'FieldValueTypeInvalid',
      field: path,
      value: t,
      hasValue: true,
      detail: `${name} in body must be of type ${schema.type}: "${t}"`,
    });
    return false;
  }
  return true;
}

/** maxLength, minLength, pattern and format of a string. */
function validateString(value: string, schema: Schema, path: string, errs: FieldError[]): void {
  const name = path;
  // kube-openapi's string validator stops at the first of maxLength, minLength, pattern (a too-long value gets no
  // pattern error); its format validator runs apart and reports a bad format as a type error.
  const len = schema.maxLength !== undefined || schema.minLength !== undefined ? codePoints(value) : 0;
  if (schema.maxLength !== undefined && len > schema.maxLength) {
    errs.push({
      type: 'FieldValueTooLong',
      field: path,
      value,
      hasValue: false,
      detail: `may not be more than ${schema.maxLength} bytes`,
    });
  } else if (schema.minLength !== undefined && len < schema.minLength)
    errs.push(inv(path, value, `${name} in body should be at least ${schema.minLength} chars long`));
  else if (schema.pattern !== undefined) {
    const re = compileRe(schema.pattern);
    if (re && !re.test(value)) errs.push(inv(path, value, `${name} in body should match '${schema.pattern}'`));
  }
  if (schema.format && !formatOk(schema.format, value))
    errs.push({
      type: 'FieldValueTypeInvalid',
      field: path,
      value,
      hasValue: true,
      detail: `${name} in body must be of type ${schema.format}: ${JSON.stringify(value)}`,
    });
}

/** minimum, maximum, multipleOf and int32 of a number. */
function validateNumber(value: number, schema: Schema, path: string, errs: FieldError[]): void {
  const name = path;
  if (schema.minimum !== undefined && (schema.exclusiveMinimum ? value <= schema.minimum : value < schema.minimum)) {
    errs.push(inv(path, value, `${name} in body should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${schema.minimum}`));
  }
  if (schema.maximum !== undefined && (schema.exclusiveMaximum ? value >= schema.maximum : value > schema.maximum)) {
    errs.push(inv(path, value, `${name} in body should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${schema.maximum}`));
  }
  if (
    schema.multipleOf !== undefined &&
    schema.multipleOf !== 0 &&
    Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9
  ) {
    errs.push(inv(path, value, `${name} in body should be a multiple of ${schema.multipleOf}`));
  }
  if (schema.format === 'int32' && (value > 2147483647 || value < -2147483648))
    errs.push(inv(path, value, `${name} in body must be of type int32: "${value}"`));
}

/** Item counts, list-type uniqueness, then each item. */
function validateArray(value: unknown[], schema: Schema, path: string, errs: FieldError[], old: unknown): void {
  const name = path;
  if (schema.maxItems !== undefined && value.length > schema.maxItems) {
    errs.push({
      type: 'FieldValueTooMany',
      field: path,
      value: value.length,
      hasValue: true,
      detail: `must have at most ${schema.maxItems} items`,
    });
  }
  if (schema.minItems !== undefined && value.length < schema.minItems)
    errs.push(inv(path, value.length, `${name} in body should have at least ${schema.minItems} items`));
  const listType = schema['x-kubernetes-list-type'];
  if (listType === 'map') {
    const keys = schema['x-kubernetes-list-map-keys'] ?? [];
    const seen = new Set<string>();
    value.forEach((item, i) => {
      if (!isObj(item)) return;
      const k = JSON.stringify(keys.map((kk) => item[kk] ?? schema.items?.properties?.[kk]?.default ?? null));
      if (seen.has(k)) {
        const keyObj: Obj = {};
        keys.forEach((kk) => {
          if (item[kk] !== undefined) keyObj[kk] = item[kk];
        });
        errs.push({
          type: 'FieldValueDuplicate',
          field: `${path}[${i}]`,
          value: keyObj,
          hasValue: true,
          rendered: goFormat(keyObj),
          detail: '',
        });
      }
      seen.add(k);
    });
  } else if (listType === 'set' || schema.uniqueItems) {
    const seen = new Set<string>();
    value.forEach((item, i) => {
      const k = JSON.stringify(item);
      if (seen.has(k)) errs.push({ type: 'FieldValueDuplicate', field: `${path}[${i}]`, value: item, hasValue: true, detail: '' });
      seen.add(k);
    });
  }
  if (schema.items) {
    const oldItems = Array.isArray(old) ? (old as unknown[]) : undefined;
    for (let i = 0; i < value.length; i++) validate(value[i], schema.items, `${path}[${i}]`, errs, oldItems?.[i]);
  }
}

/** Property counts, required fields, embedded resources, then each property. */
function validateObject(value: Obj, schema: Schema, path: string, errs: FieldError[], old: unknown): void {
  const name = path;
  const n = schema.maxProperties !== undefined || schema.minProperties !== undefined ? Object.keys(value).length : 0;
  if (schema.maxProperties !== undefined && n > schema.maxProperties) {
    errs.push({
      type: 'FieldValueTooMany',
      field: path,
      value: n,
      hasValue: true,
      detail: `must have at most ${schema.maxProperties} items`,
    });
  }
  if (schema.minProperties !== undefined && n < schema.minProperties)
    errs.push(inv(path, n, `${name} in body should have at least ${schema.minProperties} properties`));
  for (const r of schema.required ?? []) {
    if (value[r] === undefined) errs.push({ type: 'FieldValueRequired', field: joinPath(path, r), detail: '' });
  }
  const embedded = schema['x-kubernetes-embedded-resource'] === true;
  if (embedded && path !== '') {
    if (typeof value.kind !== 'string' || value.kind === '')
      errs.push({ type: 'FieldValueRequired', field: joinPath(path, 'kind'), detail: 'must not be empty' });
    if (typeof value.apiVersion !== 'string' || value.apiVersion === '')
      errs.push({ type: 'FieldValueRequired', field: joinPath(path, 'apiVersion'), detail: 'must not be empty' });
  }
  const oldObj = isObj(old) ? old : undefined;
  for (const k of Object.keys(value)) {
    const v = value[k];
    const sub = schema.properties?.[k];
    if (sub) validate(v, sub, joinPath(path, k), errs, oldObj?.[k]);
    else if (isObj(schema.additionalProperties)) validate(v, schema.additionalProperties, joinPath(path, k), errs, oldObj?.[k]);
  }
}

/** allOf, anyOf, oneOf and not. */
function validateCombinators(value: unknown, schema: Schema, path: string, errs: FieldError[]): void {
  const name = path;
  if (schema.allOf) for (const s of schema.allOf) validateValueOnly(value, s, path, errs);
  if (schema.anyOf && schema.anyOf.length) {
    const ok = schema.anyOf.some((s) => {
      const e: FieldError[] = [];
      validateValueOnly(value, s, path, e);
      return e.length === 0;
    });
    if (!ok)
      errs.push(
        inv(path, value, `${name} in body must be of type ${schema.anyOf.map((s) => s.type ?? 'any').join(',')}: ${goFormat(value)}`),
      );
  }
  if (schema.oneOf && schema.oneOf.length) {
    const count = schema.oneOf.filter((s) => {
      const e: FieldError[] = [];
      validateValueOnly(value, s, path, e);
      return e.length === 0;
    }).length;
    if (count !== 1) errs.push(inv(path, value, `${name} in body must validate one and only one schema (oneOf)`));
  }
  if (schema.not) {
    const e: FieldError[] = [];
    validateValueOnly(value, schema.not, path, e);
    if (e.length === 0) errs.push(inv(path, value, `${name} in body should not validate the given schema`));
  }
}

/** Value validations inside allOf/anyOf/oneOf/not (no pruning/type structure there in a structural schema). */
function validateValueOnly(value: unknown, schema: Schema, path: string, errs: FieldError[]): void {
  if (schema.type && value !== null && !typeMatches(schema.type, value)) {
    const t = jsType(value);
    errs.push({
      type: 'FieldValueTypeInvalid',
      field: path,
      value: t,
      hasValue: true,
      detail: `${path} in body must be of type ${schema.type}: "${t}"`,
    });
    return;
  }
  validate(value, withoutType(schema), path, errs);
}

const untyped = new WeakMap<Schema, Schema>();

/** A combinator's branch without its type (checked apart above); made once per branch, not once per value checked. */
function withoutType(schema: Schema): Schema {
  let s = untyped.get(schema);
  if (!s) {
    s = { ...schema, type: undefined };
    untyped.set(schema, s);
  }
  return s;
}
