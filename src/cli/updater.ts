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

Runs one SAMPLE updater until SIGINT/SIGTERM. Samples simulate their work: never run them where real machines
are updated.
  reference           serves generic UpdaterUpdateTasks of the updater names given by --names (required);
                      it changes nothing: parameters.durationSeconds / parameters.failWith simulate duration
                      and failure
  kubernetes-version  serves KubernetesVersionUpdateTasks (from KubernetesVersionUpdateTaskTemplates) on a
                      SIMULATED node: writes Node.status.nodeInfo.kubeletVersion in the API server it talks to
  os-image            serves OSImageUpdateTasks (from OSImageUpdateTaskTemplates) on a SIMULATED node: records
                      the image in a Node annotation in the API server it talks to
kubernetes-version and os-image refuse to start against an API server other than the embedded one
(inplace local-apiserver, npm start) unless --allow-real-cluster is given.

Options:
  --names a,b         reference: the generic updater names to serve (required unless --catch-all)
  --catch-all         reference: serve every updater name (the demo only: it would answer for updaters
                      nobody runs, and the platform would commit their changes)
  --allow-real-cluster
                      kubernetes-version, os-image: run against an API server that is not the embedded one
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
    'catch-all': { type: 'boolean' },
    'allow-real-cluster': { type: 'boolean' },
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
    const catchAll = flag(args, 'catch-all');
    const { sampleUpdaters, servedNamesProblem, serverGitVersion, simulationProblem } = await import('../sample-updaters/index.js');
    const updater = sampleUpdaters[name as (typeof NAMES)[number]];
    if (updater.generic) {
      const problem = servedNamesProblem({ ...(names ? { names } : {}), catchAll });
      if (problem) throw new UsageError(`updater ${name}: ${problem}`);
    } else if (names !== undefined || catchAll) {
      throw new UsageError(`updater ${name} serves its own task kind: --names and --catch-all apply to the reference updater only`);
    }
    if (flag(args, 'allow-real-cluster') && !updater.simulatesNode)
      throw new UsageError(`updater ${name} simulates no node: --allow-real-cluster applies to kubernetes-version and os-image`);
    if (updater.simulatesNode) {
      // Checked before anything runs: a simulated node on a real management cluster would mark real machines updated.
      let gitVersion: string;
      try {
        gitVersion = await serverGitVersion(kubeconfigPath);
      } catch (e) {
        throw new CliError(
          `updater ${name}: cannot read the API server's /version to tell whether it is the embedded one: ${(e as Error).message}`,
          'check the kubeconfig and that the API server is up',
        );
      }
      const problem = simulationProblem(name!, gitVersion, flag(args, 'allow-real-cluster'));
      if (problem) throw new UsageError(problem);
    }
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
      ...(catchAll ? { catchAll } : {}),
      ...(concurrency !== undefined ? { concurrency } : {}),
      leaderElect: flag(args, 'leader-elect'),
    });
    started = true;
    const serves = catchAll ? ' (catch-all: every updater name — demo only)' : names ? ` (names: ${names.join(', ')})` : '';
    io.err(`sample updater ${name} running${serves}${updater.simulatesNode ? ' on SIMULATED nodes' : ''}\n`);
    await stopRequested(io.signal);
    await running.stop();
    await Promise.all(servers.map((x) => x.close()));
    return ExitCode.ok;
  },
};
