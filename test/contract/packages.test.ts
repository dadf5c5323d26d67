// Issue 44's "done when" for the installable packages: `npm pack` makes the SDK and conformance kit tarballs from this
// repository; a fresh project in a temporary directory outside it installs them offline (from the npm cache the
// repository's `npm ci` filled), writes an updater from docs/contract.md's snippet (extracted here, so the doc and the
// test cannot drift), type-checks it with plain `tsc` against the installed declarations, runs the compiled
// JavaScript with plain `node` against the embedded API server, and the installed kit's `inplace-conformance` passes
// it. Nothing of the repository is on the fresh project's module path: no tsx, no paths, no typeRoots.
//
// `npm install --offline <tarballs>` cannot work: it resolves every dependency's version range from the registry's
// package documents, which `npm ci` never fetches (it installs the lockfile's tarballs by integrity). So the fresh
// project gets a lockfile written from the repository's: the tarballs by file and integrity, and for their
// dependencies (and @types/node) exactly the entries the repository locks, i.e. the tarballs `npm ci` cached.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../src/cli/procs.js';
import { conformanceVerb } from '../../src/cli/conformance.js';
import { CONFORMANCE_MAIN_HELP, conformanceMain } from '../../src/contract/conformance/index.js';
import { CONTRACT_VERSION } from '../../src/contract/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const ROOT = projectRoot();
const PACKAGES = { sdk: '@inplace-capi/updater-sdk', kit: '@inplace-capi/conformance' } as const;
const DIRS = { [PACKAGES.sdk]: 'packages/updater-sdk', [PACKAGES.kit]: 'packages/conformance-kit' };
const contractDoc = (): string => readFileSync(join(ROOT, 'docs/contract.md'), 'utf8');
const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

interface LockEntry {
  version?: string;
  link?: boolean;
  dev?: boolean;
  devOptional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [k: string]: unknown;
}
interface Manifest {
  name: string;
  version: string;
  license?: string;
  engines?: Record<string, string>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
}

/** The TypeScript code blocks of the contract doc that import the SDK package. */
function docSnippets(): string[] {
  return [...contractDoc().matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((c) => c.includes(`'${PACKAGES.sdk}'`));
}

/** Runs a command to its end; throws with its output when it does not exit 0. */
function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Runs a command without blocking this process (which serves the embedded API server); its exit code and output. */
function runAsync(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The entries of the repository's lockfile a set of dependencies needs, transitively: `node_modules/...` paths,
 * each dependency looked up the way Node does (nested node_modules first, then up).
 */
function lockClosure(lock: Record<string, LockEntry>, names: string[]): Record<string, LockEntry> {
  const found: Record<string, LockEntry> = {};
  const resolve = (from: string, name: string): string | undefined => {
    for (let base = from; ;) {
      const p = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (lock[p] && !lock[p].link) return p;
      if (!base) return undefined;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
  };
  const visit = (path: string): void => {
    if (found[path]) return;
    const { dev: _d, devOptional: _o, ...entry } = lock[path]!;
    found[path] = entry;
    const optional = (d: string): boolean => d in (entry.optionalDependencies ?? {}) || !!entry.peerDependenciesMeta?.[d]?.optional;
    for (const d of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies })) {
      const p = resolve(path, d);
      if (p) visit(p);
      else if (!optional(d)) throw new Error(`the repository's lockfile has no ${d} for ${path}`);
    }
  };
  for (const n of names) {
    const p = resolve('', n);
    if (!p) throw new Error(`the repository's lockfile has no ${n}`);
    visit(p);
  }
  return found;
}

/** Writes package.json and package-lock.json of a fresh project depending on the tarballs (and @types/node). */
function writeFreshProject(dir: string, tarballs: string[]): void {
  const lock = readJson<{ packages: Record<string, LockEntry> }>(join(ROOT, 'package-lock.json')).packages;
  const typesNode = lock['node_modules/@types/node']!.version!;
  const deps: Record<string, string> = { '@types/node': typesNode };
  const installed: Record<string, LockEntry> = {};
  const needed = ['@types/node'];
  for (const t of tarballs) {
    const m = JSON.parse(run('tar', ['-xzOf', t, 'package/package.json'], dir)) as Manifest;
    deps[m.name] = `file:${t}`;
    installed[`node_modules/${m.name}`] = {
      version: m.version,
      resolved: `file:${t}`,
      integrity: `sha512-${createHash('sha512').update(readFileSync(t)).digest('base64')}`,
      ...(m.license ? { license: m.license } : {}),
      ...(m.dependencies ? { dependencies: m.dependencies } : {}),
      ...(m.bin ? { bin: m.bin } : {}),
      ...(m.engines ? { engines: m.engines } : {}),
    };
    needed.push(...Object.keys(m.dependencies ?? {}));
  }
  const pkg = { name: 'fresh-updater', version: '1.0.0', private: true, type: 'module', dependencies: deps };
  const packages = { '': { name: pkg.name, version: pkg.version, dependencies: deps }, ...installed, ...lockClosure(lock, needed) };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(dir, 'package-lock.json'), `${JSON.stringify({ ...pkg, lockfileVersion: 3, requires: true, packages }, null, 2)}\n`);
}

/** The "Packages" table of docs/contract.md: contract version → package version line (`0.1.x`). */
function versionTable(): Map<string, string> {
  const rows = [...contractDoc().matchAll(/^\| `(v\d+(?:(?:alpha|beta)\d+)?)` \| `(\d+\.\d+)\.x` \|$/gm)];
  return new Map(rows.map((m) => [m[1]!, m[2]!]));
}

describe('the packages follow the contract version (docs/contract.md "Packages")', () => {
  it('both packages carry the version line the doc gives for CONTRACT_VERSION, and the same version', () => {
    const line = versionTable().get(CONTRACT_VERSION);
    expect(line, `docs/contract.md gives the package version of contract ${CONTRACT_VERSION}`).to.be.a('string');
    const versions = Object.values(DIRS).map((d) => readJson<Manifest>(join(ROOT, d, 'package.json')).version);
    for (const v of versions) expect(v, 'package version').to.match(new RegExp(`^${line!.replace('.', '\\.')}\\.\\d+$`));
    expect(new Set(versions).size, 'one version for both packages').to.equal(1);
  });

  it('the workspaces are the packages, and the doc snippet imports the SDK by its package name', () => {
    expect(readJson<{ workspaces?: string[] }>(join(ROOT, 'package.json')).workspaces).to.deep.equal(['packages/*']);
    for (const [name, dir] of Object.entries(DIRS)) expect(readJson<Manifest>(join(ROOT, dir, 'package.json')).name).to.equal(name);
    expect(docSnippets(), 'one snippet imports the SDK package').to.have.length(1);
    expect(contractDoc()).to.not.match(/from '\.\.?\/[^']*contract/);
  });
});

describe("the kit's inplace-conformance command takes the options of inplace conformance", () => {
  /** Runs the command's code with `argv`; its exit code and what it wrote. */
  const main = async (...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await conformanceMain(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };

  it('the same option names, every one in its --help', async () => {
    const help = await main('--help');
    expect(help.code).to.equal(0);
    expect(help.out).to.equal(`${CONFORMANCE_MAIN_HELP}\n`);
    for (const name of Object.keys(conformanceVerb.options)) expect(help.out, `--${name}`).to.include(`--${name}`);
    expect(help.out).to.match(/^Usage: inplace-conformance --kind/);
  });

  it('wrong usage is exit 2 with what is wrong, before connecting to anything', async () => {
    const cases: [string[], RegExp][] = [
      [[], /missing --kind/],
      [['--kind', 'UpdaterUpdateTask', '--output', 'yaml'], /--output must be text or json, got "yaml"/],
      [['--kind', 'UpdaterUpdateTask', '--no-such-option'], /no-such-option/],
      [['--kind', 'UpdaterUpdateTask', '--timeout', '0'], /--timeout must be a positive number of seconds/],
      [['--kind', 'UpdaterUpdateTask', '--task-spec', '{"updatePhase":"aborting"}'], /updatePhase/],
      [['--kind', 'UpdaterUpdateTask', 'extra'], /unexpected argument "extra"/],
    ];
    for (const [argv, why] of cases) {
      const r = await main(...argv, '--kubeconfig', '/nonexistent/kubeconfig');
      expect(r.code, argv.join(' ')).to.equal(2);
      expect(r.err, argv.join(' ')).to.match(why);
    }
  });
});

describe('a fresh project installs the packed SDK and kit, type-checks and runs the doc snippet, and the kit passes it', function () {
  this.timeout(900_000);
  let work: string;
  let project: string;
  let env: TestEnv | undefined;
  let updater: ChildProcess | undefined;
  let output = '';

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'inplace-packages-'));
    project = join(work, 'project');
    mkdirSync(join(project, 'src'), { recursive: true });
    const packed = JSON.parse(
      run('npm', ['pack', '--json', '--pack-destination', work, ...Object.keys(DIRS).flatMap((n) => ['-w', n])], ROOT),
    ) as { name: string; filename: string; files: { path: string }[] }[];
    expect(packed.map((p) => p.name).sort()).to.deep.equal(Object.keys(DIRS).sort());
    for (const p of packed) expect(p.files.map((f) => f.path).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).to.deep.equal([]);
    writeFreshProject(
      project,
      packed.map((p) => join(work, p.filename)),
    );
    run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], project);
    writeFileSync(join(project, 'src', 'updater.ts'), docSnippets()[0]!);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'dist',
          rootDir: 'src',
        },
        include: ['src'],
      }),
    );
  });
  after(async () => {
    if (updater && updater.exitCode === null) {
      const exited = new Promise<void>((r) => updater!.once('exit', () => r()));
      updater.kill('SIGTERM');
      await exited;
    }
    await env?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const tsc = (): ReturnType<typeof spawnSync> =>
    spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project, encoding: 'utf8' });

  it('type-checks with plain tsc against the installed declarations (a wrong use of the SDK or the kit fails)', () => {
    // The kit's library API, as a project using it would call it: the declarations must name real types, not any.
    writeFileSync(
      join(project, 'src', 'kit.ts'),
      `import { conformanceMain, connectKube, formatReport, runConformance, type ConformanceReport } from '${PACKAGES.kit}';
import { CONTRACT_VERSION, RULES, type KubeClient } from '${PACKAGES.sdk}';
export const check = async (given?: KubeClient): Promise<string> => {
  const client: KubeClient = given ?? connectKube({ kubeconfigPath: 'kubeconfig', context: 'c' });
  const r: ConformanceReport = await runConformance({ client, namespace: 'ns', kind: { group: 'g', version: 'v1', kind: 'K', plural: 'ks', namespaced: true } });
  return \`\${CONTRACT_VERSION} \${RULES.length} \${formatReport(r)} \${await conformanceMain(['--help'])}\`;
};
`,
    );
    writeFileSync(join(project, 'src', 'wrong.ts'), `import { progress } from '${PACKAGES.sdk}';\nexport const p = progress('soon');\n`);
    // One tsc run (it takes a minute here): it reports every error, so the wrong use must be the only one.
    const r = tsc();
    expect(r.status, `${r.stdout}`).to.not.equal(0);
    expect(`${r.stdout}`).to.match(/src\/wrong\.ts.*TS2345/);
    expect(`${r.stdout}`.split('\n').filter((l) => l.trim() && !l.includes('src/wrong.ts'))).to.deep.equal([]);
  });

  it('runs the compiled updater with plain node against the embedded API server, and inplace-conformance passes it', async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    const ns = await env.newNamespace('pkg-kit');
    updater = spawn(process.execPath, [join(project, 'dist', 'updater.js')], {
      cwd: project,
      env: { ...process.env, KUBECONFIG: env.kubeconfigPath, LOG_LEVEL: 'info', NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    updater.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    updater.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    // The kit's first wait must not also time the process start.
    await waitFor(() => output.includes('updater started') || updater!.exitCode !== null, {
      timeoutMs: 120_000,
      intervalMs: 100,
      message: 'the updater to start',
    });
    expect(updater.exitCode, output).to.equal(null);
    const bin = join(project, 'node_modules', '.bin', 'inplace-conformance');
    const args = ['--kind', 'UpdaterUpdateTask', '--updater-name', 'ntp-updater', '--field-manager', 'ntp'];
    // Asynchronously: the embedded API server answers from this process's event loop.
    const r = await runAsync(bin, [...args, '--kubeconfig', env.kubeconfigPath, '-n', ns, '--timeout', '60', '-o', 'json'], project);
    expect(r.code, `${r.stdout}\n${r.stderr}\n${output}`).to.equal(0);
    const report = JSON.parse(r.stdout) as { passed: boolean; scenarios: { name: string; result: string }[] };
    expect(report.passed).to.equal(true);
    expect(report.scenarios.find((s) => s.name === 'normal update')?.result).to.equal('run');
    expect(report.scenarios.find((s) => s.name === 'abort')?.result).to.equal('run');
    // Nothing under test came from the repository: both package names resolve into the fresh project's node_modules.
    for (const name of Object.keys(DIRS)) {
      const where = run(process.execPath, ['--input-type=module', '-e', `console.log(import.meta.resolve('${name}'))`], project);
      expect(where.trim(), name).to.match(new RegExp(`^file://${join(project, 'node_modules', name)}/dist/.*\\.js$`));
    }
  });
});
