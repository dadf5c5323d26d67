// Watch-fed timing of a plan run: when each MachineUpdate and task was first seen created and first seen updated, in
// the benchmark process (ms clock at receipt). Derives the per-step platform overhead figures.
import {
  InPlaceUpdatePlans,
  Labels,
  MachineUpdates,
  UpdaterUpdateTasks,
  isTerminal,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../../src/api/index.js';
import { createInformer, type KubeClient, type SharedInformer } from '../../src/runtime/index.js';

/** Times (ms since epoch) seen for one object. */
interface Seen {
  created: number;
  updated?: number;
  target?: string;
  machine?: string;
  /** Tasks: first seen with a status (the updater's first write: updating, startTime). */
  started?: number;
  /** Tasks: completionTime − startTime as the updater recorded them (its own clock, to the microsecond). */
  runMs?: number;
}

/** Summary of a sample in milliseconds. */
export interface Summary {
  n: number;
  median: number;
  p99: number;
  mean: number;
  max: number;
}

/** Median, p99, mean, max of a sample (nearest-rank quantiles). */
export function summarize(xs: number[]): Summary {
  if (xs.length === 0) return { n: 0, median: NaN, p99: NaN, mean: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
  return { n: s.length, median: q(0.5), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, max: s[s.length - 1]! };
}

/** Records MachineUpdates and tasks of one plan as they are seen on watches. */
export class PlanObserver {
  readonly mus = new Map<string, Seen>();
  readonly tasks = new Map<string, Seen>();
  private informers: SharedInformer[] = [];
  /** When the plan was first seen terminal, and with which status. */
  terminal: { at: number; status: string } | undefined;
  /** When each target (status.targets[].name) was first seen `updated` in the plan's status. */
  readonly targetsDone = new Map<string, number>();
  private onTerminal: (() => void) | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly ns: string,
    private readonly plan: string,
  ) {}

  async start(): Promise<void> {
    const mus = createInformer<MachineUpdate & KubeObject>(this.client, MachineUpdates, { namespace: this.ns });
    mus.onChange((mu, _old, type) => {
      if (type === 'delete' || mu.spec.planName !== this.plan) return;
      const now = Date.now();
      const s = this.mus.get(mu.metadata.name!) ?? { created: now, target: mu.spec.target.name, machine: mu.spec.machineRef.name };
      if (mu.status?.updateStatus === 'updated' && s.updated === undefined) s.updated = now;
      this.mus.set(mu.metadata.name!, s);
    });
    const tasks = createInformer(this.client, UpdaterUpdateTasks, { namespace: this.ns });
    tasks.onChange((t, _old, type) => {
      if (type === 'delete' || t.metadata.labels?.[Labels.planName] !== this.plan) return;
      const now = Date.now();
      const s = this.tasks.get(t.metadata.name!) ?? { created: now, machine: t.metadata.labels?.[Labels.machineName] };
      const st = t['status'] as { updateStatus?: string; startTime?: string; completionTime?: string } | undefined;
      if (st?.updateStatus && s.started === undefined) s.started = now;
      if (st?.updateStatus === 'updated' && s.updated === undefined) {
        s.updated = now;
        if (st.startTime && st.completionTime) s.runMs = Date.parse(st.completionTime) - Date.parse(st.startTime);
      }
      this.tasks.set(t.metadata.name!, s);
    });
    const plans = createInformer<InPlaceUpdatePlan & KubeObject>(this.client, InPlaceUpdatePlans, { namespace: this.ns });
    plans.onChange((p, _old, type) => {
      if (type === 'delete' || p.metadata.name !== this.plan || this.terminal) return;
      const now = Date.now();
      for (const t of p.status?.targets ?? [])
        if (t.updateStatus === 'updated' && !this.targetsDone.has(t.name)) this.targetsDone.set(t.name, now);
      if (isTerminal(p.status?.updateStatus)) {
        this.terminal = { at: Date.now(), status: p.status!.updateStatus! };
        this.onTerminal?.();
      }
    });
    this.informers = [mus as unknown as SharedInformer, tasks, plans as unknown as SharedInformer];
    for (const i of this.informers) i.start();
    await Promise.all(this.informers.map((i) => i.synced()));
  }

  /** Resolves when the plan is seen terminal, or with undefined after `timeoutMs`. */
  waitTerminal(timeoutMs: number): Promise<{ at: number; status: string } | undefined> {
    if (this.terminal) return Promise.resolve(this.terminal);
    return new Promise((res) => {
      const t = setTimeout(() => res(undefined), timeoutMs);
      this.onTerminal = () => {
        clearTimeout(t);
        res(this.terminal);
      };
    });
  }

  /** Counts of MachineUpdates seen and updated (progress on a timeout). */
  progress(): { machineUpdates: number; updated: number } {
    return { machineUpdates: this.mus.size, updated: [...this.mus.values()].filter((s) => s.updated !== undefined).length };
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /**
   * Overhead figures: taskToMuUpdated = task updated -> its MachineUpdate updated (commit and bookkeeping);
   * muToTask = MachineUpdate created -> its task created; nextTask = a task updated -> the next task created in the same
   * target (a freed slot refilled: plan controller + machine task controller), matched in order within each target
   * after the first `concurrency[target]` starts; groupHandoff = last control-plane task updated -> first
   * MachineDeployment task created; nextMachineUpdate = a MachineUpdate updated -> the next MachineUpdate created in the
   * same target (the plan controller's part of a refill: it labels the machine and creates its MachineUpdate together).
   */
  overhead(
    concurrency: Map<string, number>,
    cpTarget: string,
  ): { taskToMuUpdated: Summary; muToTask: Summary; nextTask: Summary; nextMachineUpdate: Summary; groupHandoffMs: number | undefined } {
    const muByMachine = new Map<string, Seen>();
    for (const s of this.mus.values()) if (s.machine) muByMachine.set(s.machine, s);
    const taskToMu: number[] = [];
    const muToTask: number[] = [];
    const byTarget = new Map<string, { created: number[]; updated: number[] }>();
    for (const t of this.tasks.values()) {
      const mu = t.machine ? muByMachine.get(t.machine) : undefined;
      if (!mu) continue;
      if (t.updated !== undefined && mu.updated !== undefined) taskToMu.push(mu.updated - t.updated);
      muToTask.push(t.created - mu.created);
      const g = byTarget.get(mu.target ?? '') ?? { created: [], updated: [] };
      g.created.push(t.created);
      if (t.updated !== undefined) g.updated.push(t.updated);
      byTarget.set(mu.target ?? '', g);
    }
    const muByTarget = new Map<string, { created: number[]; updated: number[] }>();
    for (const mu of this.mus.values()) {
      const g = muByTarget.get(mu.target ?? '') ?? { created: [], updated: [] };
      g.created.push(mu.created);
      if (mu.updated !== undefined) g.updated.push(mu.updated);
      muByTarget.set(mu.target ?? '', g);
    }
    const next = refills(byTarget, concurrency);
    const nextMu = refills(muByTarget, concurrency);
    const cp = byTarget.get(cpTarget);
    const mdCreated = [...byTarget].filter(([t]) => t !== cpTarget).flatMap(([, g]) => g.created);
    const groupHandoffMs = cp && cp.updated.length && mdCreated.length ? Math.min(...mdCreated) - Math.max(...cp.updated) : undefined;
    return {
      taskToMuUpdated: summarize(taskToMu),
      muToTask: summarize(muToTask),
      nextTask: summarize(next),
      nextMachineUpdate: summarize(nextMu),
      groupHandoffMs,
    };
  }
}

/** Per target, the gap between the (i-c)-th end and the i-th start (c = the target's concurrency): a freed slot refilled. */
function refills(byTarget: Map<string, { created: number[]; updated: number[] }>, concurrency: Map<string, number>): number[] {
  const out: number[] = [];
  for (const [target, g] of byTarget) {
    const c = concurrency.get(target) ?? 1;
    const created = [...g.created].sort((a, b) => a - b);
    const updated = [...g.updated].sort((a, b) => a - b);
    for (let i = c; i < created.length; i++) {
      const freed = updated[i - c];
      if (freed !== undefined) out.push(created[i]! - freed);
    }
  }
  return out;
}

/** Where a plan's wall time went, stage by stage (bench/run.ts prints it; `stagesMs` in the case JSON). */
export interface Stages {
  /** Per machine step, every machine of the plan: MachineUpdate created → first task created → the updater's first
   * status → last task updated (receipt times in the bench) → MachineUpdate updated; and the refill gap before it. */
  perStep: {
    slotFreeToMuCreated: Summary;
    muCreatedToTaskCreated: Summary;
    taskCreatedToUpdaterStarted: Summary;
    updaterStartedToUpdated: Summary;
    /** completionTime − startTime in the task's status, minus d: how late the updater reported `updated` by its own clock. */
    updaterOverrun: Summary;
    taskUpdatedToMuUpdated: Summary;
  };
  /** The stages summed along the critical path: the control plane, then the MachineDeployment that finished last. */
  criticalPath: {
    target: string | undefined;
    steps: number;
    /** plan created → first control-plane MachineUpdate created. */
    planStart: number;
    /** last control-plane MachineUpdate updated → first MachineUpdate of the critical target created. */
    handoff: number;
    slotFreeToMuCreated: number;
    muCreatedToTaskCreated: number;
    taskCreatedToUpdaterStarted: number;
    /** updater started → updated, minus d per step (the d of the lower bound is not overhead). */
    updaterOverrun: number;
    taskUpdatedToMuUpdated: number;
    /** critical target's last MachineUpdate updated → the plan terminal. */
    planEnd: number;
    /** The sum of the above: wall time − steps × d (= wall − lower bound when the lower bound is this path). */
    total: number;
  };
  planStart: { toFirstMu: number | undefined; toFirstMdMu: number | undefined };
  planEnd: {
    /** last MachineUpdate updated (any target) → plan terminal. */
    lastMuUpdatedToPlanTerminal: number | undefined;
    /** per target: its last MachineUpdate updated → the target `updated` in the plan's status. */
    lastMuToTargetUpdated: Summary;
    /** last target `updated` → plan terminal. */
    lastTargetToPlanTerminal: number | undefined;
  };
}

/** One machine's step: its MachineUpdate and the span of its tasks. */
interface Step {
  target: string;
  muCreated: number;
  muUpdated?: number;
  taskCreated?: number;
  started?: number;
  taskUpdated?: number;
  runMs?: number;
}

/** Stages of a plan run from what `o` saw; `planCreated` = when the plan was created, `d` = the step duration (ms). */
export function stages(o: PlanObserver, planCreated: number, dMs: number, concurrency: Map<string, number>, cpTarget: string): Stages {
  const steps = new Map<string, Step>();
  for (const mu of o.mus.values()) {
    if (!mu.machine) continue;
    steps.set(mu.machine, {
      target: mu.target ?? '',
      muCreated: mu.created,
      ...(mu.updated !== undefined ? { muUpdated: mu.updated } : {}),
    });
  }
  const min = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined ? b : b === undefined ? a : Math.min(a, b);
  const max = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined ? b : b === undefined ? a : Math.max(a, b);
  for (const t of o.tasks.values()) {
    const s = t.machine ? steps.get(t.machine) : undefined;
    if (!s) continue;
    // Several updaters run one after the other on a machine: the step spans its first task's creation to its last update.
    s.taskCreated = min(s.taskCreated, t.created);
    s.started = min(s.started, t.started);
    s.taskUpdated = max(s.taskUpdated, t.updated);
    if (t.runMs !== undefined) s.runMs = (s.runMs ?? 0) + t.runMs;
  }
  const all = [...steps.values()];
  const diffs = (f: (s: Step) => number | undefined): number[] =>
    all.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x));
  const sub = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined ? undefined : a - b;
  // Refill gaps per target: the (i−c)-th MachineUpdate updated → the i-th created.
  const byTarget = new Map<string, Step[]>();
  for (const s of all) byTarget.set(s.target, [...(byTarget.get(s.target) ?? []), s]);
  const refill = new Map<Step, number>();
  for (const [target, ss] of byTarget) {
    const c = concurrency.get(target) ?? 1;
    const created = [...ss].sort((a, b) => a.muCreated - b.muCreated);
    const ups = ss
      .map((s) => s.muUpdated)
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    for (let i = c; i < created.length; i++) if (ups[i - c] !== undefined) refill.set(created[i]!, created[i]!.muCreated - ups[i - c]!);
  }
  const perStep = {
    slotFreeToMuCreated: summarize([...refill.values()]),
    muCreatedToTaskCreated: summarize(diffs((s) => sub(s.taskCreated, s.muCreated))),
    taskCreatedToUpdaterStarted: summarize(diffs((s) => sub(s.started, s.taskCreated))),
    updaterStartedToUpdated: summarize(diffs((s) => sub(s.taskUpdated, s.started))),
    updaterOverrun: summarize(diffs((s) => (s.runMs === undefined ? undefined : s.runMs - dMs))),
    taskUpdatedToMuUpdated: summarize(diffs((s) => sub(s.muUpdated, s.taskUpdated))),
  };
  const lastUpdated = (ss: Step[] | undefined): number | undefined =>
    ss?.reduce<number | undefined>((m, s) => max(m, s.muUpdated), undefined);
  const firstCreated = (ss: Step[] | undefined): number | undefined =>
    ss?.reduce<number | undefined>((m, s) => min(m, s.muCreated), undefined);
  const cp = byTarget.get(cpTarget);
  const mdTargets = [...byTarget].filter(([t]) => t !== cpTarget);
  const critical = mdTargets.reduce<[string, Step[]] | undefined>(
    (best, x) => (best === undefined || (lastUpdated(x[1]) ?? Infinity) > (lastUpdated(best[1]) ?? Infinity) ? x : best),
    undefined,
  );
  const path = [...(cp ?? []), ...(critical?.[1] ?? [])];
  const sum = (f: (s: Step) => number | undefined): number => path.reduce((a, s) => a + (f(s) ?? 0), 0);
  const terminal = o.terminal?.at;
  const planStart = (firstCreated(cp) ?? firstCreated(critical?.[1]) ?? planCreated) - planCreated;
  const handoff = cp && critical ? (firstCreated(critical[1]) ?? 0) - (lastUpdated(cp) ?? 0) : 0;
  const planEnd = (terminal ?? 0) - (lastUpdated(critical?.[1] ?? cp) ?? terminal ?? 0);
  const cpath = {
    target: critical?.[0],
    steps: path.length,
    planStart,
    handoff,
    slotFreeToMuCreated: sum((s) => refill.get(s)),
    muCreatedToTaskCreated: sum((s) => sub(s.taskCreated, s.muCreated)),
    taskCreatedToUpdaterStarted: sum((s) => sub(s.started, s.taskCreated)),
    updaterOverrun: sum((s) => sub(sub(s.taskUpdated, s.started), dMs)),
    taskUpdatedToMuUpdated: sum((s) => sub(s.muUpdated, s.taskUpdated)),
    planEnd,
    total: 0,
  };
  cpath.total =
    cpath.planStart +
    cpath.handoff +
    cpath.slotFreeToMuCreated +
    cpath.muCreatedToTaskCreated +
    cpath.taskCreatedToUpdaterStarted +
    cpath.updaterOverrun +
    cpath.taskUpdatedToMuUpdated +
    cpath.planEnd;
  const allLast = lastUpdated(all);
  const targetEnds = [...byTarget].map(([t, ss]) => sub(o.targetsDone.get(t), lastUpdated(ss))).filter((x): x is number => x !== undefined);
  const lastTarget = [...o.targetsDone.values()].reduce<number | undefined>((m, x) => max(m, x), undefined);
  return {
    perStep,
    criticalPath: cpath,
    planStart: {
      toFirstMu: sub(firstCreated(all), planCreated),
      toFirstMdMu: sub(firstCreated(mdTargets.flatMap(([, ss]) => ss)), planCreated),
    },
    planEnd: {
      lastMuUpdatedToPlanTerminal: sub(terminal, allLast),
      lastMuToTargetUpdated: summarize(targetEnds),
      lastTargetToPlanTerminal: sub(terminal, lastTarget),
    },
  };
}
