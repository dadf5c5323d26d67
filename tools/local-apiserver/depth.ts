// Nesting limits of request bodies and stored objects. kube-apiserver's JSON decoder refuses documents nested
// deeper than its limit with a 400; this server's schema, pruning, CEL, patch and SSA code is recursive, so the
// same refusal happens before any of it runs. Both checks below are iterative: they cannot overflow themselves.
import { badRequest, type ApiError } from './errors.js';

/**
 * Deepest nesting accepted. kube-apiserver's decoder allows 10,000; this server stops at 1,000 so that its
 * recursive code keeps stack headroom (a JSON patch can nest a value under an existing path, so stored objects
 * may reach twice this). No Kubernetes object comes near either limit.
 */
export const MAX_JSON_DEPTH = 1000;

/** The opening character at which `text` (JSON) first nests deeper than `max`, or undefined. Strings are skipped. */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): string | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return text[i];
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}

/**
 * True when `value` nests objects/arrays deeper than `max` (a scalar is depth 0, `{}` is 1). The server's own walk
 * (src/api/depth.ts has the product's): it stands alone and imports nothing from src/.
 */
export function valueTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
    }
  }
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
