import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { RULES, taskName } from '../../src/contract/index.js';
import { machineUpdateName } from '../../src/plan-controller/decide/names.js';

const doc = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../docs/contract.md'), 'utf8');

/** Rows of the first table whose header starts with "| Rule |". */
function rulesTable(md: string): string[][] {
  const lines = md.split('\n');
  const start = lines.findIndex((l) => /^\|\s*Rule\s*\|/.test(l));
  expect(start, 'docs/contract.md has a rules table').to.be.greaterThan(-1);
  const rows: string[][] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.startsWith('|')) break;
    rows.push(
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return rows;
}

describe('docs/contract.md', () => {
  it("has a rules table equal to the code's rule list", () => {
    const rows = rulesTable(doc);
    const expected = RULES.map((r) => [r.id, r.title, r.mandatory ? 'Yes' : 'No', r.who, r.note]);
    expect(rows).to.deep.equal(expected);
  });

  it('has a section for every rule, titled as in the code', () => {
    for (const r of RULES) expect(doc).to.include(`### ${r.id} — ${r.title}`);
  });

  it('numbers the normal, abort, failure, restart and deletion workflows', () => {
    for (const w of ['Normal update', 'Abort', 'Failure', 'Controller restart', 'Deletion']) {
      const at = doc.indexOf(`### ${w}\n`);
      expect(at, `workflow ${w}`).to.be.greaterThan(-1);
      expect(doc.slice(at, at + 400)).to.match(/\n1\. /);
    }
  });

  it('says to rely on nothing that is not a rule', () => {
    expect(doc).to.match(/Rely on nothing that is not a rule here/i);
  });

  it('shows the task and MachineUpdate names the platform gives (C9: with their hash)', () => {
    const task = taskName('cluster1-v1-30-1', 'cluster1-md-0-x7k2p', 'os-updater');
    expect(task).to.match(/^cluster1-md-0-x7k2p\.os-updater\.[0-9a-f]{8}$/);
    expect(doc).to.include(`  name: ${task} `);
    expect(doc).to.include(`kind: MachineUpdate, name: ${machineUpdateName('cluster1-v1-30-1', 'cluster1-md-0-x7k2p')},`);
    // No example shows a task name without its hash.
    expect(doc).to.not.match(/name: cluster1-md-0-x7k2p\.os-updater\s/);
  });
});
