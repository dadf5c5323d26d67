// The `inplace` command (also `kubectl inplace`): dispatches to one verb module, loaded on demand so a verb
// only pays for what it imports (status does not load the controllers, run does not load the local API server).
import { safeLines, safeText } from './safe-text.js';
import { ExitCode, isCliError, isUsageError, parseVerbArgs, type Io, type Verb } from './verb.js';

/** A verb in the registry: listed in help without loading its module. */
interface VerbEntry {
  name: string;
  summary: string;
  hidden?: boolean;
  load(): Promise<Verb>;
}

/** Every verb, in help order. */
export const VERBS: readonly VerbEntry[] = [
  {
    name: 'demo',
    summary: 'Run the whole platform on a local API server and update a demo cluster (npm start)',
    load: async () => (await import('./demo.js')).demoVerb,
  },
  {
    name: 'run',
    // Spelt out (not read from src/components.ts, which help must not load); test/cli/cli.test.ts checks it is complete.
    summary:
      'Run controllers (plan-controller, campaign-controller, machine-task-controller, mhc-extension, runtime-extension) against a cluster',
    load: async () => (await import('./run.js')).runVerb,
  },
  {
    name: 'updater',
    summary: 'Run a sample updater (reference, kubernetes-version, os-image)',
    load: async () => (await import('./updater.js')).updaterVerb,
  },
  {
    name: 'preview',
    summary: 'Show what a plan, or Cluster API with a KCP / MachineDeployment change, would do, without changing anything',
    load: async () => (await import('./preview.js')).previewVerb,
  },
  {
    name: 'status',
    summary: 'Show a plan as a tree: targets, machines, tasks',
    load: async () => (await import('./status.js')).statusVerb,
  },
  {
    name: 'dashboard',
    summary: 'Serve a live, read-only web page of the campaigns, plans and machines (waves, gates, failures, progress)',
    load: async () => (await import('./dashboard.js')).dashboardVerb,
  },
  { name: 'abort', summary: 'Abort a plan', load: async () => (await import('./abort.js')).abortVerb },
  {
    name: 'revert',
    summary: 'Build (--apply: create) a plan that puts back the values a finished plan committed',
    load: async () => (await import('./revert.js')).revertVerb,
  },
  { name: 'pause', summary: 'Pause a plan (no new machines start)', load: async () => (await import('./pause.js')).pauseVerb },
  { name: 'resume', summary: 'Resume a paused plan', load: async () => (await import('./resume.js')).resumeVerb },
  {
    name: 'conformance',
    summary: 'Check an updater against the updater contract',
    load: async () => (await import('./conformance.js')).conformanceVerb,
  },
  {
    name: 'local-apiserver',
    summary: 'Start the embedded local API server and write a kubeconfig',
    load: async () => (await import('./local-apiserver.js')).localApiserverVerb,
  },
  {
    name: 'capi-sim',
    summary: 'Simulate the Cluster API controllers (demo internals)',
    hidden: true,
    load: async () => (await import('./capi-sim.js')).capiSimVerb,
  },
];

/** The command's help. */
export function mainHelp(): string {
  const shown = VERBS.filter((v) => !v.hidden);
  const w = Math.max(...shown.map((v) => v.name.length));
  return `inplace — in-place updates of Cluster API machines through InPlaceUpdatePlans

Usage: inplace <command> [options]        (also: kubectl inplace <command> [options])

Commands:
${shown.map((v) => `  ${v.name.padEnd(w)}  ${v.summary}`).join('\n')}

Run \`inplace <command> --help\` for the options of a command.
Exit codes: 0 success, 1 failure (not found, unreachable, plan failed), 2 wrong usage.
`;
}

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    (name === undefined ? io.err : io.out)(mainHelp());
    return name === undefined ? ExitCode.usage : ExitCode.ok;
  }
  if (name === '--version' || name === 'version') {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { projectRoot } = await import('./procs.js');
    const pkg = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
    io.out(`inplace ${pkg.version}\n`);
    return ExitCode.ok;
  }
  const entry = VERBS.find((v) => v.name === name);
  if (!entry) {
    const near = VERBS.filter((v) => !v.hidden && (v.name.startsWith(name.slice(0, 2)) || name.startsWith(v.name.slice(0, 3)))).map(
      (v) => v.name,
    );
    io.err(`error: unknown command "${safeText(name)}"${near.length ? ` (did you mean ${near.join(' or ')}?)` : ''}\n\n${mainHelp()}`);
    return ExitCode.usage;
  }
  const verb = await entry.load();
  try {
    const args = parseVerbArgs(verb, rest);
    if (args.values.help === true) {
      io.out(`${verb.help}\n`);
      return ExitCode.ok;
    }
    return await verb.run(args, io);
  } catch (e) {
    // Matched by name: a verb module may be loaded through another module instance (loaders, dist vs src).
    if (isUsageError(e)) {
      io.err(`error: ${safeLines(e.message)}\n\n${verb.help}\n`);
      return ExitCode.usage;
    }
    if (isCliError(e)) {
      // Error messages often quote the API server, and through it the cluster's objects.
      io.err(`error: ${safeLines(e.message)}\n${e.hint ? `  ${safeLines(e.hint)}\n` : ''}`);
      return e.exitCode;
    }
    io.err(`error: inplace ${name} failed: ${safeLines(e instanceof Error ? (e.stack ?? e.message) : String(e))}\n`);
    return ExitCode.failure;
  }
}
