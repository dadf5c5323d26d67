// The MHC extension's controllers: one reconciles each MachineHealthCheck (protect, judge, remediate), one
// restores a machine's skip-remediation once its update ended. Everything is derived from the objects.
import { Labels, MachineHealthChecks, MachineUpdates, Machines, MhcEventReasons, type KubeObject } from '../api/index.js';
import { Action, LabelSelectorError, formatLabelSelector, matchesRequirements, parseSelector, setCondition, type LabelRequirement, type LabelSelector, type Manager, type ObjectKey, type ReconcileContext } from '../runtime/index.js';
import { toLabelValue } from '../contract/index.js';
import { activeUpdateOf, machineNeedsPass, machineOfUpdate, planMachineHealthCheck, planNeedsAttention, restorePatch, type AnnotationPatch, type EventWish, type MachineAction } from './decisions.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './scope.js';

/** Name of the component and of its main controller. */
export const CONTROLLER_NAME = 'mhc-extension';

/** Options of the controllers (tests inject the clock). */
export interface MhcExtensionOptions {
  now?: () => number;
}

const keyOf = (o: KubeObject): ObjectKey => ({ ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: o.metadata.name ?? '' });

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
  const mhcsSelecting = (m: Machine): MachineHealthCheck[] => mhcs.store.list(m.metadata.namespace).filter((h) => selects(h, m));
  /** MHCs whose last pass left a timed-out or failed machine: any event may free budget for it, so every event counts. */
  const attention = new Set<string>();
  const mhcKey = (h: MachineHealthCheck): string => `${h.metadata.namespace ?? ''}/${h.metadata.name ?? ''}`;
  // A pass is O(machines); at 10k machines one per event saturated a core. Only events that can change its outcome trigger one.
  const mhcsToPass = (m: Machine | undefined): ObjectKey[] => {
    if (!m) return [];
    const name = m.metadata.name ?? '';
    const mine = updates.store.byLabel(Labels.machineName, toLabelValue(name), m.metadata.namespace).filter((u) => machineOfUpdate(u) === name);
    return mhcsSelecting(m).filter((h) => attention.has(mhcKey(h)) || machineNeedsPass(h, m, mine, now())).map(keyOf);
  };
  const warned = new Set<string>();

  mgr.controller(CONTROLLER_NAME)
    .for(MachineHealthChecks)
    .watches<Machine>(Machines, mhcsToPass)
    .watches<MachineUpdate>(MachineUpdates, (u) => mhcsToPass(machines.store.peek(u.metadata.namespace, machineOfUpdate(u))))
    // A pass is O(machines): with a steady stream of machines entering update (30,000 machines, maxUnavailable 1) passes
    // ran back to back. Resting twice the CPU of the last pass bounds an MHC to a third of a core; protection waits at
    // most 1 s more.
    .withCooldown((_wallMs, cpuMs) => Math.min(2 * cpuMs, 1000))
    .reconcile(async (key, ctx) => {
      const mhc = mhcs.store.get(key.namespace, key.name);
      if (!mhc || mhc.metadata.deletionTimestamp) return Action.awaitChange();
      const selected = machines.store.list(key.namespace).filter((m) => selects(mhc, m));
      const nsUpdates = updates.store.list(key.namespace);
      const plan = planMachineHealthCheck(mhc, selected, nsUpdates, now());
      if (planNeedsAttention(plan)) attention.add(mhcKey(mhc));
      else attention.delete(mhcKey(mhc));
      for (const e of plan.mhcEvents) {
        // One warning per configuration value, not one per reconcile.
        const id = `${mhc.metadata.uid}/${mhc.metadata.annotations ? JSON.stringify(mhc.metadata.annotations) : ''}/${JSON.stringify(mhc.spec.remediation ?? {})}`;
        if (warned.has(id)) continue;
        warned.add(id);
        mgr.events.event(mhc, e.type, e.reason, e.message);
        ctx.log.warn({ mhc: key.name, reason: e.reason }, e.message);
      }
      // The cached (frozen) objects the decision was made on: no per-machine copies, which cost seconds at 10k machines.
      const machineByName = new Map(selected.map((m) => [m.metadata.name ?? '', m]));
      const updateByName = new Map(nsUpdates.map((u) => [u.metadata.name ?? '', u]));
      for (const action of plan.actions) await act(mgr, key.namespace, action, ctx, machineByName.get(action.machine), updateByName);
      return plan.requeueAfterMs !== undefined ? Action.requeue(plan.requeueAfterMs) : Action.awaitChange();
    });

  mgr.controller(`${CONTROLLER_NAME}-restore`)
    .for(Machines)
    .watches<MachineUpdate>(MachineUpdates, (u) => {
      const name = machineOfUpdate(u);
      return name ? [{ ...(u.metadata.namespace ? { namespace: u.metadata.namespace } : {}), name }] : [];
    })
    .reconcile(async (key, ctx) => {
      const m = machines.store.peek(key.namespace, key.name);
      if (!m || m.metadata.deletionTimestamp) return Action.awaitChange();
      // The label holds the label-safe form of the name (shortened past 63 characters); activeUpdateOf checks machineRef.
      if (activeUpdateOf(key.name, updates.store.byLabel(Labels.machineName, toLabelValue(key.name), key.namespace))) return Action.awaitChange();
      const patch = restorePatch(m.metadata.annotations);
      if (!patch) return Action.awaitChange();
      await patchAnnotations(mgr, m, patch);
      ctx.log.info({ machine: key.name }, 'in-place update ended: restored skip-remediation to its prior state');
      mgr.events.event(m, 'Normal', MhcEventReasons.skipRemediationRestored, `In-place update ended; ${Object.keys(patch).join(', ')} restored to the state before the update`);
      return Action.awaitChange();
    });
}

/** Applies one machine's decision: annotations (merge patch, optimistic), then the MachineUpdate condition, then Events. */
async function act(mgr: Manager, namespace: string | undefined, action: MachineAction, ctx: ReconcileContext, machine: Machine | undefined, updates: ReadonlyMap<string, MachineUpdate>): Promise<void> {
  if (!machine) return;
  if (action.annotations) {
    await patchAnnotations(mgr, machine, action.annotations);
    ctx.log.info({ machine: action.machine, annotations: action.annotations }, 'patched machine annotations');
    emit(mgr, machine, action.eventsOnPatch);
  }
  if (!action.update) return;
  const u = updates.get(action.update.name);
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
