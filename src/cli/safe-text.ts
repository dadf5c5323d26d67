// Terminal-safe text. Names, messages and reasons shown by the CLI come from the cluster, and an updater's failure
// message is whatever its author (or a command's stderr) wrote: printed raw, escape sequences in it could recolour,
// hide or rewrite what the operator sees, set the window title or write to the clipboard (OSC 52). Every rendered
// line passes through here. Pure.
/* eslint-disable no-control-regex -- matching control characters is what this module is for */

// ECMA-48 sequences, 7-bit and 8-bit: control strings (OSC, DCS, SOS, PM, APC) up to their terminator (BEL or ST)
// or the end of the text, CSI sequences, and the other two-character escape sequences.
const CONTROL_STRING = /(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[\s\S]*?(?:\x07|\x1b\\|\x9c|$)/g;
const CSI = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?/g;
const ESCAPE = /\x1b[ -/]*[0-~]?/g;
// What is left to neutralise: C0 controls, DEL, C1 controls, and the Unicode line/paragraph separators and
// bidirectional overrides that can reorder or split what is displayed.
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_KEEP_NEWLINE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const visible = (c: string): string => {
  if (c === '\n') return '\\n';
  if (c === '\r') return '\\r';
  if (c === '\t') return ' ';
  const cp = c.codePointAt(0)!;
  return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
};

const stripSequences = (s: string): string => s.replace(CONTROL_STRING, '').replace(CSI, '').replace(ESCAPE, '');

/**
 * One line of terminal-safe text: escape sequences are removed, every other control character (newlines
 * included) is shown escaped (`\n`, `\x07`, `\u202e`), tabs become spaces.
 */
export function safeText(s: string): string {
  return stripSequences(s).replace(UNSAFE, visible);
}

/** Like {@link safeText} but keeps `\n`: for text whose line structure is ours (a rendered frame). */
export function safeLines(s: string): string {
  return stripSequences(s).replace(UNSAFE_KEEP_NEWLINE, visible);
}

/**
 * `JSON.stringify(value, null, 2)` that is also terminal-safe: JSON already escapes C0 controls, this escapes DEL,
 * C1 controls and the Unicode separators/bidi overrides as `\\uXXXX` too. Still valid JSON with the same value.
 */
export function safeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    /[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
