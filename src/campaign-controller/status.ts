// The campaign's status language, pure: the status object (counts of clusters and machines by state, waves, named
// failed / skipped clusters, bounded), the conditions (Valid, Ready, Failed, Paused: `kubectl wait
// --for=condition=Ready` or `--for=condition=Failed`; Reconciling and Stalled for kstatus), and the Events a status
// change stands for.
import type { Condition, InPlaceUpdateCampaign, InPlaceUpdateCampaignStatus } from '../api/index.js';
import { CampaignEventReasons, PlanEventReasons, summarizeList } from '../api/index.js';
import { windowStatus } from '../rules/gates.js';
import type { KstatusVerdict } from '../runtime/pure/conditions.js';
import { setCondition, setKstatusConditions } from '../runtime/pure/conditions.js';
import type { CampaignDecision, ClusterRow, PlanView } from './decide.js';
import { MAX_NAMED_CLUSTERS, finishedRecordsOf, waveLabel } from './decide.js';

/** Waves listed in status (the last ones). */
const MAX_WAVES = 50;
/** Clusters recorded in status.finishedClusters (the CRD's maxItems). */
const MAX_FINISHED = 10_000;
/** One reason in status lists. */
const REASON_MAX = 1024;

/** A Kubernetes Event to record on the campaign. */
export interface CampaignEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

const named = (r: ClusterRow): { name: string; wave?: number; reason?: string } => ({
  name: r.name,
  ...(r.wave !== undefined ? { wave: r.wave } : {}),
  ...(r.reason ? { reason: r.reason.slice(0, REASON_MAX) } : {}),
});

/**
 * The campaign's kstatus verdict (Reconciling / Stalled, abnormal-true): Ready once Completed; Stalled when it needs a
 * person (halted on a canary or the budget, invalid, aborted); Reconciling otherwise (pending, canary, waves, soaking,
 * paused, waiting on a window or another plan, aborting), so kstatus never calls a campaign Current before it is Ready.
 */
export function campaignKstatus(d: Pick<CampaignDecision, 'updateStatus' | 'phase' | 'halted' | 'message'>): KstatusVerdict {
  if (d.updateStatus === 'updated') return { state: 'ready', reason: d.phase, message: d.message };
  if (d.halted) return { state: 'stalled', reason: d.halted, message: d.message };
  if (d.phase === 'Invalid' || d.updateStatus === 'aborted' || d.updateStatus === 'failed')
    return { state: 'stalled', reason: d.phase, message: d.message };
  return { state: 'reconciling', reason: d.phase, message: d.message };
}

type MachineCounts = { total: number; updated: number; skipped: number; updating: number; failed: number };
type WaveStatus = { index: number; clusters: number; updated: number; failed: number; updating: number; completionTime?: string };

/** The machines of every reported plan, summed. */
function machineTotals(plans: readonly PlanView[]): MachineCounts {
  return plans.reduce(
    (a, p) => ({
      total: a.total + p.machines,
      updated: a.updated + p.updated,
      skipped: a.skipped + p.skipped,
      updating: a.updating + p.updating,
      failed: a.failed + p.failed,
    }),
    { total: 0, updated: 0, skipped: 0, updating: 0, failed: 0 },
  );
}

/** The waves' counts; a wave is complete (with its last plan's completionTime) once none of its clusters updates. */
function wavesOf(rows: readonly ClusterRow[], plans: readonly PlanView[]): WaveStatus[] {
  const waves = new Map<number, WaveStatus>();
  for (const r of rows) {
    if (r.wave === undefined) continue;
    const w = waves.get(r.wave) ?? { index: r.wave, clusters: 0, updated: 0, failed: 0, updating: 0 };
    w.clusters++;
    if (r.state === 'updated' || r.state === 'skipped') w.updated++;
    if (r.state === 'failed') w.failed++;
    if (r.state === 'updating') w.updating++;
    waves.set(r.wave, w);
  }
  for (const p of plans) {
    const w = waves.get(p.wave);
    if (w && w.updating === 0 && p.completionTime && (!w.completionTime || p.completionTime > w.completionTime))
      w.completionTime = p.completionTime;
  }
  for (const w of waves.values()) if (w.updating > 0) delete w.completionTime;
  return [...waves.values()].sort((a, b) => a.index - b.index).slice(-MAX_WAVES);
}

/** The Valid, Ready, Failed, kstatus and Paused conditions for a decision. */
function campaignConditions(
  campaign: InPlaceUpdateCampaign & { metadata?: { generation?: number } },
  d: CampaignDecision,
  failedCount: number,
  now: Date,
): Condition[] {
  const gen = campaign.metadata?.generation;
  let conds: Condition[] = campaign.status?.conditions ?? [];
  conds = setCondition(
    conds,
    d.problems.length > 0
      ? { type: 'Valid', status: 'False', reason: 'Invalid', message: summarizeList(d.problems) }
      : d.checking.length > 0
        ? { type: 'Valid', status: 'Unknown', reason: 'Checking', message: summarizeList(d.checking) }
        : { type: 'Valid', status: 'True', reason: 'Valid', message: 'the campaign is valid' },
    gen,
    now,
  );
  conds = setCondition(
    conds,
    { type: 'Ready', status: d.updateStatus === 'updated' ? 'True' : 'False', reason: d.phase, message: d.message },
    gen,
    now,
  );
  conds = setCondition(
    conds,
    d.halted
      ? { type: 'Failed', status: 'True', reason: d.halted, message: d.message }
      : {
          type: 'Failed',
          status: 'False',
          reason: d.phase === 'Completed' ? 'Completed' : 'WithinBudget',
          message: `failed clusters ${failedCount} of a budget of ${d.failureBudget}`,
        },
    gen,
    now,
  );
  conds = setKstatusConditions(conds, campaignKstatus(d), gen, now);
  return setCondition(
    conds,
    campaign.spec.paused
      ? {
          type: 'Paused',
          status: 'True',
          reason: 'Paused',
          message: 'spec.paused: no new cluster starts; the campaign paused its running plans',
        }
      : { type: 'Paused', status: 'False', reason: 'NotPaused', message: '' },
    gen,
    now,
  );
}

/** The clusters by state; the plans just created are pending in the rows but counted as updating until they report. */
function clusterCounts(d: CampaignDecision): NonNullable<InPlaceUpdateCampaignStatus['clusters']> {
  const count = (s: ClusterRow['state']): number => d.rows.filter((r) => r.state === s).length;
  return {
    selected: d.rows.filter((r) => !r.removed).length,
    pending: Math.max(0, count('pending') - d.create.length),
    waiting: count('waiting'),
    updating: count('updating') + d.create.length,
    updated: count('updated'),
    skipped: count('skipped'),
    failed: count('failed'),
    aborted: count('aborted'),
    removed: d.rows.filter((r) => r.removed).length,
  };
}

/** The campaign's status for a decision (conditions keep CAPI lastTransitionTime semantics). */
export function campaignStatus(
  campaign: InPlaceUpdateCampaign & { metadata?: { generation?: number } },
  d: CampaignDecision,
  plans: readonly PlanView[],
  now: Date,
): InPlaceUpdateCampaignStatus {
  const prev = campaign.status ?? {};
  const gen = campaign.metadata?.generation;
  const selected = d.rows.filter((r) => !r.removed).length;
  const done = d.rows.filter((r) => ['updated', 'skipped', 'failed', 'aborted'].includes(r.state)).length;
  const machines = machineTotals(plans);
  const terminal = d.updateStatus === 'updated' || d.updateStatus === 'failed' || d.updateStatus === 'aborted';
  const nowTime = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const failedRows = d.rows.filter((r) => r.state === 'failed');
  const skippedRows = d.rows.filter(
    (r) => r.state === 'waiting' || r.state === 'aborted' || r.invalid || (r.removed && r.state !== 'failed'),
  );
  const status: InPlaceUpdateCampaignStatus = {
    updateStatus: d.updateStatus,
    phase: d.phase === 'Wave' || d.phase === 'Canary' ? `${d.phase === 'Canary' ? 'Canary' : `Wave ${d.currentWave ?? 1}`}` : d.phase,
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
    ...(d.currentWave !== undefined ? { currentWave: d.currentWave } : {}),
    plannedWaves: d.plannedWaves,
    ...(d.soakUntil ? { soakUntil: d.soakUntil } : {}),
    ...(prev.startTime ? { startTime: prev.startTime } : plans.length > 0 || d.create.length > 0 ? { startTime: nowTime } : {}),
    ...(terminal ? { completionTime: prev.completionTime ?? nowTime } : {}),
    progress: `${done}/${selected + d.rows.filter((r) => r.removed).length}`,
    machineProgress: `${machines.updated}/${machines.total}${machinesPartial(d, plans, terminal) ? '+' : ''}`,
    clusters: clusterCounts(d),
    machines,
    failedClusters: failedRows.slice(0, MAX_NAMED_CLUSTERS).map(named),
    skippedClusters: skippedRows.slice(0, MAX_NAMED_CLUSTERS).map(named),
    finishedClusters: finishedRecordsOf(d.rows, prev.finishedClusters).slice(0, MAX_FINISHED),
    waves: wavesOf(d.rows, plans),
    conditions: campaignConditions(campaign, d, failedRows.length, now),
  };
  const window = windowStatus(prev.maintenanceWindow, d.window, nowTime);
  if (window) status.maintenanceWindow = window;
  return status;
}

/**
 * Whether the machine total leaves out clusters still to come: a cluster counts once its plan has reported (its
 * machines are known then), so while clusters wait for their wave the total grows as waves start. Marked "+" in
 * machineProgress (e.g. 4/18+) rather than shown as if final. A finished campaign's total is final: clusters that never
 * started (aborted, halted) will not be updated.
 */
export function machinesPartial(d: CampaignDecision, plans: readonly PlanView[], terminal: boolean): boolean {
  if (terminal) return false;
  const counted = new Set(plans.filter((p) => p.updateStatus !== undefined).map((p) => p.clusterName));
  return d.rows.some((r) => !r.removed && !counted.has(r.name));
}

/** The Events a status change stands for (compared with the previous status, so a repeat records nothing). */
export function campaignEvents(
  prev: InPlaceUpdateCampaignStatus | undefined,
  next: InPlaceUpdateCampaignStatus,
  d: CampaignDecision,
): CampaignEvent[] {
  const out: CampaignEvent[] = [];
  const wasDone = new Set((prev?.waves ?? []).filter((w) => w.completionTime).map((w) => w.index));
  for (const w of next.waves ?? [])
    if (w.completionTime && !wasDone.has(w.index))
      out.push({
        type: 'Normal',
        reason: CampaignEventReasons.waveFinished,
        message: `${waveLabel(w.index)} finished: ${w.updated ?? 0} of ${w.clusters ?? 0} clusters updated, ${w.failed ?? 0} failed`,
      });
  const prevValid = prev?.conditions?.find((c) => c.type === 'Valid');
  if (d.problems.length > 0 && prevValid?.status !== 'False')
    out.push({ type: 'Warning', reason: CampaignEventReasons.invalid, message: summarizeList(d.problems) });
  if (d.create.length > 0)
    out.push({
      type: 'Normal',
      reason: CampaignEventReasons.waveStarted,
      message: `${waveLabel(d.create[0]!.wave)} started: ${summarizeList(
        d.create.map((c) => c.clusterName),
        { separator: ', ', maxBytes: 2048 },
      )}`,
    });
  // A window opening or closing, from the recorded state (a restart records nothing twice); as for a plan, a closed
  // window is reported on first sight too: it is why nothing starts.
  const pw = prev?.maintenanceWindow;
  const nw = next.maintenanceWindow;
  if (nw && pw?.state !== nw.state && (pw || nw.state === 'Closed'))
    out.push(
      nw.state === 'Open'
        ? {
            type: 'Normal',
            reason: PlanEventReasons.windowOpened,
            message: `maintenanceWindow: ${nw.message ?? 'open'}; new clusters may start`,
          }
        : {
            type: 'Normal',
            reason: PlanEventReasons.windowClosed,
            message: `maintenanceWindow: ${nw.message ?? 'closed'}; no new cluster starts, running clusters' plans keep their own windows`,
          },
    );
  if (prev?.phase !== d.phase) {
    if (d.phase === 'Halted') out.push({ type: 'Warning', reason: CampaignEventReasons.halted, message: d.message });
    if (d.phase === 'Completed') out.push({ type: 'Normal', reason: CampaignEventReasons.completed, message: d.message });
    if (d.phase === 'Aborting') out.push({ type: 'Normal', reason: CampaignEventReasons.aborting, message: d.message });
    if (d.phase === 'Aborted') out.push({ type: 'Normal', reason: CampaignEventReasons.aborted, message: d.message });
    if (d.phase === 'Paused') out.push({ type: 'Normal', reason: CampaignEventReasons.paused, message: d.message });
    if (prev?.phase === 'Paused') out.push({ type: 'Normal', reason: CampaignEventReasons.resumed, message: 'resumed' });
  }
  return out;
}
