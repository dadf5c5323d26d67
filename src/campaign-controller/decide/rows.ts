// Phase 1 of decideCampaign: one row per cluster, from its plan, its recorded outcome, or another plan holding it.
import type { CampaignSnapshot, ClusterRow, ClusterView, PlanView } from './types.js';
import { finishedRecords, planState } from './rules.js';

/** The clusters and plans the later phases read, indexed once. */
export interface CampaignRows {
  rows: ClusterRow[];
  selectedByName: Map<string, ClusterView>;
  /** The newest campaign plan of each cluster. */
  planByCluster: Map<string, PlanView>;
  /** status.finishedClusters, by cluster name. */
  recorded: ReturnType<typeof finishedRecords>;
}

/** Rows: every selected cluster, then clusters of plans that are no longer selected. */
export function clusterRows(snap: CampaignSnapshot): CampaignRows {
  const selectedByName = new Map(snap.selected.map((c) => [c.name, c]));
  const planByCluster = new Map<string, PlanView>();
  for (const p of snap.plans) {
    const prev = planByCluster.get(p.clusterName);
    if (!prev || prev.name < p.name) planByCluster.set(p.clusterName, p);
  }
  const recorded = finishedRecords(snap.campaign.status?.finishedClusters);
  const rows = snap.selected.map((c) => selectedRow(snap, c, planByCluster, recorded));
  for (const p of planByCluster.values()) {
    if (selectedByName.has(p.clusterName)) continue;
    const s = planState(p);
    const removed = snap.existing.has(p.clusterName) ? 'unselected' : 'deleted';
    const why = removed === 'deleted' ? 'the Cluster was deleted' : 'the Cluster left the selection';
    rows.push({
      name: p.clusterName,
      ...s,
      reason: s.reason ? `${why}; ${s.reason}` : why,
      removed,
      wave: p.wave,
      plan: p.name,
      machines: p.machines,
      updated: p.updated,
    });
  }
  return { rows, selectedByName, planByCluster, recorded };
}

/** A selected cluster's row: its plan's state, else its recorded outcome, else waiting for another plan or pending. */
function selectedRow(
  snap: CampaignSnapshot,
  c: ClusterView,
  planByCluster: ReadonlyMap<string, PlanView>,
  recorded: CampaignRows['recorded'],
): ClusterRow {
  const p = planByCluster.get(c.name);
  const rec = recorded.get(c.name);
  if (p) {
    const s = planState(p);
    return { name: c.name, ...s, wave: p.wave, plan: p.name, machines: p.machines, updated: p.updated };
  }
  if (rec)
    // Its finished plan was deleted (history limit, by hand): the recorded outcome stands; never started twice.
    return { name: c.name, state: rec.state, wave: rec.wave, reason: 'finished (its plan was deleted since)', machines: 0, updated: 0 };
  const foreign = snap.foreignPlans.get(c.name);
  return foreign
    ? {
        name: c.name,
        state: 'waiting',
        reason: `plan ${foreign} is updating this cluster; the campaign waits for it`,
        machines: 0,
        updated: 0,
      }
    : { name: c.name, state: 'pending', machines: 0, updated: 0 };
}
