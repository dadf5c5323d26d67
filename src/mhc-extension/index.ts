// The MHC extension component (docs/design.md §4.3): keeps CAPI's MachineHealthChecks from remediating machines that are
// legitimately down for an in-place update, and triggers remediation when an update exceeds its timeout or fails.
//
// Configuration is the MHC annotation `inplace.cluster.x-k8s.io/in-place-update-timeout` (Go duration). For each
// selected machine whose current update (its latest MachineUpdate, or the one of the plan labelling it) is running
// or failed: within the timeout it carries `cluster.x-k8s.io/skip-remediation` (prior state kept in
// `inplace.cluster.x-k8s.io/skip-remediation-prior` and restored when the update ends); timed out or failed, the
// protection is lifted and, budget permitting, `cluster.x-k8s.io/remediate-machine` is set. An unhealthy verdict is the
// MachineUpdate condition HealthCheckSucceeded (InPlaceUpdateTimedOut / InPlaceUpdateFailed); a protected machine's
// record is its skip-remediation value (MHC, update, expiry), WithinInPlaceUpdateTimeout only replaces a stale verdict.
//
// This file wires the controllers: informers, which events trigger which reconcile, cooldown.
import { InPlaceUpdatePlans, Labels, MachineHealthChecks, MachineUpdates, Machines, type KubeObject } from '../api/index.js';
import type { Component, Manager, ObjectKey } from '../runtime/index.js';
import { CONTROLLER_NAME, RESTORE_CONTROLLER_NAME, mhcDeps, mhcKey, observeMachine, reconcile, reconcileRestore } from './controller.js';
import { machineNeedsPass, machineOfUpdate, restoreDue, restoreGraceMs } from './decide.js';
import { rbac } from './rbac.js';
import { planLabelExists, selects, type Machine, type MachineHealthCheck, type MachineUpdate } from './scope.js';
import { toLabelValue } from '../contract/index.js';

export { rbac } from './rbac.js';
export { CONTROLLER_NAME } from './controller.js';
export { selects } from './scope.js';
export { parseGoDuration, InvalidDurationError } from '../api/duration.js';

/** Options of the controllers (tests inject the clock). */
export interface MhcExtensionOptions {
  now?: () => number;
}

const keyOf = (o: { metadata: { namespace?: string; name?: string } }): ObjectKey => ({
  ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
  name: o.metadata.name ?? '',
});

/** Registers the extension's controllers with the manager. */
function setupMhcExtension(mgr: Manager, opts: MhcExtensionOptions = {}): void {
  const now = opts.now ?? Date.now;
  const stores = {
    mhcs: mgr.informer<MachineHealthCheck>(MachineHealthChecks).store,
    machines: mgr.informer<Machine>(Machines).store,
    updates: mgr.informer<MachineUpdate>(MachineUpdates).store,
    plans: mgr.informer(InPlaceUpdatePlans).store,
  };
  const deps = mhcDeps(stores, mgr.client, mgr.events, now);
  // The passes' index follows the caches. Registered before the controllers' watches: an informer calls its handlers in
  // order, so the mappers below already see this event's MachineUpdates in the index.
  mgr.informer<Machine>(Machines).onChange((m) => deps.index.machineChanged(m));
  mgr.informer<MachineUpdate>(MachineUpdates).onChange((u, old, type) => deps.index.updateChanged(u, old, type));
  // A pass costs the machines in update, but one per event would still be one per machine event. Only events that can
  // change its outcome trigger one: on a settled machine, none; on an MHC left with a timed-out or failed machine, every
  // one (any may free budget).
  const mhcsToPass = (m: Machine | undefined): ObjectKey[] => {
    if (!m) return [];
    const mine = deps.index.updatesOf(m.metadata.namespace, m.metadata.name ?? '');
    return stores.mhcs
      .list(m.metadata.namespace)
      .filter((h) => selects(h, m) && (deps.attention.has(mhcKey(keyOf(h))) || machineNeedsPass(h, m, mine, now(), deps.memo)))
      .map(keyOf);
  };

  mgr
    .controller(CONTROLLER_NAME)
    .for(MachineHealthChecks)
    .watches<Machine>(Machines, mhcsToPass)
    .watches<MachineUpdate>(MachineUpdates, (u) => mhcsToPass(stores.machines.peek(u.metadata.namespace, machineOfUpdate(u))))
    // With a steady stream of machines entering update (30,000 machines, maxUnavailable 1) passes run back to back.
    // Resting twice the CPU of the last pass bounds an MHC to a third of a core; protection waits at most 1 s more.
    .withCooldown((_wallMs, cpuMs) => Math.min(2 * cpuMs, 1000))
    .reconcile((key, ctx) => reconcile(deps, key, ctx.log));

  // Marks our own annotation writes as seen (decisions on the machine wait for that; see MhcDeps.ownWrites).
  mgr.informer<Machine>(Machines).onChange((m, _old, type) => observeMachine(deps, m, type === 'delete'));

  mgr
    .controller(RESTORE_CONTROLLER_NAME)
    .for(Machines)
    // A MachineUpdate event wakes the restore only when it has something to do now (restoreDue, on the caches and the
    // index as they are after this event); any later change that makes it due is itself an event on the machine or
    // one of its MachineUpdates. Skipping the others saves a reconcile per MachineUpdate event of every machine.
    .watches<MachineUpdate>(MachineUpdates, (u) => {
      const name = machineOfUpdate(u);
      const m = name ? stores.machines.peek(u.metadata.namespace, name) : undefined;
      const planExists = m ? planLabelExists(stores.plans, u.metadata.namespace, m.metadata.labels?.[Labels.planName]) : false;
      return m && restoreDue(m, deps.index.updatesOf(u.metadata.namespace, name), planExists, deps.now())
        ? [{ ...(u.metadata.namespace ? { namespace: u.metadata.namespace } : {}), name }]
        : [];
    })
    // A plan gone (its finalizer removed by hand, without the unlabel that restores) leaves the restore to the
    // extension: its deletion wakes the machines still carrying its label whose restore is now due.
    .watches<KubeObject>(InPlaceUpdatePlans, (p) => {
      const ns = p.metadata.namespace;
      const label = toLabelValue(p.metadata.name ?? '');
      if (planLabelExists(stores.plans, ns, label)) return [];
      return stores.machines
        .byLabel(Labels.planName, label, ns)
        .filter((m) => {
          const updates = deps.index.updatesOf(ns, m.metadata.name ?? '');
          // Due now, or once a recent label's grace ends (the reconcile requeues for that).
          return restoreDue(m, updates, false, deps.now()) || restoreGraceMs(m, updates, false, deps.now()) !== undefined;
        })
        .map(keyOf);
    })
    .reconcile((key, ctx) => reconcileRestore(deps, key, ctx.log));
}

/** The component with options (tests inject the clock). */
export function createMhcExtension(opts: MhcExtensionOptions = {}): Component {
  return { name: CONTROLLER_NAME, rbac, setup: (mgr) => setupMhcExtension(mgr, opts) };
}

/** The MHC extension as deployed. */
export const mhcExtension: Component = createMhcExtension();
