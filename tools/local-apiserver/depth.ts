// Nesting limits of request bodies and stored objects. kube-apiserver's JSON decoder refuses documents nested
// deeper than its limit with a 400; this server's schema, pruning, CEL, patch and SSA code is recursive, so the
// same refusal happens before any of it runs. Neither check below can overflow the stack itself: the text scan is a
// loop, the walk of a value stops recursing at the limit.
import { badRequest, type ApiError } from './errors.js';

/**
 * Deepest nesting accepted. kube-apiserver's decoder allows 10,000; this server stops at 1,000 so that its
 * recursive code keeps stack headroom (a JSON patch can nest a value under an existing path, so stored objects
 * may reach twice this). No Kubernetes object comes near either limit.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * The opening character at which `text` (JSON) first nests deeper than `max`, or undefined. Strings are skipped, each
 * in one jump to its closing quote (indexOf runs natively): most of a Kubernetes object's text is its keys and string
 * values, which a character-by-character loop made the costliest part of decoding a request body.
 */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): string | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = closingQuote(text, i);
      // An unterminated string: nothing after it nests (the parser refuses the text).
      if (end < 0) return undefined;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return text[i];
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}

/** The index of the quote that ends the string opened at `open`, or -1: a quote after an odd run of backslashes is escaped. */
function closingQuote(text: string, open: number): number {
  let q = open;
  for (;;) {
    q = text.indexOf('"', q + 1);
    if (q < 0) return -1;
    let b = q - 1;
    while (text.charCodeAt(b) === 0x5c) b--;
    if ((q - 1 - b) % 2 === 0) return q;
  }
}

/**
 * True when `value` nests objects/arrays deeper than `max` (a scalar is depth 0, `{}` is 1). The server's own walk
 * (src/api/depth.ts has the product's): it stands alone and imports nothing from src/. It recurses, but never more
 * than `max` + 1 frames deep (it answers as soon as the limit is passed), and allocates nothing: the explicit stack
 * of [value, depth] pairs it had cost a pair per object and array of every request body and write.
 */
export function valueTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  return deeperThan(value, max);
}

function deeperThan(v: unknown, budget: number): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (budget <= 0) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (deeperThan(v[i], budget - 1)) return true;
    return false;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) if (deeperThan(o[k], budget - 1)) return true;
  return false;
}

/** 400 BadRequest for a document nested too deeply, worded like Go's JSON decoder ("exceeded max depth"). */
export function tooDeep(context: string, char = '{'): ApiError {
  return badRequest(`${context}: invalid character '${char}' exceeded max depth`);
}

/** 400 BadRequest for an object that a patch (or an internal write) would nest too deeply. */
export function objectTooDeep(max: number = MAX_JSON_DEPTH): ApiError {
  return badRequest(`the object is nested deeper than ${max} levels: exceeded max depth`);
}
