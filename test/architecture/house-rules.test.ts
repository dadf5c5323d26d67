// The house rules of issue 43, read from the code with the TypeScript parser (every import, type-only ones included):
// 1. no controller folder imports another, and cdk8s/ imports of a controller only its exported rule table (rbac.ts);
// 2. inside a controller folder no upward import: a file in a sub-folder imports from the folders above it only
//    types (the scope and shapes it is given) and the folder's one status author (status.ts, whose setters every
//    decision phase uses); values flow down, never back up;
// 3. no folder of a controller, of src/rules or src/effects holds more than 20 source files side by side;
// 4. src/rules is pure by location: of ours it imports only src/api, the pure contract entry, src/runtime/pure and
//    itself, and of Node nothing that does I/O;
// 5. docs/architecture.md's newcomer's map of the plan controller names only files that exist, and every source file;
// 6. caches at the edge: the rules (src/rules) and the decision phases (src/plan-controller/decide*) take no memo or
//    cache parameter and import nothing of the plan controller's cache (src/plan-controller/cache/), which hands
//    them derived inputs instead.
// Each rule is a function over (file, imports) so a test can plant a violation and see it refused.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The controller folders: none imports another. */
export const CONTROLLERS = ['plan-controller', 'campaign-controller', 'machine-task-controller', 'mhc-extension', 'runtime-extension'];
/** Most source files side by side in one folder (tests do not count). */
export const MAX_SIDE_BY_SIDE = 20;
/** What cdk8s/ may import of a controller folder: its exported RBAC rule table. */
const CDK8S_MAY_IMPORT = /^src\/[a-z-]+\/rbac\.ts$/;
/** The one module of a controller folder its sub-folders may take values from: the folder's status author. */
const GIVEN_DOWNWARD = new Set(['status.ts']);

/** One import of a file: the file it names (relative to the root) or the bare specifier, and whether it is type-only. */
export interface Import {
  target: string;
  typeOnly: boolean;
}

/** Every non-test .ts file under `dir` (relative to the root). */
function sources(dir: string): string[] {
  if (!existsSync(path.join(root, dir))) return [];
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sources(rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** The imports of a file's text: static imports, re-exports and import() calls; relative ones resolved to a path. */
export function importsOf(file: string, text: string): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean): void => {
    if (!spec.startsWith('.')) return void out.push({ target: spec, typeOnly });
    const base = path.posix.join(path.posix.dirname(file), spec).replace(/\.js$/, '');
    const hit = [`${base}.ts`, `${base}/index.ts`].find((c) => existsSync(path.join(root, c)));
    out.push({ target: hit ?? `${base}.ts`, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const allTypes =
        c?.isTypeOnly === true ||
        (c !== undefined &&
          c.name === undefined &&
          c.namedBindings !== undefined &&
          ts.isNamedImports(c.namedBindings) &&
          c.namedBindings.elements.length > 0 &&
          c.namedBindings.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier.text, allTypes);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) add(arg.text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const controllerOf = (f: string): string | undefined => CONTROLLERS.find((c) => f.startsWith(`src/${c}/`));

/** Rule 1: an import from one controller folder into another, or from cdk8s/ into a controller's internals. */
export function crossing(file: string, imports: readonly Import[]): string[] {
  const from = controllerOf(file);
  const out: string[] = [];
  for (const i of imports) {
    const to = controllerOf(i.target);
    if (!to) continue;
    if (from && to !== from) out.push(`${file} imports ${i.target}: controllers talk through CRs; shared rules live in src/rules`);
    if (file.startsWith('cdk8s/') && !CDK8S_MAY_IMPORT.test(i.target))
      out.push(`${file} imports ${i.target}: cdk8s/ reads a controller's rbac.ts only (rules it shares live in src/rules)`);
  }
  return out;
}

/** Rule 2: a value import from a sub-folder of a controller into a folder above it (other than its status author). */
export function upward(file: string, imports: readonly Import[]): string[] {
  const c = controllerOf(file);
  if (!c) return [];
  const dir = path.posix.dirname(file);
  const out: string[] = [];
  for (const i of imports) {
    if (i.typeOnly || controllerOf(i.target) !== c) continue;
    const tdir = path.posix.dirname(i.target);
    const above = tdir !== dir && dir.startsWith(`${tdir}/`);
    if (above && !GIVEN_DOWNWARD.has(path.posix.basename(i.target)))
      out.push(`${file} imports ${i.target} from a folder above it: pass it down (types, the scope) or move it below`);
  }
  return out;
}

/** Rule 3: the folders holding more than MAX_SIDE_BY_SIDE source files side by side. */
export function crowded(files: readonly string[]): string[] {
  const n = new Map<string, number>();
  for (const f of files) n.set(path.posix.dirname(f), (n.get(path.posix.dirname(f)) ?? 0) + 1);
  return [...n]
    .filter(([, k]) => k > MAX_SIDE_BY_SIDE)
    .map(([d, k]) => `${d} holds ${k} source files side by side (at most ${MAX_SIDE_BY_SIDE})`);
}

const PURE_OURS = /^src\/(api\/|runtime\/pure\/|rules\/|contract\/(index|rules|accessors|task-kinds)\.ts$)/;
const IO_MODULES =
  /^(node:)?(http|https|net|tls|fs|fs\/promises|child_process|dgram|dns|worker_threads)$|^(pino|pino-pretty|prom-client|@kubernetes\/client-node)(\/|$)/;

/** Rule 4: an import of a src/rules file that is not pure (I/O, or a module of ours outside the pure set). */
export function impure(file: string, imports: readonly Import[]): string[] {
  if (!file.startsWith('src/rules/')) return [];
  return imports
    .filter((i) => (i.target.startsWith('src/') || i.target.startsWith('tools/') ? !PURE_OURS.test(i.target) : IO_MODULES.test(i.target)))
    .map((i) => `${file} imports ${i.target}: src/rules is pure (src/api, the pure contract, src/runtime/pure, src/rules only; no I/O)`);
}

/**
 * The plan controller's part of the newcomer's map (from its heading to the next controller's): the .ts paths it names
 * that do not exist (relative to src/plan-controller/ unless they start with src/), and the source files it does not name.
 */
export function mapCheck(doc: string, files: readonly string[]): { missing: string[]; unmapped: string[] } {
  const start = doc.indexOf('**Plan controller** (`src/plan-controller/`)');
  const end = doc.indexOf('**Machine task controller**', start);
  const section = start < 0 ? '' : doc.slice(start, end < 0 ? undefined : end);
  const named = new Set([...section.matchAll(/`([A-Za-z0-9_./-]+\.ts)`/g)].map((m) => m[1]!));
  const full = (t: string): string => (t.startsWith('src/') ? t : `src/plan-controller/${t}`);
  const known = new Set(files);
  const exists = (t: string): boolean => known.has(full(t)) || existsSync(path.join(root, full(t)));
  return {
    missing: [...named].filter((t) => !exists(t)).sort(),
    unmapped: files
      .map((f) => f.slice('src/plan-controller/'.length))
      .filter((rel) => !named.has(rel) && !named.has(`src/plan-controller/${rel}`))
      .sort(),
  };
}

/** The files rule 6 covers: the shared rules and the plan controller's decision phases. */
const PLAIN_FUNCTIONS = /^src\/(rules\/|plan-controller\/decide(\/|\.ts$))/;
/** The plan controller's cache at the edge: the one place that keeps answers across reconciles. */
const CACHE_DIR = 'src/plan-controller/cache/';
/** A parameter that carries a memo or cache, by its name or its type. */
const CACHE_WORD = /memo|cache/i;

/** Rule 6, imports: a rule or decision phase importing the plan controller's cache (a type import counts). */
export function cacheImports(file: string, imports: readonly Import[]): string[] {
  if (!PLAIN_FUNCTIONS.test(file)) return [];
  return imports
    .filter((i) => i.target.startsWith(CACHE_DIR))
    .map((i) => `${file} imports ${i.target}: the rules are plain functions; the cache hands them derived inputs`);
}

/** Rule 6, parameters: `file: function(parameter)` for each parameter named or typed as a memo or cache. */
export function cacheParameters(file: string, text: string): string[] {
  if (!PLAIN_FUNCTIONS.test(file)) return [];
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: string[] = [];
  const names = (n: ts.BindingName): string[] =>
    ts.isIdentifier(n) ? [n.text] : n.elements.flatMap((e) => (ts.isBindingElement(e) ? names(e.name) : []));
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node)) {
      const named = node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
      const fn = named && (ts.isIdentifier(named) || ts.isPrivateIdentifier(named)) ? named.text : '(anonymous)';
      for (const p of node.parameters) {
        const typed = p.type !== undefined && CACHE_WORD.test(p.type.getText(sf));
        const hits = names(p.name).filter((n) => CACHE_WORD.test(n));
        if (typed || hits.length > 0) out.push(`${file}: ${fn}(${ts.isIdentifier(p.name) ? p.name.text : hits.join(', ')})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const read = (f: string): Import[] => importsOf(f, readFileSync(path.join(root, f), 'utf8'));

describe('architecture: the house rules (issue 43)', () => {
  const controllerFiles = CONTROLLERS.flatMap((c) => sources(`src/${c}`));
  const cdk8sFiles = readdirSync(path.join(root, 'cdk8s'))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => `cdk8s/${f}`);
  const ruleFiles = sources('src/rules');

  it('no controller folder imports another; cdk8s/ reads a controller only through its rbac.ts', () => {
    expect([...controllerFiles, ...cdk8sFiles].flatMap((f) => crossing(f, read(f)))).to.deep.equal([]);
  });

  it('no upward value import inside the plan and campaign controllers', () => {
    const mine = controllerFiles.filter((f) => f.startsWith('src/plan-controller/') || f.startsWith('src/campaign-controller/'));
    expect(mine.length).to.be.greaterThan(40);
    expect(mine.flatMap((f) => upward(f, read(f)))).to.deep.equal([]);
  });

  it(`no folder of a controller, src/rules or src/effects holds more than ${MAX_SIDE_BY_SIDE} source files side by side`, () => {
    expect(crowded([...controllerFiles, ...ruleFiles, ...sources('src/effects')])).to.deep.equal([]);
  });

  it('src/rules is pure by location', () => {
    expect(ruleFiles.length).to.be.greaterThan(8);
    expect(ruleFiles.flatMap((f) => impure(f, read(f)))).to.deep.equal([]);
  });

  it("docs/architecture.md's newcomer's map of the plan controller is true: every file it names exists, every source file is named", () => {
    const doc = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    const { missing, unmapped } = mapCheck(doc, sources('src/plan-controller'));
    expect(missing, 'named in the map, not in the tree').to.deep.equal([]);
    expect(unmapped, 'in the tree, not in the map').to.deep.equal([]);
  });

  it('caches at the edge: no rule or decision phase takes a memo or cache parameter or imports the cache', () => {
    const plain = [...ruleFiles, ...sources('src/plan-controller')].filter((f) => PLAIN_FUNCTIONS.test(f));
    expect(plain.length).to.be.greaterThan(20);
    expect(plain.flatMap((f) => cacheImports(f, read(f)))).to.deep.equal([]);
    expect(plain.flatMap((f) => cacheParameters(f, readFileSync(path.join(root, f), 'utf8')))).to.deep.equal([]);
  });

  describe('each rule refuses a planted violation', () => {
    it('a map naming a file that is gone, and a file the map does not name', () => {
      const doc = '**Plan controller** (`src/plan-controller/`).\n| a | `controller.ts`, `gone.ts` |\n**Machine task controller**';
      expect(mapCheck(doc, ['src/plan-controller/controller.ts', 'src/plan-controller/new.ts'])).to.deep.equal({
        missing: ['gone.ts'],
        unmapped: ['new.ts'],
      });
    });

    it('a controller importing another (a type import counts), and cdk8s/ importing a controller internal', () => {
      expect(crossing('src/campaign-controller/x.ts', [{ target: 'src/plan-controller/scope.ts', typeOnly: true }])).to.have.length(1);
      expect(crossing('cdk8s/x.ts', [{ target: 'src/plan-controller/owners-act.ts', typeOnly: false }])).to.have.length(1);
      expect(crossing('cdk8s/x.ts', [{ target: 'src/plan-controller/rbac.ts', typeOnly: false }])).to.deep.equal([]);
      expect(crossing('src/campaign-controller/x.ts', [{ target: 'src/rules/validate.ts', typeOnly: false }])).to.deep.equal([]);
    });

    it('a sub-folder taking a value from its parent folder (types and the status author are given)', () => {
      const f = 'src/plan-controller/decide/x.ts';
      expect(upward(f, [{ target: 'src/plan-controller/controller.ts', typeOnly: false }])).to.have.length(1);
      expect(upward(f, [{ target: 'src/plan-controller/scope.ts', typeOnly: true }])).to.deep.equal([]);
      expect(upward(f, [{ target: 'src/plan-controller/status.ts', typeOnly: false }])).to.deep.equal([]);
      expect(upward(f, [{ target: 'src/plan-controller/decide/y.ts', typeOnly: false }])).to.deep.equal([]);
    });

    it('a crowded folder', () => {
      const files = Array.from({ length: MAX_SIDE_BY_SIDE + 1 }, (_, i) => `src/plan-controller/f${i}.ts`);
      expect(crowded(files)).to.have.length(1);
      expect(crowded(files.slice(1))).to.deep.equal([]);
    });

    it('a rule or decision phase taking a memo, or importing the cache', () => {
      const f = 'src/plan-controller/decide/x.ts';
      expect(cacheParameters(f, 'export function a(snap: S, memo?: PlanCache): void {}')).to.deep.equal([`${f}: a(memo)`]);
      expect(cacheParameters(f, 'export const b = (s: S, keep: DecideMemo) => s;')).to.deep.equal([`${f}: b(keep)`]);
      expect(cacheParameters('src/rules/x.ts', 'function c(p: P, { only, memo }: R = {}) {}')).to.deep.equal(['src/rules/x.ts: c(memo)']);
      expect(cacheParameters(f, 'export function d(snap: S, given: StanceInputs): void {}')).to.deep.equal([]);
      expect(cacheParameters('src/plan-controller/cache/x.ts', 'function e(cache: PlanCache) {}')).to.deep.equal([]);
      expect(cacheImports(f, [{ target: 'src/plan-controller/cache/plan-cache.ts', typeOnly: true }])).to.have.length(1);
      expect(
        cacheImports('src/plan-controller/controller.ts', [{ target: 'src/plan-controller/cache/decide.ts', typeOnly: false }]),
      ).to.deep.equal([]);
    });

    it('an impure import in src/rules', () => {
      expect(impure('src/rules/x.ts', [{ target: 'src/runtime/client.ts', typeOnly: false }])).to.have.length(1);
      expect(impure('src/rules/x.ts', [{ target: 'node:http', typeOnly: false }])).to.have.length(1);
      expect(impure('src/rules/x.ts', [{ target: 'src/plan-controller/scope.ts', typeOnly: true }])).to.have.length(1);
      expect(impure('src/rules/x.ts', [{ target: 'src/runtime/pure/errors.ts', typeOnly: false }])).to.deep.equal([]);
    });
  });
});
