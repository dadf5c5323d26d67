// The pure cores really are pure: each pure module is imported alone in a fresh Node process with a resolve hook that
// records every module it loads, and none of the I/O stack may appear: the Kubernetes client, pino, prom-client, any
// runtime module outside src/runtime/pure/ (the barrel, client, manager, informer, patch helper, ...), the updater
// SDK or the conformance kit. Pure is a location, not a promise: every module under src/runtime/pure/, every
// decide/decisions/validate/status/preview module (and decide/ or pure/ subfolder) of a component, the modules pure by
// role (the commit patch and journal), every module of src/rules, and every module whose header says it is "Pure". The lint rule in
// eslint.config.js catches direct imports; this catches transitive ones.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const hook = path.join(root, 'test/architecture/record-loads.mjs');

/** A loaded URL matching one of these means a "pure" module pulled in I/O. */
const FORBIDDEN: readonly RegExp[] = [
  /\/node_modules\/@kubernetes\/client-node\//,
  /\/node_modules\/pino(-pretty)?\//,
  /\/node_modules\/prom-client\//,
  /\/src\/runtime\/(?!pure\/)[^/]+\.ts$/,
  /\/src\/contract\/sdk\.ts$/,
  /\/src\/contract\/(sdk|conformance)\//,
  /\/tools\/local-apiserver\//,
];

/** The names of a component's decision modules; a decide/ or pure/ subfolder is pure as a whole. */
const PURE_NAMES = ['decide.ts', 'decisions.ts', 'validate.ts', 'status.ts', 'preview.ts'];
const PURE_FOLDERS = ['decide', 'pure'];
/** Pure by role, outside those names: the machine task controller's commit patch and its journal. */
const PURE_BY_ROLE = ['src/machine-task-controller/commit.ts', 'src/machine-task-controller/journal.ts'];
/** Folders pure as a whole by location: the rules the controllers share (issue 43). */
const PURE_TREES = ['src/rules'];
/** The pure entry points of whole modules. */
const PURE_ENTRIES = ['src/api/index.ts', 'src/api/capi/index.ts', 'src/contract/index.ts'];

/** Every non-test .ts file under `rel` (recursively), as paths relative to the repository root. */
function sourcesUnder(rel: string): string[] {
  if (!existsSync(path.join(root, rel))) return [];
  return readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((e) => {
    const child = `${rel}/${e.name}`;
    if (e.isDirectory()) return sourcesUnder(child);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts') ? [child] : [];
  });
}

/** True when the file's leading comment declares it pure ("Pure.", "Pure:", "Pure decisions ..."). */
function declaresPure(rel: string): boolean {
  const header: string[] = [];
  for (const line of readFileSync(path.join(root, rel), 'utf8').split('\n')) {
    if (!/^\s*(\/\/|\/\*|\*)/.test(line)) break;
    header.push(line);
  }
  return /(^|[^\w])Pure\b/.test(header.join('\n'));
}

/** Every module that must be pure, by location (and by its own declaration); sorted, no duplicates. */
function pureModules(): string[] {
  const found = new Set<string>([
    ...sourcesUnder('src/runtime/pure'),
    ...PURE_TREES.flatMap(sourcesUnder),
    ...PURE_BY_ROLE,
    ...PURE_ENTRIES,
  ]);
  for (const base of ['src', 'tools'])
    for (const dir of readdirSync(path.join(root, base), { withFileTypes: true })) {
      // src/cli's status.ts is a CLI verb (it talks to the API server), not a controller's status module.
      if (!dir.isDirectory() || dir.name === 'cli') continue;
      for (const name of PURE_NAMES) if (existsSync(path.join(root, base, dir.name, name))) found.add(`${base}/${dir.name}/${name}`);
      for (const folder of PURE_FOLDERS) for (const f of sourcesUnder(`${base}/${dir.name}/${folder}`)) found.add(f);
    }
  for (const f of [...sourcesUnder('src'), ...sourcesUnder('tools')]) if (declaresPure(f)) found.add(f);
  return [...found].filter((f) => existsSync(path.join(root, f))).sort();
}

/** Imports `rel` alone in a fresh process; returns every module URL it resolved. */
async function loadsOf(rel: string): Promise<string[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pure-modules-'));
  const file = path.join(dir, 'loads.txt');
  try {
    const url = pathToFileURL(path.join(root, rel)).href;
    await run(process.execPath, ['--import', 'tsx', '--import', pathToFileURL(hook).href, '-e', `await import(${JSON.stringify(url)});`], {
      cwd: root,
      env: { ...process.env, RECORD_LOADS_FILE: file },
    });
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const forbiddenIn = (loads: readonly string[]): string[] => [...new Set(loads.filter((u) => FORBIDDEN.some((re) => re.test(u))))];

describe('architecture: pure modules load no I/O', function () {
  this.timeout(120_000);

  it('the recorder sees the client when the runtime barrel is imported (control)', async () => {
    const loads = await loadsOf('src/runtime/index.ts');
    expect(
      loads.some((u) => u.includes('/node_modules/@kubernetes/client-node/')),
      'the hook recorded no @kubernetes/client-node',
    ).to.equal(true);
    expect(loads.some((u) => u.includes('/node_modules/prom-client/'))).to.equal(true);
    expect(loads.some((u) => /\/node_modules\/pino\//.test(u))).to.equal(true);
  });

  it('covers the pure runtime folder by location, and fails on a module planted there that loads the client (control)', async () => {
    const planted = 'src/runtime/pure/zz-planted-violation.ts';
    writeFileSync(
      path.join(root, planted),
      "// Planted by test/architecture/pure-modules.test.ts (removed at once).\nexport { createClient } from '../index.js';\n",
    );
    try {
      expect(pureModules()).to.include(planted);
      const loads = await loadsOf(planted);
      expect(forbiddenIn(loads).some((u) => u.endsWith('/src/runtime/index.ts'))).to.equal(true);
      expect(forbiddenIn(loads).some((u) => u.includes('/node_modules/@kubernetes/client-node/'))).to.equal(true);
    } finally {
      rmSync(path.join(root, planted), { force: true });
    }
  });

  it('lists every module of src/runtime/pure/, of the decide/ folders, the decision modules and the modules pure by role', () => {
    const listed = pureModules();
    const decideFolders = ['src/plan-controller/decide', 'src/mhc-extension/decide', 'src/campaign-controller/decide'].flatMap(
      sourcesUnder,
    );
    expect(decideFolders.length, 'the decide/ folders have modules').to.be.greaterThan(8);
    for (const f of [
      ...sourcesUnder('src/runtime/pure'),
      ...PURE_BY_ROLE,
      ...decideFolders,
      'src/plan-controller/decide.ts',
      'src/campaign-controller/decide.ts',
      'tools/capi-sim/decisions.ts',
    ])
      expect(listed, f).to.include(f);
  });

  for (const rel of pureModules()) {
    it(`${rel} loads none of the client, pino, prom-client, runtime I/O, SDK or conformance kit`, async () => {
      const loads = await loadsOf(rel);
      expect(
        loads.some((u) => u.endsWith(`/${rel}`)),
        `${rel} was not loaded at all`,
      ).to.equal(true);
      expect(forbiddenIn(loads), `${rel} pulls in I/O modules`).to.deep.equal([]);
    });
  }
});
