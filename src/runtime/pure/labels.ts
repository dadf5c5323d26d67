// Kubernetes label selectors: parse the string syntax (`a=b,c!=d,e in (f,g),!h`) and match label sets. Pure.

/** Operators of a parsed label requirement. */
export type LabelOperator = '=' | '!=' | 'in' | 'notin' | 'exists' | '!exists' | 'gt' | 'lt';

/** One requirement of a selector; `values` is empty for exists/!exists. */
export interface LabelRequirement {
  key: string;
  op: LabelOperator;
  values: string[];
}

/** A metav1.LabelSelector (matchLabels + matchExpressions). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** Thrown for a selector string that is not valid k8s syntax. */
export class LabelSelectorError extends Error {
  constructor(selector: string, why: string) {
    super(`parse label selector ${JSON.stringify(selector)}: ${why}`);
    this.name = 'LabelSelectorError';
  }
}

const KEY_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Splits on commas that are not inside parentheses. */
function splitTopLevel(s: string, selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (depth < 0) throw new LabelSelectorError(selector, 'unbalanced parenthesis');
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (depth !== 0) throw new LabelSelectorError(selector, 'unbalanced parenthesis');
  parts.push(cur);
  return parts;
}

function checkKey(key: string, selector: string): string {
  if (!KEY_RE.test(key) || key.length > 317) throw new LabelSelectorError(selector, `invalid label key ${JSON.stringify(key)}`);
  return key;
}

function checkValue(v: string, selector: string): string {
  if (!VALUE_RE.test(v) || v.length > 63) throw new LabelSelectorError(selector, `invalid label value ${JSON.stringify(v)}`);
  return v;
}

/** Parses a label selector string into requirements (all must hold). The empty string selects everything. */
export function parseSelector(selector: string): LabelRequirement[] {
  const trimmed = selector.trim();
  if (trimmed === '') return [];
  return splitTopLevel(trimmed, selector).map((raw) => parseRequirement(raw.trim(), selector));
}

function parseRequirement(r: string, selector: string): LabelRequirement {
  if (r === '') throw new LabelSelectorError(selector, 'empty requirement');
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(r);
  if (set) {
    if (set[3]!.trim() === '') throw new LabelSelectorError(selector, `the value set of ${set[2]} cannot be empty`);
    const values = set[3]!.split(',').map((v) => checkValue(v.trim(), selector));
    return { key: checkKey(set[1]!, selector), op: set[2] as 'in' | 'notin', values };
  }
  const cmp = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$/.exec(r);
  if (cmp) {
    const key = checkKey(cmp[1]!, selector);
    const value = cmp[3]!.trim();
    const op = cmp[2]!;
    if (op === '>' || op === '<') {
      if (!/^-?\d+$/.test(value)) throw new LabelSelectorError(selector, `${op} needs an integer, got ${JSON.stringify(value)}`);
      return { key, op: op === '>' ? 'gt' : 'lt', values: [value] };
    }
    return { key, op: op === '!=' ? '!=' : '=', values: [checkValue(value, selector)] };
  }
  if (r.startsWith('!')) return { key: checkKey(r.slice(1).trim(), selector), op: '!exists', values: [] };
  return { key: checkKey(r, selector), op: 'exists', values: [] };
}

/** True when `labels` satisfy one requirement. */
export function matchesRequirement(req: LabelRequirement, labels: Record<string, string> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, req.key);
  const v = has ? labels[req.key] : undefined;
  switch (req.op) {
    case '=':
    case 'in':
      return has && req.values.includes(v!);
    case '!=':
    case 'notin':
      return !has || !req.values.includes(v!);
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(v!)) return false;
      const n = Number(v);
      const bound = Number(req.values[0]);
      return req.op === 'gt' ? n > bound : n < bound;
    }
  }
}

/** True when `labels` satisfy every requirement (a parsed selector). */
export function matchesRequirements(reqs: LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  return reqs.every((r) => matchesRequirement(r, labels));
}

/** True when `labels` match the selector string. */
export function matchesSelector(selector: string, labels: Record<string, string> | undefined): boolean {
  return matchesRequirements(parseSelector(selector), labels);
}

/** Renders a metav1.LabelSelector as a selector string (for list/watch calls). */
export function formatLabelSelector(sel: LabelSelector): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {}).sort(([a], [b]) => a.localeCompare(b))) parts.push(`${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    switch (e.operator) {
      case 'In':
        parts.push(`${e.key} in (${[...(e.values ?? [])].sort().join(',')})`);
        break;
      case 'NotIn':
        parts.push(`${e.key} notin (${[...(e.values ?? [])].sort().join(',')})`);
        break;
      case 'Exists':
        parts.push(e.key);
        break;
      case 'DoesNotExist':
        parts.push(`!${e.key}`);
        break;
    }
  }
  return parts.join(',');
}

/** Parsed selectors by their JSON form: every Machine event and every reconcile matches many machines against few selectors. */
const parsedSelectors = new Map<string, LabelRequirement[] | null>();
/** The same by selector object, so that matching a machine does not serialize the selector each time. */
const requirementsBySelector = new WeakMap<object, LabelRequirement[] | null>();

/** The selector's requirements, or null when it does not parse (it then matches nothing). */
function requirementsOfSelector(sel: LabelSelector | undefined): LabelRequirement[] | null {
  if (sel) {
    const known = requirementsBySelector.get(sel);
    if (known !== undefined) return known;
  }
  const key = JSON.stringify(sel ?? {});
  let reqs = parsedSelectors.get(key);
  if (reqs === undefined) {
    try {
      reqs = parseSelector(formatLabelSelector(sel ?? {}));
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      reqs = null;
    }
    if (parsedSelectors.size > 1000) parsedSelectors.clear();
    parsedSelectors.set(key, reqs);
  }
  // A cached object is frozen: its selector cannot change under the same object (a mutable one is parsed every time).
  if (sel && Object.isFrozen(sel)) requirementsBySelector.set(sel, reqs);
  return reqs;
}

/**
 * True when a metav1.LabelSelector matches `labels` (an absent or empty selector matches everything); a selector that
 * does not parse matches nothing. Parsed selectors are remembered (by frozen object and by JSON form).
 */
export function labelSelectorMatches(
  sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  const reqs = requirementsOfSelector(sel as LabelSelector | undefined);
  return reqs !== null && matchesRequirements(reqs, labels);
}
