// `npm run synth -- --ocm FILE [--outdir DIR]`: reads the input (docs/ocm.md), writes the hub objects under
// dist/ocm/ (or DIR). Every problem of the input is reported at once and nothing is written then.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { OCM_OUTDIR, parseOcmFleetInput, synthesizeOcm } from './ocm.js';
import { PROJECT_ROOT, writeManifests } from './synth.js';

/** Runs the --ocm variant; returns the exit code (2: bad input or flags). */
export function runOcm(file: string, outdir: string | undefined, flags: readonly string[]): number {
  const other = flags.filter((f) => f !== 'ocm' && f !== 'outdir');
  if (other.length > 0) {
    process.stderr.write(`error: --ocm takes only --outdir, not ${other.map((f) => `--${f}`).join(', ')}\n`);
    return 2;
  }
  let file_;
  try {
    const docs = parseAllDocuments(readFileSync(file, 'utf8'));
    // The yaml parser records syntax errors on the document instead of throwing.
    const syntax = docs.flatMap((d) => d.errors)[0];
    if (syntax) throw new Error(syntax.message);
    if (docs.length !== 1) throw new Error(`expected one YAML document, found ${docs.length}`);
    file_ = synthesizeOcm(parseOcmFleetInput(docs[0]!.toJS()));
  } catch (e) {
    process.stderr.write(`error: --ocm ${file}: ${(e as Error).message}\n`);
    return 2;
  }
  const dir = outdir ?? join(PROJECT_ROOT, ...OCM_OUTDIR);
  const show = (p: string): string => relative(process.cwd(), p) || p;
  for (const p of writeManifests([file_], dir)) {
    process.stdout.write(`wrote ${show(p)}\n`);
    process.stdout.write(`apply on the OCM hub with: kubectl apply --server-side -f ${show(p)}\n`);
  }
  return 0;
}
