// The effectful part of the commit (C8): read the Machine and the objects it references, JSON-patch each
// responsibility into place behind a resourceVersion test, and verify on the object the API server returns.
import { Machines, type KubeObject, type ResourceType, type Responsibility, type WritePolicy } from '../api/index.js';
import { ConflictError, KubeApiError, RetryableError, type KubeClient } from '../runtime/index.js';
import { CommitPathError, commitPatch, verifyCommit } from './commit.js';

/** Outcome of a commit: the pointers written, or why the commit cannot succeed (terminal). */
export type CommitResult = { ok: true; written: string[] } | { ok: false; message: string };

/** A v1beta2 object reference (same namespace as the Machine). */
interface ObjectRef {
  apiGroup?: string;
  kind?: string;
  name?: string;
}

const SELECTS: Responsibility['selectResource'][] = ['Machine', 'InfraMachine', 'BootstrapConfig'];

/** Where a selectResource points for this Machine. */
async function locate(client: KubeClient, machine: KubeObject, select: Responsibility['selectResource']): Promise<{ res: ResourceType; name: string; what: string } | { error: string }> {
  const machineName = machine.metadata.name!;
  if (select === 'Machine') return { res: Machines, name: machineName, what: `Machine ${machineName}` };
  const spec = (machine.spec ?? {}) as { infrastructureRef?: ObjectRef; bootstrap?: { configRef?: ObjectRef } };
  const field = select === 'InfraMachine' ? 'spec.infrastructureRef' : 'spec.bootstrap.configRef';
  const ref = select === 'InfraMachine' ? spec.infrastructureRef : spec.bootstrap?.configRef;
  if (!ref?.apiGroup || !ref.kind || !ref.name) return { error: `Machine ${machineName} has no ${field} to commit ${select} responsibilities to` };
  try {
    return { res: await client.resolve(ref.apiGroup, ref.kind), name: ref.name, what: `${ref.kind} ${ref.name}` };
  } catch (err) {
    throw new RetryableError(`resolve ${ref.kind}.${ref.apiGroup} referenced by Machine ${machineName} ${field}`, err);
  }
}

const show = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v));

/**
 * Commits every responsibility to the Machine, its InfraMachine and its BootstrapConfig. Already-committed
 * values are not written again (a restart mid-commit finishes it). Conflicts throw a retryable error.
 */
export async function commitResponsibilities(client: KubeClient, namespace: string, machineName: string, resps: readonly Responsibility[], policy?: WritePolicy): Promise<CommitResult> {
  const machine = await client.get(Machines, namespace, machineName);
  if (!machine) return { ok: false, message: `commit failed: Machine ${namespace}/${machineName} not found` };
  const written: string[] = [];
  for (const select of SELECTS) {
    const items = resps.filter((r) => r.selectResource === select);
    if (items.length === 0) continue;
    const target = await locate(client, machine, select);
    if ('error' in target) return { ok: false, message: `commit failed: ${target.error}` };
    const obj = select === 'Machine' ? machine : await client.get(target.res, namespace, target.name);
    if (!obj) return { ok: false, message: `commit failed: ${target.what} not found` };
    let ops;
    try {
      ops = commitPatch(obj, items, policy);
    } catch (err) {
      if (err instanceof CommitPathError) return { ok: false, message: `commit failed on ${target.what}: ${err.message}` };
      throw err;
    }
    // What the API server holds afterwards: the patch response is the object as persisted (pruned and defaulted),
    // so it is the read-back without another GET; with nothing to write, the object just read is.
    let after: KubeObject = obj;
    if (ops.length > 0) {
      const op = `commit to ${target.what}`;
      try {
        after = await client.patch(target.res, namespace, target.name, ops, { type: 'json', fieldManager: 'machine-task-controller' });
      } catch (err) {
        // A failed resourceVersion test (409/422) means the object moved on: retry from fresh state.
        const fresh = await client.get(target.res, namespace, target.name);
        if (err instanceof KubeApiError && (err.code === 409 || fresh?.metadata.resourceVersion !== obj.metadata.resourceVersion)) throw new ConflictError(op, err);
        if (err instanceof KubeApiError && (err.code === 422 || err.code === 400)) return { ok: false, message: `commit failed on ${target.what}: the API server rejected the values: ${err.status?.message ?? err.message}` };
        throw new RetryableError(op, err);
      }
      written.push(...items.map((r) => `${target.what} ${r.path}`));
    }
    const missing = verifyCommit(after, items);
    if (missing.length > 0) {
      const detail = missing.map((m) => `${m.path} (wanted ${show(m.expected)}, found ${show(m.actual)})`).join('; ');
      return { ok: false, message: `commit failed: ${target.what} did not keep ${detail}; the field is not in its schema (pruned) or was overwritten` };
    }
  }
  return { ok: true, written };
}
