// Shared command-line entry of the sample updaters (each folder's main.ts): parse flags, start, stop on signals.
import type { SampleStartOptions, SampleUpdater } from './types.js';

/** Parses `--kubeconfig F --namespace NS --names a,b --leader-elect`. */
export function parseSampleArgs(argv: string[]): SampleStartOptions {
  const opts: SampleStartOptions = {};
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
    else if (a === '--leader-elect') opts.leaderElect = true;
    else throw new Error(`unknown flag ${a}`);
  }
  return opts;
}

/** Runs a sample updater until SIGINT/SIGTERM. */
export async function runSampleMain(u: SampleUpdater, argv: string[]): Promise<void> {
  const running = await u.start(parseSampleArgs(argv));
  const stop = (): void => {
    void running.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
