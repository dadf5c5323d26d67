// The effectful part of the commit (C8), all or nothing across objects: read every object (the Machine, its
// InfraMachine, its BootstrapConfig), build every patch, server-side dry-run every patch and check the answers keep
// the values, journal the previous values in the MachineUpdate's status, and only then write. A write that still
// fails rolls back what was written. The journal makes it restart-safe: a restarted controller finishes the
// commit (already-written objects need no patch) or, once a rollback started, finishes the rollback. A commit to one
// object that still holds the values the plan controller recorded before the update (spec.previous) writes no journal
// (`commitOne`): its patch is atomic, and spec.previous already keeps what a crash after it would need.
import { Machines, type KubeObject, type ResourceType, type Responsibility, type WritePolicy } from '../api/index.js';
import { machineBootstrapRef, machineInfraRef } from '../api/capi/index.js';
import { ConflictError, KubeApiError, RetryableError, type KubeClient } from '../runtime/index.js';
import { CommitPathError, DryRunMemo, commitPatch, verifyCommit, type CommitResult, type JsonPatchOp } from './commit.js';
import {
  entriesFromPrevious,
  holdsPrevious,
  journalEntries,
  mergeJournal,
  objectLabel,
  restorePatch,
  type CommitJournal,
  type JournalObject,
  type PreviousValue,
} from './journal.js';

export type { CommitResult };

/**
 * Persists the journal (undefined clears it); the commit calls it before its first real write. A finished commit clears
 * it and passes what it wrote as `committed` (kept on the MachineUpdate for `inplace revert`).
 */
export type SaveJournal = (journal: CommitJournal | undefined, committed?: readonly JournalObject[]) => Promise<void>;

const SELECTS: Responsibility['selectResource'][] = ['Machine', 'InfraMachine', 'BootstrapConfig'];
const FIELD_MANAGER = 'machine-task-controller';

/** Thrown inside a commit for a reason that makes it fail terminally (nothing more will be written). */
class CommitRefused extends Error {}

/**
 * The Machine was deleted (or is being deleted) under the update: the cache that decided to commit had not seen it yet.
 * Not a failure of the update: like a deletion seen earlier, the update ends aborted (nothing to commit to).
 */
class MachineGone extends CommitRefused {}

/** One object the commit writes: where it is, what it held, the patch. */
interface Target {
  res: ResourceType;
  apiGroup: string;
  kind: string;
  name: string;
  obj: KubeObject;
  items: Responsibility[];
  ops: JsonPatchOp[];
}
const what = (t: Pick<Target, 'kind' | 'name'>): string => `${t.kind} ${t.name}`;
const show = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v));
const apiMessage = (err: unknown): string =>
  err instanceof KubeApiError ? (err.status?.message ?? err.message) : err instanceof Error ? err.message : String(err);

/** Where a selectResource points for this Machine. */
async function locate(
  client: KubeClient,
  machine: KubeObject,
  select: Responsibility['selectResource'],
): Promise<{ res: ResourceType; apiGroup: string; kind: string; name: string }> {
  const machineName = machine.metadata.name!;
  if (select === 'Machine') return { res: Machines, apiGroup: Machines.group, kind: Machines.kind, name: machineName };
  const field = select === 'InfraMachine' ? 'spec.infrastructureRef' : 'spec.bootstrap.configRef';
  const ref = select === 'InfraMachine' ? machineInfraRef(machine) : machineBootstrapRef(machine);
  if (!ref?.apiGroup) throw new CommitRefused(`Machine ${machineName} has no ${field} to commit ${select} responsibilities to`);
  try {
    return { res: await client.resolve(ref.apiGroup, ref.kind), apiGroup: ref.apiGroup, kind: ref.kind, name: ref.name };
  } catch (err) {
    throw new RetryableError(`resolve ${ref.kind}.${ref.apiGroup} referenced by Machine ${machineName} ${field}`, err);
  }
}

/** Reads every object and builds every patch (nothing written). */
async function prepare(client: KubeClient, { namespace, machineName, resps, policy, cachedMachine }: CommitRequest): Promise<Target[]> {
  // A cached Machine saves a GET per commit: the patch is guarded by its resourceVersion, so a stale copy costs a
  // conflict (retried), never a write on outdated values.
  const machine = cachedMachine ?? (await client.get(Machines, namespace, machineName));
  if (!machine) throw new MachineGone(`Machine ${namespace}/${machineName} not found`);
  if (machine.metadata.deletionTimestamp) throw new MachineGone(`Machine ${namespace}/${machineName} is being deleted`);
  const targets: Target[] = [];
  for (const select of SELECTS) {
    const items = resps.filter((r) => r.selectResource === select);
    if (items.length === 0) continue;
    const at = await locate(client, machine, select);
    const obj = select === 'Machine' ? machine : await client.get(at.res, namespace, at.name);
    if (!obj) throw new CommitRefused(`${what(at)} not found`);
    let ops: JsonPatchOp[];
    try {
      ops = commitPatch(obj, items, policy);
    } catch (err) {
      if (err instanceof CommitPathError) throw new CommitRefused(`cannot write ${what(at)}: ${err.message}`);
      throw err;
    }
    targets.push({ ...at, obj, items, ops });
  }
  return targets;
}

/** The values the object does not keep, as one sentence (empty when it keeps them all). */
function notKept(t: Target, after: KubeObject): string {
  const missing = verifyCommit(after, t.items);
  if (missing.length === 0) return '';
  const detail = missing.map((m) => `${m.path} (wanted ${show(m.expected)}, found ${show(m.actual)})`).join('; ');
  return `${what(t)} would not keep ${detail}: the field is not in its schema (pruned) or is overwritten`;
}

/** Sends one patch (dry-run or real); conflicts are retryable, rejections terminal. */
async function send(client: KubeClient, namespace: string, t: Target, dryRun: boolean): Promise<KubeObject> {
  const op = `${dryRun ? 'dry-run commit' : 'commit'} to ${what(t)}`;
  try {
    return await client.patch(t.res, namespace, t.name, t.ops, {
      type: 'json',
      fieldManager: FIELD_MANAGER,
      ...(dryRun ? { dryRun: true } : {}),
    });
  } catch (err) {
    // A failed resourceVersion test (409, or 422 on a moved object) means the object changed: retry from fresh state.
    if (err instanceof KubeApiError && err.code === 409) throw new ConflictError(op, err);
    const fresh = await client.get(t.res, namespace, t.name);
    if (fresh?.metadata.resourceVersion !== t.obj.metadata.resourceVersion) throw new ConflictError(op, err);
    if (err instanceof KubeApiError && (err.code === 422 || err.code === 400 || err.code === 403))
      throw new CommitRefused(`the API server rejected the values for ${what(t)}: ${apiMessage(err)}`);
    throw new RetryableError(op, err);
  }
}

/** Where the commit remembers clean dry-runs of single-object patches: the memo and the plan (its uid) committing. */
export interface DryRunMemoRef {
  memo: DryRunMemo;
  plan: string;
}

/** The memo key of a single-object commit's patch, undefined when the commit spans several objects (always dry-run). */
function memoKey(targets: readonly Target[], ref: DryRunMemoRef | undefined): string | undefined {
  if (!ref || targets.length !== 1) return undefined;
  const t = targets[0]!;
  return DryRunMemo.key(ref.plan, t.apiGroup, t.kind, t.items);
}

/**
 * Phase 2 of a commit: every patch is tried (dry-run) and its answer checked, and every target already in place
 * verified, before anything is written. Returns why the commit cannot go on, or undefined. A single-object patch this
 * plan already dry-ran clean on the kind (`memo`) is not tried again: the server applies one object's patch whole or
 * not at all, so a rejection still changes nothing, and the real write's answer is verified all the same.
 */
async function dryRunAll(
  client: KubeClient,
  namespace: string,
  targets: readonly Target[],
  memo: { ref: DryRunMemoRef; key: string } | undefined,
): Promise<string | undefined> {
  for (const t of targets) {
    if (t.ops.length === 0) continue;
    if (memo?.ref.memo.has(memo.key)) continue;
    try {
      const why = notKept(t, await send(client, namespace, t, true));
      if (why) return why;
      memo?.ref.memo.remember(memo.key);
    } catch (err) {
      if (err instanceof CommitRefused) return err.message;
      throw err;
    }
  }
  for (const t of targets) {
    if (t.ops.length > 0) continue;
    // Already in place (a restart after its write, or values at target from the start): still verified.
    const why = notKept(t, t.obj);
    if (why) return why;
  }
  return undefined;
}

/** Phase 3 of a commit: journal the previous values, then write every pending patch; roll back on a refusal or a value not kept. */
async function writeAll(
  client: KubeClient,
  { namespace, save, memo }: { namespace: string; save: SaveJournal; memo: { ref: DryRunMemoRef; key: string } | undefined },
  pending: readonly Target[],
  journaled: readonly JournalObject[],
): Promise<CommitResult> {
  const next: JournalObject[] = pending.map((t) => ({
    apiGroup: t.apiGroup,
    kind: t.kind,
    name: t.name,
    entries: journalEntries(t.obj, t.ops),
  }));
  const objects = mergeJournal(journaled, next);
  // Persisted before the first real write: a crash from here on is finished or rolled back by the next run.
  await save({ state: 'Writing', objects });
  for (const t of pending) {
    const sent = await sendChecked(client, namespace, t, memo);
    if (sent.refused !== undefined) {
      // One object, rejected whole (nothing of it was written) and nothing from an earlier run to restore.
      if (memo && pending.length === 1 && journaled.length === 0) {
        await save(undefined);
        return { ok: false, outcome: 'nothing-committed', message: `commit failed, nothing committed: ${sent.refused}` };
      }
      return rollback(client, namespace, objects, `${sent.refused} (after the dry-run accepted them)`, save);
    }
    if (sent.lost !== undefined) return rollback(client, namespace, objects, `${sent.lost} (after the dry-run kept it)`, save);
  }
  await save(undefined, objects);
  return { ok: true, written: pending.flatMap((t) => t.items.map((r) => `${what(t)} ${r.path}`)) };
}

/**
 * Writes one object's patch and checks its answer: `refused` when the server rejected it whole (nothing written),
 * `lost` when the answer dropped a value, neither when every value is stored. Either failure forgets the dry-run
 * memo's entry, so the next commit of that kind dry-runs again.
 */
async function sendChecked(
  client: KubeClient,
  namespace: string,
  t: Target,
  memo: { ref: DryRunMemoRef; key: string } | undefined,
): Promise<{ refused?: string; lost?: string }> {
  let after: KubeObject;
  try {
    after = await send(client, namespace, t, false);
  } catch (err) {
    if (!(err instanceof CommitRefused)) throw err;
    memo?.ref.memo.forget(memo.key);
    return { refused: err.message };
  }
  const lost = notKept(t, after);
  if (lost) memo?.ref.memo.forget(memo.key);
  return lost ? { lost } : {};
}

/**
 * A commit to one object that holds exactly its previous values (contract C8, no journal write): dry-run (unless the
 * memo has it), then the one patch. Nothing is journaled before it because the patch is atomic and spec.previous keeps
 * the values before it: a crash after it finds the object at the new values and finishes (commitResponsibilities). A
 * patch whose answer did not keep a value is journaled as RollingBack and rolled back, as after a journaled write; a
 * crash before that journal lands finds the object partly at its new values (journaled path: the dry-run refuses the
 * patch and the rollback restores the recorded previous values) or back at its previous ones (this path again, whose
 * dry-run then refuses it: nothing committed).
 */
async function commitOne(
  client: KubeClient,
  namespace: string,
  t: Target,
  save: SaveJournal,
  memo: { ref: DryRunMemoRef; key: string } | undefined,
): Promise<CommitResult> {
  const nothing = (why: string): CommitResult => ({
    ok: false,
    outcome: 'nothing-committed',
    message: `commit failed, nothing committed: ${why}`,
  });
  const why = await dryRunAll(client, namespace, [t], memo);
  if (why !== undefined) return nothing(why);
  const objects: JournalObject[] = [{ apiGroup: t.apiGroup, kind: t.kind, name: t.name, entries: journalEntries(t.obj, t.ops) }];
  const sent = await sendChecked(client, namespace, t, memo);
  // Rejected whole: nothing of it was written.
  if (sent.refused !== undefined) return nothing(sent.refused);
  if (sent.lost !== undefined) return rollback(client, namespace, objects, `${sent.lost} (after the dry-run kept it)`, save);
  await save(undefined, objects);
  return { ok: true, written: t.items.map((r) => `${what(t)} ${r.path}`) };
}

/** The journal an unjournaled commit starts from: per object, the paths already at their new value, with their recorded previous value. */
function journalFromPrevious(targets: readonly Target[], previous: readonly PreviousValue[]): JournalObject[] {
  const out: JournalObject[] = [];
  for (const t of targets) {
    const entries = entriesFromPrevious(t.obj, t.items, previous);
    if (entries.length > 0) out.push({ apiGroup: t.apiGroup, kind: t.kind, name: t.name, entries });
  }
  return out;
}

/** One commit: which machine, what to write, and the journal it resumes from and persists to. */
export interface CommitRequest {
  namespace: string;
  machineName: string;
  resps: readonly Responsibility[];
  /** The MachineUpdate's status.commit (from an interrupted earlier run, if any). */
  journal?: CommitJournal | undefined;
  save: SaveJournal;
  policy?: WritePolicy | undefined;
  /** Used instead of reading the Machine (its resourceVersion guards the patch). */
  cachedMachine?: KubeObject | undefined;
  /** Lets a single-object commit skip a dry-run its plan already passed on that kind (see dryRunAll). */
  memoRef?: DryRunMemoRef | undefined;
  /** The MachineUpdate's spec.previous. */
  previous?: readonly PreviousValue[] | undefined;
}

/**
 * Commits every responsibility to the Machine, its InfraMachine and its BootstrapConfig, all or nothing: prepare
 * every patch, dry-run them all (`dryRunAll`), then journal and write (`writeAll`). `journal`
 * is the MachineUpdate's status.commit (from an interrupted earlier run, if any); `save` persists it. Conflicts and
 * transient errors throw retryable errors with the journal kept, so the next reconcile resumes. `cachedMachine`,
 * when given, is used instead of reading the Machine (its resourceVersion guards the patch). `memoRef`, when given,
 * lets a single-object commit skip a dry-run its plan already passed on that kind (see dryRunAll). `previous` is the
 * MachineUpdate's spec.previous: without a journal, one object holding exactly those values is committed without a
 * journal write (commitOne); otherwise the paths already at their new value are journaled with their recorded
 * previous value, so a finished commit records it and a rollback restores it.
 */
export async function commitResponsibilities(client: KubeClient, c: CommitRequest): Promise<CommitResult> {
  const { namespace, journal, save, memoRef, previous } = c;
  if (journal?.state === 'RollingBack')
    return rollback(client, namespace, journal.objects ?? [], journal.reason ?? 'the commit failed', save);
  let journaled = journal?.objects ?? [];
  const fail = async (reason: string): Promise<CommitResult> => {
    // Objects an interrupted earlier run wrote (or found at their new values, with spec.previous) are restored; otherwise nothing was changed.
    if (journaled.length > 0) return rollback(client, namespace, journaled, reason, save);
    if (journal) await save(undefined);
    return { ok: false, outcome: 'nothing-committed', message: `commit failed, nothing committed: ${reason}` };
  };

  let targets: Target[];
  try {
    targets = await prepare(client, c);
  } catch (err) {
    if (err instanceof MachineGone && journaled.length === 0) {
      if (journal) await save(undefined);
      return { ok: false, outcome: 'machine-gone', message: `nothing committed: ${err.message}` };
    }
    if (err instanceof CommitRefused) return fail(err.message);
    throw err;
  }
  const key = memoKey(targets, memoRef);
  const memo = key !== undefined && memoRef ? { ref: memoRef, key } : undefined;
  if (!journal && previous) {
    const only = targets.length === 1 ? targets[0]! : undefined;
    if (only && only.ops.length > 0 && holdsPrevious(only.obj, only.items, previous)) return commitOne(client, namespace, only, save, memo);
    // Not as before the update: whatever is already at its new value is journaled with the value from before it.
    journaled = journalFromPrevious(targets, previous);
  }
  const why = await dryRunAll(client, namespace, targets, memo);
  if (why !== undefined) return fail(why);
  const pending = targets.filter((t) => t.ops.length > 0);
  if (pending.length > 0) return writeAll(client, { namespace, save, memo }, pending, journaled);
  // Everything in place: what an interrupted earlier run wrote (its journal) is what this commit changed, else nothing.
  await save(undefined, journaled);
  return { ok: true, written: [] };
}

/**
 * Restores every journaled object to its previous values. The journal is marked RollingBack first, so that a
 * restart finishes the rollback rather than retrying the commit. Transient errors throw (the next run resumes);
 * an object changed by someone else since the commit, or a rejected restore, is left and named in the message.
 */
async function rollback(
  client: KubeClient,
  namespace: string,
  objects: readonly JournalObject[],
  reason: string,
  save: SaveJournal,
): Promise<CommitResult> {
  await save({ state: 'RollingBack', reason, objects: [...objects] });
  const restored: string[] = [];
  const failed: string[] = [];
  for (const o of objects) {
    let res: ResourceType;
    try {
      res = await client.resolve(o.apiGroup, o.kind);
    } catch (err) {
      throw new RetryableError(`resolve ${o.kind}.${o.apiGroup} to restore it`, err);
    }
    const current = await client.get(res, namespace, o.name);
    if (!current) {
      // Whatever the commit wrote went with the object: nothing left to restore.
      restored.push(`${objectLabel(o)} (gone)`);
      continue;
    }
    const plan = restorePatch(current, o.entries ?? []);
    if (plan.changed.length > 0)
      failed.push(`${objectLabel(o)} ${plan.changed.join(', ')} (changed by someone else since the commit; left as is)`);
    if (plan.ops.length === 0) {
      if (plan.changed.length === 0) restored.push(objectLabel(o));
      continue;
    }
    try {
      await client.patch(res, namespace, o.name, plan.ops, { type: 'json', fieldManager: FIELD_MANAGER });
      restored.push(objectLabel(o));
    } catch (err) {
      // The guards failed because the object moved on: the next run looks again at the fresh object.
      if (err instanceof KubeApiError && (err.code === 409 || err.code === 422)) {
        const fresh = await client.get(res, namespace, o.name);
        if (fresh && fresh.metadata.resourceVersion !== current.metadata.resourceVersion)
          throw new ConflictError(`restore ${objectLabel(o)}`, err);
      }
      if (err instanceof KubeApiError && (err.code === 422 || err.code === 400 || err.code === 403))
        failed.push(`${objectLabel(o)} (restore rejected: ${apiMessage(err)})`);
      else throw new RetryableError(`restore ${objectLabel(o)}`, err);
    }
  }
  await save(undefined);
  if (failed.length > 0) {
    return {
      ok: false,
      outcome: 'restore-failed',
      message: `commit failed: ${reason}; restore failed — operator action needed: ${failed.join('; ')}${restored.length ? `; restored ${restored.join(', ')}` : ''}`,
    };
  }
  return {
    ok: false,
    outcome: 'rolled-back',
    message: `commit failed and was rolled back, nothing committed: ${reason}; restored ${restored.join(', ') || 'nothing (no object had been written)'}`,
  };
}
