// `inplace capi-sim` (hidden): the stand-in for CAPI's controllers the demo runs as its own process.
import type { KubeObject } from '../api/index.js';
import { createLogger, startHealthServer, type HealthServer } from '../runtime/index.js';
import { connect } from './kube.js';
import { stopRequested } from './procs.js';
import { ExitCode, KUBE_OPTIONS_HELP, kubeOptions, portOption, str, UsageError, type Verb } from './verb.js';

/** The part of an ExtensionConfig readiness looks at. */
type ExtensionConfigStatus = KubeObject & { status?: { handlers?: { name: string }[] } };

/** The handlers the ExtensionConfigs' status lists that the simulator's registry (`known`) does not know yet. */
export function missingHandlers(ecs: readonly ExtensionConfigStatus[], known: readonly string[]): string[] {
  const have = new Set(known);
  return ecs.flatMap((ec) => (ec.status?.handlers ?? []).map((h) => h.name)).filter((n) => !have.has(n));
}

/** `inplace capi-sim`. */
export const capiSimVerb: Verb = {
  name: 'capi-sim',
  summary: 'Simulate the Cluster API controllers (demo internals)',
  hidden: true,
  help: `Usage: inplace capi-sim [-n NAMESPACE] [--ready-delay-ms N] [--in-place-updates] [--health-port N] [--kubeconfig FILE]

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
  --health-port N      serve /healthz and /readyz on this port (default: off). /readyz is 200 once the caches
                       are synced and, with --in-place-updates, every handler in the status.handlers of the
                       ExtensionConfigs (read from the API server at each probe) is in the simulator's registry:
                       a KCP or MachineDeployment change made before that is rolled out, not updated in place
  --bind-address ADDR  address the health server listens on (default: every interface)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    namespace: { type: 'string', short: 'n' },
    'ready-delay-ms': { type: 'string' },
    'in-place-updates': { type: 'boolean' },
    'health-port': { type: 'string' },
    'bind-address': { type: 'string' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const delay = str(args, 'ready-delay-ms');
    const readyDelayMs = delay === undefined ? undefined : Number(delay);
    if (readyDelayMs !== undefined && (!Number.isInteger(readyDelayMs) || readyDelayMs < 0))
      throw new UsageError(`--ready-delay-ms must be a non-negative integer, got "${delay}"`);
    const healthPort = portOption(args, 'health-port');
    const bindAddress = str(args, 'bind-address');
    if (bindAddress !== undefined && healthPort === undefined) throw new UsageError('--bind-address needs --health-port');
    const conn = connect(args, 'inplace-capi-sim');
    const { startCapiSimulator } = await import('../../tools/capi-sim/index.js');
    const namespace = str(args, 'namespace');
    const log = createLogger({ name: 'capi-sim' });
    const sim = await startCapiSimulator({
      client: conn.client,
      log,
      ...(namespace ? { namespace } : {}),
      ...(readyDelayMs !== undefined ? { readyDelayMs } : {}),
      ...(args.values['in-place-updates'] === true ? { inPlaceUpdates: true } : {}),
    });
    // startCapiSimulator resolved: its caches are synced, so readiness only waits for the handler registry.
    let health: HealthServer | undefined;
    if (healthPort !== undefined) {
      const { ExtensionConfigs } = await import('../../tools/capi-sim/index.js');
      const inPlace = args.values['in-place-updates'] === true || process.env['CAPI_SIM_IN_PLACE'] === '1';
      const registryComplete = async (): Promise<boolean> => {
        if (!inPlace) return true;
        // The API server's view, not the simulator's cache: "status written" must not pass for "handlers known".
        const ecs = await conn.client.list<ExtensionConfigStatus>(ExtensionConfigs, undefined);
        return missingHandlers(ecs.items, sim.handlers()).length === 0;
      };
      health = await startHealthServer({
        port: healthPort,
        ...(bindAddress ? { host: bindAddress } : {}),
        isReady: () => registryComplete().catch(() => false),
        notReadyMessage: "the ExtensionConfigs' handlers are not all in the simulator's registry yet",
      });
    }
    log.info({ server: conn.client.server, namespace: namespace ?? '(all)', healthPort: health?.port }, 'CAPI simulator running');
    await stopRequested(io.signal);
    await health?.close();
    await sim.stop();
    conn.client.close();
    return ExitCode.ok;
  },
};
