import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { heapCompactionOption } from './heap.js';
import { UsageError } from './verb.js';

// A heap whose survivors are scattered over many pages (one object in 25 kept, the rest dropped), then one full
// collection: what is left of the old space shows whether the collection compacted it.
const FRAGMENT = `
const { applyHeapCompaction } = await import(process.env.HEAP_MODULE);
applyHeapCompaction(process.env.COMPACT === 'on');
const v8 = await import('node:v8');
const keep = [];
let drop = [];
for (let r = 0; r < 40; r++) {
  for (let i = 0; i < 100000; i++) (i % 25 === 0 ? keep : drop).push({ a: i, b: 'x' + i, c: [i, i + 1] });
  drop = [];
}
globalThis.gc();
const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
process.stdout.write(JSON.stringify({ size: old.space_size, used: old.space_used_size, kept: keep.length }));
`;

describe('V8 heap settings of the long-running verbs', function () {
  it('--heap-compaction takes "on" or "off" and rejects anything else as a usage error', function () {
    expect(heapCompactionOption(undefined)).to.equal(undefined);
    expect(heapCompactionOption('on')).to.equal(true);
    expect(heapCompactionOption('off')).to.equal(false);
    for (const bad of ['', 'yes', 'true', 'ON', '1']) expect(() => heapCompactionOption(bad), bad).to.throw(UsageError);
  });

  it('compaction set at run time takes effect: a full collection leaves the old space close to its live data', function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), 'heap-compaction-'));
    try {
      const script = join(dir, 'fragment.mjs');
      writeFileSync(script, FRAGMENT);
      const heapModule = pathToFileURL(fileURLToPath(new URL('./heap.ts', import.meta.url))).href;
      const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
        env: { ...process.env, HEAP_MODULE: heapModule, COMPACT: 'on', NODE_OPTIONS: '' },
        encoding: 'utf8',
      });
      const old = JSON.parse(out) as { size: number; used: number; kept: number };
      expect(old.kept).to.equal(160_000);
      // Without compaction the same heap kept 1.4–5 × its live data in old-space pages (V8 moves objects off only a
      // few fragmented pages per collection).
      expect(old.size / old.used).to.be.at.most(1.15);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
