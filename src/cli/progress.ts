// Pure model and rendering of a plan's live progress (the demo's display) and of its final summary.
import { isTerminal, type InPlaceUpdatePlan, type KubeObject, type MachineUpdate, type TargetKind } from '../api/index.js';
import { safeText } from './safe-text.js';

type Plan = InPlaceUpdatePlan & KubeObject;
type Mu = MachineUpdate & KubeObject;

/** One machine as the display shows it. */
export interface MachineView {
  name: string;
  status: string;
  /** The updater whose task is in flight ('' when none). */
  updater: string;
  message: string;
}

/** One plan target as the display shows it. */
export interface TargetView {
  kind: TargetKind;
  name: string;
  sequence: number;
  status: string;
  total: number;
  updated: number;
  updating: number;
  failed: number;
  aborted: number;
  machines: MachineView[];
}

/** The whole display at one moment. */
export interface ProgressView {
  plan: string;
  status: string;
  paused: boolean;
  message: string;
  targets: TargetView[];
}

/** Whether a MachineUpdate waits on a task no updater reports on (reason UpdaterNotReporting). */
const unreported = (mu: Mu): boolean =>
  mu.status?.conditions?.some((c) => c.type === 'InPlaceUpdate' && c.status === 'True' && c.reason === 'UpdaterNotReporting') === true;

/** Whether the platform gave up on a MachineUpdate's aborting updater (reason AbortTimedOut: untouched or unknown state). */
const givenUp = (mu: Mu): boolean =>
  mu.status?.conditions?.some((c) => c.type === 'InPlaceUpdate' && c.reason === 'AbortTimedOut') === true;

/** Builds the view from the plan and its MachineUpdates; `machineCounts` (target name -> machines) fills totals the plan has not reported yet. */
export function buildProgress(plan: Plan, mus: readonly Mu[], machineCounts: Readonly<Record<string, number>> = {}): ProgressView {
  const specTargets: { kind: TargetKind; name: string; sequence: number }[] = [];
  if (plan.spec.controlPlane)
    specTargets.push({ kind: 'ControlPlane', name: plan.spec.controlPlane.name, sequence: plan.spec.controlPlane.sequence });
  for (const md of plan.spec.machineDeployments ?? [])
    specTargets.push({ kind: 'MachineDeployment', name: md.name, sequence: md.sequence });
  specTargets.sort(
    (a, b) => a.sequence - b.sequence || (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'ControlPlane' ? -1 : 1),
  );

  const targets = specTargets.map((t): TargetView => {
    const row = plan.status?.targets?.find((r) => r.kind === t.kind && r.name === t.name);
    const machines = mus
      .filter((mu) => mu.spec.planName === plan.metadata.name && mu.spec.target.kind === t.kind && mu.spec.target.name === t.name)
      .map((mu): MachineView => {
        // A MachineUpdate exists once the plan started its machine, and its first status may wait while its task runs
        // (up to 5 s): in flight, as the plan counts it.
        const status = mu.status?.updateStatus || 'updating';
        return {
          name: mu.spec.machineRef.name,
          status,
          updater: isTerminal(status) ? '' : (mu.status?.currentUpdater ?? ''),
          // A failure, an update stuck because no updater reports on its task, an abort waiting for its updater (until
          // when) or given up on, is worth a line of its own.
          message: status === 'failed' || status === 'aborting' || unreported(mu) || givenUp(mu) ? (mu.status?.message ?? '') : '',
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    // Counts come from the MachineUpdates when there are any (the same read as the machine lines), so a frame
    // never shows counts and machines from two different moments; before that, from the plan's status row.
    const count = (s: string): number => machines.filter((m) => m.status === s).length;
    const own = machines.length > 0;
    return {
      ...t,
      status: row?.updateStatus ?? 'pending',
      total: Math.max(row?.machines ?? 0, machineCounts[t.name] ?? 0, machines.length),
      updated: own ? count('updated') : (row?.updated ?? 0),
      updating: own ? count('updating') + count('aborting') : (row?.updating ?? 0),
      failed: own ? count('failed') : (row?.failed ?? 0),
      aborted: own ? count('aborted') : (row?.aborted ?? 0),
      machines,
    };
  });
  const notOk = plan.status?.conditions?.find(
    (c) => (c.type === 'Valid' || c.type === 'Ready') && c.status === 'False' && c.reason !== 'Updating' && c.reason !== 'Pending',
  );
  return {
    plan: `${plan.metadata.namespace}/${plan.metadata.name}`,
    status: plan.status?.updateStatus ?? 'pending',
    paused: plan.spec.paused === true,
    message: notOk && notOk.message ? `${notOk.reason}: ${notOk.message}` : '',
    targets,
  };
}

/** A progress bar of `width` cells for done/total. */
export function bar(done: number, total: number, width: number): string {
  const filled = total <= 0 ? 0 : Math.min(width, Math.round((done / total) * width));
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

/** Seconds with one decimal, e.g. `12.3s`. */
export const secs = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

/**
 * The full-screen rendering of the view (for a TTY, redrawn in place). When one line per machine would not fit
 * in `maxLines`, only machines in flight or failed are listed per target, with a count of the others.
 */
export function renderProgress(v: ProgressView, elapsedMs: number, width = 80, maxLines = Infinity): string {
  const head: string[] = [`InPlaceUpdatePlan ${v.plan}  ${v.status}${v.paused ? ' (paused)' : ''}  ${secs(elapsedMs)}`];
  if (v.message) head.push(`  ${v.message}`);
  const nameW = Math.max(...v.targets.map((t) => t.kind.length + 1 + t.name.length), 10);
  const barW = Math.max(10, Math.min(30, width - nameW - 40));
  const full = head.length + v.targets.reduce((n, t) => n + 1 + t.machines.length, 0);
  const compact = full > maxLines;
  const lines = [...head];
  for (const t of v.targets) {
    const extra = [
      t.updating ? `${t.updating} updating` : '',
      t.failed ? `${t.failed} failed` : '',
      t.aborted ? `${t.aborted} aborted` : '',
    ]
      .filter((x) => x)
      .join(', ');
    lines.push(
      `  ${`${t.kind} ${t.name}`.padEnd(nameW)} [${bar(t.updated, t.total, barW)}] ${t.updated}/${t.total} ${t.status}${extra ? `  ${extra}` : ''}`,
    );
    const shown = compact ? t.machines.filter((m) => m.status !== 'updated' && m.status !== 'pending') : t.machines;
    for (const m of shown) {
      const detail = [m.updater ? `  (${m.updater})` : '', m.message ? `  ${m.message}` : ''].join('');
      lines.push(`    ${mark(m.status)} ${m.name.padEnd(28)} ${m.status}${detail}`.slice(0, width));
    }
    const hidden = t.machines.length - shown.length;
    if (hidden > 0) lines.push(`    … ${hidden} more (${t.machines.filter((m) => m.status === 'updated').length} updated)`);
  }
  return lines.map(safeText).join('\n') + '\n';
}

const mark = (status: string): string =>
  status === 'updated'
    ? '✔'
    : status === 'failed'
      ? '✖'
      : status === 'aborted'
        ? '■'
        : status === 'updating' || status === 'aborting'
          ? '▶'
          : '·';

/** Plain lines describing what changed between two views (non-TTY output: one line per change). */
export function diffProgress(prev: ProgressView | undefined, next: ProgressView): string[] {
  const out: string[] = [];
  if (!prev || prev.status !== next.status || prev.paused !== next.paused)
    out.push(`plan ${next.plan}: ${next.status}${next.paused ? ' (paused)' : ''}`);
  if (next.message && prev?.message !== next.message) out.push(`plan ${next.plan}: ${next.message}`);
  for (const t of next.targets) {
    const pt = prev?.targets.find((x) => x.kind === t.kind && x.name === t.name);
    if (!pt || pt.status !== t.status) out.push(`${t.kind} ${t.name}: ${t.status} (${t.updated}/${t.total} updated)`);
    for (const m of t.machines) {
      const pm = pt?.machines.find((x) => x.name === m.name);
      // A new message is news too: the diagnosis that no updater reports arrives while status and updater stay.
      if (!pm || pm.status !== m.status || pm.updater !== m.updater || pm.message !== m.message) {
        out.push(`  machine ${m.name}: ${m.status}${m.updater ? ` (updater ${m.updater})` : ''}${m.message ? ` — ${m.message}` : ''}`);
      }
    }
  }
  return out.map(safeText);
}

/** Per-updater task timing of a finished plan. */
export interface UpdaterTiming {
  updater: string;
  tasks: number;
  totalMs: number;
  maxMs: number;
}

/** Aggregates task durations (status.tasks[].startTime -> completionTime) per updater; unfinished tasks are skipped. */
export function updaterTimings(mus: readonly Mu[]): UpdaterTiming[] {
  const by = new Map<string, UpdaterTiming>();
  for (const mu of mus) {
    for (const t of mu.status?.tasks ?? []) {
      const s = t.startTime ? Date.parse(t.startTime) : NaN;
      const e = t.completionTime ? Date.parse(t.completionTime) : NaN;
      if (Number.isNaN(s) || Number.isNaN(e)) continue;
      const cur = by.get(t.updater) ?? { updater: t.updater, tasks: 0, totalMs: 0, maxMs: 0 };
      cur.tasks++;
      cur.totalMs += Math.max(0, e - s);
      cur.maxMs = Math.max(cur.maxMs, e - s);
      by.set(t.updater, cur);
    }
  }
  return [...by.values()].sort((a, b) => a.updater.localeCompare(b.updater));
}

/** Facts the summary reports. */
export interface SummaryInput {
  view: ProgressView;
  plan: Plan;
  mus: readonly Mu[];
  wallMs: number;
  /** Machines still carrying the plan-name label. */
  stillLabelled: string[];
  /** Responsibilities checked on the objects after the run: committed / total, and what is wrong. */
  committed: { ok: number; total: number; wrong: string[]; inPlace?: number };
}

/** The end-of-run summary. */
export function renderSummary(s: SummaryInput): string {
  const all = s.view.targets.flatMap((t) => t.machines);
  const total = s.view.targets.reduce((n, t) => n + t.total, 0);
  const count = (st: string): number => all.filter((m) => m.status === st).length;
  const st = s.plan.status;
  const planMs = st?.startTime && st.completionTime ? Date.parse(st.completionTime) - Date.parse(st.startTime) : undefined;
  const lines = [
    '',
    `Summary: InPlaceUpdatePlan ${s.view.plan} ended ${s.view.status}`,
    `  duration:          ${secs(s.wallMs)} wall clock${planMs !== undefined && !Number.isNaN(planMs) ? `, ${secs(planMs)} plan start -> completion` : ''}`,
    `  machines:          ${count('updated')}/${total} updated, ${count('failed')} failed, ${count('aborted')} aborted`,
    `  changes committed: ${s.committed.ok}/${s.committed.total}${s.committed.inPlace ? `, ${s.committed.inPlace} already in place (nothing written)` : ''}`,
    ...s.committed.wrong.slice(0, 10).map((w) => `    ✖ ${w}`),
    `  machines still labelled with the plan: ${s.stillLabelled.length === 0 ? 'none' : s.stillLabelled.join(', ')}`,
  ];
  // docs/design.md §11: the owners (KCP, MachineDeployments, MachineSets, templates) carry the values, so CAPI replaces nothing.
  const owners = st?.conditions?.find((c) => c.type === 'OwnersAligned');
  if (owners) lines.push(`  owners aligned:    ${owners.status === 'True' ? '✔' : `✖ ${owners.reason}:`} ${owners.message ?? ''}`);
  const timings = updaterTimings(s.mus);
  if (timings.length > 0) {
    lines.push('  per updater (task start -> completion):');
    const w = Math.max(...timings.map((t) => t.updater.length));
    for (const t of timings) {
      lines.push(
        `    ${t.updater.padEnd(w)}  ${String(t.tasks).padStart(3)} tasks  avg ${secs(t.totalMs / t.tasks)}  max ${secs(t.maxMs)}  total ${secs(t.totalMs)}`,
      );
    }
  }
  for (const m of all.filter((x) => x.status === 'failed')) lines.push(`  ✖ ${m.name}: ${m.message || 'failed'}`);
  return lines.map(safeText).join('\n') + '\n';
}
