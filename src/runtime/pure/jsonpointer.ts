// RFC 6901 JSON pointers: parse, encode, read and write. Pure.

/** Thrown for a string that is not a JSON pointer or a write that cannot be done. */
export class JsonPointerError extends Error {
  constructor(pointer: string, why: string) {
    super(`json pointer ${JSON.stringify(pointer)}: ${why}`);
    this.name = 'JsonPointerError';
  }
}

/** True when `s` is a syntactically valid JSON pointer ("" or "/..." with only ~0 / ~1 escapes). */
export function isPointer(s: string): boolean {
  return s === '' || (s.startsWith('/') && !/~[^01]|~$/.test(s));
}

/** Splits a pointer into unescaped reference tokens (`~1` → `/`, then `~0` → `~`). */
export function parsePointer(pointer: string): string[] {
  if (!isPointer(pointer)) throw new JsonPointerError(pointer, 'must be empty or start with "/" and use only ~0 and ~1 escapes');
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Builds a pointer from raw tokens (escaping `~` and `/`). */
export function encodePointer(tokens: readonly string[]): string {
  return tokens.map((t) => '/' + t.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

const isIndex = (t: string): boolean => /^(0|[1-9]\d*)$/.test(t);

/** The value at `pointer` in `doc`, or undefined when any step is missing. */
export function getPointer(doc: unknown, pointer: string): unknown {
  let cur: unknown = doc;
  for (const t of parsePointer(pointer)) {
    if (Array.isArray(cur)) {
      if (!isIndex(t)) return undefined;
      cur = cur[Number(t)];
    } else if (cur !== null && typeof cur === 'object') {
      cur = Object.prototype.hasOwnProperty.call(cur, t) ? (cur as Record<string, unknown>)[t] : undefined;
    } else return undefined;
  }
  return cur;
}

/**
 * Sets `value` at `pointer` inside `doc` (mutating it), creating missing intermediate objects.
 * Array steps must be an existing index or `-` (append). The root pointer "" cannot be set.
 */
export function setPointer(doc: unknown, pointer: string, value: unknown): void {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new JsonPointerError(pointer, 'cannot replace the whole document');
  let cur: unknown = doc;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const last = i === tokens.length - 1;
    if (Array.isArray(cur)) {
      if (t === '-' && last) {
        cur.push(value);
        return;
      }
      if (!isIndex(t) || Number(t) >= cur.length) throw new JsonPointerError(pointer, `array index ${JSON.stringify(t)} out of range`);
      if (last) {
        cur[Number(t)] = value;
        return;
      }
      cur = cur[Number(t)];
    } else if (cur !== null && typeof cur === 'object') {
      const o = cur as Record<string, unknown>;
      if (last) {
        o[t] = value;
        return;
      }
      if (o[t] === undefined || o[t] === null) o[t] = {};
      cur = o[t];
    } else {
      throw new JsonPointerError(
        pointer,
        `cannot step into a ${cur === null ? 'null' : typeof cur} at ${encodePointer(tokens.slice(0, i))}`,
      );
    }
  }
}
