// Builds the workspace package in the current directory (npm runs a workspace's scripts there): compiles its entry
// in src/contract and everything it imports from src/ into dist/ with the repository's TypeScript (JavaScript and
// declarations), then checks that every package the compiled code imports is a dependency of the package's
// package.json at the version the repository pins, so an installed tarball never relies on the repository's
// node_modules.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { builtinModules } from 'node:module';
import { join } from 'node:path';

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const rootPkg = JSON.parse(readFileSync(join(dir, '..', '..', 'package.json'), 'utf8'));
const tsc = createRequire(join(dir, 'package.json')).resolve('typescript/bin/tsc');

rmSync(join(dir, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });

/** Every .js file under `d`. */
const jsFiles = (d) =>
  readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsFiles(join(d, e.name)) : e.name.endsWith('.js') ? [join(d, e.name)] : [],
  );
/** The npm package a bare specifier names (`@scope/name/sub` → `@scope/name`), or undefined for node: and relative ones. */
const packageOf = (spec) => {
  if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
};
const imported = new Set();
for (const f of jsFiles(join(dir, 'dist'))) {
  const text = readFileSync(f, 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  for (const m of specs) {
    const name = packageOf(m[1]);
    if (name) imported.add(name);
  }
}
const deps = pkg.dependencies ?? {};
const problems = [];
for (const name of [...imported].sort()) {
  const want = rootPkg.dependencies?.[name];
  if (!(name in deps)) problems.push(`${name} is imported by the compiled code but is not a dependency (add "${name}": "${want ?? '?'}")`);
  else if (want !== undefined && deps[name] !== want) problems.push(`${name} is ${deps[name]} here but ${want} in the repository`);
}
for (const name of Object.keys(deps)) if (!imported.has(name)) problems.push(`${name} is a dependency but nothing compiled imports it`);
if (problems.length) {
  process.stderr.write(`${pkg.name}: dependencies do not match the compiled code:\n${problems.map((p) => `  * ${p}`).join('\n')}\n`);
  process.exit(1);
}
