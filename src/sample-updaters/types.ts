// The shape every sample updater exports (WIRING: the CLI's `inplace updater <name>` and the demo start them).
import type { KubeClient, Logger, PolicyRule } from '../contract/sdk/index.js';

/** Options of SampleUpdater.start. */
export interface SampleStartOptions {
  kubeconfigPath?: string;
  client?: KubeClient;
  namespace?: string;
  /** Generic-kind updaters only: the updater names served. Required unless catchAll. */
  names?: string[];
  /**
   * Generic-kind updaters only: serve every updater name. A simulated updater that answers names nobody else serves
   * makes the platform commit changes no real updater made, so this is for the demo and tests only.
   */
  catchAll?: boolean;
  leaderElect?: boolean;
  /** Logger (default: pino, LOG_LEVEL / LOG_FORMAT from the environment). */
  log?: Logger;
}

/** A runnable sample updater. */
export interface SampleUpdater {
  name: string;
  description: string;
  /**
   * True when the sample simulates the node (it writes the Node objects of the API server it talks to instead of
   * touching a host): it refuses to run against an API server other than the embedded one unless forced.
   */
  simulatesNode: boolean;
  /** True when the sample serves the generic kind (and so needs --names or --catch-all). */
  generic: boolean;
  /** RBAC the updater's ServiceAccount needs. */
  rbac: PolicyRule[];
  /** CRD YAML files the updater brings (absolute paths). */
  crds: string[];
  start(opts: SampleStartOptions): Promise<{ stop(): Promise<void> }>;
}

/** Why a generic sample cannot start with these options (names and catch-all), undefined when it can. */
export function servedNamesProblem(opts: Pick<SampleStartOptions, 'names' | 'catchAll'>): string | undefined {
  const named = (opts.names ?? []).length > 0;
  if (named && opts.catchAll) return 'pass either --names or --catch-all, not both';
  if (!named && !opts.catchAll)
    return 'name the updater names to serve with --names a,b (a simulated updater serving every name would mark real work done; --catch-all is for the demo only)';
  return undefined;
}
