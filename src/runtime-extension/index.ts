// The runtime extension component (issue 18, docs/hooks.md): serves Cluster API's in-place update hooks
// (CanUpdateMachine, CanUpdateMachineSet, UpdateMachine; CAPI ≥ 1.12 with the InPlaceUpdates feature gate) backed by
// the platform's CR contract. What each updater covers is declared once, in its InPlaceUpdater; an UpdateMachine call
// becomes a MachineUpdate that the machine task controller runs exactly as for plans.
//
// This file wires it: the caches it reads, the HTTPS server, metrics. Unlike the controllers it reconciles on
// request (each hook call), so every replica serves; leader election does not apply to it.
import { InPlaceUpdaters, MachineUpdates } from '../api/index.js';
import type { Component, Manager } from '../runtime/index.js';
import { CONTROLLER_NAME, handleCanUpdateMachine, handleCanUpdateMachineSet, reconcile, type ExtensionDeps } from './controller.js';
import { DEFAULT_RETRY_AFTER_SECONDS } from './decide.js';
import { metricsFor } from './metrics.js';
import { rbac } from './rbac.js';
import { storesOf } from './scope.js';
import { startExtensionServer, type ExtensionServer } from './server.js';

export { rbac } from './rbac.js';
export { CONTROLLER_NAME } from './controller.js';
export { discoveryResponse, HANDLER_TIMEOUT_SECONDS } from './server.js';
export * from './hooks.js';

/** How long a hook call waits for the caches at start-up (below upstream's 10 s handler timeout). */
const CACHE_WAIT_MS = 5000;

/** The caches were not synced in time to answer a hook call (retryable: Cluster API calls again). */
export class CachesNotSyncedError extends Error {
  constructor(ms: number) {
    super(`the InPlaceUpdater and MachineUpdate caches are not synced after ${ms} ms; try again`);
    this.name = 'CachesNotSyncedError';
  }
}

async function waitSynced(synced: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CachesNotSyncedError(ms)), ms);
  });
  try {
    await Promise.race([synced, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Options of the component (`inplace run runtime-extension` flags; tests use port 0). */
export interface RuntimeExtensionOptions {
  /** Port of the HTTPS server (0: any free port; default 9443, controller-runtime's webhook port). */
  port?: number;
  bindAddress?: string;
  /** Directory with tls.crt/tls.key; a self-signed certificate when absent. */
  certDir?: string;
  /** Extra DNS names of the self-signed certificate. */
  dnsNames?: string[];
  /** retryAfterSeconds answered while a MachineUpdate runs (default 5). */
  retryAfterSeconds?: number;
}

/** The component, plus what a test or an ExtensionConfig needs once it is set up. */
export interface RuntimeExtensionComponent extends Component {
  /** https URL of the server (after setup). */
  readonly url: string;
  /** The bound port (after setup). */
  readonly port: number;
  /** The PEM CAPI must trust (after setup); base64 it into spec.clientConfig.caBundle. */
  readonly caBundle: string;
  /** Stops the HTTPS server. */
  close(): Promise<void>;
}

/** The runtime extension with options. */
export function createRuntimeExtension(opts: RuntimeExtensionOptions = {}): RuntimeExtensionComponent {
  let server: ExtensionServer | undefined;
  const need = (): ExtensionServer => {
    if (!server) throw new Error('runtime-extension: not set up yet');
    return server;
  };
  return {
    name: CONTROLLER_NAME,
    rbac,
    get url() {
      return need().url;
    },
    get port() {
      return need().port;
    },
    get caBundle() {
      return need().caBundle;
    },
    async setup(mgr: Manager) {
      const deps: ExtensionDeps = {
        client: mgr.client,
        stores: storesOf(mgr),
        events: mgr.events,
        log: mgr.log.child({ controller: CONTROLLER_NAME }),
        retryAfterSeconds: opts.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS,
      };
      const metrics = metricsFor(mgr);
      // Before the caches are synced no updater is known, and "nothing covered" would send Cluster API to a rollout:
      // calls wait for the caches (bounded, within the handler timeout), then fail (failurePolicy Fail: CAPI retries).
      const synced = Promise.all([InPlaceUpdaters, MachineUpdates].map((r) => mgr.informer(r).synced()));
      let ready = false;
      void synced.then(() => (ready = true)).catch(() => undefined);
      const whenSynced = async <T>(fn: () => T | Promise<T>): Promise<T> => {
        if (!ready) await waitSynced(synced, CACHE_WAIT_MS);
        return fn();
      };
      const podNamespace = process.env['POD_NAMESPACE'];
      server = await startExtensionServer(
        {
          port: opts.port ?? 9443,
          ...(opts.bindAddress ? { bindAddress: opts.bindAddress } : {}),
          ...(opts.certDir ? { certDir: opts.certDir } : {}),
          dnsNames: [
            ...(opts.dnsNames ?? []),
            ...(podNamespace
              ? [`inplace-${CONTROLLER_NAME}.${podNamespace}.svc`, `inplace-${CONTROLLER_NAME}.${podNamespace}.svc.cluster.local`]
              : []),
          ],
        },
        {
          CanUpdateMachine: (req) => whenSynced(() => handleCanUpdateMachine(deps, req)),
          CanUpdateMachineSet: (req) => whenSynced(() => handleCanUpdateMachineSet(deps, req)),
          UpdateMachine: (req) => whenSynced(() => reconcile(deps, req)),
          observe: (hook, res, seconds) => {
            const inProgress = (res as { retryAfterSeconds?: number }).retryAfterSeconds;
            metrics.calls.inc({ hook, status: res.status === 'Success' && inProgress ? 'InProgress' : res.status });
            metrics.duration.observe({ hook }, seconds);
          },
        },
        deps.log,
      );
    },
    async close() {
      await server?.close();
    },
  };
}

/** The runtime extension as deployed (port 9443, self-signed unless run with --cert-dir). */
export const runtimeExtension: RuntimeExtensionComponent = createRuntimeExtension();
