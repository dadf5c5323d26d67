// The campaign scenarios' fleet: an e2e Platform (plan controller, machine task controller, reference updater serving
// only the `ref` updater so that `manual` tasks are played by the scenario), the campaign controller, and a fleet of
// small clusters with the CAPI simulator. Works against the local API server or a real cluster.
import type { InPlaceUpdateCampaign, InPlaceUpdatePlan, KubeObject, PlanUpdater } from '../../src/api/index.js';
import { API_VERSION, CampaignLabels, InPlaceUpdateCampaigns, InPlaceUpdatePlans } from '../../src/api/index.js';
import { campaignController } from '../../src/campaign-controller/index.js';
import {
  applyInventory,
  buildFleetInventory,
  startCapiSimulator,
  type CapiSimulator,
  type FleetCluster,
} from '../../tools/capi-sim/index.js';
import type { WatchHandle } from '../../src/runtime/pure/types.js';
import type { E2eEnv } from '../e2e/env.js';
import { useE2eEnv } from '../e2e/env.js';
import type { Platform } from '../e2e/harness.js';
import { FROM_VERSION, refUpdater } from '../e2e/harness.js';
import { waitFor } from '../support/wait.js';

/** The label every scenario's clusters carry. */
export const FLEET_LABEL = { fleet: 'edge' };

/** A campaign object. */
export type Campaign = InPlaceUpdateCampaign & KubeObject;
/** A plan object. */
export type Plan = InPlaceUpdatePlan & KubeObject;

/** The scenario's fleet and its handles. */
export interface Fleet {
  p: Platform;
  sim: CapiSimulator;
  stop(): Promise<void>;
  campaign(name: string): Promise<Campaign | undefined>;
  plans(campaign?: string): Promise<Plan[]>;
  /** Plays the `manual` updater's open tasks of one cluster to `outcome` (aborted when the platform asked). */
  finishManual(cluster: string, outcome?: 'updated' | 'failed'): Promise<number>;
  /** Waits for the campaign to satisfy `pred`. */
  waitCampaign(name: string, pred: (c: Campaign) => boolean, message: string, timeoutMs?: number): Promise<Campaign>;
  /** Records every plan watch event of the namespace, in order. */
  recordPlans(): Promise<{ events: { type: string; object: Plan }[]; stop(): void }>;
}

/** An updater the reference updater does not serve: the scenario plays its tasks. */
export const manualUpdater = (): PlanUpdater => ({ ...refUpdater(), name: 'manual', parameters: {} });

/** A campaign over the fleet label with a control-plane + all-MachineDeployments template. */
export function campaignObject(
  ns: string,
  name: string,
  o: Partial<InPlaceUpdateCampaign['spec']> & { updater?: PlanUpdater } = {},
): Campaign {
  const { updater, ...spec } = o;
  const u = updater ?? refUpdater();
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdateCampaign',
    metadata: { name, namespace: ns },
    spec: {
      clusterSelector: { matchLabels: FLEET_LABEL },
      template: { controlPlane: { sequence: 1, updaters: [u] }, machineDeployments: [{ sequence: 2, updaters: [u] }] },
      ...spec,
    },
  };
}

/** Provisions the clusters, starts the simulator, the platform (ref updater only) and the campaign controller. */
export async function startFleet(p: Platform, clusters: readonly FleetCluster[]): Promise<Fleet> {
  await applyInventory(p.client, buildFleetInventory({ namespace: p.ns, version: FROM_VERSION, clusters }));
  const sim = await startCapiSimulator({ client: p.client, namespace: p.ns, readyDelayMs: 20 });
  await p.startPlatform({ mhc: false, referenceNames: ['ref'] });
  await p.startComponent(campaignController);
  const watches: WatchHandle[] = [];
  const fleet: Fleet = {
    p,
    sim,
    async stop() {
      for (const w of watches) w.abort();
      await sim.stop();
    },
    campaign: (name) => p.client.get<Campaign>(InPlaceUpdateCampaigns, p.ns, name),
    async plans(campaign) {
      const all = (await p.client.list<Plan>(InPlaceUpdatePlans, p.ns)).items;
      return campaign ? all.filter((x) => x.metadata.labels?.[CampaignLabels.campaign] === campaign) : all;
    },
    finishManual: (cluster, outcome = 'updated') => p.finishTasks('manual', outcome, { cluster, failMessage: `disk full on ${cluster}` }),
    async waitCampaign(name, pred, message, timeoutMs = 60_000) {
      return waitFor(
        async () => {
          const c = await fleet.campaign(name);
          return c && pred(c) ? c : undefined;
        },
        { timeoutMs, intervalMs: 50, message: `campaign ${name}: ${message}` },
      );
    },
    async recordPlans() {
      const events: { type: string; object: Plan }[] = [];
      const h = await p.client.watch<Plan>(InPlaceUpdatePlans, p.ns, {}, (e) => {
        if (e.type === 'ADDED' || e.type === 'MODIFIED' || e.type === 'DELETED') events.push({ type: e.type, object: e.object });
      });
      watches.push(h);
      return { events, stop: () => h.abort() };
    },
  };
  return fleet;
}

/** Waits for `n` open tasks of the manual updater on `cluster`. */
export async function waitManualTasks(p: Platform, cluster: string, n = 1): Promise<void> {
  await p.waitTasks('manual', n, cluster);
}

/** The scenarios' environment (one per file): the e2e environment, and `start` (startFleet) whose fleet stops after each test. */
export function useFleetEnv(): { env: () => E2eEnv; start(p: Platform, clusters: readonly FleetCluster[]): Promise<Fleet> } {
  const env = useE2eEnv();
  let fleet: Fleet | undefined;
  afterEach(async () => {
    await fleet?.stop();
    fleet = undefined;
  });
  return {
    env,
    async start(p, clusters) {
      fleet = await startFleet(p, clusters);
      return fleet;
    },
  };
}

/** The condition `type` of an object with status.conditions. */
export const conditionOf = (
  o: { status?: { conditions?: { type: string; status: string; reason: string; message?: string }[] } } | undefined,
  type: string,
) => o?.status?.conditions?.find((c) => c.type === type);
