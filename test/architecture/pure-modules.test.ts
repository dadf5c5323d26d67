// The pure cores really are pure: each decision module (and each pure entry point) is imported alone in a fresh
// Node process with a resolve hook that records every module it loads, and none of the I/O stack may appear: the
// Kubernetes client, pino, prom-client, the runtime's client/manager/informer/barrel, the updater SDK or the
// conformance kit. The lint rule in eslint.config.js catches direct imports; this catches transitive ones.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
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
  /\/src\/runtime\/(client|manager|informer|index|metrics|log|health|leader|events)\.ts$/,
  /\/src\/contract\/(sdk|sdk-core)\.ts$/,
  /\/src\/contract\/(sdk|conformance)\//,
  /\/tools\/local-apiserver\//,
];

/** The decision modules (src/<component>/{decide,decisions,validate,status}.ts, the plan preview) and the pure entries. */
function pureModules(): string[] {
  const found: string[] = [];
  for (const base of ['src', 'tools'])
    for (const dir of readdirSync(path.join(root, base), { withFileTypes: true })) {
      // src/cli's status.ts is a CLI verb (it talks to the API server), not a controller's status module.
      if (!dir.isDirectory() || dir.name === 'cli') continue;
      for (const name of ['decide.ts', 'decisions.ts', 'validate.ts', 'status.ts', 'preview.ts']) {
        const rel = `${base}/${dir.name}/${name}`;
        if (existsSync(path.join(root, rel))) found.push(rel);
      }
    }
  return [...found, 'src/api/index.ts', 'src/api/capi/index.ts', 'src/contract/index.ts'];
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
