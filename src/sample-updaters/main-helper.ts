// Shared command-line entry of the sample updaters (each folder's main.ts): parse flags, check, start, stop on signals.
import { serverGitVersion, simulationProblem } from './simulation.js';
import { servedNamesProblem, type SampleStartOptions, type SampleUpdater } from './types.js';

/** What the sample entry points take: the start options plus the node-simulation override. */
export interface SampleArgs extends SampleStartOptions {
  allowRealCluster?: boolean;
}

/** Parses `--kubeconfig F --namespace NS --names a,b --catch-all --allow-real-cluster --leader-elect`. */
export function parseSampleArgs(argv: string[]): SampleArgs {
  const opts: SampleArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--kubeconfig') opts.kubeconfigPath = next();
    else if (a === '--namespace' || a === '-n') opts.namespace = next();
    else if (a === '--names')
      opts.names = next()
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    else if (a === '--catch-all') opts.catchAll = true;
    else if (a === '--allow-real-cluster') opts.allowRealCluster = true;
    else if (a === '--leader-elect') opts.leaderElect = true;
    else throw new Error(`unknown flag ${a}`);
  }
  return opts;
}

/** Why the sample must not start with these arguments against a server of this gitVersion; undefined when it may. */
export function sampleArgsProblem(u: SampleUpdater, a: SampleArgs, gitVersion: () => Promise<string>): Promise<string | undefined> {
  if (u.generic) return Promise.resolve(servedNamesProblem(a));
  if (a.names || a.catchAll) return Promise.resolve(`${u.name} serves its own task kind: --names and --catch-all do not apply`);
  if (!u.simulatesNode) return Promise.resolve(undefined);
  return gitVersion().then((v) => simulationProblem(u.name, v, a.allowRealCluster === true));
}

/** Runs a sample updater until SIGINT/SIGTERM; misuse exits 2 with the reason. */
export async function runSampleMain(u: SampleUpdater, argv: string[]): Promise<void> {
  let args: SampleArgs;
  let problem: string | undefined;
  try {
    args = parseSampleArgs(argv);
    problem = await sampleArgsProblem(u, args, () => serverGitVersion(args.kubeconfigPath));
  } catch (e) {
    problem = (e as Error).message;
    args = {};
  }
  if (problem) {
    process.stderr.write(`error: ${problem}\n`);
    process.exit(2);
  }
  const { allowRealCluster: _force, ...opts } = args;
  const running = await u.start(opts);
  const serves = opts.catchAll ? ' (catch-all: every updater name — demo only)' : opts.names ? ` (names: ${opts.names.join(', ')})` : '';
  process.stderr.write(`sample updater ${u.name} running${serves}${u.simulatesNode ? ' on SIMULATED nodes' : ''}\n`);
  const stop = (): void => {
    void running.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
