// Gates that hold a plan's next machine start. Maintenance windows (spec.maintenanceWindows): outside every window no
// new machine starts, exactly like spec.paused; machines in flight finish, or with spec.maintenanceWindowEnd Abort the
// plan aborts them when a window closes. Pure: the snapshot's clock is passed in, the calendar is src/api/windows.ts.
import type { InPlaceUpdatePlan, InPlaceUpdatePlanStatus } from '../api/index.js';
import { ConditionTypes, PlanEventReasons, Reasons, isTerminal } from '../api/index.js';
import type { MaintenanceWindowSpec } from '../api/windows.js';
import { describeWindowInstant, maintenanceWindowState, validateMaintenanceWindows } from '../api/windows.js';
import type { PlanEvent } from './status.js';

/** Gate names as metrics and docs spell them. */
export const GateNames = { maintenanceWindow: 'maintenanceWindow' } as const;

/** The plan's window status field (status.maintenanceWindow). */
export type WindowStatus = NonNullable<InPlaceUpdatePlanStatus['maintenanceWindow']>;

/** Where the plan stands against its windows at the snapshot's instant. */
export interface WindowGate {
  /** Validation problems of spec.maintenanceWindows (paths prefixed), empty when valid or unset. */
  problems: string[];
  /** Undefined without windows or with invalid ones; otherwise open/closed and when that changes. */
  state?: { open: boolean; nextChange: Date; message: string };
  /** spec.maintenanceWindowEnd is Abort. */
  abortAtEnd: boolean;
}

// Overlap checks enumerate a year of openings (tens of thousands of luxon instants for 32 windows): too costly for
// every reconcile of every plan. The answer depends on the specs and, through the year's daylight-saving changes,
// only on the day, so it is memoised per (specs, UTC day), bounded.
const MEMO_MAX = 256;
const memo = new Map<string, string[]>();

function validateMemo(specs: readonly MaintenanceWindowSpec[], now: Date): string[] {
  const key = `${now.toISOString().slice(0, 10)}|${JSON.stringify(specs)}`;
  const hit = memo.get(key);
  if (hit) return hit;
  const problems = validateMaintenanceWindows(specs, now);
  if (memo.size >= MEMO_MAX) memo.delete(memo.keys().next().value!);
  memo.set(key, problems);
  return problems;
}

/** The plan's window gate at `now`. */
export function windowGate(plan: InPlaceUpdatePlan, now: Date): WindowGate {
  const specs = (plan.spec.maintenanceWindows ?? []) as MaintenanceWindowSpec[];
  const abortAtEnd = plan.spec.maintenanceWindowEnd === 'Abort';
  if (specs.length === 0) return { problems: [], abortAtEnd };
  const problems = validateMemo(specs, now);
  if (problems.length > 0) return { problems, abortAtEnd };
  const st = maintenanceWindowState(specs, now)!;
  const spec = specs[st.window]!;
  return st.open
    ? {
        problems,
        abortAtEnd,
        state: { open: true, nextChange: st.closesAt, message: `window open until ${describeWindowInstant(spec, st.closesAt)}` },
      }
    : {
        problems,
        abortAtEnd,
        state: { open: false, nextChange: st.opensAt, message: `window closed until ${describeWindowInstant(spec, st.opensAt)}` },
      };
}

/** status.maintenanceWindow for this reconcile (since moves only when the state flips), undefined without windows. */
export function windowStatus(prev: WindowStatus | undefined, gate: WindowGate, now: string): WindowStatus | undefined {
  if (!gate.state) return undefined;
  const state = gate.state.open ? 'Open' : 'Closed';
  return {
    state,
    since: prev?.state === state && prev.since ? prev.since : now,
    nextChange: gate.state.nextChange.toISOString(),
    message: gate.state.message,
  };
}

/** The Event of a window state change, from the recorded state (level-based: a restart records nothing twice). */
export function windowEvents(prev: WindowStatus | undefined, next: WindowStatus | undefined, abortAtEnd: boolean): PlanEvent[] {
  if (!next || prev?.state === next.state) return [];
  if (next.state === 'Open')
    return prev ? [{ type: 'Normal', reason: PlanEventReasons.windowOpened, message: `maintenanceWindow: ${next.message}` }] : [];
  const inFlight = abortAtEnd ? 'machines in update are aborted (maintenanceWindowEnd Abort)' : 'machines in update finish';
  return [
    {
      type: 'Normal',
      reason: PlanEventReasons.windowClosed,
      message: `maintenanceWindow: ${next.message}; no new machine starts, ${inFlight}`,
    },
  ];
}

/** The gate holding a plan as its recorded status says (Ready reason), with since when; undefined when none holds it. */
export function heldBy(plan: InPlaceUpdatePlan): { gate: string; since: number } | undefined {
  const st = plan.status;
  if (!st || isTerminal(st.updateStatus)) return undefined;
  const ready = st.conditions?.find((c) => c.type === ConditionTypes.ready);
  if (ready?.reason !== Reasons.waitingForMaintenanceWindow) return undefined;
  const since = Date.parse(st.maintenanceWindow?.since ?? ready.lastTransitionTime);
  return Number.isFinite(since) ? { gate: GateNames.maintenanceWindow, since } : undefined;
}
