// What owner alignment (owners/owners-act.ts) is given: the client for its writes, and the informer caches for every
// read (provider kinds started on first use, MachineSets typed as the API server returns them).
import { MachineSets } from '../../api/index.js';
import type { PlanDeps } from '../deps.js';
import type { OwnerDeps } from '../owners/owners-act.js';
import { cachedKind, type ReadScope } from '../snapshot/reader.js';
import { FIELD_MANAGER, WRITES_IN_FLIGHT } from './writes.js';

/** Most InfraMachine annotations one reconcile writes (the rest in the next ones): bounded requests per reconcile. */
const MAX_INFRA_WRITES = 128;

/** What owner alignment needs: the client for writes, the informer caches for every read (the plan's cluster's for InfraMachines). */
export function ownerDeps(deps: PlanDeps, scope?: ReadScope): OwnerDeps {
  return {
    client: deps.client,
    fieldManager: FIELD_MANAGER,
    writesInFlight: WRITES_IN_FLIGHT,
    maxInfraWrites: MAX_INFRA_WRITES,
    reads: {
      async ref(ns, ref) {
        const { res, store, typed } = await cachedKind(deps, ref, scope);
        const obj = typed(store.peek(ns, ref.name));
        return { res, ...(obj ? { obj } : {}), byName: (n: string) => typed(store.peek(ns, n)) };
      },
      machineSet: (ns, name) => {
        const ms = deps.machineSets.peek(ns, name);
        return ms ? { ...ms, kind: MachineSets.kind, apiVersion: `${MachineSets.group}/${MachineSets.version}` } : undefined;
      },
    },
  };
}
