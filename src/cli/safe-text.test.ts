/* eslint-disable no-control-regex -- the cases are control characters */
import { expect } from 'chai';
import { safeJson, safeLines, safeText } from './safe-text.js';

describe('cli safe text', () => {
  const table: Array<{ name: string; input: string; line: string; lines?: string }> = [
    { name: 'plain text is unchanged', input: 'updater os-image failed: disk full', line: 'updater os-image failed: disk full' },
    { name: 'unicode text is unchanged', input: 'naïve — ✔ 更新', line: 'naïve — ✔ 更新' },
    { name: 'SGR colours are removed', input: '\x1b[31mred\x1b[0m text', line: 'red text' },
    { name: 'cursor movement and erase are removed', input: 'a\x1b[2K\x1b[1A\x1b[10;20Hb\x1b[?25l', line: 'ab' },
    { name: 'OSC title with BEL is removed', input: 'x\x1b]0;pwned\x07y', line: 'xy' },
    { name: 'OSC 52 clipboard with ST is removed', input: 'x\x1b]52;c;ZWNobyBoaQ==\x1b\\y', line: 'xy' },
    { name: 'OSC 8 hyperlink keeps its text', input: '\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\', line: 'click' },
    { name: 'an unterminated OSC swallows the rest', input: 'ok\x1b]0;never ends', line: 'ok' },
    { name: 'DCS string is removed', input: 'a\x1bPq#0;2;0;0;0\x1b\\b', line: 'ab' },
    { name: '8-bit CSI and OSC are removed', input: 'a\x9b31mb\x9d0;t\x07c', line: 'abc' },
    { name: 'charset and keypad escapes are removed', input: 'a\x1b(0b\x1b=c\x1bc', line: 'abc' },
    { name: 'a lone ESC at the end is removed', input: 'abc\x1b', line: 'abc' },
    { name: 'CR cannot overwrite the line', input: 'updated\rfailed', line: 'updated\\rfailed' },
    {
      name: 'newlines cannot forge rows in one cell',
      input: 'a\nMachine/x  updated',
      line: 'a\\nMachine/x  updated',
      lines: 'a\nMachine/x  updated',
    },
    { name: 'BEL, backspace, NUL and DEL are shown escaped', input: 'a\x07b\x08c\x00d\x7f', line: 'a\\x07b\\x08c\\x00d\\x7f' },
    { name: 'C1 controls are shown escaped', input: 'a\x85b', line: 'a\\x85b' },
    { name: 'bidi overrides are shown escaped', input: 'abc\u202Efed', line: 'abc\\u202efed' },
    { name: 'tabs become spaces', input: 'a\tb', line: 'a b' },
  ];
  for (const c of table) {
    it(c.name, () => {
      expect(safeText(c.input)).to.equal(c.line);
      expect(safeLines(c.input)).to.equal(c.lines ?? c.line);
      // Whatever the input, no ESC and no C1 byte is left.
      expect(safeText(c.input)).to.not.match(/[\x1b\x80-\x9f]/);
    });
  }

  it('leaves no control character at all, for every code point below 0xa0', () => {
    const all = Array.from({ length: 0xa0 }, (_, i) => String.fromCharCode(i)).join('');
    expect(safeText(all)).to.not.match(/[\x00-\x1f\x7f-\x9f]/);
    expect(safeLines(all)).to.not.match(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
  });

  it('safeJson escapes every control character and stays the same JSON value', () => {
    const v = { message: 'a\x1b[31mb\x9b2Jc\x7f\u202e\n', n: 1 };
    const out = safeJson(v);
    expect(out).to.not.match(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
    expect(JSON.parse(out)).to.deep.equal(v);
  });
});
