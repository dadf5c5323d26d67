// `inplace updater <name>`: runs one sample updater (written with the updater SDK, as a third party would).
import { existsSync } from 'node:fs';
import { stopRequested } from './procs.js';
import { CliError, ExitCode, flag, positionals, str, UsageError, type Verb } from './verb.js';

const NAMES = ['reference', 'kubernetes-version', 'os-image'] as const;

/** `inplace updater`. */
export const updaterVerb: Verb = {
  name: 'updater',
  summary: 'Run a sample updater',
  help: `Usage: inplace updater <reference|kubernetes-version|os-image> [options]

Runs one sample updater until SIGINT/SIGTERM:
  reference           serves generic UpdaterUpdateTasks (every updater name unless --names narrows it);
                      parameters.durationSeconds / parameters.failWith simulate duration and failure
  kubernetes-version  serves KubernetesVersionUpdateTasks (from KubernetesVersionUpdateTaskTemplates)
  os-image            serves OSImageUpdateTasks (from OSImageUpdateTaskTemplates)

Options:
  --names a,b         generic updater names to serve (reference updater)
  -n, --namespace NS  watch only this namespace (default: all namespaces)
  --leader-elect      take part in Lease leader election
  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster)`,
  options: {
    kubeconfig: { type: 'string' },
    names: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    'leader-elect': { type: 'boolean' },
    // Accepted for symmetry with `run` (the Deployments pass them); the sample updaters serve no HTTP.
    'metrics-port': { type: 'string' },
    'health-port': { type: 'string' },
  },
  async run(args, io) {
    const [name] = positionals(args, ['updater']);
    if (!(NAMES as readonly string[]).includes(name!)) throw new UsageError(`unknown updater "${name}"; sample updaters are ${NAMES.join(', ')}`);
    const kubeconfigPath = str(args, 'kubeconfig');
    if (kubeconfigPath !== undefined && !existsSync(kubeconfigPath)) {
      throw new CliError(`kubeconfig "${kubeconfigPath}" does not exist`, 'pass the path of an existing kubeconfig');
    }
    const names = str(args, 'names')?.split(',').map((s) => s.trim()).filter((s) => s);
    const { sampleUpdaters } = await import('../sample-updaters/index.js');
    const updater = sampleUpdaters[name as (typeof NAMES)[number]];
    const namespace = str(args, 'namespace');
    const running = await updater.start({
      ...(kubeconfigPath ? { kubeconfigPath } : {}),
      ...(namespace ? { namespace } : {}),
      ...(names && names.length > 0 ? { names } : {}),
      leaderElect: flag(args, 'leader-elect'),
    });
    io.err(`updater ${name} running${names ? ` (names: ${names.join(', ')})` : ''}\n`);
    await stopRequested(io.signal);
    await running.stop();
    return ExitCode.ok;
  },
};
