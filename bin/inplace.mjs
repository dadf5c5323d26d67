#!/usr/bin/env node
// Launcher for the `inplace` CLI (also installed as `kubectl-inplace`, see bin/kubectl-inplace).
// Three ways to run, fastest first:
//  1. Every verb but conformance runs from the esbuild bundle in dist/cli/ (~0.2 s to start instead of 1.2–5 s
//     through tsx; the demo's 7 component processes are ready in seconds instead of half a minute). In a checkout
//     the bundle is (re)built here when it is missing or older than src/ — no install hook needed, `npm ci` alone
//     is enough; `npm run build:cli` builds it ahead of time.
//  2. The compiled build dist/src (containers; `npm run build`) when it is not older than src/.
//  3. The TypeScript sources through tsx. INPLACE_FROM_SOURCE=1 forces this (tests of the sources).
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fromSource = process.env.INPLACE_FROM_SOURCE === '1';
const verb = process.argv[2];
const BUNDLED_VERBS = new Set([
  undefined,
  'status',
  'preview',
  'pause',
  'resume',
  'abort',
  'help',
  '--help',
  '-h',
  'version',
  '--version',
  'run',
  'updater',
  'capi-sim',
  'demo',
  'local-apiserver',
  'dashboard',
]);

// The demo's first output comes after its modules loaded (seconds through tsx or a bundle rebuild): say at once
// that it is starting.
if (verb === 'demo' && !process.argv.includes('--help') && !process.argv.includes('-h'))
  process.stdout.write('inplace demo: starting the local platform…\n');

async function bundled() {
  if (fromSource || !BUNDLED_VERBS.has(verb)) return undefined;
  try {
    const { buildCli, bundleIsFresh } = await import(pathToFileURL(join(root, 'bin', 'lib', 'build-cli.mjs')).href);
    if (!bundleIsFresh(root)) await buildCli(root);
    return join(root, 'dist', 'cli', 'main.js');
  } catch {
    // No build script (an image), no esbuild or a read-only checkout: the slower ways still work.
    return undefined;
  }
}

const compiled = join(root, 'dist', 'src', 'cli', 'main.js');
const compiledIsFresh = () => {
  if (!existsSync(compiled)) return false;
  if (!existsSync(join(root, 'src'))) return true;
  const main = join(root, 'src', 'cli', 'main.ts');
  return statSync(compiled).mtimeMs >= statSync(main).mtimeMs;
};

const bundle = await bundled();
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else if (!fromSource && compiledIsFresh()) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
