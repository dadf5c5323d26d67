// Pure part of the all-or-nothing commit (C8): the journal kept in MachineUpdate.status.commit (what each object held
// before the commit wrote it) and the JSON patch that puts those values back. The journal is written before the
// first real write, so a restarted controller can finish the commit or roll it back, never leave half of it.
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject, MachineUpdateStatus, PreviousValue, Responsibility } from '../api/index.js';
import { encodePointer, getPointer, parsePointer, setPointer } from '../runtime/pure/index.js';
import type { CommitItem, JsonPatchOp } from './commit.js';

/** status.commit of a MachineUpdate: the commit in progress. */
export type CommitJournal = NonNullable<MachineUpdateStatus['commit']>;
/** One object of the journal. */
export type JournalObject = NonNullable<CommitJournal['objects']>[number];
/** One written path of an object with its previous (absent = did not exist) and new value, JSON-encoded. */
export type JournalEntry = NonNullable<JournalObject['entries']>[number];
/** An RFC 6902 operation of a restore patch. */
export type RestoreOp = { op: 'test' | 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

/** The identity of a journaled object, as the controller names it in messages. */
export const objectLabel = (o: Pick<JournalObject, 'kind' | 'name'>): string => `${o.kind} ${o.name}`;

const read = (obj: unknown, path: string): unknown => {
  try {
    return getPointer(obj, path);
  } catch {
    return undefined;
  }
};
/** Removes the member or array element at `path` from `doc` (no-op when absent). */
function removePointer(doc: unknown, path: string): void {
  const tokens = parsePointer(path);
  const last = tokens.pop();
  const parent = read(doc, encodePointer(tokens));
  if (last === undefined || parent === null || typeof parent !== 'object') return;
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete (parent as Record<string, unknown>)[last];
}
const decode = (s: string | undefined): unknown => (s === undefined ? undefined : (JSON.parse(s) as unknown));

/**
 * The journal entries of a commit patch on `obj`: one per path the patch writes (first occurrence: the value
 * before any of the patch's operations), with the value written last. The resourceVersion test is skipped.
 */
export function journalEntries(obj: KubeObject, ops: readonly JsonPatchOp[]): JournalEntry[] {
  const byPath = new Map<string, JournalEntry>();
  for (const op of ops) {
    if (op.op === 'test') continue;
    const prev = byPath.get(op.path);
    if (prev) {
      prev.after = JSON.stringify(op.value);
      continue;
    }
    const before = read(obj, op.path);
    byPath.set(op.path, {
      path: op.path,
      ...(before === undefined ? {} : { before: JSON.stringify(before) }),
      after: JSON.stringify(op.value),
    });
  }
  return [...byPath.values()];
}

/**
 * Adds the entries of `next` to `journal`: an object or path already journaled keeps its first `before` (the value
 * from before the whole commit, which an earlier, interrupted run may already have overwritten).
 */
export function mergeJournal(journal: readonly JournalObject[], next: readonly JournalObject[]): JournalObject[] {
  // Deep enough a copy to write into: the journal read from the cache is frozen.
  const out = journal.map((o) => ({ ...o, entries: (o.entries ?? []).map((e) => ({ ...e })) }));
  for (const n of next) {
    const same = out.find((o) => o.apiGroup === n.apiGroup && o.kind === n.kind && o.name === n.name);
    if (!same) {
      out.push({ ...n, entries: (n.entries ?? []).map((e) => ({ ...e })) });
      continue;
    }
    for (const e of n.entries ?? []) {
      const known = same.entries.find((x) => x.path === e.path);
      if (known) known.after = e.after;
      else same.entries.push(e);
    }
  }
  return out;
}

/** What restoring one object takes: the patch (empty when nothing is left to restore) and the paths someone else changed. */
export interface RestorePlan {
  ops: RestoreOp[];
  /** Paths whose value is neither the commit's nor the previous one: changed by someone else, left as they are. */
  changed: string[];
}

/**
 * The JSON patch that puts the journaled values of `current` back, guarded by a resourceVersion test and by a test
 * that each restored path still holds the value the commit wrote. Paths the commit created only as parents of a
 * written value are removed when nothing else was put in them meanwhile. Already-restored paths are skipped, so a
 * repeated rollback writes nothing.
 */
export function restorePatch(current: KubeObject, entries: readonly JournalEntry[]): RestorePlan {
  const work = structuredClone(current) as unknown as Record<string, unknown>;
  const paths = entries.map((e) => e.path);
  // A parent entry: the commit created it (as {}) only to hold a deeper written value.
  const isParent = (e: JournalEntry): boolean => e.before === undefined && paths.some((p) => p.startsWith(`${e.path}/`));
  const guards: RestoreOp[] = [];
  const ops: RestoreOp[] = [];
  const changed: string[] = [];
  for (const e of [...entries].reverse()) {
    const now = read(work, e.path);
    const before = decode(e.before);
    if (isParent(e)) {
      const empty = now !== null && typeof now === 'object' && !Array.isArray(now) && Object.keys(now).length === 0;
      if (empty) {
        ops.push({ op: 'remove', path: e.path });
        removePointer(work, e.path);
      }
      continue;
    }
    if (isDeepStrictEqual(now, before)) continue;
    if (!isDeepStrictEqual(now, decode(e.after))) {
      changed.push(e.path);
      continue;
    }
    guards.push({ op: 'test', path: e.path, value: now });
    if (before === undefined) {
      ops.push({ op: 'remove', path: e.path });
      removePointer(work, e.path);
    } else {
      ops.push({ op: 'replace', path: e.path, value: before });
      setPointer(work, e.path, structuredClone(before));
    }
  }
  if (ops.length === 0) return { ops: [], changed };
  return { ops: [{ op: 'test', path: '/metadata/resourceVersion', value: current.metadata.resourceVersion }, ...guards, ...ops], changed };
}

export type { PreviousValue };

const previousOf = (
  previous: readonly PreviousValue[],
  select: Responsibility['selectResource'] | undefined,
  path: string,
): PreviousValue | undefined => previous.find((p) => p.selectResource === select && p.path === path);

/**
 * True when every item of one object has a recorded previous value and the object holds exactly that value at its
 * path now: the state a commit finds before its first write, so one atomic patch needs no journal (contract C8).
 */
export function holdsPrevious(obj: KubeObject, items: readonly CommitItem[], previous: readonly PreviousValue[]): boolean {
  if (items.length === 0) return false;
  return items.every((r) => {
    const p = previousOf(previous, r.selectResource, r.path);
    return p !== undefined && isDeepStrictEqual(read(obj, r.path), decode(p.value));
  });
}

/**
 * Journal entries, from the recorded previous values, of the paths an object already holds at their new value (and
 * that held another value before): what an unjournaled commit wrote before a crash, or what someone else set. A
 * journal seeded with them keeps those `before` values (mergeJournal keeps a first `before`), so a rollback restores
 * the values from before the update and a finished commit records them for `inplace revert`.
 */
export function entriesFromPrevious(obj: KubeObject, items: readonly CommitItem[], previous: readonly PreviousValue[]): JournalEntry[] {
  const out = new Map<string, JournalEntry>();
  for (const r of items) {
    const p = previousOf(previous, r.selectResource, r.path);
    if (!p || out.has(r.path) || !isDeepStrictEqual(read(obj, r.path), r.value)) continue;
    // At target from the start: nothing the update changed.
    if (isDeepStrictEqual(decode(p.value), r.value)) continue;
    out.set(r.path, { path: r.path, ...(p.value === undefined ? {} : { before: p.value }), after: JSON.stringify(r.value) });
  }
  return [...out.values()];
}
