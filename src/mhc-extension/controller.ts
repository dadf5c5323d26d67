// The MHC extension's controllers: one reconciles each MachineHealthCheck (protect, judge, remediate), one
// restores a machine's skip-remediation once its update ended. Everything is derived from the objects.
import { Labels, MachineHealthChecks, MachineUpdates, Machines, MhcEventReasons, type KubeObject } from '../api/index.js';
import { Action, LabelSelectorError, formatLabelSelector, matchesRequirements, parseSelector, setCondition, type LabelRequirement, type LabelSelector, type Manager, type ObjectKey, type ReconcileContext } from '../runtime/index.js';
import { activeUpdateOf, planMachineHealthCheck, restorePatch, type AnnotationPatch, type EventWish, type MachineAction } from './decisions.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './scope.js';

/** Name of the component and of its main controller. */
export const CONTROLLER_NAME = 'mhc-extension';

/** Options of the controllers (tests inject the clock). */
export interface MhcExtensionOptions {
  now?: () => number;
}

const keyOf = (o: KubeObject): ObjectKey => ({ ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: o.metadata.name ?? '' });
const machineNameOf = (u: MachineUpdate): string | undefined => u.metadata.labels?.[Labels.machineName] ?? u.spec?.machineRef?.name;

/** Parsed selectors by their JSON form: every Machine event and every reconcile matches many machines against few MHCs. */
const parsedSelectors = new Map<string, LabelRequirement[] | null>();

/** The MHC's parsed selector, or null when it does not parse (it then selects nothing). */
function requirementsOf(mhc: MachineHealthCheck): LabelRequirement[] | null {
  const key = JSON.stringify(mhc.spec.selector ?? {});
  let reqs = parsedSelectors.get(key);
  if (reqs === undefined) {
    try {
      reqs = parseSelector(formatLabelSelector(mhc.spec.selector as LabelSelector));
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      reqs = null;
    }
    if (parsedSelectors.size > 1000) parsedSelectors.clear();
    parsedSelectors.set(key, reqs);
  }
  return reqs;
}

/** True when the MHC selects the machine: same cluster, and its selector matches the machine's labels (an unparsable selector selects nothing). */
export function selects(mhc: MachineHealthCheck, m: KubeObject & { spec?: { clusterName?: string } }): boolean {
  if (m.metadata.namespace !== mhc.metadata.namespace || m.spec?.clusterName !== mhc.spec.clusterName) return false;
  const reqs = requirementsOf(mhc);
  return reqs !== null && matchesRequirements(reqs, m.metadata.labels);
}

/** Registers the extension's controllers with the manager. */
export function setupMhcExtension(mgr: Manager, opts: MhcExtensionOptions = {}): void {
  const now = opts.now ?? Date.now;
  const mhcs = mgr.informer<MachineHealthCheck>(MachineHealthChecks);
  const machines = mgr.informer<Machine>(Machines);
  const updates = mgr.informer<MachineUpdate>(MachineUpdates);
  const mhcsSelecting = (m: Machine): ObjectKey[] => mhcs.store.list(m.metadata.namespace).filter((h) => selects(h, m)).map(keyOf);
  const warned = new Set<string>();

  mgr.controller(CONTROLLER_NAME)
    .for(MachineHealthChecks)
    .watches<Machine>(Machines, mhcsSelecting)
    .watches<MachineUpdate>(MachineUpdates, (u) => {
      const m = machines.store.get(u.metadata.namespace, machineNameOf(u) ?? '');
      return m ? mhcsSelecting(m) : [];
    })
    .reconcile(async (key, ctx) => {
      const mhc = mhcs.store.get(key.namespace, key.name);
      if (!mhc || mhc.metadata.deletionTimestamp) return Action.awaitChange();
      const selected = machines.store.list(key.namespace).filter((m) => selects(mhc, m));
      const plan = planMachineHealthCheck(mhc, selected, updates.store.list(key.namespace), now());
      for (const e of plan.mhcEvents) {
        // One warning per configuration value, not one per reconcile.
        const id = `${mhc.metadata.uid}/${mhc.metadata.annotations ? JSON.stringify(mhc.metadata.annotations) : ''}/${JSON.stringify(mhc.spec.remediation ?? {})}`;
        if (warned.has(id)) continue;
        warned.add(id);
        mgr.events.event(mhc, e.type, e.reason, e.message);
        ctx.log.warn({ mhc: key.name, reason: e.reason }, e.message);
      }
      for (const action of plan.actions) await act(mgr, key.namespace, action, ctx, machines.store.get(key.namespace, action.machine), updates.store);
      return plan.requeueAfterMs !== undefined ? Action.requeue(plan.requeueAfterMs) : Action.awaitChange();
    });

  mgr.controller(`${CONTROLLER_NAME}-restore`)
    .for(Machines)
    .watches<MachineUpdate>(MachineUpdates, (u) => {
      const name = machineNameOf(u);
      return name ? [{ ...(u.metadata.namespace ? { namespace: u.metadata.namespace } : {}), name }] : [];
    })
    .reconcile(async (key, ctx) => {
      const m = machines.store.get(key.namespace, key.name);
      if (!m || m.metadata.deletionTimestamp) return Action.awaitChange();
      if (activeUpdateOf(key.name, updates.store.byLabel(Labels.machineName, key.name, key.namespace))) return Action.awaitChange();
      const patch = restorePatch(m.metadata.annotations);
      if (!patch) return Action.awaitChange();
      await patchAnnotations(mgr, m, patch);
      ctx.log.info({ machine: key.name }, 'in-place update ended: restored skip-remediation to its prior state');
      mgr.events.event(m, 'Normal', MhcEventReasons.skipRemediationRestored, `In-place update ended; ${Object.keys(patch).join(', ')} restored to the state before the update`);
      return Action.awaitChange();
    });
}

/** Applies one machine's decision: annotations (merge patch, optimistic), then the MachineUpdate condition, then Events. */
async function act(mgr: Manager, namespace: string | undefined, action: MachineAction, ctx: ReconcileContext, machine: Machine | undefined, updates: { get(ns: string | undefined, name: string): MachineUpdate | undefined }): Promise<void> {
  if (!machine) return;
  if (action.annotations) {
    await patchAnnotations(mgr, machine, action.annotations);
    ctx.log.info({ machine: action.machine, annotations: action.annotations }, 'patched machine annotations');
    emit(mgr, machine, action.eventsOnPatch);
  }
  if (!action.update) return;
  const u = updates.get(namespace, action.update.name);
  if (!u) return;
  const wish = action.update.condition;
  const current = u.status?.conditions?.find((c) => c.type === wish.type);
  if (current && current.status === wish.status && current.reason === wish.reason && (current.message ?? '') === wish.message) return;
  const conditions = setCondition(u.status?.conditions, wish, u.metadata.generation);
  await mgr.client.patch(MachineUpdates, namespace, action.update.name, { metadata: { resourceVersion: u.metadata.resourceVersion }, status: { conditions } }, { type: 'merge', subresource: 'status' });
  emit(mgr, machine, action.eventsOnChange);
}

/** Records a machine's Events (MHC-level Events are recorded by the reconcile itself). */
function emit(mgr: Manager, machine: Machine, events: EventWish[]): void {
  for (const e of events) if (e.on === 'Machine') mgr.events.event(machine, e.type, e.reason, e.message);
}

/** Merge-patches only annotations, guarded by the cached resourceVersion (a concurrent change retries the reconcile). */
async function patchAnnotations(mgr: Manager, m: KubeObject, patch: AnnotationPatch): Promise<void> {
  await mgr.client.patch(Machines, m.metadata.namespace, m.metadata.name ?? '', { metadata: { resourceVersion: m.metadata.resourceVersion, annotations: patch } }, { type: 'merge' });
}
