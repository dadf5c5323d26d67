// Pure part of the commit (C8): the JSON patch that writes each responsibility's value at its pointer on one
// CAPI object (guarded by a resourceVersion test), and the read-back check that every value was persisted. The
// generic set/verify lives in src/runtime/pure/set-patch.ts (the plan controller dry-runs the same patch before any
// machine starts); here the write policy is enforced, whoever created the MachineUpdate.
import type { KubeObject, Responsibility, WritePolicy } from '../api/index.js';
import { DEFAULT_WRITE_POLICY, writeRefusal } from '../api/index.js';
import { SetPathError, setValuesPatch, verifyValues, type JsonPatchOp, type ValueMismatch } from '../runtime/pure/index.js';

export type { JsonPatchOp };

/**
 * Outcome of a commit: every value written (`written` names them; empty when every value was already in place and
 * verified), or why not — `nothing-committed` (no object was changed), `machine-gone` (the Machine was deleted under
 * the update), `rolled-back` (a write failed and every written object was restored), `restore-failed` (a written
 * object could not be restored: operator action needed). All but ok are terminal.
 */
export type CommitResult =
  | { ok: true; written: string[] }
  | { ok: false; outcome: 'nothing-committed' | 'machine-gone' | 'rolled-back' | 'restore-failed'; message: string };

/** Thrown when a responsibility's path cannot be written into the object (steps through a string, or the write policy refuses it). */
export const CommitPathError = SetPathError;
/** Instance type of CommitPathError. */
export type CommitPathError = SetPathError;

/** A responsibility as the commit sees it; without selectResource only the rules common to every kind apply. */
export type CommitItem = Pick<Responsibility, 'path' | 'value'> & { selectResource?: Responsibility['selectResource'] };

/**
 * The JSON patch that sets every responsibility on `obj`: a `test` of metadata.resourceVersion first
 * (optimistic concurrency), `add` for missing parents and members, `replace` for existing ones.
 * Empty when every value is already in place (so a repeated commit writes nothing). Throws CommitPathError for a
 * path the write policy refuses, before anything else.
 */
export function commitPatch(obj: KubeObject, resps: readonly CommitItem[], policy: WritePolicy = DEFAULT_WRITE_POLICY): JsonPatchOp[] {
  for (const r of resps) {
    // Without a selectResource, BootstrapConfig has the narrowest never-list but the same common rules.
    const why = writeRefusal(policy, r.selectResource ?? 'BootstrapConfig', r.path);
    if (why) throw new CommitPathError(r.path, `not writable: ${why}`);
  }
  return setValuesPatch(obj, resps);
}

/** A responsibility whose value is not what the object holds after the commit. */
export type CommitMismatch = ValueMismatch;

/** The responsibilities whose value the object does not hold (a pruned or defaulted-away path shows up here). */
export function verifyCommit(obj: KubeObject, resps: readonly Pick<Responsibility, 'path' | 'value'>[]): CommitMismatch[] {
  return verifyValues(obj, resps);
}

/** How many clean dry-runs a controller process remembers (least recently used forgotten first). */
export const DRY_RUN_MEMO_SIZE = 1024;

/**
 * Single-object commit patches that dry-ran clean, by plan, kind and paths+values. Whether the schema prunes or rejects
 * a value is a property of the kind's schema, not of the machine, so once a plan's patch dry-ran clean on a kind, the
 * same patch on other machines of that kind skips the dry-run. In memory only (a restart dry-runs again), bounded LRU.
 */
export class DryRunMemo {
  private readonly keys = new Set<string>();
  constructor(private readonly max = DRY_RUN_MEMO_SIZE) {}

  /** The memo key of a patch: the plan (its uid), the object's API group and kind, and every path with its value. */
  static key(plan: string, apiGroup: string, kind: string, items: readonly Pick<Responsibility, 'path' | 'value'>[]): string {
    return JSON.stringify([plan, apiGroup, kind, items.map((r) => [r.path, r.value])]);
  }

  /** Number of remembered patches. */
  get size(): number {
    return this.keys.size;
  }

  /** True when this patch dry-ran clean before (and marks it recently used). */
  has(key: string): boolean {
    if (!this.keys.has(key)) return false;
    this.keys.delete(key);
    this.keys.add(key);
    return true;
  }

  /** Remembers a patch that dry-ran clean. */
  remember(key: string): void {
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > this.max) this.keys.delete(this.keys.values().next().value!);
  }

  /** Forgets a patch the API server did not take as the memo promised (the schema changed): the next commit dry-runs. */
  forget(key: string): void {
    this.keys.delete(key);
  }
}
