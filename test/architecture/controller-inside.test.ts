// The house shape inside the files, not only their names (docs/architecture.md "Who may do what"): for every
// controller folder, the wiring file (index.ts) exports the Component; only controller.ts exports `reconcile`; only the
// status module (status.ts or status/…) calls the condition setters; and only controller.ts and the named effect files
// below call the client's write verbs. Pure modules never reach the client at all: test/architecture/pure-modules.test.ts
// checks that by loading each one alone. Each rule is read from the TypeScript syntax tree (comments and strings do
// not count), and each has a control that feeds it a planted violation.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The controller folders under src/. */
const CONTROLLERS = ['plan-controller', 'campaign-controller', 'machine-task-controller', 'mhc-extension', 'runtime-extension'];

/** The generic condition setters of src/runtime/pure/conditions.ts: whoever calls them authors a condition. */
const CONDITION_SETTERS = new Set(['setCondition', 'setStatusCondition', 'removeCondition']);

/** The client's write verbs; `apply` is the patch helper's write (`snapshot(obj).apply(client, …)`). */
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/**
 * Besides each folder's controller.ts, the effect files allowed to write, and why. A new writer must be added here
 * (and to docs/architecture.md) on purpose.
 */
const WRITERS: Record<string, string> = {
  'src/plan-controller/act/plan.ts': 'the writes to plans: supersede, the finalizer, the one status patch',
  'src/plan-controller/act/deployments.ts': 'the MachineDeployment surge and its restore',
  'src/plan-controller/machines/start.ts': 'labels machines, creates MachineUpdates, aborts them, unlabels machines',
  'src/plan-controller/owners/owners-act.ts': 'owner alignment: pauses owners, clones templates and MachineSets, resumes them',
  'src/plan-controller/owners/clones-act.ts': 'deletes the template clones a finished plan no longer needs',
  'src/effects/prestart.ts': 'dry-run patches: the API server validates the commits before a plan starts (nothing persists)',
  'src/plan-controller/history/history-controller.ts': 'its own small reconciler: prunes finished plans beyond the history limit',
  'src/machine-task-controller/commit-apply.ts': 'commits the updated responsibilities to the CAPI objects (contract C8)',
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

/** What one file does, as far as the rules care. */
interface Facts {
  exportsReconcile: boolean;
  exportsComponent: boolean;
  /** Names of condition setters it calls. */
  setsConditions: string[];
  /** The write calls it makes, as source text of the callee. */
  writes: string[];
}

const isExported = (n: ts.Node): boolean =>
  ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** The callee ends at a client: `client.patch(`, `deps.client.create(`, `deps.mgr.client.delete(`. */
const isClientExpr = (e: ts.Expression): boolean => /(^|\.)client$/i.test(e.getText().replace(/\s+/g, ''));

/** Reads the facts of one file from its syntax tree. */
function factsOf(fileName: string, text: string): Facts {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const facts: Facts = { exportsReconcile: false, exportsComponent: false, setsConditions: [], writes: [] };
  const mentionsComponent = (t: ts.TypeNode | undefined): boolean => !!t && /\bComponent\b|[a-z]Component\b/.test(t.getText(sf));
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionDeclaration(n) && isExported(n)) {
      if (n.name?.text === 'reconcile') facts.exportsReconcile = true;
      if (mentionsComponent(n.type)) facts.exportsComponent = true;
    }
    if (ts.isVariableStatement(n) && isExported(n))
      for (const d of n.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.name.text === 'reconcile') facts.exportsReconcile = true;
        if (mentionsComponent(d.type)) facts.exportsComponent = true;
      }
    if (ts.isExportDeclaration(n) && n.exportClause && ts.isNamedExports(n.exportClause))
      if (n.exportClause.elements.some((e) => e.name.text === 'reconcile')) facts.exportsReconcile = true;
    if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
      if (name && CONDITION_SETTERS.has(name)) facts.setsConditions.push(name);
      if (ts.isPropertyAccessExpression(callee)) {
        if (WRITE_VERBS.has(name!) && isClientExpr(callee.expression)) facts.writes.push(callee.getText(sf));
        if (name === 'apply' && n.arguments[0] && isClientExpr(n.arguments[0])) facts.writes.push(`${callee.getText(sf)}(client…)`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return facts;
}

/** The rule each file must follow, given its path (relative to the repository root) and its facts; the violations. */
function violations(rel: string, f: Facts): string[] {
  const [, folder, ...rest] = rel.split('/');
  const inFolder = rest.join('/');
  const out: string[] = [];
  if (f.exportsReconcile && inFolder !== 'controller.ts') out.push(`${rel} exports reconcile (only ${folder}/controller.ts may)`);
  if (f.exportsComponent && inFolder !== 'index.ts') out.push(`${rel} exports a Component (the wiring file ${folder}/index.ts does)`);
  if (f.setsConditions.length && inFolder !== 'status.ts' && !inFolder.startsWith('status/'))
    out.push(`${rel} calls ${[...new Set(f.setsConditions)].join(', ')} (only the status module sets conditions)`);
  if (f.writes.length && inFolder !== 'controller.ts' && WRITERS[rel] === undefined)
    out.push(`${rel} writes through the client (${f.writes.join(', ')}): not controller.ts nor an allowed effect file`);
  return out;
}

describe('architecture: the controller template inside the files', () => {
  for (const c of CONTROLLERS) {
    const files = sourcesUnder(`src/${c}`);
    const facts = new Map(files.map((rel) => [rel, factsOf(rel, readFileSync(path.join(root, rel), 'utf8'))]));

    it(`src/${c}: index.ts exports the Component, controller.ts exports reconcile, and no other file does either`, () => {
      expect(facts.get(`src/${c}/index.ts`)?.exportsComponent, `src/${c}/index.ts exports the Component`).to.equal(true);
      expect(facts.get(`src/${c}/controller.ts`)?.exportsReconcile, `src/${c}/controller.ts exports reconcile`).to.equal(true);
    });

    it(`src/${c}: no other file exports reconcile or a Component; conditions are set only by the status module; writes only in controller.ts and the allowed effect files`, () => {
      expect([...facts].flatMap(([rel, f]) => violations(rel, f))).to.deep.equal([]);
    });
  }

  it('every allowed writer exists and still writes (a stale entry is removed, not kept)', () => {
    for (const rel of Object.keys(WRITERS)) {
      expect(existsSync(path.join(root, rel)), rel).to.equal(true);
      expect(factsOf(rel, readFileSync(path.join(root, rel), 'utf8')).writes, `${rel} writes`).to.not.deep.equal([]);
    }
  });

  describe('controls: a planted violation of each rule is caught', () => {
    const planted = (rel: string, text: string): string[] => violations(rel, factsOf(rel, text));

    it('reconcile exported outside controller.ts', () => {
      expect(planted('src/mhc-extension/decide.ts', 'export async function reconcile() {}')).to.have.length(1);
      expect(planted('src/mhc-extension/scope.ts', 'const reconcile = 1;\nexport { reconcile };')).to.have.length(1);
      expect(planted('src/mhc-extension/controller.ts', 'export async function reconcile() {}')).to.deep.equal([]);
    });

    it('a Component exported outside the wiring file', () => {
      expect(planted('src/runtime-extension/server.ts', 'export const x: Component = {} as never;')).to.have.length(1);
      expect(
        planted('src/runtime-extension/controller.ts', 'export function make(): RuntimeExtensionComponent { return x; }'),
      ).to.have.length(1);
      expect(planted('src/runtime-extension/index.ts', 'export const x: Component = {} as never;')).to.deep.equal([]);
    });

    it('a condition set outside the status module', () => {
      expect(
        planted('src/plan-controller/owners/owners-act.ts', 'o.status.conditions = setCondition(o.status.conditions, c, now);'),
      ).to.have.length(1);
      expect(planted('src/campaign-controller/decide.ts', 'x = conds.removeCondition(a, "Ready");')).to.have.length(1);
      expect(planted('src/campaign-controller/status.ts', 'x = setCondition(a, c, now);')).to.deep.equal([]);
      expect(planted('src/campaign-controller/status/ready.ts', 'x = setCondition(a, c, now);')).to.deep.equal([]);
      // A comment naming a setter is not a call.
      expect(planted('src/campaign-controller/decide.ts', "// setCondition(a, c, now) is status.ts's job")).to.deep.equal([]);
    });

    it('a write outside controller.ts and the allowed effect files', () => {
      expect(planted('src/runtime-extension/scope.ts', 'await client.patch(res, ns, n, body, { type: "merge" });')).to.have.length(1);
      expect(planted('src/mhc-extension/status.ts', 'await deps.client.create(res, obj);')).to.have.length(1);
      expect(planted('src/plan-controller/wake.ts', 'await deps.mgr.client.delete(res, ns, n);')).to.have.length(1);
      expect(planted('src/machine-task-controller/scope.ts', 'await snapshot(o).apply(deps.client, res, next);')).to.have.length(1);
      expect(planted('src/plan-controller/owners/owners-act.ts', 'await deps.client.create(res, obj);')).to.deep.equal([]);
      // Reads and other objects' verbs are not writes.
      expect(planted('src/runtime-extension/scope.ts', 'await client.get(res, ns, n); seen.delete(n); m.update(x);')).to.deep.equal([]);
    });
  });
});
