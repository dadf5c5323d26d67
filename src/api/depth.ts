// Nesting depth of free-form JSON: an iterative walk (it cannot overflow itself) behind the plan's bound on updater
// parameters. Pure. (The standalone local API server has its own walk in tools/local-apiserver/depth.ts.)

/**
 * Deepest nesting of updater parameters a plan may carry. They are copied into MachineUpdates and tasks (a few
 * levels deeper each time) and cloned by every controller; an API server accepts far deeper documents (kube's
 * decoder allows 10,000 levels) than a JavaScript clone or serialisation survives (about 5,000).
 */
export const MAX_PARAMETERS_DEPTH = 64;

/** True when `value` nests objects/arrays deeper than `max` (a scalar is depth 0, `{}` is 1). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
    }
  }
  return false;
}
