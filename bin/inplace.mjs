#!/usr/bin/env node
// Launcher for the `inplace` CLI (also installed as `kubectl-inplace`).
// Uses the compiled build when present (containers), the TypeScript sources through tsx otherwise (a checkout).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'cli', 'main.js');
if (existsSync(built) && process.env.INPLACE_FROM_SOURCE !== '1') {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
