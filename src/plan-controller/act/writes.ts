// What every write of the plan controller shares: its name as field manager, how many writes of one kind are in flight
// at once, and how a write's failure is collected or a gone object ignored.
import { isNotFound } from '../../runtime/pure/errors.js';
import { forEachLimit } from '../../runtime/parallel.js';

/** Name of the controller (also its event source and field manager). */
export const CONTROLLER_NAME = 'plan-controller';
/** Field manager of every write. */
export const FIELD_MANAGER = CONTROLLER_NAME;
/**
 * Writes of one kind in flight at once within a reconcile. One plan is one key, so its reconciles are serial; with
 * one await per write, starting 500 machines at 10k cost 1,000 sequential round trips and the plan fell behind.
 */
export const WRITES_IN_FLIGHT = 16;

/** Runs `fn` on every item, WRITES_IN_FLIGHT at once, to the end; the errors are collected in `failures`. */
export async function eachSettled<T>(items: readonly T[], failures: unknown[], fn: (item: T) => Promise<void>): Promise<void> {
  await forEachLimit(items, WRITES_IN_FLIGHT, async (item) => {
    try {
      await fn(item);
    } catch (err) {
      failures.push(err);
    }
  });
}

/** The write's result, or undefined when the object is gone (404): nothing left to do on it. */
export async function ignoreNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
