// Every "docs/design.md §N" cited in the code, the CRDs or the docs names a section docs/design.md has, so a newcomer
// following a reference always lands somewhere (the references used to point at a document outside the repository).
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function files(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(rel);
    return /\.(ts|mjs|js|md|ya?ml)$/.test(e.name) ? [rel] : [];
  });
}

describe('architecture: docs/design.md references resolve', function () {
  it('every cited section exists', () => {
    const headings = new Set(
      [...readFileSync(path.join(root, 'docs/design.md'), 'utf8').matchAll(/^#{2,3} (\d+(?:\.\d+)?)\. |^#{2,3} (\d+(?:\.\d+)?) /gm)].map(
        (m) => m[1] ?? m[2],
      ),
    );
    expect(headings.size).to.be.greaterThan(10);
    const unresolved: string[] = [];
    let cited = 0;
    for (const f of ['src', 'tools', 'test', 'cdk8s', 'bench', 'scripts', 'docs', 'crds'].flatMap(files)) {
      for (const m of readFileSync(path.join(root, f), 'utf8').matchAll(/docs\/design\.md §(\d+(?:\.\d+)?)/g)) {
        cited++;
        if (!headings.has(m[1]!)) unresolved.push(`${f}: §${m[1]}`);
      }
    }
    expect(cited).to.be.greaterThan(0);
    expect(unresolved).to.deep.equal([]);
  });

  it('nothing cites the old DESIGN document', () => {
    const old = ['src', 'tools', 'test', 'cdk8s', 'bench', 'scripts', 'docs', 'crds']
      .flatMap(files)
      .filter((f) => /\bDESIGN(\.md)? §/.test(readFileSync(path.join(root, f), 'utf8')));
    expect(old).to.deep.equal([]);
  });
});
