// Phase 3b of decidePlan (inside each target's evaluation): which machines of a target start now. The control plane
// goes one machine at a time once healthy and settled; a MachineDeployment within maxUnavailable, surging by one when
// that resolves to 0. Pure.
import type { KubeObject } from '../../api/index.js';
import { Annotations, MessageBudget, Reasons, summarizeList } from '../../api/index.js';
import type { PlanUpdater } from '../../api/index.js';
import { isDeleting, isMachineReady, nameOf } from '../../api/capi/index.js';
import { mdConcurrency, mdConcurrencyNote, mdStartBudget } from '../../rules/concurrency.js';
import { nameList } from '../status.js';
import { failureNote, inUpdateByOther } from './target-notes.js';
import type { MachineGroups, ScaleIntent, TargetCount, TargetEval, TargetReading, TargetScope, TargetSize } from './types.js';

/** The machines a target starts now, the scale change it needs first, and why. */
export interface StartResult {
  starts: string[];
  message: string;
  reason?: string;
  scale?: ScaleIntent;
}

/**
 * A reached, unfinished target in a rolling-out plan: starts its next machines into `ev` (the status answers the state
 * this reconcile leaves behind: machines started now are in flight). Returns the row's message, or undefined to keep
 * the verdict's.
 */
export function rolloutTarget(scope: TargetScope, reading: TargetReading, ev: TargetEval): string | undefined {
  const { t, c, size, halted } = reading;
  const { groups, inFlight, current } = c;
  if (halted) {
    const policy = scope.halt
      ? 'failurePolicy Halt'
      : `failurePolicy Continue: ${c.failed.length} updates failed, as many as the target has machines`;
    return `halted (${policy}) after the failure of ${failureNote(scope, c.failed.length ? c.failed : groups.aborted)}; waiting for ${inFlight} machine(s) in flight`;
  }
  if (groups.notStarted.length > 0) {
    const r =
      t.kind === 'ControlPlane'
        ? startControlPlane(scope, c.all, current, groups, size.desired)
        : startMachineDeployment(scope, size, c, t.target.updaters);
    ev.starts = r.starts;
    if (r.scale) ev.scale = r.scale;
    if (r.starts.length > 0 || r.scale) {
      ev.row.updateStatus = 'updating';
      ev.reason = Reasons.updating;
      ev.row.updating = inFlight + r.starts.length;
      ev.inFlight = inFlight + r.starts.length;
      ev.started = true;
    }
    if (r.reason) ev.reason = r.reason;
    return r.message;
  }
  if (!size.allCreated) return `waiting for ${size.desired! - current.length} machine(s) to be created`;
  if (!size.settled)
    return `waiting for ${current.length - size.desired!} machine(s) to be removed (${current.length} of ${size.desired} replicas)`;
  if (inFlight > 0) return `${inFlight} machine(s) in update: ${nameList(groups.inFlight)}`;
  return undefined;
}

/** Control plane: one machine at a time, and only when the whole control plane is healthy and settled. */
export function startControlPlane(
  scope: TargetScope,
  all: KubeObject[],
  current: KubeObject[],
  groups: MachineGroups,
  desired: number | undefined,
): StartResult {
  const problems: string[] = [];
  for (const m of all) if (isDeleting(m)) problems.push(`machine ${nameOf(m)} is being deleted`);
  for (const m of current) if (!isMachineReady(m)) problems.push(`machine ${nameOf(m)} is not Ready`);
  for (const n of groups.inFlight) problems.push(`machine ${n} is in update`);
  for (const m of current) {
    const other = inUpdateByOther(scope, m);
    if (other) problems.push(`machine ${nameOf(m)} is in update by plan ${other}`);
  }
  if (desired !== undefined && current.length !== desired) problems.push(`${current.length} of ${desired} control-plane machines exist`);
  if (problems.length > 0)
    return {
      starts: [],
      message: `preflight: ${summarizeList(problems, { maxBytes: MessageBudget.status / 2 })}`,
      reason: groups.inFlight.length ? Reasons.updating : Reasons.preflightFailed,
    };
  const next = groups.notStarted[0]!;
  return { starts: [next], message: `updating ${next} (one control-plane machine at a time)` };
}

/** The surge of a MachineDeployment whose maxUnavailable resolves to 0: one more replica before any machine goes down. */
function surgeIntent(scope: TargetScope, md: KubeObject, replicas: number): StartResult {
  const scale: ScaleIntent = {
    name: nameOf(md),
    replicas: replicas + 1,
    annotations: { [Annotations.surgeOriginalReplicas]: String(replicas), [Annotations.surgePlan]: scope.planName },
    kind: 'surge',
  };
  if (md.metadata.resourceVersion) scale.resourceVersion = md.metadata.resourceVersion;
  return {
    starts: [],
    scale,
    reason: Reasons.surging,
    message: `maxUnavailable resolves to 0: surging ${nameOf(md)} from ${replicas} to ${replicas + 1} replicas`,
  };
}

/**
 * MachineDeployment: machines in update and machines not Ready are unavailable; maxUnavailable bounds them.
 * maxUnavailable 0 means no machine may go down: surge by one, wait for it, then update one at a time. The rule is
 * concurrency.ts's, on the replicas before this plan's surge (`surged`: sizeTarget's reading of the same annotations).
 */
export function startMachineDeployment(
  scope: TargetScope,
  size: Pick<TargetSize, 'md' | 'surged'>,
  c: Pick<TargetCount, 'current' | 'groups'>,
  updaters: readonly PlanUpdater[] | undefined,
): StartResult {
  const { md, surged } = size;
  const { current, groups } = c;
  if (!md) return { starts: [], message: 'MachineDeployment not found' };
  const concurrency = mdConcurrency({ md, planName: scope.planName, updaters });
  if (!concurrency.ok) return { starts: [], message: concurrency.error };
  const orig = concurrency.replicas;
  const inFlight = new Set(groups.inFlight);
  const notStarted = new Set(groups.notStarted);
  // One pass, each machine's conditions read once (this runs for every re-evaluated target on every reconcile).
  const unavailable: KubeObject[] = [];
  const candidates: string[] = [];
  for (const m of current) {
    const name = nameOf(m);
    const ready = isMachineReady(m);
    const free = inUpdateByOther(scope, m) === undefined;
    if (!ready || !free || inFlight.has(name)) unavailable.push(m);
    if (ready && free && notStarted.has(name)) candidates.push(name);
  }
  let budget: number;
  let why: string;
  if (concurrency.surge) {
    if (!surged) return surgeIntent(scope, md, orig);
    if (current.length < orig + 1)
      return {
        starts: [],
        reason: Reasons.surging,
        message: `surge: waiting for the extra machine (${current.length} of ${orig + 1} exist)`,
      };
    budget = 1 - unavailable.length;
    why = `surge (maxUnavailable 0): one at a time with ${orig + 1} machines`;
  } else {
    budget = mdStartBudget(concurrency, unavailable.length, groups.inFlight.length);
    why = mdConcurrencyNote(concurrency);
  }
  const starts = candidates.slice(0, Math.max(0, budget));
  if (starts.length > 0) return { starts, message: `${why}; starting ${nameList(starts)}` };
  const candidateSet = new Set(candidates);
  const notReady = groups.notStarted.filter((n) => !candidateSet.has(n));
  const unavailableNote = unavailable.length
    ? `${unavailable.length} machine(s) unavailable (${nameList(unavailable.map(nameOf))})`
    : 'no machine unavailable';
  return { starts: [], message: `${why}; ${unavailableNote}${notReady.length ? `; waiting for ${nameList(notReady)} to be Ready` : ''}` };
}
