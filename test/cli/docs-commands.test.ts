// The commands of the README, docs/operations.md and docs/ocm.md (issue 42: "every documented command runs"), extracted from their
// code blocks and inline code. Those that need no cluster run here: every `npm run synth` variant (placeholders such
// as REGISTRY/inplace-capi:TAG replaced by real values), exit 0. Those that need a running platform (status, abort,
// revert, npm start ...) are run by the end-to-end tests; here each is parsed by the CLI itself (`... --help`: the
// verb exists and takes every flag written, exit 0), so a renamed verb or flag fails. Synopses (`<plan>`, `[-w]`,
// `a|b`) are not commands and are left out; transcripts' output lines are not commands either. The README tour's
// commands also run against a cluster holding the demo's plan in test/cli/hints.test.ts, and the examples' previews in
// test/cli/examples.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../src/cli/procs.js';
import { cli } from '../support/cli.js';

const ROOT = projectRoot();
const DOCS = ['README.md', 'docs/operations.md', 'docs/ocm.md'];
const COMMAND = /^(?:npx inplace|kubectl inplace|inplace|npm run synth|npm start)(?:\s|$)/;

/** The commands a Markdown text shows: lines of its code blocks (prompt, comments and continuations handled) and inline code. */
function documentedCommands(md: string): string[] {
  const out: string[] = [];
  const fence = /```[a-z]*\n([\s\S]*?)```/g;
  for (const m of md.matchAll(fence))
    for (const raw of m[1]!.replace(/\\\n\s*/g, ' ').split('\n')) {
      const line = raw
        .replace(/^\s*\$\s+/, '')
        .replace(/\s+#.*$/, '')
        .trim();
      if (COMMAND.test(line)) out.push(line.replace(/\s+/g, ' '));
    }
  for (const m of md.replace(fence, '').matchAll(/`([^`\n]+)`/g)) {
    const code = m[1]!.replace(/\s+/g, ' ').trim();
    if (COMMAND.test(code)) out.push(code);
  }
  // "inplace demo: starting the local platform…" is the demo's first output line in a transcript.
  return [...new Set(out)].filter((c) => !/^inplace demo:/.test(c));
}

/**
 * A synopsis (placeholders in angle brackets or capitals, optional parts, alternatives, an ellipsis) or a mention of
 * a flag (`inplace preview -f`), not a runnable command.
 */
const isSynopsis = (c: string): boolean => /[<[|…]|\\\||\bNAME\b|\bNS\b|\bPLAN\b|\bN\b|\bV\b|P=V|\s-f$/.test(c);

/** Real values for the placeholders of otherwise runnable commands. */
function concrete(c: string, tmp: string): string {
  return c
    .replace(/REGISTRY\/inplace-capi:TAG/g, 'registry.example.com/inplace-capi:0.1.0')
    .replace(/ghcr\.io\/ORG\//g, 'ghcr.io/example/')
    .replace(/(--clusterctl )(?:~\/inplace-repo|DIR)/g, `$1${join(tmp, 'clusterctl')}`)
    .replace(/--in-place-guard updaters\.yaml/g, `--in-place-guard ${join(ROOT, 'examples', 'hooks', 'updaters.yaml')}`)
    .replace(/--alert-gate-policy FILE\b/g, `--alert-gate-policy ${join(ROOT, 'examples', 'alert-gate-policy.yaml')}`)
    .replace(/(?<![\w/-])policy\.yaml\b/g, join(ROOT, 'examples', 'write-policy.yaml'));
}

/** The `inplace` arguments of a command: `npm start -- ARGS` is `inplace demo ARGS`; `npx inplace ARGS` / `kubectl inplace ARGS`. */
function inplaceArgs(argv: string[]): string[] {
  if (argv[0] === 'npm') {
    const i = argv.indexOf('--');
    return ['demo', ...(i >= 0 ? argv.slice(i + 1) : [])];
  }
  return argv.slice(argv.indexOf('inplace') + 1);
}

/** Splits a command line into words, honouring single quotes (no shell). */
const words = (c: string): string[] => [...c.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);

describe('the commands of the README, docs/operations.md and docs/ocm.md', function () {
  this.timeout(300_000);
  const tmp = mkdtempSync(join(tmpdir(), 'inplace-docs-commands-'));
  const all = DOCS.flatMap((f) => documentedCommands(readFileSync(join(ROOT, f), 'utf8')).map((c) => ({ file: f, c })));
  const runnable = all.filter(({ c }) => !isSynopsis(c));

  it('finds the commands (the extraction itself works)', () => {
    const cs = all.map((x) => x.c);
    expect(cs).to.include('npm start -- --fleet');
    expect(cs.some((c) => c.startsWith('npm run synth -- --image'))).to.equal(true);
    expect(cs).to.include('npm run synth -- --ocm examples/ocm/fleet.yaml');
    expect(cs.some((c) => c.startsWith('npx inplace preview -f examples/plan.yaml'))).to.equal(true);
    expect(cs).not.to.include('inplace.cluster.x-k8s.io/aggregate-to-plan-controller: "true"');
    expect(runnable.length).to.be.greaterThan(20);
  });

  it('every inplace / npm start command parses: the verb exists and takes each flag written (its --help, exit 0)', async () => {
    const failed: string[] = [];
    for (const { file, c } of runnable) {
      if (c.startsWith('npm run synth')) continue;
      const r = await cli(...inplaceArgs(words(concrete(c, tmp))), '--help');
      if (r.code !== 0) failed.push(`${file}: ${c} -> exit ${r.code}: ${r.err.split('\n')[0]}`);
    }
    expect(failed).to.deep.equal([]);
  });

  it('every npm run synth variant writes its manifests (exit 0)', () => {
    const synths = [...new Set(runnable.filter(({ c }) => c.startsWith('npm run synth')).map(({ c }) => concrete(c, tmp)))];
    expect(synths.length).to.be.greaterThan(3);
    const failed: string[] = [];
    // The documented commands, not the environment's image.
    const withoutImage = { ...process.env };
    delete withoutImage.INPLACE_IMAGE;
    for (const [i, c] of synths.entries()) {
      const argv = words(c)
        .slice(3)
        .filter((w) => w !== '--');
      // --clusterctl DIR writes a release instead of dist/manifests; every other run writes to a directory of its own.
      const out = argv.includes('--clusterctl') ? [] : ['--outdir', join(tmp, `out-${i}`)];
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'cdk8s', 'main.ts'), ...argv, ...out], {
        cwd: ROOT,
        encoding: 'utf8',
        env: withoutImage,
      });
      if (r.status !== 0) failed.push(`${c} -> exit ${r.status}: ${r.stderr.split('\n')[0]}`);
    }
    expect(failed).to.deep.equal([]);
  });
});
