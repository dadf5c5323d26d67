// No import cycles in src/ and tools/: the import graph (every relative import, re-export and dynamic import(), read with the
// TypeScript parser) must be acyclic. A cycle means two modules are one module in disguise, and with ES modules it can
// leave a binding undefined at load time depending on which side is imported first. `import type` / `export type`
// declarations are erased from the build (verbatimModuleSyntax), load nothing, and are not edges.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every non-test .ts file under `dir`, as paths relative to the repository root. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** The file a relative specifier names (`./x.js` is `./x.ts`, a folder is its index.ts); undefined outside src/ and tools/. */
function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.posix.join(path.posix.dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, `${base}/index.ts`];
  return candidates.find((c) => (c.startsWith('src/') || c.startsWith('tools/')) && c.endsWith('.ts') && existsSync(path.join(root, c)));
}

/** The specifiers `file` loads at run time: static imports and re-exports that are not type-only, and import() calls. */
function runtimeSpecifiers(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.importClause?.isTypeOnly) specs.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) specs.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) specs.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return specs;
}

/** The import graph of src/ and tools/: file → the files it loads at run time. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...sources('src'), ...sources('tools')]) {
    const deps = runtimeSpecifiers(file, readFileSync(path.join(root, file), 'utf8'))
      .map((spec) => resolveImport(file, spec))
      .filter((d): d is string => d !== undefined);
    graph.set(file, [...new Set(deps)]);
  }
  return graph;
}

/** Strongly connected components of more than one file (or a file importing itself): each holds a cycle. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

describe('architecture: no import cycles in src/ and tools/', function () {
  this.timeout(60_000);

  it('the graph is read (sanity: a controller imports the runtime and the API)', () => {
    const graph = importGraph();
    expect(graph.size).to.be.greaterThan(50);
    expect(graph.get('src/plan-controller/decide/targets.ts')).to.include('src/api/index.ts');
    expect(graph.get('src/plan-controller/decide.ts')).to.include('src/plan-controller/decide/targets.ts');
  });

  it('finds a planted cycle (control)', () => {
    const found = cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
        ['d', ['a']],
      ]),
    );
    expect(found).to.deep.equal([['a', 'b', 'c']]);
  });

  it('type-only imports are not edges; import() calls are (control)', () => {
    const specs = runtimeSpecifiers(
      'x.ts',
      "import type { A } from './a.js';\nexport type { B } from './b.js';\nimport { type C } from './c.js';\nconst d = await import('./d.js');\nexport * from './e.js';",
    );
    expect(specs).to.deep.equal(['./c.js', './d.js', './e.js']);
  });

  it('has no cycle', () => {
    const found = cycles(importGraph());
    expect(
      found.map((c) => c.join(' ↔ ')),
      'import cycles (each line: the files of one cycle)',
    ).to.deep.equal([]);
  });
});
