// Lists dead exports of src/ and tools/: an exported declaration of such a file (not a test) whose name appears as a
// word nowhere else, neither in another file of src/, tools/, test/, bench/, cdk8s/ or scripts/ nor elsewhere in its own file. With --all it
// also lists exports used only inside their own file (the `export` could go, or they are public API by intent). A
// heuristic on words, so read the list before deleting: a hint, not a verdict.
// Usage: npx tsx scripts/dead-exports.ts [--all] [--strict] (with --strict it exits 1 when something is dead).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SEARCHED = ['src', 'tools', 'test', 'bench', 'cdk8s', 'scripts'];
/** Generated code and entry points whose exports are used by name from outside (the CLI, other processes). */
const SKIPPED = [/^src\/api\/generated\//];

function files(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(path.join(root, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== '__snapshots__') out.push(...files(rel));
    } else if (/\.(ts|mts|mjs|js)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Names a file exports by declaration (`export const/function/class/interface/type/enum`). */
function exportedNames(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names: string[] = [];
  for (const st of sf.statements) {
    const exported = ts.canHaveModifiers(st) && ts.getModifiers(st)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) continue;
    if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
    } else if (
      (ts.isFunctionDeclaration(st) ||
        ts.isClassDeclaration(st) ||
        ts.isInterfaceDeclaration(st) ||
        ts.isTypeAliasDeclaration(st) ||
        ts.isEnumDeclaration(st)) &&
      st.name
    ) {
      names.push(st.name.text);
    }
  }
  return names;
}

const all = SEARCHED.flatMap(files);
const texts = new Map(all.map((f) => [f, readFileSync(path.join(root, f), 'utf8')]));
const findings: string[] = [];
const localOnly: string[] = [];
const count = (text: string, re: RegExp): number => text.match(new RegExp(re.source, 'g'))?.length ?? 0;
for (const file of all.filter(
  (f) =>
    (f.startsWith('src/') || f.startsWith('tools/')) && f.endsWith('.ts') && !f.endsWith('.test.ts') && !SKIPPED.some((re) => re.test(f)),
)) {
  // Names starting with _ are compile-time checks (e.g. the schema/type agreement in src/api/schemas.ts).
  for (const name of exportedNames(file, texts.get(file)!).filter((n) => !n.startsWith('_'))) {
    const word = new RegExp(`\\b${name}\\b`);
    const usedElsewhere = all.some((other) => other !== file && word.test(texts.get(other)!));
    if (usedElsewhere) continue;
    if (count(texts.get(file)!, word) > 1) localOnly.push(`${file}: ${name}`);
    else findings.push(`${file}: ${name}`);
  }
}
process.stdout.write(findings.length ? `dead (named nowhere else):\n${findings.map((f) => `  ${f}`).join('\n')}\n` : 'no dead exports\n');
if (process.argv.includes('--all') && localOnly.length)
  process.stdout.write(`used only in their own file:\n${localOnly.map((f) => `  ${f}`).join('\n')}\n`);
if (process.argv.includes('--strict') && findings.length) process.exitCode = 1;
