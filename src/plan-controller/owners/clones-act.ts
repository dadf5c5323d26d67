// The plan controller's template-clone collection (clones.ts decides): run on the finalizer path of a deleted plan
// (deleted by the operator or pruned by the history limit), when deletion has nothing else left to undo. Reads with
// lists (once per plan deletion, not per reconcile) and deletes with a uid precondition.
import type { KubeObject, ResourceType } from '../../api/index.js';
import { MachineSets } from '../../api/index.js';
import type { ContractRef } from '../../api/capi/index.js';
import { machineInfraRef, nameOf, ownerBootstrapTemplateRef, ownerInfraTemplateRef } from '../../api/capi/index.js';
import { isConflict, isNotFound, KubeApiError } from '../../runtime/pure/errors.js';
import type { KubeClient, Logger } from '../../runtime/pure/types.js';
import { clonesToDelete, referencedTemplates } from './clones.js';

/** What the clone collection needs from the controller. */
export interface CloneGcDeps {
  client: KubeClient;
}

/** What the collection reads besides the API: the deleted plan's cluster, the live plans and the cluster's objects. */
export interface CloneGcScope {
  namespace: string;
  clusterName: string;
  /** Names of the namespace's plans that exist and are not being deleted. */
  livePlans: ReadonlySet<string>;
  /** The namespace's MachineDeployments and the cluster's control plane (as the informers hold them). */
  owners: readonly KubeObject[];
  /** The cluster's machines (their InfraMachine kinds are listed for the cloned-from annotations). */
  machines: readonly KubeObject[];
}

/** Lists every object of a kind in the namespace, with kind and apiVersion set (list items may omit them). */
async function listKind(client: KubeClient, res: ResourceType, ns: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  let cont: string | undefined;
  do {
    const page = await client.list(res, ns, cont ? { continue: cont } : {});
    for (const o of page.items) out.push({ ...o, kind: res.kind, apiVersion: res.group ? `${res.group}/${res.version}` : res.version });
    cont = page.continue;
  } while (cont);
  return out;
}

const refKinds = (refs: (ContractRef | undefined)[]): Map<string, ContractRef> =>
  new Map(refs.filter((r): r is ContractRef => !!r).map((r) => [`${r.kind}.${r.apiGroup}`, r]));

/**
 * Deletes the clones of the cluster whose plan is gone or being deleted and that nothing refers to. Returns the names
 * deleted. A kind the plan controller may not list or delete (403) or that is not served is skipped with a warning:
 * the plan's deletion is not held up by a missing grant.
 */
export async function collectClones(deps: CloneGcDeps, scope: CloneGcScope, log: Logger): Promise<string[]> {
  const { client } = deps;
  const ns = scope.namespace;
  try {
    const machineSets = await listKind(client, MachineSets, ns);
    const owners = [...scope.owners, ...machineSets];
    const templateKinds = refKinds(owners.flatMap((o) => [ownerInfraTemplateRef(o), ownerBootstrapTemplateRef(o)]));
    if (templateKinds.size === 0) return [];
    const infraMachines: KubeObject[] = [];
    for (const r of refKinds(scope.machines.map(machineInfraRef)).values())
      infraMachines.push(...(await listKind(client, await client.resolve(r.apiGroup, r.kind), ns)));
    const referenced = referencedTemplates(owners, infraMachines);
    const deleted: string[] = [];
    for (const r of templateKinds.values()) {
      const res = await client.resolve(r.apiGroup, r.kind);
      const templates = await listKind(client, res, ns);
      for (const c of clonesToDelete({ templates, clusterName: scope.clusterName, livePlans: scope.livePlans, referenced })) {
        try {
          await client.delete(res, ns, nameOf(c), c.metadata.uid ? { preconditions: { uid: c.metadata.uid } } : {});
          deleted.push(`${c.kind}/${nameOf(c)}`);
        } catch (err) {
          if (!isNotFound(err) && !isConflict(err)) throw err;
        }
      }
    }
    if (deleted.length > 0) log.info({ deleted }, 'deleted template clones no longer referenced');
    return deleted;
  } catch (err) {
    if (err instanceof KubeApiError && (err.code === 403 || (err.code === 404 && err.operation.startsWith('resolve')))) {
      log.warn({ err: err.message }, 'template clones not collected (grant list/delete on the template kinds, see docs/operations.md)');
      return [];
    }
    throw err;
  }
}
