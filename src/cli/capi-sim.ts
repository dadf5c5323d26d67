// `inplace capi-sim` (hidden): the stand-in for CAPI's controllers the demo runs as its own process.
import { createLogger } from '../runtime/index.js';
import { connect } from './kube.js';
import { stopRequested } from './procs.js';
import { ExitCode, KUBE_OPTIONS_HELP, kubeOptions, str, UsageError, type Verb } from './verb.js';

/** `inplace capi-sim`. */
export const capiSimVerb: Verb = {
  name: 'capi-sim',
  summary: 'Simulate the Cluster API controllers (demo internals)',
  hidden: true,
  help: `Usage: inplace capi-sim [-n NAMESPACE] [--ready-delay-ms N] [--in-place-updates] [--kubeconfig FILE]

Simulates the CAPI controllers and the workload clusters' Nodes against a cluster without CAPI:
MachineDeployment / KubeadmControlPlane replicas become Machines (+ DevMachine, KubeadmConfig, Node),
machines become Ready, remediate-machine replaces a machine, MachineDeployment status is kept.
Used by the demo and the tests; never point it at a cluster that runs the real CAPI controllers.

Options:
  -n, --namespace NS   simulate only this namespace (default: all)
  --ready-delay-ms N   how long a new machine takes to become Ready (default 200)
  --in-place-updates   play upstream's InPlaceUpdates feature gate: call the runtime extension registered
                       through an ExtensionConfig (CanUpdateMachine[Set], UpdateMachine) before replacing
                       control-plane or worker machines (also CAPI_SIM_IN_PLACE=1)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    namespace: { type: 'string', short: 'n' },
    'ready-delay-ms': { type: 'string' },
    'in-place-updates': { type: 'boolean' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const delay = str(args, 'ready-delay-ms');
    const readyDelayMs = delay === undefined ? undefined : Number(delay);
    if (readyDelayMs !== undefined && (!Number.isInteger(readyDelayMs) || readyDelayMs < 0))
      throw new UsageError(`--ready-delay-ms must be a non-negative integer, got "${delay}"`);
    const conn = connect(args, 'inplace-capi-sim');
    const { startCapiSimulator } = await import('../capi-sim/index.js');
    const namespace = str(args, 'namespace');
    const log = createLogger({ name: 'capi-sim' });
    const sim = await startCapiSimulator({
      client: conn.client,
      log,
      ...(namespace ? { namespace } : {}),
      ...(readyDelayMs !== undefined ? { readyDelayMs } : {}),
      ...(args.values['in-place-updates'] === true ? { inPlaceUpdates: true } : {}),
    });
    log.info({ server: conn.client.server, namespace: namespace ?? '(all)' }, 'CAPI simulator running');
    await stopRequested(io.signal);
    await sim.stop();
    conn.client.close();
    return ExitCode.ok;
  },
};
