// The simulated MachineDeployment controller (upstream: internal/controllers/machinedeployment).
import { Labels, apiVersionOf, type KubeObject, type ResourceType } from '../../../src/api/index.js';
import { formatLabelSelector, type LabelSelector } from '../../../src/runtime/pure/labels.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import { Clusters, DevMachineTemplates, controllerRef, KubeadmConfigTemplates, MachineDeployments, MachineSets } from '../builders.js';
import { countReplicas, newMachineName } from '../decisions.js';
import {
  UPDATE_IN_PROGRESS_ANNOTATION,
  decideMdRollout,
  findNewMachineSet,
  isPaused,
  machineAvailable,
  type ClusterView,
  type MdSetView,
} from '../rollout.js';
import {
  ACKNOWLEDGED_MOVE_ANNOTATION,
  CAN_UPDATE_MACHINESET_HOOK,
  MOVE_MACHINES_TO_ANNOTATION,
  RECEIVE_MACHINES_FROM_ANNOTATION,
  acknowledgeMoves,
  inPlaceCandidates,
  judgeCanUpdateMachineSet,
  answerAffectsAvailability,
  moveAnnotations,
  type CanUpdateMachineSetPatches,
  type MachineSetObjects,
  forHookRequest,
} from '../inplace.js';
import { callExtension, registrationsFor } from '../extension-client.js';
import type { Machine, MachineDeployment, MachineSet } from '../../../src/api/capi/index.js';
import { type SimWorld, merge, randomSuffix } from './world.js';

/** CAPI's MachineDeployment controller: rollouts through MachineSets, in-place moves, the deployment's replica status. */
export class MachineDeploymentController {
  /** MachineSets a deployment created that the cache may not show yet, per deployment key. */
  private readonly expectedSets = new Map<string, string>();
  /** CanUpdateMachineSet answers per old/new MachineSet generation pair (upstream caches them too). */
  private readonly canUpdateMachineSetCache = new Map<string, SetAnswer>();

  constructor(private readonly world: SimWorld) {}

  /**
   * A MachineDeployment: with faithful rollouts, upstream's rolloutRolling / rolloutOnDelete (a new MachineSet from
   * the deployment's template when none matches, old ones scaled down within maxUnavailable); otherwise only the
   * first MachineSet follows spec.replicas. Keeps the deployment's replica status either way.
   */
  async reconcile(key: ObjectKey): Promise<Action> {
    const md = this.world.mgr.informer<MachineDeployment>(MachineDeployments).store.get(key.namespace, key.name);
    if (!md || md.metadata.deletionTimestamp) return Action.awaitChange();
    const mdKey = `${key.namespace ?? ''}/${key.name}`;
    const sets = this.world.mgr
      .informer<MachineSet>(MachineSets)
      .store.byLabel(Labels.deploymentName, key.name, key.namespace)
      .filter((s) => s.metadata.ownerReferences?.some((r) => r.kind === MachineDeployments.kind && r.name === key.name));
    const pendingSet = this.expectedSets.get(mdKey);
    if (pendingSet !== undefined) {
      // The set created last time is not in the cache yet: deciding now would create a second one.
      if (!sets.some((s) => s.metadata.name === pendingSet)) return Action.requeue(50);
      this.expectedSets.delete(mdKey);
    }
    const desired = md.spec.replicas ?? 1;
    const machines = this.world.machines.filter(
      (m) => m.metadata.namespace === key.namespace && m.metadata.labels?.[Labels.deploymentName] === key.name,
    );
    const live = machines.filter((m) => !m.metadata.deletionTimestamp);
    if (this.world.faithful) {
      const inPlaceOn = this.world.inPlace && registrationsFor(this.world.extensionConfigs, CAN_UPDATE_MACHINESET_HOOK).length === 1;
      const ofSet = (name: string | undefined): Machine[] => live.filter((m) => m.metadata.labels?.[Labels.setName] === name);
      // In place: machines moved into the new set count once the deployment acknowledged them (replicas + annotation, one write).
      const setPatches = new Map<string, { annotations: Record<string, string | null>; replicas?: number }>();
      const patchOf = (name: string) => setPatches.get(name) ?? setPatches.set(name, { annotations: {} }).get(name)!;
      let views: MdSetView[] = sets.map((set) => {
        const mine = ofSet(set.metadata.name);
        return {
          set,
          machines: mine.length,
          // In place: a machine being updated (or being moved: the cache may not show it yet) is not available, and
          // machines above a set's replicas are pending scale-down (upstream subtracts them): neither may widen the
          // maxUnavailable budget, or a second machine would move while the first one is still updating.
          available: inPlaceOn
            ? Math.min(
                set.spec.replicas ?? 0,
                mine.filter(
                  (m) =>
                    machineAvailable(m) &&
                    m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined &&
                    !this.world.expectedMoves.has(`${m.metadata.namespace}/${m.metadata.name}`),
                ).length,
              )
            : mine.filter(machineAvailable).length,
          createdAtMs: Date.parse(set.metadata.creationTimestamp ?? '') || 0,
          updating: inPlaceOn
            ? mine.filter(
                (m) =>
                  m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined ||
                  this.world.expectedMoves.has(`${m.metadata.namespace}/${m.metadata.name}`),
              ).length
            : 0,
        };
      });
      const currentNew = findNewMachineSet(md, sets);
      if (inPlaceOn && currentNew) {
        const ack = acknowledgeMoves(currentNew.metadata.annotations?.[ACKNOWLEDGED_MOVE_ANNOTATION], ofSet(currentNew.metadata.name));
        if (ack.scaleUp > 0 || (ack.acknowledged ?? '') !== (currentNew.metadata.annotations?.[ACKNOWLEDGED_MOVE_ANNOTATION] ?? '')) {
          const replicas = (currentNew.spec.replicas ?? 0) + ack.scaleUp;
          const p = patchOf(currentNew.metadata.name ?? '');
          p.replicas = replicas;
          p.annotations[ACKNOWLEDGED_MOVE_ANNOTATION] = ack.acknowledged ?? null;
          views = views.map((v) => (v.set === currentNew ? { ...v, set: { ...v.set, spec: { ...v.set.spec, replicas } } } : v));
        }
      }
      // v1.15: the in-place answers are known before the rollout is planned, so a non-disruptive change gets no surge.
      let nonDisruptive = false;
      if (inPlaceOn && currentNew && this.world.readsAffectsAvailability) {
        // By name: the acknowledgement above may have replaced the new set's view with an updated copy.
        const olds = views.filter(
          (v) => v.set.metadata.name !== currentNew.metadata.name && !v.set.metadata.deletionTimestamp && v.machines > 0,
        );
        try {
          const answers = [];
          for (const v of olds) answers.push(await this.canUpdateMachineSet(v.set, currentNew));
          nonDisruptive = answers.length > 0 && answers.every((a) => a.covered && !a.affectsAvailability);
        } catch (err) {
          this.world.mgr.log.error({ machineDeployment: key.name, err }, 'capi-sim: CanUpdateMachineSet failed');
          return Action.requeue(1000);
        }
      }
      const decision = decideMdRollout(md, this.world.cluster(key.namespace, md.spec.clusterName), views, { nonDisruptive });
      // Confirm against the API server (caches lag independently) before rolling out a new MachineSet.
      if (decision.create && sets.length > 0 && !(await this.rolloutLive(md))) return Action.requeue(100);
      if (decision.create) {
        // v1.15 asks CanUpdateMachineSet about the new set before sizing it (upstream plans on the set in memory): the
        // simulator creates it empty and sizes it next pass, once the answer (and affectsAvailability) is known.
        await this.createMachineSet(md, inPlaceOn && this.world.readsAffectsAvailability ? 0 : decision.create.replicas);
        // Upstream decides the in-place intent against the new set in the same pass: hold the old sets' scale-down
        // until the set exists, rather than delete a machine that could have moved.
        if (inPlaceOn) return Action.requeue(50);
      }
      for (const [name, replicas] of Object.entries(decision.scale)) patchOf(name).replicas = replicas;
      if (inPlaceOn && currentNew) {
        const newReplicas = setPatches.get(currentNew.metadata.name ?? '')?.replicas ?? currentNew.spec.replicas ?? 0;
        const olds = views.filter((v) => v.set.metadata.name !== currentNew.metadata.name && !v.set.metadata.deletionTimestamp);
        const candidates = inPlaceCandidates(
          true,
          1,
          newReplicas,
          desired,
          olds.map((v) => ({ name: v.set.metadata.name ?? '', machines: v.machines })),
        );
        const covered: string[] = [];
        for (const name of candidates) {
          const old = olds.find((v) => v.set.metadata.name === name)!.set;
          try {
            if ((await this.canUpdateMachineSet(old, currentNew)).covered) covered.push(name);
          } catch (err) {
            this.world.mgr.log.error({ machineDeployment: key.name, machineSet: name, err }, 'capi-sim: CanUpdateMachineSet failed');
            return Action.requeue(1000);
          }
        }
        const ann = moveAnnotations(currentNew.metadata.name ?? '', covered);
        for (const [name, a] of Object.entries(ann.old)) {
          const old = olds.find((v) => v.set.metadata.name === name)!.set;
          if (old.metadata.annotations?.[MOVE_MACHINES_TO_ANNOTATION] !== a[MOVE_MACHINES_TO_ANNOTATION])
            Object.assign(patchOf(name).annotations, a);
        }
        if (ann.receive && currentNew.metadata.annotations?.[RECEIVE_MACHINES_FROM_ANNOTATION] !== ann.receive)
          patchOf(currentNew.metadata.name ?? '').annotations[RECEIVE_MACHINES_FROM_ANNOTATION] = ann.receive;
      }
      for (const [name, p] of setPatches) {
        const body: Record<string, unknown> = {};
        if (Object.keys(p.annotations).length > 0) body['metadata'] = { annotations: p.annotations };
        if (p.replicas !== undefined) body['spec'] = { replicas: p.replicas };
        await this.world.client.patch(MachineSets, key.namespace, name, body, merge);
      }
      for (const name of decision.delete) await this.world.deleteIgnoringMissing(MachineSets, key.namespace ?? '', name);
    } else {
      const current = sets[0];
      if (current && (current.spec.replicas ?? 1) !== desired) {
        await this.world.client.patch(MachineSets, key.namespace, current.metadata.name ?? '', { spec: { replicas: desired } }, merge);
      }
    }
    const newSet = this.world.faithful ? findNewMachineSet(md, sets) : sets[0];
    const counts = countReplicas(machines, md.spec.template.spec.version);
    if (this.world.faithful)
      counts.upToDateReplicas = live.filter(
        (m) => newSet !== undefined && m.metadata.labels?.[Labels.setName] === newSet.metadata.name,
      ).length;
    const status = {
      observedGeneration: md.metadata.generation ?? 1,
      selector: formatLabelSelector(md.spec.selector as LabelSelector),
      ...counts,
      phase: phaseOf(desired, counts.replicas),
    };
    await this.world.patchStatusIfChanged(MachineDeployments, md, status);
    return Action.awaitChange();
  }

  /** Whether the API server (not the cache) still shows an unpaused deployment whose template no MachineSet has. */
  private async rolloutLive(cached: MachineDeployment): Promise<boolean> {
    const ns = cached.metadata.namespace;
    const md = await this.world.client.get<MachineDeployment>(MachineDeployments, ns, cached.metadata.name ?? '');
    if (!md || isPaused(md, await this.world.client.get<ClusterView>(Clusters, ns, md.spec.clusterName))) return false;
    const sets = (await this.world.client.list<MachineSet>(MachineSets, ns)).items.filter(
      (s) => s.metadata.labels?.[Labels.deploymentName] === md.metadata.name,
    );
    return findNewMachineSet(md, sets) === undefined;
  }

  /** A MachineSet with the deployment's template (upstream: name from the deployment's, labels and selector too). */
  private async createMachineSet(md: MachineDeployment, replicas: number): Promise<void> {
    const ns = md.metadata.namespace ?? '';
    const mdName = md.metadata.name ?? '';
    const taken = new Set(
      this.world.mgr
        .informer(MachineSets)
        .store.list(ns)
        .map((s) => s.metadata.name ?? ''),
    );
    const name = newMachineName(mdName, taken, randomSuffix);
    const labels = { ...(md.spec.selector.matchLabels ?? {}), [Labels.clusterName]: md.spec.clusterName, [Labels.deploymentName]: mdName };
    const template = structuredClone(md.spec.template);
    const ms: MachineSet = {
      apiVersion: apiVersionOf(MachineSets),
      kind: MachineSets.kind,
      metadata: { name, namespace: ns, labels, ownerReferences: [controllerRef(MachineDeployments, mdName, md.metadata.uid ?? '')] },
      spec: {
        clusterName: md.spec.clusterName,
        replicas,
        selector: structuredClone(md.spec.selector),
        template,
        ...(md.spec.deletion ? { deletion: structuredClone(md.spec.deletion) } : {}),
      },
    };
    this.expectedSets.set(`${ns}/${mdName}`, name);
    await this.world.client.create(MachineSets, ms);
    this.world.mgr.log.info({ machineDeployment: mdName, machineSet: name, replicas }, 'capi-sim: rollout: new MachineSet');
  }

  /**
   * canUpdateMachineSetInPlace: asks the one CanUpdateMachineSet handler with the old and new MachineSet and their
   * DevMachineTemplate / KubeadmConfigTemplate, applies its patches to the old ones and compares with the new ones.
   */
  private async canUpdateMachineSet(old: MachineSet, next: MachineSet): Promise<SetAnswer> {
    const cacheKey = `${old.metadata.namespace}/${old.metadata.name}/${old.metadata.generation}->${next.metadata.name}/${next.metadata.generation}`;
    const cached = this.canUpdateMachineSetCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const reg = registrationsFor(this.world.extensionConfigs, CAN_UPDATE_MACHINESET_HOOK)[0];
    if (!reg) return NOT_COVERED;
    const ns = old.metadata.namespace;
    const tpl = async (res: ResourceType, name: string | undefined): Promise<(KubeObject & { spec?: unknown }) | undefined> => {
      const o = name ? await this.world.client.get<KubeObject & { spec?: unknown }>(res, ns, name) : undefined;
      return o ? forHookRequest(o, apiVersionOf(res), res.kind) : undefined;
    };
    const side = async (ms: MachineSet): Promise<MachineSetObjects | undefined> => {
      const infra = await tpl(DevMachineTemplates, ms.spec.template.spec.infrastructureRef.name);
      if (!infra) return undefined;
      const boot = await tpl(KubeadmConfigTemplates, ms.spec.template.spec.bootstrap.configRef?.name);
      return {
        machineSet: forHookRequest(ms, apiVersionOf(MachineSets), MachineSets.kind),
        infrastructureMachineTemplate: infra,
        ...(boot ? { bootstrapConfigTemplate: boot } : {}),
      };
    };
    const current = await side(old);
    const desired = await side(next);
    if (!current || !desired) return NOT_COVERED;
    const answer = (await callExtension(reg, CAN_UPDATE_MACHINESET_HOOK, { current, desired })) as CanUpdateMachineSetPatches;
    const coverage = judgeCanUpdateMachineSet(current, desired, answer);
    if (!coverage.covered)
      this.world.mgr.log.info(
        { machineSet: old.metadata.name, reasons: coverage.reasons },
        'capi-sim: MachineSet cannot be updated in place, rolling out',
      );
    const result = {
      covered: coverage.covered,
      affectsAvailability: answerAffectsAvailability(answer, this.world.readsAffectsAvailability),
    };
    this.canUpdateMachineSetCache.set(cacheKey, result);
    return result;
  }
}

/** A judged CanUpdateMachineSet answer: every change covered, and whether it may disrupt the machines. */
interface SetAnswer {
  covered: boolean;
  affectsAvailability: boolean;
}
const NOT_COVERED: SetAnswer = { covered: false, affectsAvailability: true };

const phaseOf = (desired: number, current: number): string =>
  current < desired ? 'ScalingUp' : current > desired ? 'ScalingDown' : 'Running';
