// The development tools' place in the layering (docs/adr/0004-layering.md): the embedded API server
// (tools/local-apiserver) stands alone and imports nothing from src/; the CAPI simulator (tools/capi-sim) imports only
// the API types (src/api) and the pure runtime helpers (src/runtime/pure), plus the one named exception below. Read
// from the TypeScript syntax tree (imports, re-exports and dynamic imports; comments and strings do not count); each
// rule has a control that feeds it a planted violation.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The simulator's imports of src/ outside src/api and src/runtime/pure, and why. A new one must be added here on
 * purpose (and to docs/adr/0004-layering.md).
 */
const CAPI_SIM_EXCEPTIONS: Record<string, string> = {
  'tools/capi-sim/simulator.ts -> src/runtime/index.ts':
    "the simulator's controllers run on the product's controller runtime (createManager), as upstream's run on controller-runtime",
};

/** Every non-test .ts file under `rel`, recursively, relative to the repository root. */
function sourcesUnder(rel: string): string[] {
  if (!existsSync(path.join(root, rel))) return [];
  return readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((e) => {
    const child = `${rel}/${e.name}`;
    if (e.isDirectory()) return sourcesUnder(child);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts') ? [child] : [];
  });
}

/** The relative module specifiers of a file (static imports, re-exports, dynamic imports), resolved to repository paths. */
function importsOf(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier))
      specs.push(n.moduleSpecifier.text);
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0]))
      specs.push(n.arguments[0].text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'));
}

/** Imports of src/ a local API server file makes (all are violations). */
const apiserverViolations = (file: string, text: string): string[] => importsOf(file, text).filter((t) => t.startsWith('src/'));

/** Imports of src/ a simulator file makes outside src/api, src/runtime/pure and the named exceptions. */
const capiSimViolations = (file: string, text: string): string[] =>
  importsOf(file, text).filter(
    (t) =>
      t.startsWith('src/') &&
      !t.startsWith('src/api/') &&
      !t.startsWith('src/runtime/pure/') &&
      !(`${file} -> ${t}` in CAPI_SIM_EXCEPTIONS),
  );

describe('architecture: the tools stand apart from the product', function () {
  it('tools/local-apiserver imports nothing from src/', function () {
    const files = sourcesUnder('tools/local-apiserver');
    expect(files.length).to.be.greaterThan(10);
    const bad = files.flatMap((f) => apiserverViolations(f, readFileSync(path.join(root, f), 'utf8')).map((t) => `${f} -> ${t}`));
    expect(bad, 'the embedded API server stands alone: give it its own copy of what it needs').to.deep.equal([]);
  });

  it('tools/capi-sim imports only src/api and src/runtime/pure (and the named exceptions)', function () {
    const files = sourcesUnder('tools/capi-sim');
    expect(files.length).to.be.greaterThan(10);
    const bad = files.flatMap((f) => capiSimViolations(f, readFileSync(path.join(root, f), 'utf8')).map((t) => `${f} -> ${t}`));
    expect(bad, 'the simulator uses the API types and the pure runtime helpers only').to.deep.equal([]);
  });

  it('every named exception is still used (a stale one would hide a new import)', function () {
    for (const key of Object.keys(CAPI_SIM_EXCEPTIONS)) {
      const [file, target] = key.split(' -> ') as [string, string];
      expect(importsOf(file, readFileSync(path.join(root, file), 'utf8')), key).to.include(target);
    }
  });

  it('controls: a planted import of src/ is caught in each tool, in every import form', function () {
    expect(apiserverViolations('tools/local-apiserver/x.ts', "import { a } from '../../src/runtime/tls.js';")).to.deep.equal([
      'src/runtime/tls.ts',
    ]);
    expect(apiserverViolations('tools/local-apiserver/x.ts', "export * from '../../src/api/depth.js';")).to.deep.equal([
      'src/api/depth.ts',
    ]);
    expect(apiserverViolations('tools/local-apiserver/x.ts', "const m = await import('../../src/api/index.js');")).to.deep.equal([
      'src/api/index.ts',
    ]);
    expect(apiserverViolations('tools/local-apiserver/x.ts', "// import '../../src/api/index.js'\nimport './core.js';")).to.deep.equal([]);
    expect(capiSimViolations('tools/capi-sim/x.ts', "import { createClient } from '../../src/runtime/client.js';")).to.deep.equal([
      'src/runtime/client.ts',
    ]);
    expect(
      capiSimViolations('tools/capi-sim/controllers/x.ts', "import { x } from '../../../src/plan-controller/scope.js';"),
    ).to.deep.equal(['src/plan-controller/scope.ts']);
    expect(capiSimViolations('tools/capi-sim/x.ts', "import type { Machine } from '../../src/api/capi/index.js';")).to.deep.equal([]);
    expect(capiSimViolations('tools/capi-sim/x.ts', "import { setCondition } from '../../src/runtime/pure/conditions.js';")).to.deep.equal(
      [],
    );
    expect(capiSimViolations('tools/capi-sim/x.ts', "import { createManager } from '../../src/runtime/index.js';")).to.deep.equal([
      'src/runtime/index.ts',
    ]);
  });
});
