// Pure parts of `npm run release` (scripts/release.ts): the version check, the changelog section built from commit
// subjects, its place in CHANGELOG.md, and the SHA256SUMS text. No I/O here, so that the release script's output is a
// function of the commit alone and the tests can judge these parts without git.
import { createHash } from 'node:crypto';

/** A release version: semver 2.0 (MAJOR.MINOR.PATCH, optional -pre-release and +build), an optional leading v dropped. */
export interface ReleaseVersion {
  /** Without the v: the directory under dist/release/ and the CHANGELOG heading. */
  readonly version: string;
  /** With the v: the git tag and clusterctl's version directory. */
  readonly tag: string;
  /** The container image tag: the version with `+` (not allowed in a tag) as `_`. */
  readonly imageTag: string;
}

const SEMVER =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** Parses a release version; throws naming what is wrong and what is expected. */
export function parseReleaseVersion(text: string | undefined): ReleaseVersion {
  if (text === undefined || text === '') throw new Error('no VERSION given: npm run release -- VERSION (semver, e.g. 0.2.0 or 1.0.0-rc.1)');
  const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
  if (text.length > 128 || !SEMVER.test(text))
    throw new Error(
      `VERSION "${shown}" is not a semantic version: expected MAJOR.MINOR.PATCH with an optional -pre-release and +build (e.g. 0.2.0, 1.0.0-rc.1; a leading v is allowed), without leading zeros`,
    );
  const version = text.replace(/^v/, '');
  return { version, tag: `v${version}`, imageTag: version.replace(/\+/g, '_') };
}

/** Compares two semver versions (without build metadata's effect), as semver 2.0 orders them. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): { core: number[]; pre: string[] } => {
    const m = SEMVER.exec(v);
    if (!m) throw new Error(`not a semantic version: ${v}`);
    return { core: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] === undefined ? [] : m[4].split('.') };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return x.core[i]! - y.core[i]!;
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.min(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i]!;
    const q = y.pre[i]!;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return x.pre.length - y.pre.length;
}

/** The release tags (`vX.Y.Z...`) among `tags` that come before `version`, oldest first; other tags are ignored. */
export function earlierReleaseTags(tags: readonly string[], version: string): string[] {
  return tags
    .filter((t) => t.startsWith('v') && SEMVER.test(t) && compareVersions(t.slice(1), version) < 0)
    .sort((a, b) => compareVersions(a.slice(1), b.slice(1)));
}

/** One commit as the changelog reads it. */
export interface Commit {
  /** Abbreviated hash. */
  readonly hash: string;
  /** The subject line. */
  readonly subject: string;
}

/** The changelog's groups, in the order they are written; the first whose test matches a commit's area takes it. */
const GROUPS: readonly { readonly title: string; readonly test: RegExp }[] = [
  { title: 'Documentation', test: /^(docs?\b|readme\b|design\b|architecture\b|contract\b|.*\.md$)/i },
  { title: 'Tests', test: /^(tests?\b|test\/|e2e\b|reliability\b|verification\b)/i },
  { title: 'Benchmarks', test: /^(bench|scaling)/i },
  { title: 'Development tools (embedded API server, CAPI simulator)', test: /^(local-apiserver|local api server|capi-sim|tools\b)/i },
  { title: 'Deployment and packaging', test: /^(cdk8s|synth|clusterctl|release|dockerfile|manifests|image|packages?\b)/i },
];
const PLATFORM = 'Platform (controllers, API, CLI)';
const OTHER = 'Other changes';
/** Entries listed per area; the rest are counted, so that a first release does not list a thousand lines. */
const PER_AREA = 12;

/**
 * The summary a merge's subject carries: `Merge branch 'x' (summary)`, `Merge branch 'x': summary` or
 * `merge x: summary`; undefined for a bare `Merge branch 'x'`.
 */
export function mergeSummary(subject: string): string | undefined {
  const m = /^Merge branch '[^']+'(?: into \S+)?(.*)$/.exec(subject) ?? /^merge \S+?:(.*)$/i.exec(subject);
  let rest = (m?.[1] ?? '').replace(/^[\s:]+/, '').trim();
  // Unwrap one pair of parentheses around the whole summary, only when they match each other.
  if (rest.startsWith('(') && rest.endsWith(')')) {
    let depth = 0;
    let outer = true;
    for (let i = 0; i < rest.length; i++) {
      depth += rest[i] === '(' ? 1 : rest[i] === ')' ? -1 : 0;
      if (depth === 0 && i < rest.length - 1) outer = false;
    }
    if (outer) rest = rest.slice(1, -1).trim();
  }
  return rest === '' ? undefined : rest;
}

/** `area: text` → area (at most 40 characters, no colon), else undefined. */
const areaOf = (subject: string): string | undefined => /^([^:]{1,40}): \S/.exec(subject)?.[1]?.trim();

/**
 * The CHANGELOG.md section of a release: a heading with the version and the commit date, what it covers, the
 * highlights (the summaries of merged branches, "Merge branch 'x' (summary)"), then the other commits grouped
 * (Platform, Deployment and packaging, ..., Documentation, Tests) and, inside a group, by area (the `area:` prefix of
 * the subject), at most PER_AREA entries per area.
 */
export function changelogSection(o: {
  version: string;
  /** Date of the newest commit listed, YYYY-MM-DD (not HEAD's: see scripts/release.ts on CHANGELOG.md commits). */
  date: string;
  /** The previous release tag, if any. */
  previousTag: string | undefined;
  /** Commits since the previous tag (or all), newest first, merges excluded. */
  commits: readonly Commit[];
  /** Subjects of the merges on the first-parent line since the previous tag, newest first. */
  merges: readonly string[];
}): string {
  const out: string[] = [`## ${o.version} (${o.date})`, ''];
  out.push(
    o.previousTag === undefined
      ? `First release: every change (${o.commits.length} commits).`
      : `Changes since ${o.previousTag} (${o.commits.length} commits).`,
    '',
  );
  const highlights = o.merges.map(mergeSummary).filter((h) => h !== undefined);
  if (highlights.length > 0) out.push('### Highlights', '', ...highlights.map((h) => `- ${h}`), '');
  const byGroup = new Map<string, Map<string, Commit[]>>();
  for (const c of o.commits) {
    const area = areaOf(c.subject);
    const group = area === undefined ? OTHER : (GROUPS.find((g) => g.test.test(area))?.title ?? PLATFORM);
    const key = area?.toLowerCase() ?? '';
    const areas = byGroup.get(group) ?? new Map<string, Commit[]>();
    areas.set(key, [...(areas.get(key) ?? []), c]);
    byGroup.set(group, areas);
  }
  for (const title of [
    PLATFORM,
    ...GROUPS.map((g) => g.title).filter((t) => !/Documentation|Tests/.test(t)),
    'Documentation',
    'Tests',
    OTHER,
  ]) {
    const areas = byGroup.get(title);
    if (!areas) continue;
    out.push(`### ${title}`, '');
    for (const [area, commits] of [...areas].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const line = (c: Commit): string => {
        const text = area === '' ? c.subject : c.subject.slice(c.subject.indexOf(':') + 1).trim();
        return `${text.length > 300 ? `${text.slice(0, 300)}...` : text} (${c.hash})`;
      };
      const shown = commits.slice(0, PER_AREA).map(line);
      const more = commits.length > PER_AREA ? [`and ${commits.length - PER_AREA} more`] : [];
      if (area === '') out.push(...[...shown, ...more].map((l) => `- ${l}`));
      else out.push(`- **${area}**`, ...[...shown, ...more].map((l) => `  - ${l}`));
    }
    out.push('');
  }
  return out.join('\n');
}

/** The heading CHANGELOG.md starts with. */
export const CHANGELOG_HEADER =
  '# Changelog\n\nOne section per release, newest first, written by `npm run release -- VERSION` from the commits since the previous release tag (docs/operations.md, "Releasing").\n\n';

/**
 * CHANGELOG.md with `section` as its first release section: a section of the same version already there is replaced
 * (so a release run twice writes the same file), every other section is kept as it is.
 */
export function withChangelogSection(existing: string | undefined, version: string, section: string): string {
  const text = existing === undefined || existing.trim() === '' ? CHANGELOG_HEADER : existing;
  const first = text.search(/^## /m);
  const head = first < 0 ? text : text.slice(0, first);
  const body = first < 0 ? '' : text.slice(first);
  const sections = body.split(/^(?=## )/m).filter((s) => s !== '');
  const heading = `## ${version} `;
  const kept = sections.filter((s) => !s.startsWith(heading));
  const block = section.endsWith('\n') ? section : `${section}\n`;
  return `${head.endsWith('\n\n') ? head : `${head.trimEnd()}\n\n`}${[block, ...kept].join('\n').replace(/\n{3,}/g, '\n\n')}`;
}

/** A SHA256SUMS file (`sha256sum -c` reads it): one `<hex>  <path>` line per file, sorted by path. */
export function sha256Sums(files: ReadonlyMap<string, Buffer | string>): string {
  return [...files.keys()]
    .sort()
    .map((p) => `${createHash('sha256').update(files.get(p)!).digest('hex')}  ${p}\n`)
    .join('');
}
