// Runs Argo CD health checks (Lua, as argocd-cm resource.customizations.health.* holds them) with a REAL Lua 5.1
// interpreter (Debian's `lua5.1`; Argo CD's gopher-lua implements Lua 5.1). The object is passed as a Lua table literal
// generated from its JSON, bound to the global `obj` as Argo CD does; no Lua JSON library is needed.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The interpreter: LUA_BIN, else `lua5.1` on PATH. */
export const luaBinary = (): string => process.env['LUA_BIN'] ?? 'lua5.1';

/** Whether the interpreter runs here (the tests that need it skip, saying so, without it). */
export function luaAvailable(): boolean {
  const r = spawnSync(luaBinary(), ['-v'], { encoding: 'utf8' });
  return !r.error && r.status === 0;
}

/** A Lua string literal: printable ASCII as is, every other byte (UTF-8 included) as a decimal escape. */
function luaString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'utf8')) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${b}`;
  }
  return `${out}"`;
}

/** A JSON value as a Lua literal: objects become tables keyed by string, arrays 1-based sequences, null is left out. */
export function toLua(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (typeof v === 'string') return luaString(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`not a JSON number: ${v}`);
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `{${v.map(toLua).join(', ')}}`;
  const fields = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== null && x !== undefined)
    .map(([k, x]) => `[${luaString(k)}] = ${toLua(x)}`);
  return `{${fields.join(', ')}}`;
}

/** Argo CD's verdict for one object. */
export interface ArgoHealth {
  status: string;
  message: string;
}

/**
 * Runs the health check in `luaFile` on `obj` (its JSON round trip, as the API server serves it) and returns the
 * `{status, message}` table it returns. The script's body runs inside a function, as Argo CD runs it.
 */
export function runArgoHealth(luaFile: string, obj: unknown): ArgoHealth {
  const script = [
    `obj = ${toLua(JSON.parse(JSON.stringify(obj)))}`,
    'local function check()',
    readFileSync(luaFile, 'utf8'),
    'end',
    'local hs = check()',
    'io.write(tostring(hs.status), "\\n", tostring(hs.message or ""))',
  ].join('\n');
  const r = spawnSync(luaBinary(), ['-'], { input: script, encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${luaBinary()} failed on ${luaFile}: ${r.stderr}`);
  const nl = r.stdout.indexOf('\n');
  return { status: r.stdout.slice(0, nl), message: r.stdout.slice(nl + 1) };
}
