// Bundles the CLI (src/cli/main.ts and every verb as a lazily loaded chunk) into dist/cli/ with esbuild, so the
// kubectl-style verbs start in ~0.2 s instead of ~1.2 s: most of a verb's start-up was evaluating all of
// @kubernetes/client-node (every generated API class) for KubeConfig alone; the bundle keeps only what is used,
// and no TypeScript is transpiled at start-up. esbuild comes with tsx (a runtime dependency), so no install step.
// Used by `npm run build:cli` and, on demand, by bin/inplace.mjs (when the bundle is missing or older than src/ or tools/).
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Where the bundle lives, relative to the project root. */
export const BUNDLE_DIR = join('dist', 'cli');

/** Newest modification time (ms) of the sources the bundle is built from; 0 when there are no sources (an image). */
export function newestSource(root) {
  let newest = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if ((e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) || e.name.endsWith('.yaml'))
        newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  if (!existsSync(join(root, 'src'))) return 0;
  // The CLI's wiring bundles the development tools (the local API server, the CAPI simulator) too.
  for (const dir of ['src', 'tools']) if (existsSync(join(root, dir))) walk(join(root, dir));
  for (const f of ['package-lock.json', 'bin/lib/build-cli.mjs'])
    if (existsSync(join(root, f))) newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  return newest;
}

/** True when dist/cli/main.js exists and no source is newer. */
export function bundleIsFresh(root) {
  const main = join(root, BUNDLE_DIR, 'main.js');
  return existsSync(main) && statSync(main).mtimeMs >= newestSource(root);
}

/** Builds the bundle into a temporary directory, then swaps it in (concurrent callers never see half a bundle). */
export async function buildCli(root) {
  const { build } = await import('esbuild');
  const out = join(root, BUNDLE_DIR);
  const tmp = `${out}.tmp-${process.pid}-${Date.now()}`;
  await build({
    absWorkingDir: root,
    entryPoints: ['src/cli/main.ts'],
    outdir: tmp,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
    // pino runs its transports (pino-pretty) in worker threads that load these by file name: keep them packages.
    external: ['pino', 'pino-pretty', 'thread-stream'],
    // Bundled CommonJS dependencies call require().
    banner: {
      js: "import { createRequire as __inplaceCreateRequire } from 'node:module'; const require = __inplaceCreateRequire(import.meta.url);",
    },
  });
  // Fixture files a bundled module finds next to itself (new URL('./crds', import.meta.url) in tools/capi-sim/crds.ts).
  cpSync(join(root, 'tools', 'capi-sim', 'crds'), join(tmp, 'crds'), { recursive: true });
  cpSync(join(root, 'tools', 'capi-sim', 'crds-runtime'), join(tmp, 'crds-runtime'), { recursive: true });
  mkdirSync(join(root, 'dist'), { recursive: true });
  const old = `${out}.old-${process.pid}-${Date.now()}`;
  if (existsSync(out)) renameSync(out, old);
  try {
    renameSync(tmp, out);
  } catch (e) {
    // Another process swapped its bundle in first: theirs is as good as ours.
    if (!existsSync(out)) throw e;
    rmSync(tmp, { recursive: true, force: true });
  }
  rmSync(old, { recursive: true, force: true });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  await buildCli(root);
  process.stdout.write(`built ${BUNDLE_DIR}/main.js\n`);
}
