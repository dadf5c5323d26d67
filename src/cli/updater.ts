// `inplace updater <name>`: runs one sample updater (written with the updater SDK, as a third party would).
import { existsSync } from 'node:fs';
import { stopRequested } from './procs.js';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { startHealthServer, type HealthServer } from '../runtime/index.js';
import { CliError, concurrencyOption, ExitCode, flag, portOption, positionals, str, UsageError, type Verb } from './verb.js';

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
  --concurrency N     tasks reconciled in parallel (default 4; raise it for large fleets)
  --metrics-port N    serve Prometheus /metrics (process metrics) on this port (default: off)
  --health-port N     serve /healthz and /readyz (ready once the updater runs) on this port (default: off)
  --bind-address ADDR address the metrics and health servers listen on (default: every interface)
  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster)`,
  options: {
    kubeconfig: { type: 'string' },
    names: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    'leader-elect': { type: 'boolean' },
    concurrency: { type: 'string' },
    'metrics-port': { type: 'string' },
    'health-port': { type: 'string' },
    'bind-address': { type: 'string' },
  },
  async run(args, io) {
    const [name] = positionals(args, ['updater']);
    if (!(NAMES as readonly string[]).includes(name!))
      throw new UsageError(`unknown updater "${name}"; sample updaters are ${NAMES.join(', ')}`);
    const kubeconfigPath = str(args, 'kubeconfig');
    if (kubeconfigPath !== undefined && !existsSync(kubeconfigPath)) {
      throw new CliError(`kubeconfig "${kubeconfigPath}" does not exist`, 'pass the path of an existing kubeconfig');
    }
    const metricsPort = portOption(args, 'metrics-port');
    const healthPort = portOption(args, 'health-port');
    const concurrency = concurrencyOption(args);
    const names = str(args, 'names')
      ?.split(',')
      .map((s) => s.trim())
      .filter((s) => s);
    const { sampleUpdaters } = await import('../sample-updaters/index.js');
    const updater = sampleUpdaters[name as (typeof NAMES)[number]];
    const namespace = str(args, 'namespace');
    // The Deployments probe every pod: the updater process serves the same endpoints as the controllers.
    let started = false;
    const servers: HealthServer[] = [];
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'inplace_' });
    const host = str(args, 'bind-address') ? { host: str(args, 'bind-address') } : {};
    if (metricsPort !== undefined) servers.push(await startHealthServer({ port: metricsPort, registry, isReady: () => started, ...host }));
    // The probe port serves the probes only: metrics are served where --metrics-port says, or nowhere.
    if (healthPort !== undefined && healthPort !== metricsPort)
      servers.push(await startHealthServer({ port: healthPort, isReady: () => started, ...host }));
    const running = await updater.start({
      ...(kubeconfigPath ? { kubeconfigPath } : {}),
      ...(namespace ? { namespace } : {}),
      ...(names && names.length > 0 ? { names } : {}),
      ...(concurrency !== undefined ? { concurrency } : {}),
      leaderElect: flag(args, 'leader-elect'),
    });
    started = true;
    io.err(`updater ${name} running${names ? ` (names: ${names.join(', ')})` : ''}\n`);
    await stopRequested(io.signal);
    await running.stop();
    await Promise.all(servers.map((x) => x.close()));
    return ExitCode.ok;
  },
};
