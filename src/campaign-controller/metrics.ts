// Prometheus metrics of the campaign controller, registered in the manager's registry (served on /metrics).
import { Counter, Gauge, Registry } from 'prom-client';
import type { Manager, Store } from '../runtime/pure/types.js';
import type { CampaignObject } from './scope.js';

/** The campaign controller's metrics. */
export interface CampaignMetrics {
  /** Clusters per campaign by state, from the campaigns' status (computed at scrape time). */
  clusters: Gauge<'namespace' | 'campaign' | 'state'>;
  /** Plans created by campaigns. */
  plansCreated: Counter;
}

const byRegistry = new WeakMap<Registry, CampaignMetrics>();
let fallback: Registry | undefined;

const STATES = ['selected', 'pending', 'waiting', 'updating', 'updated', 'skipped', 'failed', 'aborted', 'removed'] as const;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function campaignMetricsFor(mgr: Manager, campaigns: Store<CampaignObject>): CampaignMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  m = {
    clusters: new Gauge({
      name: 'inplace_campaign_controller_clusters',
      help: 'Clusters of each InPlaceUpdateCampaign by state (from its status).',
      labelNames: ['namespace', 'campaign', 'state'],
      registers,
      collect() {
        this.reset();
        for (const c of campaigns.list()) {
          const counts = c.status?.clusters ?? {};
          for (const s of STATES)
            this.set({ namespace: c.metadata.namespace ?? '', campaign: c.metadata.name ?? '', state: s }, counts[s] ?? 0);
        }
      },
    }),
    plansCreated: new Counter({
      name: 'inplace_campaign_controller_plans_created_total',
      help: 'InPlaceUpdatePlans created by campaigns (one per cluster).',
      registers,
    }),
  };
  byRegistry.set(registry, m);
  return m;
}
