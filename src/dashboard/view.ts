// Pure: what the dashboard page shows, computed from the cached campaigns, plans and MachineUpdates (never from the
// API server directly). The server sends these views to the page; the page only lays them out. Gates and failures are
// read from the status the controllers write (the CRDs' shapes, through src/api's generated types), so the page says
// exactly what `inplace status` and kubectl say.
import { CampaignLabels, type InPlaceUpdateCampaign, type InPlaceUpdatePlan, type KubeObject, type MachineUpdate } from '../api/index.js';

/** A campaign object. */
export type CampaignObject = InPlaceUpdateCampaign & KubeObject;
/** A plan object. */
export type PlanObject = InPlaceUpdatePlan & KubeObject;
/** A MachineUpdate object. */
export type MachineUpdateObject = MachineUpdate & KubeObject;

/** One target (control plane or MachineDeployment) of a plan. */
export interface TargetView {
  kind: string;
  name: string;
  state: string;
  machines: number;
  updated: number;
  failed: number;
  updating: number;
  message?: string;
}

/** One plan (a cluster's, in a campaign, or a standalone one). */
export interface PlanView {
  namespace: string;
  name: string;
  cluster: string;
  /** The campaign wave the plan was started in, when a campaign owns it. */
  wave?: number;
  /** pending, updating, updated, at-target, failed, aborting, aborted. */
  state: string;
  machines: number;
  updated: number;
  /** What holds the plan now (window closed, alert firing, paused, invalid), if anything. */
  gate?: string;
  /** Why it failed (Ready's message and the gate failures), if it did. */
  failure?: string;
  targets: TargetView[];
  startTime?: string;
  completionTime?: string;
}

/** One wave of a campaign. */
export interface WaveView {
  index: number;
  label: string;
  clusters: number;
  updated: number;
  failed: number;
  updating: number;
  completionTime?: string;
}

/** A point of a campaign's progress over time. */
export interface ProgressPoint {
  /** Milliseconds since the epoch. */
  t: number;
  machinesUpdated: number;
  clustersDone: number;
  clustersFailed: number;
}

/** A campaign and its clusters' plans. */
export interface CampaignView {
  namespace: string;
  name: string;
  updateStatus: string;
  phase: string;
  progress: string;
  machineProgress: string;
  /** Ready's reason and message: what the campaign does or waits for. */
  reason: string;
  message: string;
  /** What holds the campaign (window closed until ..., soaking until ..., paused, halted), if anything. */
  gate?: string;
  clusters: Required<NonNullable<InPlaceUpdateCampaign['status']>>['clusters'];
  machinesTotal: number;
  clustersSelected: number;
  /** Failed clusters tolerated before the campaign halts (spec.rollout.failureBudget resolved over the selection). */
  failureBudget: number;
  currentWave?: number;
  plannedWaves?: number;
  waves: WaveView[];
  failedClusters: { name: string; wave?: number; reason?: string }[];
  plans: PlanView[];
  startTime?: string;
  completionTime?: string;
}

/** One machine of a plan (from its MachineUpdate). */
export interface MachineView {
  machine: string;
  target: string;
  state: string;
  updater?: string;
  message?: string;
  startTime?: string;
  completionTime?: string;
}

const cond = (o: { status?: { conditions?: { type: string; status: string; reason: string; message?: string }[] } }, t: string) =>
  o.status?.conditions?.find((c) => c.type === t);

/** The plan's state for people: a plan that found every machine already at target is `at-target`. */
export function planState(p: PlanObject): string {
  const s = p.status?.updateStatus ?? 'pending';
  if (s === 'updated' && (p.status?.machines ?? 0) > 0 && p.status?.skippedMachines === p.status?.machines) return 'at-target';
  return s;
}

/** What holds a plan now, from its status (window, alert gate, validity, pause), or undefined. */
export function planGate(p: PlanObject): string | undefined {
  const st = p.status;
  const state = st?.updateStatus ?? 'pending';
  if (['updated', 'failed', 'aborted'].includes(state)) return undefined;
  const valid = cond(p, 'Valid');
  if (valid?.status === 'False') return `invalid: ${valid.message ?? valid.reason}`;
  if (st?.maintenanceWindow?.state === 'Closed') return st.maintenanceWindow.message ?? 'maintenance window closed';
  const ag = st?.alertGate;
  if (ag && ag.state !== 'Clear') return `alert gate ${ag.state}${ag.message ? `: ${ag.message}` : ''}`;
  if (p.spec.paused) return 'paused';
  return undefined;
}

/** Why a plan failed, or undefined. */
export function planFailure(p: PlanObject): string | undefined {
  if (p.status?.updateStatus !== 'failed') return undefined;
  const parts = [cond(p, 'Ready')?.message ?? ''];
  for (const g of p.status.gateFailures ?? []) parts.push(`${g.machine} (${g.gate ?? 'gate'}): ${g.message}`);
  return parts.filter(Boolean).join('; ') || 'failed';
}

/** A plan's view. */
export function planView(p: PlanObject): PlanView {
  const wave = p.metadata.labels?.[CampaignLabels.wave];
  const gate = planGate(p);
  const failure = planFailure(p);
  return {
    namespace: p.metadata.namespace ?? '',
    name: p.metadata.name ?? '',
    cluster: p.spec.clusterName,
    ...(wave !== undefined && /^\d+$/.test(wave) ? { wave: Number(wave) } : {}),
    state: planState(p),
    machines: p.status?.machines ?? 0,
    updated: p.status?.updatedMachines ?? 0,
    ...(gate ? { gate } : {}),
    ...(failure ? { failure } : {}),
    targets: (p.status?.targets ?? []).map((t) => ({
      kind: t.kind,
      name: t.name,
      state: t.updateStatus,
      machines: t.machines ?? 0,
      updated: t.updated ?? 0,
      failed: t.failed ?? 0,
      updating: t.updating ?? 0,
      ...(t.message ? { message: t.message } : {}),
    })),
    ...(p.status?.startTime ? { startTime: p.status.startTime } : {}),
    ...(p.status?.completionTime ? { completionTime: p.status.completionTime } : {}),
  };
}

/** A count or a percentage (rounded down) of `total`, as the campaign controller resolves spec.rollout.failureBudget. */
export function resolveBudget(v: number | string | undefined, total: number): number {
  if (v === undefined) return 0;
  if (typeof v === 'number') return Math.max(0, Math.floor(v));
  const m = /^(\d+)%$/.exec(v);
  if (m) return Math.floor((total * Number(m[1])) / 100);
  return /^\d+$/.test(v) ? Number(v) : 0;
}

/** What holds a campaign now (window, soak, pause, halt), from its status. */
export function campaignGate(c: CampaignObject, now: Date): string | undefined {
  const st = c.status;
  const state = st?.updateStatus ?? 'pending';
  if (state === 'updated' || state === 'aborted') return undefined;
  const ready = cond(c, 'Ready');
  if (state === 'failed') return ready?.message || 'halted';
  if (st?.maintenanceWindow?.state === 'Closed') return st.maintenanceWindow.message ?? 'maintenance window closed';
  if (st?.soakUntil && Date.parse(st.soakUntil) > now.getTime()) return `soaking until ${st.soakUntil}`;
  if (c.spec.paused) return 'paused';
  if (ready?.status === 'False' && /^Waiting|Halted|Invalid/.test(ready.reason)) return `${ready.reason}: ${ready.message ?? ''}`;
  return undefined;
}

const RANK: Record<string, number> = { failed: 0, updating: 1, aborting: 1, pending: 2, aborted: 3, updated: 4, 'at-target': 5 };

/** A campaign's view with its plans (those it owns, by the campaign label), failed and running first in each wave. */
export function campaignView(c: CampaignObject, plans: readonly PlanObject[], now: Date): CampaignView {
  const st = c.status ?? {};
  const cl = st.clusters ?? {};
  const selected = cl.selected ?? 0;
  const gate = campaignGate(c, now);
  const ready = cond(c, 'Ready');
  const views = plans
    .filter((p) => p.metadata.labels?.[CampaignLabels.campaign] === c.metadata.name)
    .map(planView)
    .sort((a, b) => (a.wave ?? 0) - (b.wave ?? 0) || (RANK[a.state] ?? 9) - (RANK[b.state] ?? 9) || a.cluster.localeCompare(b.cluster));
  return {
    namespace: c.metadata.namespace ?? '',
    name: c.metadata.name ?? '',
    updateStatus: st.updateStatus ?? 'pending',
    phase: st.phase ?? '',
    progress: st.progress ?? '',
    machineProgress: st.machineProgress ?? '',
    reason: ready?.reason ?? '',
    message: ready?.message ?? '',
    ...(gate ? { gate } : {}),
    clusters: cl,
    machinesTotal: st.machines?.total ?? 0,
    clustersSelected: selected,
    failureBudget: resolveBudget(c.spec.rollout?.failureBudget, selected),
    ...(st.currentWave !== undefined ? { currentWave: st.currentWave } : {}),
    ...(st.plannedWaves !== undefined ? { plannedWaves: st.plannedWaves } : {}),
    waves: (st.waves ?? []).map((w) => ({
      index: w.index,
      label: w.index === 0 ? 'canary' : `wave ${w.index}`,
      clusters: w.clusters ?? 0,
      updated: w.updated ?? 0,
      failed: w.failed ?? 0,
      updating: w.updating ?? 0,
      ...(w.completionTime ? { completionTime: w.completionTime } : {}),
    })),
    failedClusters: st.failedClusters ?? [],
    plans: views,
    ...(st.startTime ? { startTime: st.startTime } : {}),
    ...(st.completionTime ? { completionTime: st.completionTime } : {}),
  };
}

/** The campaign's progress now, as a point of its plot. */
export function progressPoint(c: CampaignObject, t: number): ProgressPoint {
  const cl = c.status?.clusters ?? {};
  return {
    t,
    machinesUpdated: c.status?.machines?.updated ?? 0,
    clustersDone: (cl.updated ?? 0) + (cl.skipped ?? 0) + (cl.failed ?? 0) + (cl.aborted ?? 0),
    clustersFailed: cl.failed ?? 0,
  };
}

/**
 * Appends `p` to a campaign's history unless it repeats the last point; past `max` points every other old point is
 * dropped, so a long campaign keeps its whole shape in bounded memory.
 */
export function appendPoint(points: ProgressPoint[], p: ProgressPoint, max: number): ProgressPoint[] {
  const last = points[points.length - 1];
  if (
    last &&
    last.machinesUpdated === p.machinesUpdated &&
    last.clustersDone === p.clustersDone &&
    last.clustersFailed === p.clustersFailed
  )
    return points;
  const next = [...points, p];
  if (next.length <= max) return next;
  return [...next.slice(0, -1).filter((_, i) => i % 2 === 0), p];
}

/** A plan's machines, from its MachineUpdates (by spec.planName), failed and running first. */
export function machinesView(mus: readonly MachineUpdateObject[]): MachineView[] {
  return mus
    .map((m) => ({
      machine: m.spec.machineRef.name,
      target: `${m.spec.target.kind}/${m.spec.target.name}`,
      state: m.status?.updateStatus || 'pending',
      ...(m.status?.currentUpdater ? { updater: m.status.currentUpdater } : {}),
      ...(m.status?.message ? { message: m.status.message } : {}),
      ...(m.status?.startTime ? { startTime: m.status.startTime } : {}),
      ...(m.status?.completionTime ? { completionTime: m.status.completionTime } : {}),
    }))
    .sort((a, b) => (RANK[a.state] ?? 9) - (RANK[b.state] ?? 9) || a.machine.localeCompare(b.machine));
}
