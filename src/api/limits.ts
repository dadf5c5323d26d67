// Size limits of what a plan carries, far below what an API server stores (etcd refuses requests over 1.5 MiB and a
// real kube-apiserver answers 500 for an object over 2 MiB): a plan value is copied into every MachineUpdate and task
// of its target and into a Cluster API object, so a value that large would fail there, in the middle of a rollout.
// Pure.

/** Largest responsibility value of a plan: its JSON, in bytes (docs/contract.md). */
export const MAX_PLAN_VALUE_BYTES = 64 * 1024;

/** The problem of a responsibility value over MAX_PLAN_VALUE_BYTES, as a sentence starting with `what`; empty when it fits. */
export function planValueSizeProblems(value: unknown, what: string): string[] {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  if (bytes <= MAX_PLAN_VALUE_BYTES) return [];
  return [`${what} has a ${Math.ceil(bytes / 1024)} KiB value, more than the ${MAX_PLAN_VALUE_BYTES / 1024} KiB a plan value may have`];
}
