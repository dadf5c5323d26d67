// The simulated MachineSet controller (upstream: internal/controllers/machineset).
import { Labels } from '../../../src/api/index.js';
import { formatLabelSelector, type LabelSelector } from '../../../src/runtime/pure/labels.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import {
  DevMachineTemplates,
  controllerRef,
  DevMachines,
  KubeadmConfigTemplates,
  KubeadmConfigs,
  MachineSets,
  Machines,
} from '../builders.js';
import { countReplicas, decideScale } from '../decisions.js';
import { UPDATE_IN_PROGRESS_ANNOTATION, clonedFromAnnotations, isPaused, machineFromSet } from '../rollout.js';
import {
  MOVE_MACHINES_TO_ANNOTATION,
  PENDING_ACKNOWLEDGE_MOVE_ANNOTATION,
  decideMoves,
  PENDING_HOOKS_ANNOTATION,
  UPDATE_MACHINE_HOOK,
  pendingHooksValue,
} from '../inplace.js';
import type { Machine, MachineSet } from '../../../src/api/capi/index.js';
import { type SimWorld, merge } from './world.js';

/** CAPI's MachineSet controller: machines from the set's own templates, moves and in-place triggers, replica status. */
export class MachineSetController {
  constructor(private readonly world: SimWorld) {}

  /** Scales a MachineSet's machines to its replicas from its own template, and keeps its replica status. */
  async reconcile(key: ObjectKey): Promise<Action> {
    const ms = this.world.mgr.informer<MachineSet>(MachineSets).store.get(key.namespace, key.name);
    if (!ms || ms.metadata.deletionTimestamp) return Action.awaitChange();
    let machines = this.world.ownedMachines(
      `MachineSet/${key.namespace}/${key.name}`,
      (m) => m.metadata.labels?.[Labels.setName] === key.name && m.metadata.namespace === key.namespace,
    );
    const mdName = ms.metadata.labels?.[Labels.deploymentName];
    const paused = this.world.faithful && isPaused(ms, this.world.cluster(key.namespace, ms.spec.clusterName));
    let moving = false;
    if (this.world.inPlace && this.world.faithful && !paused) {
      // Machines moved away that the cache still shows here are gone from this set.
      machines = machines.filter((m) => {
        const k = `${m.metadata.namespace}/${m.metadata.name}`;
        const target = this.world.expectedMoves.get(k);
        if (target === undefined) return true;
        if (m.metadata.labels?.[Labels.setName] !== target) return false;
        this.world.expectedMoves.delete(k);
        return true;
      });
      const moves = decideMoves(ms, machines);
      for (const name of moves.trigger) {
        const m = machines.find((x) => x.metadata.name === name);
        if (m) await this.triggerMachineSetInPlace(ms, m);
      }
      machines = machines.filter((m) => !moves.notAcknowledged.includes(m.metadata.name ?? ''));
      const target = ms.metadata.annotations?.[MOVE_MACHINES_TO_ANNOTATION];
      const targetSet = target ? this.world.mgr.informer<MachineSet>(MachineSets).store.peek(key.namespace, target) : undefined;
      const active = machines.filter((m) => !m.metadata.deletionTimestamp);
      if (targetSet && active.length > (ms.spec.replicas ?? 1)) {
        moving = true;
        // startMoveMachines: surplus machines move (not those still updating from an earlier move), in deletion order.
        const movable = active.filter((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined);
        const surplus = active.length - (ms.spec.replicas ?? 1);
        const pick = decideScale(Math.max(0, movable.length - surplus), movable, ms.spec.deletion?.order, (m) => this.world.createdAtOf(m));
        for (const name of pick.delete)
          await this.moveMachine(
            machines.find((m) => m.metadata.name === name)!,
            targetSet,
          );
      }
    }
    if (!moving && !paused) {
      await this.world.scale(
        `MachineSet/${key.namespace}/${key.name}`,
        ms.spec.replicas ?? 1,
        machines,
        ms.spec.deletion?.order,
        async (name) => {
          const want = machineFromSet(ms, key.name, mdName);
          return {
            namespace: key.namespace ?? '',
            clusterName: ms.spec.clusterName,
            name,
            version: want.version ?? '',
            owner: { res: MachineSets, name: key.name, uid: ms.metadata.uid ?? '' },
            labels: want.labels,
            annotations: want.annotations,
            infraSpec: await this.world.templateSpec(DevMachineTemplates, key.namespace, want.infraTemplate.name),
            infraAnnotations: clonedFromAnnotations(want.infraTemplate),
            bootstrapSpec: want.bootstrapTemplate
              ? await this.world.templateSpec(KubeadmConfigTemplates, key.namespace, want.bootstrapTemplate.name)
              : {},
            ...(want.bootstrapTemplate ? { bootstrapAnnotations: clonedFromAnnotations(want.bootstrapTemplate) } : {}),
            ...(want.failureDomain ? { failureDomain: want.failureDomain } : {}),
          };
        },
      );
    }
    const counts = countReplicas(machines, ms.spec.template.spec.version);
    await this.world.patchStatusIfChanged(MachineSets, ms, {
      observedGeneration: ms.metadata.generation ?? 1,
      selector: formatLabelSelector(ms.spec.selector as LabelSelector),
      ...counts,
    });
    return Action.awaitChange();
  }

  /**
   * startMoveMachines: the machine changes MachineSet (set-name label, controller reference) and carries
   * update-in-progress and pending-acknowledge-move until the deployment counts it in the target's replicas.
   */
  private async moveMachine(m: Machine, target: MachineSet): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    this.world.expectedMoves.set(`${ns}/${name}`, target.metadata.name ?? '');
    const owners = (m.metadata.ownerReferences ?? []).filter((r) => !r.controller);
    owners.push(controllerRef(MachineSets, target.metadata.name ?? '', target.metadata.uid ?? ''));
    this.world.mgr.log.info(
      { machine: name, to: target.metadata.name },
      'capi-sim: moving machine to the new MachineSet for an in-place update',
    );
    await this.world.client.patch(
      Machines,
      ns,
      name,
      {
        metadata: {
          labels: { [Labels.setName]: target.metadata.name ?? '' },
          annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '', [PENDING_ACKNOWLEDGE_MOVE_ANNOTATION]: '' },
          ownerReferences: owners,
        },
      },
      merge,
    );
  }

  /**
   * The MachineSet's trigger for an acknowledged moved machine: desired specs from the set's own template on the
   * Machine (version), DevMachine and KubeadmConfig (with their cloned-from and update-in-progress annotations),
   * pending-acknowledge-move dropped and UpdateMachine marked pending.
   */
  private async triggerMachineSetInPlace(ms: MachineSet, m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const want = machineFromSet(ms, ms.metadata.name ?? '', ms.metadata.labels?.[Labels.deploymentName]);
    const infra = await this.world.client.get(DevMachines, ns, m.spec.infrastructureRef.name);
    const providerID = (infra?.['spec'] as Record<string, unknown> | undefined)?.['providerID'];
    await this.world.patchIgnoringMissing(
      DevMachines,
      ns,
      m.spec.infrastructureRef.name,
      {
        metadata: { annotations: { ...clonedFromAnnotations(want.infraTemplate), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } },
        spec: {
          ...(await this.world.templateSpec(DevMachineTemplates, ns, want.infraTemplate.name)),
          ...(providerID ? { providerID } : {}),
        },
      },
      merge,
    );
    const ref = m.spec.bootstrap.configRef;
    if (ref && want.bootstrapTemplate)
      await this.world.patchIgnoringMissing(
        KubeadmConfigs,
        ns,
        ref.name,
        {
          metadata: { annotations: { ...clonedFromAnnotations(want.bootstrapTemplate), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } },
          spec: await this.world.templateSpec(KubeadmConfigTemplates, ns, want.bootstrapTemplate.name),
        },
        merge,
      );
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, true);
    this.world.mgr.log.info({ machineSet: ms.metadata.name, machine: name }, 'capi-sim: triggering in-place update');
    await this.world.patchIgnoringMissing(
      Machines,
      ns,
      name,
      {
        metadata: { annotations: { [PENDING_ACKNOWLEDGE_MOVE_ANNOTATION]: null, [PENDING_HOOKS_ANNOTATION]: pending ?? null } },
        spec: { ...(want.version ? { version: want.version } : {}) },
      },
      merge,
    );
  }
}
