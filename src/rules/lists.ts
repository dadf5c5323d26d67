// Comparisons of two lists of frozen objects by identity, position by position (pure). The informer store keeps a
// changed object in place and appends new ones (store.ts), so two successive lists tell what changed by reference
// checks alone; the plan controller's cache (src/plan-controller/cache/) and the at-target pass use them.

/** True when two lists hold the same objects at the same positions. */
export function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Positions where `next` holds another object than `prev` (appended ones included), or undefined when an object was
 * removed or moved (names differ at a position): then the caller starts over. The store appends new objects and keeps
 * changed ones in place (store.ts), so creations and changes are patches; removals are not.
 */
export function changedAt<T extends { metadata?: { name?: string } }>(prev: readonly T[], next: readonly T[]): number[] | undefined {
  if (next.length < prev.length) return undefined;
  const out: number[] = [];
  for (let i = 0; i < prev.length; i++)
    if (next[i] !== prev[i]) {
      if (next[i]!.metadata?.name !== prev[i]!.metadata?.name) return undefined;
      out.push(i);
    }
  for (let i = prev.length; i < next.length; i++) out.push(i);
  return out;
}
