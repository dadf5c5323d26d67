// `npm run release -- VERSION`: the pure parts (version check, changelog section and its place, SHA256SUMS) and the
// script itself run twice into temp dirs: the expected set of files, checksums that verify, byte-identical output for
// one commit, a metadata.yaml naming the version's series, a changelog section written once; a bad version is refused
// with a clear message and writes nothing.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { PROJECT_ROOT, synthesize } from '../../cdk8s/synth.js';
import {
  CHANGELOG_HEADER,
  changelogSection,
  earlierReleaseTags,
  mergeSummary,
  parseReleaseVersion,
  sha256Sums,
  withChangelogSection,
} from '../../scripts/release-notes.js';
import { envsubst } from './envsubst.js';
import { docsOf } from './manifests.js';

const REPO = 'registry.example.com/inplace-capi';

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

const release = (args: string[]): ReturnType<typeof spawnSync> =>
  spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts', 'release.ts'), ...args], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { ...process.env, INPLACE_IMAGE_REPOSITORY: '' },
  });

describe('release (npm run release -- VERSION)', () => {
  describe('pure parts', () => {
    it('accepts semver with an optional leading v; refuses anything else, saying what is expected', () => {
      expect(parseReleaseVersion('0.2.0')).to.deep.equal({ version: '0.2.0', tag: 'v0.2.0', imageTag: '0.2.0' });
      expect(parseReleaseVersion('v1.0.0-rc.1')).to.deep.equal({ version: '1.0.0-rc.1', tag: 'v1.0.0-rc.1', imageTag: '1.0.0-rc.1' });
      expect(parseReleaseVersion('1.0.0+build.5').imageTag).to.equal('1.0.0_build.5');
      for (const bad of ['1.2', '01.2.3', 'latest', 'v1.2.3.4', '1.2.3-', '1.2.3-01', ' 1.2.3'])
        expect(() => parseReleaseVersion(bad), bad).to.throw(/is not a semantic version: expected MAJOR\.MINOR\.PATCH/);
      expect(() => parseReleaseVersion(undefined)).to.throw(/no VERSION given/);
      expect(() => parseReleaseVersion('x'.repeat(5000)))
        .to.throw()
        .with.property('message')
        .that.has.length.below(400);
    });

    it('earlier release tags are the semver tags before the version, in semver order (pre-releases before their release)', () => {
      const tags = ['v0.1.0', 'v0.10.0', 'v0.2.0', 'v0.2.0-rc.1', 'v0.2.0-rc.10', 'v0.2.0-rc.2', 'latest', 'v1', 'v0.3.0'];
      expect(earlierReleaseTags(tags, '0.3.0')).to.deep.equal(['v0.1.0', 'v0.2.0-rc.1', 'v0.2.0-rc.2', 'v0.2.0-rc.10', 'v0.2.0']);
      expect(earlierReleaseTags(tags, '0.1.0')).to.deep.equal([]);
    });

    it('the changelog section groups the commits by kind and area, lists merge summaries as highlights, and caps an area', () => {
      const commits = [
        { hash: 'a1', subject: 'plan-controller: owners are released after an abort' },
        { hash: 'a2', subject: 'docs: upgrading' },
        { hash: 'a3', subject: 'test: an upgrade mid-plan' },
        { hash: 'a4', subject: 'cdk8s: plans-only clusterctl components' },
        { hash: 'a5', subject: 'a subject without an area' },
        ...Array.from({ length: 14 }, (_, i) => ({ hash: `b${i}`, subject: `local-apiserver: change ${i}` })),
      ];
      const text = changelogSection({
        version: '0.2.0',
        date: '2026-12-05',
        previousTag: 'v0.1.0',
        commits,
        merges: ["Merge branch 'sec' (threat model)", "Merge branch 'cli'", 'merge wip/x: faster watch'],
      });
      const headings = text.split('\n').filter((l) => l.startsWith('#'));
      expect(headings).to.deep.equal([
        '## 0.2.0 (2026-12-05)',
        '### Highlights',
        '### Platform (controllers, API, CLI)',
        '### Development tools (embedded API server, CAPI simulator)',
        '### Deployment and packaging',
        '### Documentation',
        '### Tests',
        '### Other changes',
      ]);
      expect(text).to.include('Changes since v0.1.0 (19 commits).');
      expect(text).to.include('- threat model\n- faster watch\n');
      expect(text).to.include('- **plan-controller**\n  - owners are released after an abort (a1)');
      expect(text).to.include('- a subject without an area (a5)');
      expect(text).to.include('  - change 11 (b11)\n  - and 2 more');
      expect(mergeSummary("Merge branch 'x' (part): y (z)")).to.equal('(part): y (z)');
      expect(mergeSummary("Merge branch 'x'")).to.equal(undefined);
    });

    it('CHANGELOG.md gets the section first; the same version again replaces its section; other sections stay', () => {
      const s1 = '## 0.1.0 (2026-01-01)\n\nfirst\n';
      const s2 = '## 0.2.0 (2026-02-01)\n\nsecond\n';
      const once = withChangelogSection(undefined, '0.1.0', s1);
      expect(once).to.match(/^# Changelog\n\n.*\n\n## 0\.1\.0 \(2026-01-01\)\n\nfirst\n$/s);
      const twice = withChangelogSection(once, '0.2.0', s2);
      expect(twice.indexOf('## 0.2.0')).to.be.below(twice.indexOf('## 0.1.0'));
      expect(withChangelogSection(twice, '0.2.0', s2)).to.equal(twice);
      expect(withChangelogSection(twice, '0.2.0', '## 0.2.0 (2026-02-02)\n\nredone\n')).not.to.include('second');
      // The project's CHANGELOG.md starts with the heading the script writes into a new one.
      expect(readFileSync(join(PROJECT_ROOT, 'CHANGELOG.md'), 'utf8').startsWith(CHANGELOG_HEADER.trimEnd())).to.equal(true);
    });

    it('SHA256SUMS is sha256sum -c format, sorted by path', () => {
      const sums = sha256Sums(
        new Map<string, string | Buffer>([
          ['b.txt', 'b'],
          ['a/x.yaml', Buffer.from('x')],
        ]),
      );
      const hex = (s: string): string => createHash('sha256').update(s).digest('hex');
      expect(sums).to.equal(`${hex('x')}  a/x.yaml\n${hex('b')}  b.txt\n`);
    });
  });

  describe('the script', function () {
    this.timeout(600_000);
    let tmp = '';
    before(() => {
      tmp = mkdtempSync(join(tmpdir(), 'inplace-release-'));
    });
    after(() => rmSync(tmp, { recursive: true, force: true }));

    it('a bad version is refused with a clear message and writes nothing', () => {
      const out = join(tmp, 'refused');
      const changelog = join(tmp, 'refused-CHANGELOG.md');
      for (const args of [['1.2'], ['v1.2.3', 'extra'], [], ['1.2.3', '--image-repository', 'r.example.com/x:tag']]) {
        const r = release([...args, '--outdir', out, '--changelog', changelog]);
        expect(r.status, String(r.stderr)).to.equal(2);
        expect(String(r.stderr))
          .to.match(/^error: /)
          .and.to.include('nothing was written');
        expect(existsSync(out), `${args.join(' ')} wrote ${out}`).to.equal(false);
        expect(existsSync(changelog)).to.equal(false);
      }
      expect(String(release(['1.2', '--outdir', out]).stderr)).to.include(
        'error: VERSION "1.2" is not a semantic version: expected MAJOR.MINOR.PATCH',
      );
    });

    it('writes the artifacts: every variant, clusterctl, CRDs, SBOM, notes; checksums verify; byte-identical when run again', () => {
      const version = '0.3.0-rc.1';
      const changelog = join(tmp, 'CHANGELOG.md');
      const runs = ['one', 'two'].map((name) => {
        const r = release([version, '--outdir', join(tmp, name), '--changelog', changelog, '--image-repository', REPO]);
        expect(r.status, String(r.stderr)).to.equal(0);
        return join(tmp, name, version);
      });
      const [dir, again] = runs as [string, string];
      const files = filesUnder(dir);
      const crds = readdirSync(join(PROJECT_ROOT, 'crds'))
        .filter((f) => f.endsWith('.yaml'))
        .map((f) => `crds/${f}`);
      const workspaces = existsSync(join(PROJECT_ROOT, 'packages'))
        ? readdirSync(join(PROJECT_ROOT, 'packages')).filter((d) => existsSync(join(PROJECT_ROOT, 'packages', d, 'package.json')))
        : [];
      const clusterctl = `clusterctl/runtime-extension-inplace/v${version}`;
      expect(files.filter((f) => !f.startsWith('packages/'))).to.deep.equal(
        [
          'RELEASE-NOTES.md',
          'SHA256SUMS',
          `${clusterctl}/metadata.yaml`,
          `${clusterctl}/runtime-extension-components-plans-only.yaml`,
          `${clusterctl}/runtime-extension-components.yaml`,
          ...crds,
          'manifests/dashboard/00-crds.yaml',
          'manifests/dashboard/10-platform.yaml',
          'manifests/default/00-crds.yaml',
          'manifests/default/10-platform.yaml',
          'manifests/in-place-guard/30-in-place-guard.yaml',
          'manifests/namespace-scoped/00-crds.yaml',
          'manifests/namespace-scoped/10-platform.yaml',
          'manifests/runtime-extension/00-crds.yaml',
          'manifests/runtime-extension/10-platform.yaml',
          'manifests/samples/00-crds.yaml',
          'manifests/samples/10-platform.yaml',
          'manifests/samples/samples/20-sample-updaters.yaml',
          'sbom.cdx.json',
        ].sort(),
      );
      expect(files.filter((f) => f.startsWith('packages/')).length).to.equal(workspaces.length);

      // Checksums: every file but SHA256SUMS itself, each verifying (as sha256sum -c would).
      const sums = readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trimEnd().split('\n');
      expect(sums.map((l) => l.slice(66))).to.deep.equal(files.filter((f) => f !== 'SHA256SUMS'));
      for (const l of sums) {
        const [hex, path] = [l.slice(0, 64), l.slice(66)];
        expect(
          createHash('sha256')
            .update(readFileSync(join(dir, path)))
            .digest('hex'),
          path,
        ).to.equal(hex);
      }
      const check = spawnSync('sha256sum', ['-c', '--quiet', 'SHA256SUMS'], { cwd: dir, encoding: 'utf8' });
      if (!check.error) expect(check.status, check.stdout + check.stderr).to.equal(0);

      // Deterministic: the second run wrote the same bytes.
      expect(filesUnder(again)).to.deep.equal(files);
      for (const f of files) expect(readFileSync(join(again, f)).equals(readFileSync(join(dir, f))), f).to.equal(true);

      // metadata.yaml names the version's series with the contract clusterctl checks.
      const meta = parse(readFileSync(join(dir, clusterctl, 'metadata.yaml'), 'utf8')) as {
        kind: string;
        releaseSeries: { major: number; minor: number; contract: string }[];
      };
      expect(meta.kind).to.equal('Metadata');
      expect(meta.releaseSeries).to.deep.include({ major: 0, minor: 3, contract: 'v1beta2' });

      // The manifests use REPO:VERSION; the namespace-scoped ones become synth's for a namespace once substituted.
      expect(readFileSync(join(dir, 'manifests/default/10-platform.yaml'), 'utf8')).to.include(`image: ${REPO}:${version}`);
      const scoped = ['00-crds.yaml', '10-platform.yaml'].map((name) => ({
        name,
        content: envsubst(readFileSync(join(dir, 'manifests/namespace-scoped', name), 'utf8'), { INPLACE_WATCH_NAMESPACE: 'fleet-a' }),
      }));
      expect(docsOf(scoped)).to.deep.equal(docsOf(synthesize({ image: `${REPO}:${version}`, watchNamespace: 'fleet-a' })));

      // SBOM: CycloneDX of production dependencies only, timestamp from the commit.
      const sbom = JSON.parse(readFileSync(join(dir, 'sbom.cdx.json'), 'utf8')) as {
        bomFormat: string;
        metadata: { timestamp: string; component: { name: string } };
        components: { name: string }[];
      };
      expect(sbom.bomFormat).to.equal('CycloneDX');
      const names = sbom.components.map((c) => c.name);
      expect(names).to.include.members(['@kubernetes/client-node', 'cdk8s', 'zod']);
      expect(names).not.to.include.members(['mocha']);
      expect(names).not.to.include('typescript');
      const commitDate = spawnSync('git', ['log', '-1', '--format=%cI'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).stdout.trim();
      expect(sbom.metadata.timestamp).to.equal(new Date(commitDate).toISOString());
      expect(sbom.metadata.component.name).to.equal('inplace-capi');

      // The changelog got the section once, though the release ran twice; the notes are that section.
      const text = readFileSync(changelog, 'utf8');
      expect(text.match(new RegExp(`^## ${version.replace(/\./g, '\\.')} `, 'gm'))).to.have.length(1);
      expect(text).to.include(readFileSync(join(dir, 'RELEASE-NOTES.md'), 'utf8').trimEnd());
      expect(statSync(join(dir, 'RELEASE-NOTES.md')).size).to.be.above(100);
    });
  });
});
