import { expect } from 'chai';
import { CONDITION_MESSAGE_MAX, boundMessage, byteLength, summarizeList } from './message.js';

describe('bounded messages', () => {
  describe('boundMessage', () => {
    const cases: Array<{ name: string; input: string; max: number; want?: string }> = [
      { name: 'empty', input: '', max: 10, want: '' },
      { name: 'fits exactly', input: 'x'.repeat(64), max: 64, want: 'x'.repeat(64) },
      { name: 'long ASCII', input: 'x'.repeat(10_000), max: 100 },
      { name: 'multi-byte code points', input: 'é'.repeat(5_000), max: 101 },
      { name: 'astral code points (surrogate pairs)', input: '😀'.repeat(5_000), max: 103 },
      { name: 'budget smaller than the suffix', input: 'abcdefghijklmnopqrstuvwxyz'.repeat(10), max: 5 },
    ];
    for (const c of cases) {
      it(`${c.name}: fits the budget${c.want !== undefined ? ' and is unchanged' : ', says it was cut'}`, () => {
        const out = boundMessage(c.input, c.max);
        expect(byteLength(out)).to.be.at.most(c.max);
        if (c.want !== undefined) expect(out).to.equal(c.want);
        else if (c.max > 30) expect(out).to.match(/\.\.\. \(\d+ more bytes\)$/);
        // Never a lone surrogate: the result round-trips through UTF-8.
        expect(new TextDecoder().decode(new TextEncoder().encode(out))).to.equal(out);
      });
    }

    it('says how many bytes were cut', () => {
      const out = boundMessage('a'.repeat(1000), 100);
      const kept = out.slice(0, out.indexOf('...')).length;
      expect(out).to.equal(`${'a'.repeat(kept)}... (${1000 - kept} more bytes)`);
    });

    it('defaults to a budget under the condition limit', () => {
      expect(byteLength(boundMessage('x'.repeat(100_000)))).to.be.below(CONDITION_MESSAGE_MAX);
    });
  });

  describe('summarizeList', () => {
    it('joins everything when it fits', () => {
      expect(summarizeList(['a', 'b', 'c'])).to.equal('a; b; c');
      expect(summarizeList([])).to.equal('');
      expect(summarizeList(['a', 'b'], { separator: ', ' })).to.equal('a, b');
    });

    it('names the first items and counts the rest', () => {
      const items = Array.from({ length: 200 }, (_, i) => `MachineDeployment md-${i}-${'n'.repeat(200)} not found`);
      const out = summarizeList(items, { maxBytes: 2048 });
      expect(byteLength(out)).to.be.at.most(2048);
      expect(out.startsWith(items[0]!)).to.equal(true);
      const m = /; \.\.\. and (\d+) more$/.exec(out);
      expect(m, out).to.not.equal(null);
      const named = out.split('; ').filter((p) => p.startsWith('MachineDeployment')).length;
      expect(named + Number(m![1])).to.equal(200);
    });

    it('cuts long items so that several are named', () => {
      const items = Array.from({ length: 20 }, (_, i) => `machine-${i}: ${'e'.repeat(2048)}`);
      const out = summarizeList(items, { maxBytes: 4096, itemMaxBytes: 256 });
      expect(byteLength(out)).to.be.at.most(4096);
      expect(out).to.contain('machine-0: ').and.to.contain('machine-5: ');
      expect(out).to.match(/more bytes\)/);
    });

    it('names the first item even when it alone is over the budget', () => {
      const out = summarizeList(['x'.repeat(5000), 'y'], { maxBytes: 200, itemMaxBytes: 5000 });
      expect(byteLength(out)).to.be.at.most(200);
      expect(out)
        .to.match(/^x+/)
        .and.to.match(/and 1 more$/);
    });

    it('stays in budget with thousands of items', () => {
      const items = Array.from({ length: 5000 }, (_, i) => `m-${i}`);
      const out = summarizeList(items, { maxBytes: 300 });
      expect(byteLength(out)).to.be.at.most(300);
      expect(out).to.match(/^m-0; m-1; .*\.\.\. and \d+ more$/);
    });
  });
});
