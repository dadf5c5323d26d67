// Phase 3 of an MHC pass: which unhealthy machines in update get remediation. The budget counts every unhealthy
// machine the MHC selects (CAPI's verdict, a remediation request, or this extension's), plus the healthy ones in
// update; candidates are taken in a deterministic order so two passes on the same state agree.
import { Annotations, ConditionTypes } from '../../api/index.js';
import type { Machine } from './objects.js';
import { operatorSkipsRemediation } from './annotations.js';
import { byName, type RemediationWindow } from './eligibility.js';
import type { Judged, Verdict } from './timeouts.js';

/**
 * The design's budget: maxAllowedUnhealthy − unhealthyMachineCount − inUpdateHealthyMachineCount, counting the
 * machines other than the candidate (so, as in CAPI, the candidate may be remediated while the unhealthy total
 * including it stays within the limit). No remediation when ≤ 0.
 */
export const remediationCount = (maxAllowedUnhealthy: number, unhealthyOthers: number, inUpdateHealthyOthers: number): number =>
  maxAllowedUnhealthy - unhealthyOthers - inUpdateHealthyOthers;

/** True when CAPI's MHC judged the machine unhealthy (HealthCheckSucceeded False on the Machine). */
export const hasFalseHealthCheck = (m: Machine): boolean =>
  (m.status?.conditions ?? []).some((c) => c.type === ConditionTypes.healthCheckSucceeded && c.status === 'False');

/** The machines that count against the budget, by name. */
export interface Census {
  unhealthy: Set<string>;
  inUpdateHealthy: Set<string>;
}

/** True when the machine counts as unhealthy whatever its update: CAPI judged it so, or its remediation was requested. */
export const markedUnhealthy = (m: Machine): boolean =>
  hasFalseHealthCheck(m) || m.metadata.annotations?.[Annotations.remediateMachine] !== undefined;

/** Counts the unhealthy machines (judged so by CAPI, marked for remediation, or judged so here) and the healthy ones in update. */
export function takeCensus(machines: readonly Machine[], judged: readonly Judged[]): Census {
  return censusOf(
    machines.filter(markedUnhealthy).map((m) => m.metadata.name ?? ''),
    judged,
  );
}

/** The census from the names of the machines marked unhealthy (markedUnhealthy) and the judged machines. */
export function censusOf(marked: Iterable<string>, judged: readonly Judged[]): Census {
  const unhealthy = new Set<string>(marked);
  for (const j of judged) if (j.verdict.kind !== 'within') unhealthy.add(j.m.metadata.name ?? '');
  const inUpdateHealthy = new Set<string>();
  for (const j of judged) if (!unhealthy.has(j.m.metadata.name ?? '')) inUpdateHealthy.add(j.m.metadata.name ?? '');
  return { unhealthy, inUpdateHealthy };
}

/** The order candidates are taken in: failed first, then earliest expiry, then name. */
export function inRemediationOrder(judged: readonly Judged[]): Judged[] {
  const order = (v: Verdict): number => (v.kind === 'failed' ? -Infinity : v.expiresAtMs);
  return [...judged].sort((a, b) => order(a.verdict) - order(b.verdict) || byName(a.m.metadata.name ?? '', b.m.metadata.name ?? ''));
}

/** What happens to one unhealthy machine in update. */
export type RemediationOutcome = { kind: 'operatorSkips' } | { kind: 'triggered'; isNew: boolean } | { kind: 'blocked'; why: string };

/** Decides remediation for one timed-out or failed machine: opted out by its operator, already requested, triggered, or blocked. */
export function decideRemediation(m: Machine, census: Census, window: RemediationWindow): RemediationOutcome {
  if (operatorSkipsRemediation(m.metadata.annotations)) return { kind: 'operatorSkips' };
  if (m.metadata.annotations?.[Annotations.remediateMachine] !== undefined) return { kind: 'triggered', isNew: false };
  const name = m.metadata.name ?? '';
  const { unhealthy, inUpdateHealthy } = census;
  const others = (s: Set<string>): number => s.size - (s.has(name) ? 1 : 0);
  const count = remediationCount(window.max, others(unhealthy), others(inUpdateHealthy));
  const belowMin = unhealthy.size + inUpdateHealthy.size < window.min;
  if (count > 0 && !belowMin) return { kind: 'triggered', isNew: true };
  const why = belowMin
    ? `${unhealthy.size + inUpdateHealthy.size} unhealthy or in-update machines is below unhealthyInRange minimum ${window.min}`
    : `remediation budget exhausted: maxAllowedUnhealthy ${window.max} − other unhealthy ${others(unhealthy)} − other in-update ${others(inUpdateHealthy)} = ${count}`;
  return { kind: 'blocked', why };
}
