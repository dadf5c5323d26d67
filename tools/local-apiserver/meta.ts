/** ObjectMeta helpers: validation of names/labels, uid and name generation, timestamps. */
import { randomUUID, randomInt } from 'node:crypto';
import type { FieldError } from './errors.js';

type Obj = Record<string, unknown>;

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** RFC 3339 timestamp with second precision, as metav1.Time marshals. */
export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A fresh uid. */
export function newUid(): string {
  return randomUUID();
}

const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

/** generateName + 5 random characters, as the API server's SimpleNameGenerator does. */
export function generateName(base: string): string {
  const b = base.length > 58 ? base.slice(0, 58) : base;
  let s = '';
  for (let i = 0; i < 5; i++) s += ALPHANUMS[randomInt(ALPHANUMS.length)];
  return b + s;
}

/** Validates metadata.name as a DNS-1123 subdomain (or label for namespaces). */
export function validateName(name: string, label: boolean, field = 'metadata.name'): FieldError[] {
  if (label) {
    if (name.length > 63 || !DNS1123_LABEL.test(name)) {
      return [
        {
          type: 'FieldValueInvalid',
          field,
          value: name,
          hasValue: true,
          detail: `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
        },
      ];
    }
    return [];
  }
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    return [
      {
        type: 'FieldValueInvalid',
        field,
        value: name,
        hasValue: true,
        detail: `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      },
    ];
  }
  return [];
}

function validateQualifiedKey(key: string, field: string): FieldError[] {
  const parts = key.split('/');
  let name = key;
  if (parts.length === 2) {
    const [prefix, n] = parts as [string, string];
    name = n;
    if (!prefix || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) {
      return [
        {
          type: 'FieldValueInvalid',
          field,
          value: key,
          hasValue: true,
          detail:
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        },
      ];
    }
  } else if (parts.length > 2) {
    return [
      {
        type: 'FieldValueInvalid',
        field,
        value: key,
        hasValue: true,
        detail:
          "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      },
    ];
  }
  if (!name || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    return [
      {
        type: 'FieldValueInvalid',
        field,
        value: key,
        hasValue: true,
        detail:
          "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      },
    ];
  }
  return [];
}

/** Validates labels, annotations keys, finalizers and ownerReferences shape. */
export function validateMeta(meta: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const labels = meta.labels;
  if (labels !== undefined && labels !== null) {
    if (typeof labels !== 'object' || Array.isArray(labels))
      errs.push({
        type: 'FieldValueTypeInvalid',
        field: 'metadata.labels',
        value: labels,
        hasValue: true,
        detail: 'must be a map of strings',
      });
    else {
      for (const [k, v] of Object.entries(labels as Obj)) {
        errs.push(...validateQualifiedKey(k, 'metadata.labels'));
        if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
          errs.push({
            type: 'FieldValueInvalid',
            field: 'metadata.labels',
            value: v,
            hasValue: true,
            detail:
              "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
          });
        }
      }
    }
  }
  const ann = meta.annotations;
  if (ann !== undefined && ann !== null) {
    if (typeof ann !== 'object' || Array.isArray(ann))
      errs.push({
        type: 'FieldValueTypeInvalid',
        field: 'metadata.annotations',
        value: ann,
        hasValue: true,
        detail: 'must be a map of strings',
      });
    else {
      let total = 0;
      for (const [k, v] of Object.entries(ann as Obj)) {
        errs.push(...validateQualifiedKey(k.toLowerCase(), 'metadata.annotations'));
        if (typeof v !== 'string')
          errs.push({ type: 'FieldValueTypeInvalid', field: `metadata.annotations`, value: v, hasValue: true, detail: 'must be a string' });
        else total += k.length + v.length;
      }
      if (total > 262144)
        errs.push({ type: 'FieldValueTooLong', field: 'metadata.annotations', detail: 'may not be more than 262144 bytes' });
    }
  }
  const fin = meta.finalizers;
  if (fin !== undefined && fin !== null) {
    if (!Array.isArray(fin))
      errs.push({
        type: 'FieldValueTypeInvalid',
        field: 'metadata.finalizers',
        value: fin,
        hasValue: true,
        detail: 'must be a list of strings',
      });
    else
      fin.forEach((f, i) => {
        if (typeof f !== 'string')
          errs.push({
            type: 'FieldValueTypeInvalid',
            field: `metadata.finalizers[${i}]`,
            value: f,
            hasValue: true,
            detail: 'must be a string',
          });
        else errs.push(...validateQualifiedKey(f, `metadata.finalizers[${i}]`));
      });
  }
  const owners = meta.ownerReferences;
  if (owners !== undefined && owners !== null) {
    if (!Array.isArray(owners))
      errs.push({
        type: 'FieldValueTypeInvalid',
        field: 'metadata.ownerReferences',
        value: owners,
        hasValue: true,
        detail: 'must be a list',
      });
    else {
      let controllers = 0;
      owners.forEach((o, i) => {
        const r = (o ?? {}) as Obj;
        const f = `metadata.ownerReferences[${i}]`;
        if (!r.apiVersion)
          errs.push({
            type: 'FieldValueInvalid',
            field: `${f}.apiVersion`,
            value: r.apiVersion ?? '',
            hasValue: true,
            detail: 'version must not be empty',
          });
        if (!r.kind)
          errs.push({
            type: 'FieldValueInvalid',
            field: `${f}.kind`,
            value: r.kind ?? '',
            hasValue: true,
            detail: 'kind must not be empty',
          });
        if (!r.name)
          errs.push({
            type: 'FieldValueInvalid',
            field: `${f}.name`,
            value: r.name ?? '',
            hasValue: true,
            detail: 'name must not be empty',
          });
        if (!r.uid)
          errs.push({ type: 'FieldValueInvalid', field: `${f}.uid`, value: r.uid ?? '', hasValue: true, detail: 'uid must not be empty' });
        if (r.controller === true) controllers++;
      });
      if (controllers > 1)
        errs.push({
          type: 'FieldValueInvalid',
          field: 'metadata.ownerReferences',
          value: owners,
          hasValue: true,
          detail: 'Only one reference can have Controller set to true',
        });
    }
  }
  return errs;
}
