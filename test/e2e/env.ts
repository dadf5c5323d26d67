// The environment of the end-to-end scenarios: the shared test env (local API server, or a real cluster when
// INPLACE_TEST_KUBECONFIG is set) with the platform's, the samples' and the CAPI CRDs installed.
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import { PROJECT_CRDS, startTestEnv } from '../support/env.js';
import { Platform } from './harness.js';

/** A started environment shared by the scenarios of one file. */
export interface E2eEnv {
  client: KubeClient;
  isRealCluster: boolean;
  /** A kubeconfig file for kubectl. */
  kubeconfigPath: string;
  /** Injects API faults (local API server only; a no-op on a real cluster). Returns whether faults are active. */
  setFaults(f: { errorRate?: number; errorCodes?: number[]; latencyMs?: number; dropWatchesEveryMs?: number } | undefined): boolean;
  /** A fresh namespace and a platform in it (stopped by `stopAll`). */
  platform(): Promise<Platform>;
  /** Stops every platform created so far (between scenarios). */
  stopAll(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the environment with every CRD the scenarios use. */
export async function startE2eEnv(): Promise<E2eEnv> {
  const sampleCrds = [...new Set(Object.values(sampleUpdaters).flatMap((u) => u.crds))];
  const env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs(), ...sampleCrds] });
  const platforms: Platform[] = [];
  return {
    client: env.client,
    isRealCluster: env.isRealCluster,
    kubeconfigPath: env.kubeconfigPath,
    setFaults(f) {
      if (!env.server) return false;
      env.server.setFaults(f);
      return f !== undefined;
    },
    async platform() {
      const p = new Platform(env.client, await env.newNamespace('e2e'));
      platforms.push(p);
      return p;
    },
    async stopAll() {
      for (const p of platforms.splice(0)) await p.stop();
    },
    async stop() {
      for (const p of platforms.splice(0)) await p.stop();
      await env.stop();
    },
  };
}

/**
 * Registers the mocha hooks every scenario file shares (one environment per file, each scenario's platforms stopped
 * after it) and returns the environment's getter.
 */
export function useE2eEnv(): () => E2eEnv {
  let env: E2eEnv | undefined;
  before(async () => {
    env = await startE2eEnv();
  });
  after(async () => env?.stop());
  afterEach(async () => env?.stopAll());
  return () => {
    if (!env) throw new Error('the e2e environment is not started (use it inside a test)');
    return env;
  };
}
