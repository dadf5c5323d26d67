// Where a plan reconcile's cycle goes: snapshot, decision, each act phase, the status write, and the wait before the next
// reconcile of the same plan (its cooldown, then the events it waits for). At maxUnavailable 1 the next machine starts
// about one cycle after a slot frees, so the cycle sets a big plan's pace (bench/results/SCALING.md, issue 25). Observed
// into a histogram (`inplace_plan_controller_reconcile_phase_seconds`), logged per reconcile at debug level, and
// summarised at info level every 30 s while plans reconcile.
import type { Registry } from 'prom-client';
import { Histogram } from 'prom-client';
import type { Logger } from '../runtime/pure/types.js';

/** The phases of one reconcile, in order (act phases named after controller.ts's functions). */
export const PHASES = [
  'wait',
  'cooldown',
  'snapshot',
  'decide',
  'supersede',
  'finalizer',
  'owners',
  'machines',
  'surge',
  'clones',
  'status',
] as const;
/** One phase of the cycle. */
export type Phase = (typeof PHASES)[number];

/** A wait longer than this (the longest cooldown is 1 s) is a plan at rest, not a cycle's wait. */
const IDLE_MS = 2000;

/** How often the info-level summary is logged while reconciles happen. */
const SUMMARY_MS = 30_000;

/** The cycle's clock of one plan controller. */
export class ReconcileTiming {
  private readonly hist: Histogram<'phase'> | undefined;
  /** Per plan key: when its last reconcile ended and the cooldown that followed it. */
  private readonly last = new Map<string, { end: number; cooldownMs: number }>();
  private sums = new Map<Phase, number>();
  private count = 0;
  private since = performance.now();

  constructor(
    registry: Registry | undefined,
    private readonly log: Logger,
  ) {
    this.hist = registry
      ? ((registry.getSingleMetric('inplace_plan_controller_reconcile_phase_seconds') as Histogram<'phase'> | undefined) ??
        new Histogram({
          name: 'inplace_plan_controller_reconcile_phase_seconds',
          help: "Seconds of a plan reconcile's cycle by phase: wait (since the plan's last reconcile ended, cooldown included; gaps over 2 s are rest, not observed), cooldown, snapshot, decide, the act phases, status.",
          labelNames: ['phase'],
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
          registers: [registry],
        }))
      : undefined;
  }

  /** Records the cooldown the controller gives a plan after a reconcile (CooldownFn's result). */
  cooldown(planKey: string, ms: number): void {
    const l = this.last.get(planKey);
    if (l) l.cooldownMs = ms;
  }

  /** Forgets a plan (deleted). */
  drop(planKey: string): void {
    this.last.delete(planKey);
  }

  /** Starts timing one reconcile of a plan; call `mark` after each phase and `end` once it is over. */
  start(planKey: string): ReconcileClock {
    const t0 = performance.now();
    const phases: [Phase, number][] = [];
    const prev = this.last.get(planKey);
    // A longer gap is a plan at rest (nothing changed), not part of a cycle: not observed.
    if (prev && t0 - prev.end <= IDLE_MS) {
      phases.push(['wait', t0 - prev.end]);
      phases.push(['cooldown', Math.min(prev.cooldownMs, t0 - prev.end)]);
    }
    let at = t0;
    return {
      mark: (phase) => {
        const now = performance.now();
        phases.push([phase, now - at]);
        at = now;
      },
      end: (log) => {
        this.last.set(planKey, { end: performance.now(), cooldownMs: 0 });
        this.observe(phases, log);
      },
    };
  }

  private observe(phases: readonly [Phase, number][], log: Logger): void {
    for (const [p, ms] of phases) {
      this.hist?.observe({ phase: p }, ms / 1000);
      this.sums.set(p, (this.sums.get(p) ?? 0) + ms);
    }
    this.count++;
    log.debug({ phasesMs: Object.fromEntries(phases.map(([p, ms]) => [p, Math.round(ms * 10) / 10])) }, 'reconcile timing');
    const now = performance.now();
    if (now - this.since >= SUMMARY_MS) {
      const meanMs = Object.fromEntries(
        PHASES.filter((p) => this.sums.has(p)).map((p) => [p, Math.round((this.sums.get(p)! / this.count) * 10) / 10]),
      );
      this.log.info(
        { reconciles: this.count, seconds: Math.round((now - this.since) / 1000), meanMs },
        'reconcile cycle (mean per reconcile)',
      );
      this.sums = new Map();
      this.count = 0;
      this.since = now;
    }
  }
}

/** One reconcile's clock (ReconcileTiming.start). */
export interface ReconcileClock {
  /** The phase that just ended. */
  mark(phase: Phase): void;
  /** The reconcile is over (its status written or given up). */
  end(log: Logger): void;
}
