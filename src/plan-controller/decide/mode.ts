// Phase 1 of decidePlan: what the plan may do this reconcile. Validation and the gates (maintenance window, soak,
// alerts) decide whether it rolls out, holds (starts nothing new) or stops (aborts what is in flight). Pure.
import type { InPlaceUpdatePlan, InPlaceUpdatePlanStatus, KubeObject, MachineUpdate } from '../../api/index.js';
import { ConditionTypes, PlanAnnotations, Reasons, UpdatePhase, UpdateStatus, isTerminal } from '../../api/index.js';
import { parameterDepthProblems } from './bounds.js';
import type { AlertGate, SoakView, WindowGate } from '../../rules/gates.js';
import { alertGate, soakGate, windowGate } from '../../rules/gates.js';
import type { PlanSnapshot } from '../scope.js';
import type { InvalidVerdict } from '../status.js';
import { invalidVerdict } from '../status.js';
import { validatePlan } from '../../rules/validate.js';
import { machineState, planAge } from '../../rules/machines.js';
import type { Mode } from './types.js';

/** The plan's standing this reconcile: its own state, the gates, and the mode its targets are evaluated in. */
export interface PlanStance {
  planName: string;
  prev: InPlaceUpdatePlanStatus;
  now: Date;
  generation?: number;
  deleting: boolean;
  phase: string;
  paused: boolean;
  /** The plan already ended: it keeps its status and only cleans up. */
  terminal: boolean;
  /** This plan's MachineUpdates by machine name. */
  mus: Map<string, MachineUpdate>;
  win: WindowGate;
  soak: SoakView;
  alerts: AlertGate;
  verdict: InvalidVerdict;
  problems: string[];
  valid: boolean;
  /** The plan started before this reconcile (a start time, or MachineUpdates). */
  startedBefore: boolean;
  /** Older plans of the cluster not yet ended: this plan waits for them. */
  olderActive: InPlaceUpdatePlan[];
  waiting: boolean;
  supersededBy?: string;
  windowClosed: boolean;
  /** The maintenance window closed with maintenanceWindowEnd Abort: the plan stops. */
  windowEnded: boolean;
  alertHeld: boolean;
  stopping: boolean;
  mayStart: boolean;
  mode: Mode;
  /** The MachineUpdates the targets count: soaking machines in flight unless the plan stops. */
  rolloutMus: ReadonlyMap<string, MachineUpdate>;
  /** The snapshot's machines by name. */
  machineByName: ReadonlyMap<string, KubeObject>;
}

/**
 * What decideStance derives from the snapshot before it decides (stanceInputs); the plan controller's cache hands it
 * these from the last reconcile's answers (src/plan-controller/cache/stance.ts), equal to stanceInputs'.
 */
export interface StanceInputs {
  /** The plan's MachineUpdates by machine name (ownUpdates). */
  mus: Map<string, MachineUpdate>;
  /** The snapshot's machines by name. */
  machineByName: ReadonlyMap<string, KubeObject>;
  /** The soak gate at the snapshot's time. */
  soak: SoakView;
  /** validatePlan's problems. */
  validation: string[];
}

/** The plan's MachineUpdates by machine name (the last one in snapshot order wins). */
export function ownUpdates(mus: readonly MachineUpdate[], planName: string): Map<string, MachineUpdate> {
  const map = new Map<string, MachineUpdate>();
  for (const mu of mus) if (mu.spec.planName === planName) map.set(mu.spec.machineRef.name, mu);
  return map;
}

/** decideStance's inputs derived from the snapshot. */
export function stanceInputs(snap: PlanSnapshot): StanceInputs {
  const mus = ownUpdates(snap.machineUpdates, snap.plan.metadata?.name ?? '');
  const machineByName = new Map(snap.machines.map((m) => [m.metadata.name ?? '', m]));
  const soak = soakGate(snap.plan, mus, snap.machines, new Date(snap.now), { machineByName });
  return { mus, machineByName, soak, validation: validatePlan(snap) };
}

/** Decides the plan's stance: valid or not, held by which gate, rolling out, holding or stopping. */
export function decideStance(snap: PlanSnapshot, given: StanceInputs = stanceInputs(snap)): PlanStance {
  const plan = snap.plan;
  const planName = plan.metadata?.name ?? '';
  const prev = plan.status ?? {};
  const now = new Date(snap.now);
  const generation = plan.metadata?.generation;
  const terminal = isTerminal(prev.updateStatus);
  const { mus, machineByName, soak } = given; // one name index per decision (the soak gate, the aborts)
  const win = windowGate(plan, now);
  const alerts = alertGate(plan, snap.alerts, now, snap.alertGatePolicy);
  const startedBefore = !!prev.startTime || mus.size > 0;
  // Parameters nested absurdly deep would break every clone of the MachineUpdates and tasks they are copied into.
  // An invalid plan that never started ends (final for its generation, status.ts invalidVerdict).
  const verdict = invalidVerdict({
    problems: [...given.validation, ...parameterDepthProblems(plan), ...win.problems, ...soak.problems, ...alerts.problems],
    started: startedBefore,
    generation,
    prev,
    now: snap.now,
  });
  const valid = verdict.problems.length === 0;
  const others = snap.plans.filter((p) => p.metadata?.name !== planName && p.spec.clusterName === plan.spec.clusterName);
  const olderActive = others.filter((p) => planAge(p, plan) < 0 && !isTerminal(p.status?.updateStatus));
  // Maintenance windows (gates.ts): a closed window holds new starts as paused does. With maintenanceWindowEnd Abort,
  // machines in flight when it closes are aborted and the plan ends aborted; the Ready reason it records keeps it
  // stopping once nothing is in flight any more (level-based, from status).
  const windowClosed = valid && win.state?.open === false;
  const windowEnded =
    !terminal &&
    ((windowClosed && win.abortAtEnd && [...mus.values()].some((mu) => machineState(mu) === 'inFlight')) ||
      (prev.updateStatus === UpdateStatus.aborting &&
        prev.conditions?.find((c) => c.type === ConditionTypes.ready)?.reason === Reasons.maintenanceWindowEnded));
  const deleting = !!plan.metadata?.deletionTimestamp;
  const phase = plan.spec.updatePhase ?? UpdatePhase.updating;
  const paused = plan.spec.paused === true;
  const stopping = deleting || phase === UpdatePhase.aborting || terminal || windowEnded;
  const waiting = olderActive.length > 0;
  // spec.alertGate (gates.ts): a matching firing alert, or an endpoint that cannot be read, holds new starts too.
  const alertHeld = valid && alerts.held;
  const mayStart = !stopping && valid && !waiting && !paused && !windowClosed && !alertHeld;
  const supersededBy = plan.metadata?.annotations?.[PlanAnnotations.supersededBy];
  return {
    planName,
    prev,
    now,
    ...(generation !== undefined ? { generation } : {}),
    deleting,
    phase,
    paused,
    terminal,
    mus,
    win,
    soak,
    alerts,
    verdict,
    problems: verdict.problems,
    valid,
    startedBefore,
    olderActive,
    waiting,
    ...(supersededBy !== undefined ? { supersededBy } : {}),
    windowClosed,
    windowEnded,
    alertHeld,
    stopping,
    mayStart,
    mode: stopping ? 'stop' : mayStart ? 'rollout' : 'hold',
    // Soak (gates.ts): the rollout counts a soaking machine in flight and a failed soak failed; a stopping plan starts
    // nothing more, so there its machines count as their MachineUpdates say.
    rolloutMus: stopping ? mus : soak.mus,
    machineByName,
  };
}
