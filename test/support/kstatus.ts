// kstatus' computation for a custom resource (sigs.k8s.io/cli-utils pkg/kstatus/status, the generic rules Flux's
// health checks and `wait` apply to kinds without built-in rules), from its documented rules: a deletionTimestamp is
// Terminating; status.observedGeneration differing from metadata.generation is InProgress
// (LatestGenerationNotObserved); the first condition Reconciling=True is InProgress, Stalled=True is Failed; otherwise
// Current. The platform's kinds have no kind-specific rule, so this is all kstatus reads.

/** What kstatus computes. */
export type KstatusStatus = 'InProgress' | 'Failed' | 'Current' | 'Terminating';

interface Obj {
  metadata?: { generation?: number; deletionTimestamp?: string };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** The kstatus result of `obj`: status, and the reason of the condition (or rule) that decided it. */
export function computeKstatus(obj: Obj): { status: KstatusStatus; reason: string } {
  if (obj.metadata?.deletionTimestamp) return { status: 'Terminating', reason: 'Terminating' };
  const gen = obj.metadata?.generation;
  const observed = obj.status?.observedGeneration;
  if (gen !== undefined && observed !== undefined && observed !== gen)
    return { status: 'InProgress', reason: 'LatestGenerationNotObserved' };
  for (const c of obj.status?.conditions ?? []) {
    if (c.type === 'Reconciling' && c.status === 'True') return { status: 'InProgress', reason: c.reason ?? '' };
    if (c.type === 'Stalled' && c.status === 'True') return { status: 'Failed', reason: c.reason ?? '' };
  }
  return { status: 'Current', reason: '' };
}
