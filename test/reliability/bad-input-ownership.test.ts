// Hostile input against ownership and the commit, with the whole platform running: MachineUpdates created by hand
// (no plan behind them), plans naming Cluster API templates or task kinds that do not declare the updater contract,
// a template too large to become a task, two plans whose MachineUpdate names used to collide, and a commit whose
// second object prunes its value. None may run an updater (no task), change a CAPI object it has no right to, or
// leave a machine labelled.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import {
  API_VERSION,
  ConfigMaps,
  DevMachines,
  Events,
  InPlaceUpdatePlans,
  KubeadmConfigs,
  Labels,
  MachineUpdates,
  Machines,
  Reasons,
  UpdaterUpdateTasks,
  type KubeObject,
  type MachineUpdateSpec,
} from '../../src/api/index.js';
import { buildInventory } from '../../tools/capi-sim/index.js';
import { toLabelValue } from '../../src/contract/index.js';
import { openTaskKindCrd } from '../support/crds.js';
import { applyFleet, fleetPlan } from '../../bench/lib/fleet.js';
import { waitFor } from '../support/wait.js';
import { platformSpecs, startProcs, startWorld, stopWorld, waitPlan, type World } from './harness.js';
import { waitPlanInvalid } from '../support/plans.js';

type Obj = Record<string, unknown>;
const GROUP = 'hostile.inplace-test.example.com';

/** A task kind of GROUP that keeps any field; `labelled` declares the updater contract. */
const crd = (kind: string, labelled: boolean): Obj => openTaskKindCrd(GROUP, kind, labelled);

describe('reliability: bad input against ownership, task kinds, names and the commit', function () {
  this.timeout(300_000);
  let w: World | undefined;
  let ghostUid = '';
  let c1Machine = '';
  /** Every CAPI object of the namespace by kind/name -> resourceVersion and spec, before the hostile cases. */
  let capiBefore = new Map<string, { rv: string; spec: string }>();

  const capiState = async (): Promise<Map<string, { rv: string; spec: string }>> => {
    const out = new Map<string, { rv: string; spec: string }>();
    for (const res of [Machines, DevMachines, KubeadmConfigs]) {
      for (const o of (await w!.client.list(res, w!.ns)).items)
        out.set(`${res.kind}/${o.metadata.name}`, { rv: o.metadata.resourceVersion ?? '', spec: JSON.stringify(o['spec']) });
    }
    return out;
  };
  const tasksOf = async (labelSelector: string): Promise<KubeObject[]> => {
    const out: KubeObject[] = [];
    for (const res of [UpdaterUpdateTasks, KubeadmConfigs, DevMachines])
      out.push(...(await w!.client.list(res, w!.ns, { labelSelector })).items);
    return out;
  };
  const labelledMachines = async (): Promise<string[]> =>
    (await w!.client.list(Machines, w!.ns)).items
      .filter((m) => m.metadata.labels?.[Labels.planName] !== undefined)
      .map((m) => m.metadata.name!);
  const hostileMU = async (
    name: string,
    owners: Obj[] | undefined,
    planName = 'ghost',
    responsibilities: Obj[] = [{ selectResource: 'Machine', path: '/spec/bootstrap/dataSecretName', value: 'stolen' }],
    template?: Obj,
  ): Promise<void> => {
    const spec: Obj = {
      planName,
      clusterName: 'c1',
      target: { kind: 'MachineDeployment', name: 'c1-md-0' },
      machineRef: { name: c1Machine },
      updatePhase: 'updating',
      updaters: [
        {
          name: 'evil',
          sequence: 1,
          responsibilities,
          ...(template ? { updaterUpdateTemplateRef: template } : { parameters: { durationSeconds: 0 } }),
        },
      ],
    };
    await w!.client.create(MachineUpdates, {
      apiVersion: API_VERSION,
      kind: MachineUpdates.kind,
      metadata: { name, namespace: w!.ns, ...(owners ? { ownerReferences: owners } : {}) },
      spec: spec as unknown as MachineUpdateSpec,
    } as KubeObject);
  };
  /** Waits until the MachineUpdate says why it is not acted on (or is gone: collected with its missing owner). */
  const refused = async (name: string, mention: RegExp): Promise<void> => {
    let said = '';
    await waitFor(
      async () => {
        const mu = await w!.client.get(MachineUpdates, w!.ns, name);
        said = String((mu?.['status'] as Obj | undefined)?.['message'] ?? '');
        return !mu || mention.test(said);
      },
      { timeoutMs: 30_000, intervalMs: 100, message: `MachineUpdate ${name} refused (${mention}); last message: ${said}` },
    );
  };
  const ownerRef = (kind: string, name: string, uid: string, apiVersion = API_VERSION): Obj => ({
    apiVersion,
    kind,
    name,
    uid,
    controller: true,
  });
  const validFalse = async (name: string): Promise<string> => (await waitPlanInvalid(w!.client, w!.ns, name)).message;
  const templatePlan = (name: string, ref: Obj): KubeObject =>
    ({
      apiVersion: API_VERSION,
      kind: InPlaceUpdatePlans.kind,
      metadata: { name, namespace: w!.ns },
      spec: {
        clusterName: 'c1',
        machineDeployments: [
          {
            name: w!.fleet.mdNames[0]!,
            sequence: 2,
            updaters: [
              {
                name: 'evil',
                sequence: 1,
                updaterUpdateTemplateRef: ref,
                responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.9' }],
              },
            ],
          },
        ],
      },
    }) as KubeObject;

  before(async () => {
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: 4, mdSize: 2, maxUnavailable: 1, mhcTimeout: '30m' },
      'badowner',
    );
    c1Machine = w.fleet.objects.find((o) => o.kind === 'Machine' && o.metadata.labels?.[Labels.deploymentName] === w!.fleet.mdNames[0])!
      .metadata.name!;
    // Cluster c2's one worker is renamed to what follows "c1-" in c1Machine: plan "p" on c1Machine and plan "p-c1" on
    // it are the pair whose MachineUpdates were both named "p-<c1Machine>".
    const c2 = buildInventory({
      namespace: w.ns,
      clusterName: 'c2',
      version: 'v1.30.0',
      machineDeployments: [{ name: 'c2-md', replicas: 1, maxUnavailable: 1, maxSurge: 0 }],
    });
    const m2 = c2.find((o) => o.kind === 'Machine')!;
    const oldName = m2.metadata.name!;
    m2.metadata.name = c1Machine.slice('c1-'.length);
    for (const o of c2)
      for (const r of o.metadata.ownerReferences ?? []) if (r.kind === 'Machine' && r.name === oldName) r.name = m2.metadata.name;
    await applyFleet(w.client, c2);
    // Task kinds that must never be created: one without CRD (only its template exists), one whose CRD is unlabelled.
    const dir = mkdtempSync(join(tmpdir(), 'badowner-crds-'));
    const file = join(dir, 'crds.yaml');
    writeFileSync(
      file,
      [
        crd('NoCrdTaskTemplate', true),
        crd('UnlabelledTask', false),
        crd('UnlabelledTaskTemplate', true),
        crd('BigTask', true),
        crd('BigTaskTemplate', true),
      ]
        .map((d) => stringify(d))
        .join('---\n'),
    );
    await w.env.installCrds([file]);
    const tmpl = (kind: string, name: string, spec: Obj): KubeObject =>
      ({ apiVersion: `${GROUP}/v1`, kind, metadata: { name, namespace: w!.ns }, spec }) as KubeObject;
    const res = async (kind: string) => w!.client.resolve(GROUP, kind);
    await w.client.create(await res('NoCrdTaskTemplate'), tmpl('NoCrdTaskTemplate', 'no-crd', { template: { spec: {} } }));
    await w.client.create(await res('UnlabelledTaskTemplate'), tmpl('UnlabelledTaskTemplate', 'unlabelled', { template: { spec: {} } }));
    // The plan that owns the hand-made MachineUpdates: its cluster does not exist, so it never starts anything.
    const ghost = await w.client.create(InPlaceUpdatePlans, {
      apiVersion: API_VERSION,
      kind: InPlaceUpdatePlans.kind,
      metadata: { name: 'ghost', namespace: w.ns },
      spec: {
        clusterName: 'nowhere',
        machineDeployments: [
          {
            name: 'md',
            sequence: 1,
            updaters: [
              { name: 'u', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.9' }] },
            ],
          },
        ],
      },
    } as KubeObject);
    ghostUid = ghost.metadata.uid!;
    const procs = startProcs(w, platformSpecs(w.env.kubeconfigPath, w.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
    capiBefore = await capiState();
  });
  after(async () => stopWorld(w));

  describe('MachineUpdates not created by a plan get no task and no commit', () => {
    it('no owner at all (a user writing Machine /spec/bootstrap/dataSecretName through the platform)', async () => {
      await hostileMU('no-owner', undefined);
      await refused('no-owner', /no controller ownerReference/);
      await waitFor(
        async () =>
          (await w!.client.list(Events, w!.ns)).items.some(
            (e) => (e['involvedObject'] as Obj | undefined)?.['name'] === 'no-owner' && e['reason'] === Reasons.notOwnedByPlan,
          ),
        { timeoutMs: 30_000, message: 'a Warning Event NotOwnedByPlan on no-owner' },
      );
    });

    it('owned by another kind (a ConfigMap)', async () => {
      const cm = await w!.client.create(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'decoy', namespace: w!.ns },
        data: {},
      } as KubeObject);
      await hostileMU('cm-owner', [ownerRef('ConfigMap', 'decoy', cm.metadata.uid!, 'v1')]);
      await refused('cm-owner', /its controller is ConfigMap decoy/);
    });

    it('owned by a plan that was deleted (and recreated under the same name)', async () => {
      const mk = (): Promise<KubeObject> =>
        w!.client.create(InPlaceUpdatePlans, {
          apiVersion: API_VERSION,
          kind: InPlaceUpdatePlans.kind,
          metadata: { name: 'gone', namespace: w!.ns },
          spec: {
            clusterName: 'nowhere',
            machineDeployments: [
              {
                name: 'md',
                sequence: 1,
                updaters: [
                  { name: 'u', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1' }] },
                ],
              },
            ],
          },
        } as KubeObject);
      const first = await mk();
      await w!.client.delete(InPlaceUpdatePlans, w!.ns, 'gone');
      await waitFor(async () => !(await w!.client.get(InPlaceUpdatePlans, w!.ns, 'gone')), {
        timeoutMs: 30_000,
        message: 'plan gone deleted',
      });
      await mk();
      await w!.client.patch(
        Machines,
        w!.ns,
        c1Machine,
        { metadata: { labels: { [Labels.planName]: toLabelValue('gone') } } },
        { type: 'merge' },
      );
      try {
        await hostileMU('dead-owner', [ownerRef(InPlaceUpdatePlans.kind, 'gone', first.metadata.uid!)], 'gone');
        await refused('dead-owner', /not the plan that owns it|does not exist/);
      } finally {
        await w!.client.patch(Machines, w!.ns, c1Machine, { metadata: { labels: { [Labels.planName]: null } } }, { type: 'merge' });
      }
    });

    it('owned by an existing plan that never labelled the machine', async () => {
      await hostileMU('unlabelled-machine', [ownerRef(InPlaceUpdatePlans.kind, 'ghost', ghostUid)]);
      await refused('unlabelled-machine', /does not carry the label inplace.cluster.x-k8s.io\/plan-name=ghost/);
    });
  });

  describe('templates whose task kind the platform must not create', () => {
    const cases: { name: string; ref: () => Obj; mention: RegExp }[] = [
      {
        name: 'KubeadmConfigTemplate (a Cluster API bootstrap kind)',
        ref: () => ({ apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2', kind: 'KubeadmConfigTemplate', name: w!.fleet.mdNames[0]! }),
        mention: /Cluster API group/,
      },
      {
        name: 'DevMachineTemplate (a Cluster API infrastructure kind)',
        ref: () => ({ apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2', kind: 'DevMachineTemplate', name: w!.fleet.mdNames[0]! }),
        mention: /Cluster API group/,
      },
      {
        name: 'a template whose task kind has no CRD',
        ref: () => ({ apiVersion: `${GROUP}/v1`, kind: 'NoCrdTaskTemplate', name: 'no-crd' }),
        mention: /NoCrdTask.* has no CustomResourceDefinition/,
      },
      {
        name: 'a task kind whose CRD does not declare the updater contract',
        ref: () => ({ apiVersion: `${GROUP}/v1`, kind: 'UnlabelledTaskTemplate', name: 'unlabelled' }),
        mention: /does not declare the updater contract/,
      },
    ];
    cases.forEach((c, i) => {
      it(`${c.name}: the plan is Valid=False and starts nothing`, async () => {
        const name = `tmpl-${i}`;
        await w!.client.create(InPlaceUpdatePlans, templatePlan(name, c.ref()));
        expect(await validFalse(name)).to.match(c.mention);
        expect((await w!.client.list(MachineUpdates, w!.ns, { labelSelector: `${Labels.planName}=${name}` })).items).to.have.length(0);
      });
    });

    it('the same KubeadmConfigTemplate reaching the task controller directly: failed, no KubeadmConfig created', async () => {
      await w!.client.patch(Machines, w!.ns, c1Machine, { metadata: { labels: { [Labels.planName]: 'ghost' } } }, { type: 'merge' });
      try {
        await hostileMU(
          'kct-direct',
          [ownerRef(InPlaceUpdatePlans.kind, 'ghost', ghostUid)],
          'ghost',
          [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.9' }],
          cases[0]!.ref(),
        );
        const mu = await waitFor(
          async () => {
            const m = await w!.client.get(MachineUpdates, w!.ns, 'kct-direct');
            return (m?.['status'] as Obj | undefined)?.['updateStatus'] === 'failed' ? m : undefined;
          },
          { timeoutMs: 30_000, message: 'kct-direct failed' },
        );
        expect(String((mu['status'] as Obj)['message'])).to.match(/Cluster API group/);
      } finally {
        await w!.client.patch(Machines, w!.ns, c1Machine, { metadata: { labels: { [Labels.planName]: null } } }, { type: 'merge' });
      }
    });

    it('a 2.9 MiB template: the plan is Valid=False (too large to become a task), or a real server refuses the template', async () => {
      const big = {
        apiVersion: `${GROUP}/v1`,
        kind: 'BigTaskTemplate',
        metadata: { name: 'big', namespace: w!.ns },
        spec: { template: { spec: { blob: 'x'.repeat(Math.floor(2.9 * 1024 * 1024)) } } },
      } as KubeObject;
      try {
        await w!.client.create(await w!.client.resolve(GROUP, 'BigTaskTemplate'), big);
      } catch (err) {
        // A real cluster's etcd refuses objects over its request limit (1.5 MiB by default; "request is too large", or
        // gRPC's "larger than max" before it reaches etcd): that refusal is the
        // outcome there, since nothing could then reach a task.
        if (!w!.env.isRealCluster) throw err;
        expect(String((err as Error).message)).to.match(/too large|larger than max/i, String((err as Error).message).slice(0, 400));
        return;
      }
      await w!.client.create(
        InPlaceUpdatePlans,
        templatePlan('tmpl-big', { apiVersion: `${GROUP}/v1`, kind: 'BigTaskTemplate', name: 'big' }),
      );
      expect(await validFalse('tmpl-big')).to.match(/more than the \d+ a task may have/);
    });

    it('after all of the above: no task, no CAPI object changed, no machine labelled', async () => {
      await new Promise((r) => setTimeout(r, 2000)); // give the controllers time to act on whatever they accepted
      expect((await tasksOf(`${Labels.updaterName}=evil`)).map((t) => `${t.kind}/${t.metadata.name}`)).to.deep.equal([]);
      expect((await w!.client.list(UpdaterUpdateTasks, w!.ns)).items.map((t) => t.metadata.name)).to.deep.equal([]);
      const now = await capiState();
      // The label writes of the direct cases moved the machine's resourceVersion; its spec must be as it was.
      const changed = [...capiBefore]
        .filter(([k, v]) => {
          const n = now.get(k);
          return !n || n.spec !== v.spec || (n.rv !== v.rv && k !== `Machine/${c1Machine}`);
        })
        .map(([k]) => k);
      expect(changed).to.deep.equal([]);
      expect(await labelledMachines()).to.deep.equal([]);
    });
  });

  describe('names and the commit', () => {
    it('plan p on c1 and plan p-c1 on c2 (MachineUpdate names that used to collide) both complete', async () => {
      const p = fleetPlan(w!.fleet, { name: 'p', toVersion: 'v1.30.1', durationSeconds: 0, noControlPlane: true });
      const pc1: KubeObject = {
        apiVersion: API_VERSION,
        kind: InPlaceUpdatePlans.kind,
        metadata: { name: 'p-c1', namespace: w!.ns },
        spec: {
          clusterName: 'c2',
          // As fleetPlan: no Cluster API machine controller mirrors the Nodes in this world.
          verification: { mode: 'Disabled' },
          machineDeployments: [
            {
              name: 'c2-md',
              sequence: 2,
              updaters: [
                {
                  name: 'ref',
                  sequence: 1,
                  parameters: { durationSeconds: 0 },
                  responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
                },
              ],
            },
          ],
        },
      } as KubeObject;
      await w!.client.create(InPlaceUpdatePlans, p);
      await w!.client.create(InPlaceUpdatePlans, pc1);
      try {
        await waitPlan(w!, 'p', ['updated'], 120_000);
        await waitPlan(w!, 'p-c1', ['updated'], 120_000);
      } catch (err) {
        const mus = (await w!.client.list(MachineUpdates, w!.ns)).items.map(
          (m) =>
            `${m.metadata.name} ${JSON.stringify((m['spec'] as Obj)['machineRef'])} ${JSON.stringify(m.metadata.ownerReferences?.map((r) => r.name))}: ${JSON.stringify(m['status'])}`,
        );
        const logs = w!.procs
          .filter((x) => x.name === 'machine-task-controller')
          .map((x) => x.tail(40))
          .join('\n');
        throw new Error(`${(err as Error).message}\n${mus.join('\n')}\n--- machine-task-controller:\n${logs}`);
      }
      const mus = (await w!.client.list(MachineUpdates, w!.ns)).items.filter((m) =>
        ['p', 'p-c1'].includes((m['spec'] as Obj)['planName'] as string),
      );
      expect(new Set(mus.map((m) => m.metadata.name)).size).to.equal(mus.length);
      const renamed = c1Machine.slice('c1-'.length);
      expect((await w!.client.get<KubeObject & { spec: { version: string } }>(Machines, w!.ns, renamed))?.spec.version).to.equal('v1.30.1');
      expect((await w!.client.get<KubeObject & { spec: { version: string } }>(Machines, w!.ns, c1Machine))?.spec.version).to.equal(
        'v1.30.1',
      );
      await waitFor(async () => (await labelledMachines()).length === 0, {
        timeoutMs: 30_000,
        message: 'no machine labelled after both plans',
      });
    });

    it('a plan whose second object would prune its value is refused before any machine starts: nothing committed', async () => {
      const md = w!.fleet.mdNames[1] ?? w!.fleet.mdNames[0]!;
      const machines = (await w!.client.list(Machines, w!.ns, { labelSelector: `${Labels.deploymentName}=${md}` })).items;
      const specs = new Map(machines.map((m) => [m.metadata.name!, JSON.stringify(m['spec'])]));
      const infra = new Map<string, string>();
      for (const m of machines)
        infra.set(m.metadata.name!, (await w!.client.get(DevMachines, w!.ns, m.metadata.name!))?.metadata.resourceVersion ?? '');
      await w!.client.create(InPlaceUpdatePlans, {
        apiVersion: API_VERSION,
        kind: InPlaceUpdatePlans.kind,
        metadata: { name: 'pruned', namespace: w!.ns },
        spec: {
          clusterName: 'c1',
          machineDeployments: [
            {
              name: md,
              sequence: 2,
              updaters: [
                {
                  name: 'ref',
                  sequence: 1,
                  parameters: { durationSeconds: 0 },
                  responsibilities: [
                    { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.7' },
                    { selectResource: 'InfraMachine', path: '/spec/notInSchema', value: 'x' },
                  ],
                },
              ],
            },
          ],
        },
      } as KubeObject);
      // The pre-start check (a dry-run of the exact commit) finds the pruned value: Valid=False, no machine started.
      // (Should a commit still meet one, the all-or-nothing commit restores the first object: test/machine-task-controller/commit.test.ts.)
      await waitFor(
        async () => {
          const p = await w!.client.get(InPlaceUpdatePlans, w!.ns, 'pruned');
          const valid = (
            (p?.['status'] as Obj | undefined)?.['conditions'] as { type: string; status: string; message?: string }[] | undefined
          )?.find((c) => c.type === 'Valid');
          return valid?.status === 'False' && /\/spec\/notInSchema would not be kept/.test(valid.message ?? '');
        },
        { timeoutMs: 60_000, message: 'plan pruned Valid=False naming /spec/notInSchema' },
      );
      expect((await w!.client.list(MachineUpdates, w!.ns)).items.filter((m) => (m['spec'] as Obj)['planName'] === 'pruned')).to.deep.equal(
        [],
      );
      await waitFor(async () => (await labelledMachines()).length === 0, {
        timeoutMs: 30_000,
        message: 'no machine labelled after the plan',
      });
      for (const m of machines) {
        const now = await w!.client.get(Machines, w!.ns, m.metadata.name!);
        expect(JSON.stringify(now?.['spec']), `Machine ${m.metadata.name} spec`).to.equal(specs.get(m.metadata.name!));
        expect(
          (await w!.client.get(DevMachines, w!.ns, m.metadata.name!))?.metadata.resourceVersion,
          `DevMachine ${m.metadata.name}`,
        ).to.equal(infra.get(m.metadata.name!));
      }
    });
  });
});
