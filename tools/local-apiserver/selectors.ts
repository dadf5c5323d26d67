/** Label and field selector parsing and matching (the `labelSelector`/`fieldSelector` query syntax). */
import { badRequest } from './errors.js';

type Labels = Record<string, string> | undefined;

/** A compiled label selector; `matches` is cheap enough to run per watcher per event. */
export interface LabelSelector {
  empty: boolean;
  matches(labels: Labels): boolean;
  /** One requirement the matching objects' labels must meet exactly (`k=v`, `k==v`, `k in (v)`), if any: for an index. */
  equal?: readonly [key: string, value: string];
}

interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=';
  values: string[];
}

const EVERYTHING: LabelSelector = { empty: true, matches: () => true };

/** Splits on commas that are not inside parentheses. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

const KEY_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, raw: string): void {
  if (!KEY_RE.test(key) || key.length > 317) throw badRequest(`unable to parse requirement: invalid label key "${key}" in "${raw}"`);
}
function checkValue(v: string, raw: string): void {
  if (!VALUE_RE.test(v) || v.length > 63) throw badRequest(`unable to parse requirement: invalid label value: "${v}" in "${raw}"`);
}

function parseRequirement(raw: string): Requirement {
  const s = raw.trim();
  let m = /^!\s*(\S+)$/.exec(s);
  if (m) {
    checkKey(m[1]!, s);
    return { key: m[1]!, op: '!exists', values: [] };
  }
  m = /^(\S+?)\s+(in|notin)\s*\((.*)\)$/.exec(s);
  if (m) {
    const values = m[3]!.split(',').map((v) => v.trim());
    checkKey(m[1]!, s);
    values.forEach((v) => checkValue(v, s));
    return { key: m[1]!, op: m[2] as 'in' | 'notin', values };
  }
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(s);
  if (m) {
    checkKey(m[1]!, s);
    checkValue(m[3]!, s);
    return { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', values: [m[3]!] };
  }
  if (/^\S+$/.test(s)) {
    checkKey(s, s);
    return { key: s, op: 'exists', values: [] };
  }
  throw badRequest(`unable to parse requirement: found '${s}', expected: in, notin, =, ==, !=, gt, lt`);
}

function reqMatches(r: Requirement, labels: Labels): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = has ? labels![r.key] : undefined;
  switch (r.op) {
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case '=':
      return has && v === r.values[0];
    case '!=':
      return !has || v !== r.values[0];
    case 'in':
      return has && r.values.includes(v!);
    case 'notin':
      return !has || !r.values.includes(v!);
  }
}

/** Parses a `labelSelector` query value; throws 400 BadRequest on syntax errors. */
export function parseLabelSelector(s: string | null | undefined): LabelSelector {
  if (!s || !s.trim()) return EVERYTHING;
  const reqs = splitTop(s)
    .filter((p) => p.trim() !== '')
    .map(parseRequirement);
  const eq = reqs.find((r) => r.op === '=' || (r.op === 'in' && r.values.length === 1));
  return {
    empty: reqs.length === 0,
    matches: (labels) => reqs.every((r) => reqMatches(r, labels)),
    ...(eq ? { equal: [eq.key, eq.values[0]!] as const } : {}),
  };
}

/** A compiled field selector over a small set of supported fields. */
export interface FieldSelector {
  empty: boolean;
  matches(obj: { metadata?: { name?: string; namespace?: string } }): boolean;
  exactName?: string;
}

/** Parses a `fieldSelector` (metadata.name, metadata.namespace; =, ==, !=). */
export function parseFieldSelector(
  s: string | null | undefined,
  extraFields: Record<string, (o: Record<string, unknown>) => string | undefined> = {},
): FieldSelector {
  if (!s || !s.trim()) return { empty: true, matches: () => true };
  const tests: Array<(o: Record<string, unknown>) => boolean> = [];
  let exactName: string | undefined;
  for (const part of s.split(',')) {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const [, field, op, value] = m as unknown as [string, string, string, string];
    let get: ((o: Record<string, unknown>) => string | undefined) | undefined;
    if (field === 'metadata.name') get = (o) => (o.metadata as { name?: string } | undefined)?.name;
    else if (field === 'metadata.namespace') get = (o) => (o.metadata as { namespace?: string } | undefined)?.namespace ?? '';
    else get = extraFields[field];
    if (!get) throw badRequest(`field label not supported: ${field}`);
    const g = get;
    if (op === '!=') tests.push((o) => (g(o) ?? '') !== value);
    else {
      tests.push((o) => (g(o) ?? '') === value);
      if (field === 'metadata.name') exactName = value;
    }
  }
  return {
    empty: false,
    matches: (o) => tests.every((t) => t(o as Record<string, unknown>)),
    ...(exactName !== undefined ? { exactName } : {}),
  };
}

type Obj = Record<string, unknown>;

/** A getter of a dotted field path (`involvedObject.name`), as a field selector reads it. */
function dotted(path: string): (o: Obj) => string | undefined {
  const parts = path.split('.');
  return (o) => {
    let cur: unknown = o;
    for (const p of parts) {
      if (typeof cur !== 'object' || cur === null) return undefined;
      cur = (cur as Obj)[p];
    }
    return cur === undefined || cur === null ? undefined : String(cur);
  };
}

/** Extra field selectors kube-apiserver supports per resource (beyond metadata.name/namespace). */
export const FIELD_SELECTORS: Record<string, Record<string, (o: Obj) => string | undefined>> = {
  '/events': Object.fromEntries(
    [
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
      'source',
      'type',
    ].map((f) => [f, f === 'source' ? dotted('source.component') : dotted(f)]),
  ),
  'events.k8s.io/events': Object.fromEntries(
    [
      'regarding.kind',
      'regarding.namespace',
      'regarding.name',
      'regarding.uid',
      'regarding.apiVersion',
      'regarding.resourceVersion',
      'regarding.fieldPath',
      'reason',
      'reportingController',
      'type',
    ].map((f) => [f, dotted(f)]),
  ),
  '/secrets': { type: dotted('type') },
  '/namespaces': { 'status.phase': dotted('status.phase') },
  '/nodes': { 'spec.unschedulable': (o) => String(Boolean((o.spec as Obj | undefined)?.unschedulable)) },
  'batch/jobs': { 'status.successful': (o) => String((o.status as Obj | undefined)?.succeeded ?? 0) },
};
