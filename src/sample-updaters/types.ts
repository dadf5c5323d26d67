// The shape every sample updater exports (WIRING: the CLI's `inplace updater <name>` and the demo start them).
import type { KubeClient, Logger, PolicyRule } from '../contract/sdk/index.js';

/** Options of SampleUpdater.start. */
export interface SampleStartOptions {
  kubeconfigPath?: string;
  client?: KubeClient;
  namespace?: string;
  /** Generic-kind updaters only: the updater names served (default all). */
  names?: string[];
  leaderElect?: boolean;
  /** Logger (default: pino, LOG_LEVEL / LOG_FORMAT from the environment). */
  log?: Logger;
}

/** A runnable sample updater. */
export interface SampleUpdater {
  name: string;
  description: string;
  /** RBAC the updater's ServiceAccount needs. */
  rbac: PolicyRule[];
  /** CRD YAML files the updater brings (absolute paths). */
  crds: string[];
  start(opts: SampleStartOptions): Promise<{ stop(): Promise<void> }>;
}
