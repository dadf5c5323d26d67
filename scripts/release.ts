// `npm run release -- VERSION [--outdir DIR] [--image-repository REPO] [--changelog FILE]`: the versioned artifacts
// of a release under dist/release/VERSION/ (docs/operations.md, "Releasing"), and its CHANGELOG.md section.
// Deterministic: every byte comes from the commit (manifests, CRDs, lockfile, git log) and its commit date, never
// from the clock or the checkout's path, so that anyone can rebuild a release and compare SHA256SUMS.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
// The synthesis modules load cdk8s (seconds): imported once the arguments are known good, so a refusal is immediate.
import type * as Charts from '../cdk8s/charts.js';
import type * as Clusterctl from '../cdk8s/clusterctl.js';
import type * as Guard from '../cdk8s/in-place-guard.js';
import type * as Synth from '../cdk8s/synth.js';
import {
  changelogSection,
  earlierReleaseTags,
  parseReleaseVersion,
  sha256Sums,
  withChangelogSection,
  type Commit,
} from './release-notes.js';

const USAGE = `Usage: npm run release -- VERSION [--outdir DIR] [--image-repository REPO] [--changelog FILE]

Writes the artifacts of release VERSION (semver: 0.2.0, 1.0.0-rc.1; a leading v is allowed) to DIR/VERSION/ and
prepends its section to the changelog (docs/operations.md, "Releasing"):
  manifests/<variant>/      npm run synth's variants: default, namespace-scoped (\${INPLACE_WATCH_NAMESPACE}),
                            runtime-extension, dashboard, samples, in-place-guard (judging by examples/hooks/updaters.yaml)
  clusterctl/runtime-extension-inplace/vVERSION/
                            metadata.yaml and the components files (with and without the runtime extension)
  crds/                     the CustomResourceDefinitions
  sbom.cdx.json             CycloneDX SBOM of the image's npm dependencies (production only, from package-lock.json)
  packages/                 npm pack of each workspace under packages/, when there are any
  RELEASE-NOTES.md          this release's changelog section
  SHA256SUMS                sha256sum -c SHA256SUMS checks every file above
  --outdir DIR              default: dist/release
  --image-repository REPO   the image of the manifests is REPO:VERSION (default: $INPLACE_IMAGE_REPOSITORY, else
                            inplace-capi with a warning: no registry)
  --changelog FILE          default: CHANGELOG.md of the project`;

/** The sentinel of the namespace-scoped variant's watched namespace, replaced by a variable after synthesis. */
const WATCH_SENTINEL = 'release-sentinel-watch';
/** The variable of that namespace (envsubst '$INPLACE_WATCH_NAMESPACE' < file | kubectl apply -f -). */
const WATCH_VARIABLE = '${INPLACE_WATCH_NAMESPACE}';
/** The namespaces allowed to call the runtime extension's hooks in its variant (Cluster API's defaults). */
const CAPI_CALLERS = ['capi-system', 'capi-kubeadm-control-plane-system'];

/** The project root (scripts/ lives directly under it). */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The synthesis modules. */
interface Modules {
  charts: typeof Charts;
  clusterctl: typeof Clusterctl;
  guard: typeof Guard;
  synth: typeof Synth;
}

/** An image repository: an optional registry host (with port), then lowercase path components; no tag, no digest. */
const REPOSITORY =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;

const git = (...args: string[]): string => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });

/** The manifests of every variant, by path under manifests/. */
function manifestVariants(image: string, m: Modules): Map<string, string> {
  const { synthesize, sampleUpdaterWorkloads, DEFAULTS } = m.synth;
  const out = new Map<string, string>();
  const add = (variant: string, files: readonly Synth.ManifestFile[]): void => {
    for (const f of files) out.set(`manifests/${variant}/${f.name}`, f.content);
  };
  add('default', synthesize({ image }));
  const scoped = synthesize({ image, watchNamespace: WATCH_SENTINEL }).map((f) => {
    if (!f.content.includes(WATCH_SENTINEL) && !f.name.startsWith('00-')) throw new Error(`internal: no watched namespace in ${f.name}`);
    const content = f.content.split(WATCH_SENTINEL).join(WATCH_VARIABLE);
    if (content.includes('release-sentinel')) throw new Error('internal: a sentinel was left in the namespace-scoped manifests');
    return { name: f.name, content };
  });
  add('namespace-scoped', scoped);
  add('runtime-extension', synthesize({ image, runtimeExtension: { callerNamespaceSelector: m.charts.callerNamespaces(CAPI_CALLERS) } }));
  add('dashboard', synthesize({ image, dashboard: true }));
  add('samples', synthesize({ image, updaters: sampleUpdaterWorkloads() }));
  const updaters = parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'hooks', 'updaters.yaml'), 'utf8')).map(
    (d) => d.toJS() as unknown,
  );
  add('in-place-guard', [
    m.guard.synthesizeGuard({ covers: m.guard.guardCoversOf(updaters), namespace: DEFAULTS.namespace, instance: DEFAULTS.instance }),
  ]);
  return out;
}

/**
 * The SBOM of the image's npm dependencies: `npm sbom` of package-lock.json without dev dependencies (what the
 * Dockerfile's `npm ci` + `npm prune --omit=dev` installs), offline. What npm fills from the clock and the checkout
 * (timestamp, random serial number, the directory's name as the root's name) is set from the commit instead.
 */
function sbom(commitDate: string, packageName: string): string {
  let text: string;
  try {
    text = execFileSync('npm', ['sbom', '--omit', 'dev', '--sbom-format', 'cyclonedx', '--package-lock-only', '--offline'], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    const stderr = String((e as { stderr?: unknown }).stderr ?? '').slice(0, 2000);
    throw new Error(`npm sbom failed (it needs npm >= 10.1 and a package-lock.json): ${stderr || (e as Error).message}`);
  }
  const doc = JSON.parse(text) as { serialNumber?: string; metadata?: { timestamp?: string; component?: { name?: string } } };
  if (doc.metadata) {
    doc.metadata.timestamp = commitDate;
    if (doc.metadata.component) doc.metadata.component.name = packageName;
  }
  delete doc.serialNumber;
  const body = JSON.stringify(doc, null, 2);
  // A serial number derived from the content: stable for one commit, different for different content (RFC 4122 form).
  const h = sha256Sums(new Map([['sbom', body]])).slice(0, 32);
  const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  return `${JSON.stringify({ ...doc, serialNumber: `urn:uuid:${uuid}` }, null, 2)}\n`;
}

/** `npm pack` of each workspace under packages/ (found when the release runs; none yet is fine), by path. */
function workspaceTarballs(): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const root = join(PROJECT_ROOT, 'packages');
  if (!existsSync(root)) return out;
  const dirs = readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'package.json')))
    .map((d) => d.name)
    .sort();
  if (dirs.length === 0) return out;
  const dest = mkdtempSync(join(tmpdir(), 'inplace-release-pack-'));
  try {
    for (const d of dirs) {
      const name = (JSON.parse(readFileSync(join(root, d, 'package.json'), 'utf8')) as { name?: string }).name;
      if (!name) throw new Error(`packages/${d}/package.json has no name`);
      const packed = JSON.parse(
        execFileSync('npm', ['pack', '-w', name, '--pack-destination', dest, '--json'], {
          cwd: PROJECT_ROOT,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      ) as { filename: string }[];
      for (const p of packed) out.set(`packages/${p.filename}`, readFileSync(join(dest, p.filename)));
    }
  } finally {
    rmSync(dest, { recursive: true, force: true });
  }
  return out;
}

async function main(): Promise<number> {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      allowPositionals: true,
      options: {
        outdir: { type: 'string' },
        'image-repository': { type: 'string' },
        changelog: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Every check comes before the first write: a refused release leaves no directory and no changelog edit behind.
  const problems: string[] = [];
  if (positionals.length > 1) problems.push(`one VERSION expected, got ${positionals.length}: ${positionals.slice(0, 5).join(' ')}`);
  let v;
  try {
    v = parseReleaseVersion(positionals[0]);
  } catch (e) {
    problems.push((e as Error).message);
  }
  const repository = values['image-repository'] ?? (process.env['INPLACE_IMAGE_REPOSITORY'] || 'inplace-capi');
  const image = v ? `${repository}:${v.imageTag}` : '';
  if (!REPOSITORY.test(repository))
    problems.push(
      `--image-repository must be a repository without tag or digest (e.g. ghcr.io/ORG/inplace-capi), got "${repository.slice(0, 200)}"`,
    );
  if (problems.length > 0 || !v) {
    process.stderr.write(`${problems.map((p) => `error: ${p}`).join('\n')}\nnothing was written\n\n${USAGE}\n`);
    return 2;
  }
  const [charts, clusterctl, guard, synth] = await Promise.all([
    import('../cdk8s/charts.js'),
    import('../cdk8s/clusterctl.js'),
    import('../cdk8s/in-place-guard.js'),
    import('../cdk8s/synth.js'),
  ]);
  const modules: Modules = { charts, clusterctl, guard, synth };
  const warning = synth.imageWarning(image);
  if (warning) process.stderr.write(`warning: ${warning}\n`);
  if (git('status', '--porcelain', '--untracked-files=no').trim() !== '')
    process.stderr.write('warning: the working tree has uncommitted changes: the artifacts are not those of the commit\n');

  const commit = git('rev-parse', '--short=12', 'HEAD').trim();
  const commitDate = new Date(git('log', '-1', '--format=%cI', 'HEAD').trim()).toISOString();
  const tags = git('tag', '--merged', 'HEAD', '--list', 'v*').split('\n').filter(Boolean);
  const earlier = earlierReleaseTags(tags, v.version);
  const previousTag = earlier[earlier.length - 1];
  const range = previousTag === undefined ? ['HEAD'] : [`${previousTag}..HEAD`];
  // Commits that change only CHANGELOG.md are left out, and the section's date is that of the newest commit listed:
  // so the commit of the changelog itself (tagged, then released again) yields the same section, a clean tree.
  const notChangelog = ['--', '.', ':(exclude)CHANGELOG.md'];
  const commits: Commit[] = git('log', '--no-merges', '--full-history', '--abbrev=12', '--format=%h%x1f%s', ...range, ...notChangelog)
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [hash, subject] = l.split('\x1f');
      return { hash: hash!, subject: subject ?? '' };
    });
  const merges = git('log', '--merges', '--first-parent', '--format=%s', ...range, ...notChangelog)
    .split('\n')
    .filter(Boolean);
  const newest = git('log', '-1', '--format=%cI', ...range, ...notChangelog).trim();
  const date = new Date(newest || commitDate).toISOString().slice(0, 10);
  const section = changelogSection({ version: v.version, date, previousTag, commits, merges });
  const packageName = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { name: string }).name;

  const files = new Map<string, Buffer | string>();
  try {
    for (const [p, c] of manifestVariants(image, modules)) files.set(p, c);
    for (const f of clusterctl.clusterctlRelease({ version: v.tag, image, previousVersions: earlier }))
      files.set(`clusterctl/${clusterctl.CLUSTERCTL_PROVIDER_LABEL}/${v.tag}/${f.name}`, f.content);
    for (const f of readdirSync(join(PROJECT_ROOT, 'crds'))
      .filter((n) => n.endsWith('.yaml'))
      .sort())
      files.set(`crds/${f}`, readFileSync(join(PROJECT_ROOT, 'crds', f)));
    files.set('sbom.cdx.json', sbom(commitDate, packageName));
    for (const [p, c] of workspaceTarballs()) files.set(p, c);
    files.set('RELEASE-NOTES.md', `${section.trimEnd()}\n`);
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\nnothing was written\n`);
    return 1;
  }

  const dir = resolve(values.outdir ?? join(PROJECT_ROOT, 'dist', 'release'), v.version);
  rmSync(dir, { recursive: true, force: true });
  for (const [p, c] of files) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), c);
  }
  writeFileSync(join(dir, 'SHA256SUMS'), sha256Sums(files));
  const changelog = resolve(values.changelog ?? join(PROJECT_ROOT, 'CHANGELOG.md'));
  writeFileSync(changelog, withChangelogSection(existsSync(changelog) ? readFileSync(changelog, 'utf8') : undefined, v.version, section));
  const show = (p: string): string => relative(process.cwd(), p) || p;
  process.stdout.write(
    `release ${v.version} of commit ${commit} (${commitDate}): ${files.size + 1} files in ${show(dir)}/, ` +
      `changes since ${previousTag ?? 'the first commit'} (${commits.length} commits) in ${show(changelog)}\n` +
      `verify with: (cd ${show(dir)} && sha256sum -c SHA256SUMS)\n`,
  );
  return 0;
}

process.exitCode = await main();
