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
      if ((t['status'] as { updateStatus?: string } | undefined)?.updateStatus === 'updated' && s.updated === undefined) s.updated = now;
      this.tasks.set(t.metadata.name!, s);
    });
    const plans = createInformer<InPlaceUpdatePlan & KubeObject>(this.client, InPlaceUpdatePlans, { namespace: this.ns });
    plans.onChange((p, _old, type) => {
      if (type === 'delete' || p.metadata.name !== this.plan || this.terminal) return;
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
