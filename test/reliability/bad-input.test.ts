// Bad-input suite: more than 50 malformed plans, tasks and MachineUpdates (schema violations, wrong types, wrong
// references, impossible sequences, huge objects, illegal transitions) while the whole platform runs. Each must get a
// clear error — an API 4xx Status naming the problem, or Valid=False listing it — and none may write to a CAPI object
// (resourceVersions and content compared). The controllers keep running: a valid plan then completes.
// The fail-closed families (write policy, values the target schema rejects or prunes, upgrade rules, uncovered
// changes) are refused before any machine starts, and `inplace preview` agrees with the controller on each of them.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  API_VERSION,
  InPlaceUpdatePlans,
  Labels,
  MachineDeployments,
  MachineHealthChecks,
  MachineSets,
  MachineUpdates,
  Machines,
  Clusters,
  KubeadmControlPlanes,
  KubeadmConfigs,
  DevMachines,
  Namespaces,
  OSImageUpdateTaskTemplates,
  SAMPLES_GROUP,
  UpdaterUpdateTasks,
  apiVersionOf,
  type KubeObject,
  type ResourceType,
} from '../../src/api/index.js';
import { DevMachineTemplates, KubeadmConfigTemplates, buildInventory } from '../../tools/capi-sim/index.js';
import { KubeApiError } from '../../src/runtime/index.js';
import { applyFleet, fleetPlan } from '../../bench/lib/fleet.js';
import { waitFor } from '../support/wait.js';
import { cli } from '../support/cli.js';
import {
  machinesBefore,
  platformSpecs,
  report,
  settledInvariants,
  startProcs,
  startWorld,
  stopWorld,
  waitPlan,
  type World,
} from './harness.js';
import { waitPlanInvalid } from '../support/plans.js';

type Obj = Record<string, unknown>;
const clone = <T>(x: T): T => structuredClone(x);

/** How a case must fail. */
type Outcome =
  /** The API server refuses it with a 4xx Status whose message matches. */
  | { kind: 'rejected'; mention: RegExp }
  /** Accepted, then the plan controller sets Valid=False with a message that matches, and starts nothing. */
  | { kind: 'invalid'; mention: RegExp }
  /** Either of the above (e.g. a value a real API server may already refuse for its size or nullness). */
  | { kind: 'refused'; mention: RegExp }
  /** Accepted and Valid=True (an opt-in case); the plan is paused, so nothing starts either. */
  | { kind: 'valid' };

interface Case {
  name: string;
  res: ResourceType;
  /** The object to create, or an action that writes and returns nothing / throws. */
  obj?: Obj;
  write?: (w: World) => Promise<unknown>;
  outcome: Outcome;
  /** Also previewed with `inplace preview`: its verdict must match the controller's Valid. */
  preview?: boolean;
}

const updater = (o: Obj = {}): Obj => ({
  name: 'ref',
  sequence: 1,
  responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.9' }],
  parameters: { durationSeconds: 0 },
  ...o,
});
const validSpec = (): Obj => ({
  clusterName: 'c1',
  controlPlane: { name: 'c1-cp', sequence: 1, updaters: [updater()] },
  machineDeployments: [
    { name: 'c1-md-0', sequence: 2, updaters: [updater()] },
    { name: 'c1-md-1', sequence: 2, updaters: [updater()] },
  ],
});
let seq = 0;
const plan = (spec: Obj | undefined, meta: Obj = {}): Obj => ({
  apiVersion: API_VERSION,
  kind: 'InPlaceUpdatePlan',
  metadata: { name: `bad-${++seq}`, ...meta },
  ...(spec === undefined ? {} : { spec }),
});
/** A valid spec with `mutate` applied to a copy. */
const specWith = (
  mutate: (s: Obj & { controlPlane: Obj & { updaters: Obj[] }; machineDeployments: (Obj & { updaters: Obj[] })[] }) => void,
): Obj => {
  const s = clone(validSpec()) as Parameters<typeof mutate>[0];
  mutate(s);
  return s;
};
const cpUpdater = (u: Obj): Obj => specWith((s) => (s.controlPlane.updaters = [updater(u)]));
const cpResp = (r: Obj): Obj => cpUpdater({ responsibilities: [r] });
const rejected = (mention: RegExp): Outcome => ({ kind: 'rejected', mention });
const invalid = (mention: RegExp): Outcome => ({ kind: 'invalid', mention });
const tmplRef = (o: Obj): Obj => ({
  apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
  kind: OSImageUpdateTaskTemplates.kind,
  name: 'os-image',
  ...o,
});

function planCases(): Case[] {
  const P = InPlaceUpdatePlans;
  const c = (name: string, obj: Obj, outcome: Outcome): Case => ({ name, res: P, obj, outcome });
  return [
    // Schema violations and wrong types: the API server's structural schema, enums, formats and CEL rules.
    c('no spec at all', plan(undefined), rejected(/spec/)),
    c('spec.clusterName missing', plan(specWith((s) => delete s['clusterName'])), rejected(/clusterName/)),
    c('spec.clusterName is a number', plan(specWith((s) => (s['clusterName'] = 42))), rejected(/clusterName/)),
    c('spec.clusterName is empty', plan(specWith((s) => (s['clusterName'] = ''))), rejected(/clusterName/)),
    c('spec.clusterName longer than 253', plan(specWith((s) => (s['clusterName'] = 'c'.repeat(300)))), rejected(/clusterName/)),
    c('spec.updatePhase not in the enum', plan(specWith((s) => (s['updatePhase'] = 'sideways'))), rejected(/updatePhase/)),
    c('spec.updatePhase is a number', plan(specWith((s) => (s['updatePhase'] = 5))), rejected(/updatePhase/)),
    c('spec.paused is a string', plan(specWith((s) => (s['paused'] = 'yes'))), rejected(/paused/)),
    c('spec.failurePolicy not in the enum', plan(specWith((s) => (s['failurePolicy'] = 'Sometimes'))), rejected(/failurePolicy/)),
    c('spec.controlPlane is a string', plan(specWith((s) => ((s as Obj)['controlPlane'] = 'c1-cp'))), rejected(/controlPlane/)),
    c('controlPlane without name', plan(specWith((s) => delete s.controlPlane['name'])), rejected(/controlPlane\.name|name/)),
    c('controlPlane without updaters', plan(specWith((s) => delete (s.controlPlane as Obj)['updaters'])), rejected(/updaters/)),
    c('controlPlane.sequence 0', plan(specWith((s) => (s.controlPlane['sequence'] = 0))), rejected(/sequence/)),
    c('controlPlane.sequence 1001', plan(specWith((s) => (s.controlPlane['sequence'] = 1001))), rejected(/sequence/)),
    c('controlPlane.sequence is a string', plan(specWith((s) => (s.controlPlane['sequence'] = '1'))), rejected(/sequence/)),
    c('controlPlane.sequence is fractional', plan(specWith((s) => (s.controlPlane['sequence'] = 1.5))), rejected(/sequence/)),
    c('updaters empty', plan(specWith((s) => (s.controlPlane.updaters = []))), rejected(/updaters/)),
    c(
      '33 updaters (max 32)',
      plan(
        specWith(
          (s) =>
            (s.controlPlane.updaters = Array.from({ length: 33 }, (_, i) =>
              updater({ name: `u${i}`, responsibilities: [{ selectResource: 'Machine', path: `/metadata/labels/u${i}`, value: 'x' }] }),
            )),
        ),
      ),
      rejected(/updaters/),
    ),
    c('updater name with upper case and underscore', plan(cpUpdater({ name: 'Bad_Name' })), rejected(/name/)),
    c('updater name longer than 63', plan(cpUpdater({ name: 'u'.repeat(64) })), rejected(/name/)),
    c(
      'two updaters with the same name (list map key)',
      plan(
        specWith(
          (s) =>
            (s.controlPlane.updaters = [
              updater(),
              updater({ responsibilities: [{ selectResource: 'Machine', path: '/metadata/labels/x', value: 'y' }] }),
            ]),
        ),
      ),
      rejected(/[Dd]uplicate|ref/),
    ),
    c(
      'updater without responsibilities',
      plan(specWith((s) => delete (s.controlPlane.updaters[0] as Obj)['responsibilities'])),
      rejected(/responsibilities/),
    ),
    c('responsibilities empty', plan(cpUpdater({ responsibilities: [] })), rejected(/responsibilities/)),
    c('updater.sequence negative', plan(cpUpdater({ sequence: -1 })), rejected(/sequence/)),
    c(
      'selectResource Node (not selectable)',
      plan(cpResp({ selectResource: 'Node', path: '/spec/version', value: 'x' })),
      rejected(/selectResource/),
    ),
    c('path not a JSON pointer', plan(cpResp({ selectResource: 'Machine', path: 'spec/version', value: 'x' })), rejected(/path/)),
    c('path is the root "/"', plan(cpResp({ selectResource: 'Machine', path: '/', value: 'x' })), rejected(/path/)),
    c('path is a number', plan(cpResp({ selectResource: 'Machine', path: 42, value: 'x' })), rejected(/path/)),
    c('responsibility without value', plan(cpResp({ selectResource: 'Machine', path: '/spec/version' })), rejected(/value/)),
    c(
      'template kind not ending in Template',
      plan(cpUpdater({ updaterUpdateTemplateRef: tmplRef({ kind: 'OSImageUpdateTask' }) })),
      rejected(/kind/),
    ),
    c(
      'template ref without name',
      plan(
        cpUpdater({
          updaterUpdateTemplateRef: { apiVersion: apiVersionOf(OSImageUpdateTaskTemplates), kind: 'OSImageUpdateTaskTemplate' },
        }),
      ),
      rejected(/name/),
    ),
    c(
      'template ref with empty apiVersion',
      plan(cpUpdater({ updaterUpdateTemplateRef: tmplRef({ apiVersion: '' }) })),
      rejected(/apiVersion/),
    ),
    c('parameters is a string', plan(cpUpdater({ parameters: 'fast' })), rejected(/parameters/)),
    c(
      'machineDeployments is an object',
      plan(specWith((s) => ((s as Obj)['machineDeployments'] = { name: 'c1-md-0' }))),
      rejected(/machineDeployments/),
    ),
    c(
      'the same MachineDeployment twice (list map key)',
      plan(specWith((s) => s.machineDeployments.push(clone(s.machineDeployments[0]!)))),
      rejected(/[Dd]uplicate|machineDeployments/),
    ),
    c('MachineDeployment without sequence', plan(specWith((s) => delete s.machineDeployments[0]!['sequence'])), rejected(/sequence/)),
    c(
      '501 MachineDeployments (max 500)',
      plan(
        specWith(
          (s) => (s.machineDeployments = Array.from({ length: 501 }, (_, i) => ({ name: `md-${i}`, sequence: 2, updaters: [updater()] }))),
        ),
      ),
      rejected(/machineDeployments/),
    ),
    c(
      'neither control plane nor MachineDeployments',
      plan({ clusterName: 'c1' }),
      rejected(/controlPlane or at least one machineDeployment/),
    ),
    c(
      'empty MachineDeployments and no control plane',
      plan({ clusterName: 'c1', machineDeployments: [] }),
      rejected(/controlPlane or at least one machineDeployment/),
    ),
    // Impossible sequences: the control plane must come before every MachineDeployment (version skew).
    c(
      'control plane and MachineDeployments in the same sequence',
      plan(specWith((s) => (s.controlPlane['sequence'] = 2))),
      rejected(/sequence/),
    ),
    c('control plane after the MachineDeployments', plan(specWith((s) => (s.controlPlane['sequence'] = 3))), rejected(/sequence/)),
    c(
      'one MachineDeployment before the control plane',
      plan(
        specWith((s) => {
          s.controlPlane['sequence'] = 2;
          s.machineDeployments[0]!['sequence'] = 1;
          s.machineDeployments[1]!['sequence'] = 5;
        }),
      ),
      rejected(/sequence/),
    ),
    c('metadata.name not a DNS subdomain', plan(validSpec(), { name: 'Bad Name!' }), rejected(/name/)),
    // Huge objects: larger than the request body limit, and a value too large for the schema's limits.
    c(
      'a 4 MiB responsibility value (request too large)',
      plan(cpResp({ selectResource: 'Machine', path: '/metadata/annotations/blob', value: 'x'.repeat(4 * 1024 * 1024) })),
      rejected(/too large|[Ll]imit|413/),
    ),
    c(
      'a 2 KiB path (maxLength 1024)',
      plan(cpResp({ selectResource: 'Machine', path: `/spec/${'p'.repeat(2048)}`, value: 'x' })),
      rejected(/path/),
    ),
    // Wrong references and semantic problems only the controller can see: Valid=False listing the problem.
    c('cluster does not exist', plan(specWith((s) => (s['clusterName'] = 'ghost'))), invalid(/Cluster .*ghost not found/)),
    c('control plane does not exist', plan(specWith((s) => (s.controlPlane['name'] = 'c1-cp-nope'))), invalid(/c1-cp-nope/)),
    c('control plane of another cluster', plan(specWith((s) => (s.controlPlane['name'] = 'c2-cp'))), invalid(/c2-cp/)),
    c(
      'MachineDeployment does not exist',
      plan(specWith((s) => (s.machineDeployments[1]!['name'] = 'c1-md-9'))),
      invalid(/c1-md-9 not found/),
    ),
    c(
      'MachineDeployment of another cluster',
      plan(specWith((s) => (s.machineDeployments[1]!['name'] = 'c2-md-0'))),
      invalid(/c2-md-0 belongs to Cluster c2/),
    ),
    c(
      'MachineDeployment with the OnDelete strategy',
      plan({ clusterName: 'c2', machineDeployments: [{ name: 'c2-md-ondelete', sequence: 2, updaters: [updater()] }] }),
      invalid(/OnDelete/),
    ),
    c('template does not exist', plan(cpUpdater({ updaterUpdateTemplateRef: tmplRef({ name: 'nope' }) })), invalid(/nope not found/)),
    c(
      'template only in another namespace',
      plan(cpUpdater({ updaterUpdateTemplateRef: tmplRef({ name: 'elsewhere' }) })),
      invalid(/elsewhere not found/),
    ),
    c(
      'template ref written as namespace/name',
      plan(cpUpdater({ updaterUpdateTemplateRef: tmplRef({ name: 'other/elsewhere' }) })),
      invalid(/cross-namespace|elsewhere/),
    ),
    c(
      'template kind not served by the API server',
      plan(cpUpdater({ updaterUpdateTemplateRef: { apiVersion: 'example.com/v1', kind: 'FooTemplate', name: 'foo' } })),
      invalid(/FooTemplate/),
    ),
    c(
      'path into status (not writable)',
      plan(cpResp({ selectResource: 'Machine', path: '/status/phase', value: 'Running' })),
      invalid(/not writable/),
    ),
    c(
      'path is metadata.name (identity)',
      plan(cpResp({ selectResource: 'InfraMachine', path: '/metadata/name', value: 'x' })),
      invalid(/not writable/),
    ),
    c(
      'two updaters own the same field',
      plan(specWith((s) => (s.controlPlane.updaters = [updater(), updater({ name: 'other', sequence: 2 })]))),
      invalid(/overlaps/),
    ),
    c(
      'one updater owns a field and a field inside it',
      plan(
        cpUpdater({
          responsibilities: [
            { selectResource: 'InfraMachine', path: '/spec/backend', value: {} },
            { selectResource: 'InfraMachine', path: '/spec/backend/docker', value: {} },
          ],
        }),
      ),
      invalid(/overlap/),
    ),
  ];
}

/** Fail closed: the write policy, values the target schema rejects or prunes, upgrade rules, uncovered changes. */
function failClosedCases(): Case[] {
  const P = InPlaceUpdatePlans;
  const c = (name: string, obj: Obj, outcome: Outcome): Case => ({ name, res: P, obj, outcome, preview: true });
  const resp = (selectResource: string, path: string, value: unknown): Obj => cpResp({ selectResource, path, value });
  const version = (value: unknown): Obj => resp('Machine', '/spec/version', value);
  const notWritable = (what: string): Outcome => invalid(new RegExp(`${what.replace(/[/.~]/g, (x) => `\\${x}`)} is not writable`));
  // c2's workers: their owner's infrastructure template drifted (see before()), and no updater below covers it.
  const c2Workers = (o: Obj = {}): Obj =>
    plan({
      clusterName: 'c2',
      paused: true,
      machineDeployments: [
        {
          name: 'c2-md-0',
          sequence: 2,
          updaters: [updater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.0' }] })],
        },
      ],
      ...o,
    });
  return [
    // Identity and wiring: never writable, whatever the policy.
    c('writes Machine /spec/providerID', plan(resp('Machine', '/spec/providerID', 'docker:///x')), notWritable('Machine /spec/providerID')),
    c('writes Machine /spec/clusterName', plan(resp('Machine', '/spec/clusterName', 'c2')), notWritable('Machine /spec/clusterName')),
    c(
      'writes Machine /spec/infrastructureRef/name',
      plan(resp('Machine', '/spec/infrastructureRef/name', 'other')),
      notWritable('Machine /spec/infrastructureRef/name'),
    ),
    c(
      'writes Machine /spec/bootstrap/configRef/name',
      plan(resp('Machine', '/spec/bootstrap/configRef/name', 'other')),
      notWritable('Machine /spec/bootstrap/configRef/name'),
    ),
    c(
      'writes Machine /spec/bootstrap/dataSecretName',
      plan(resp('Machine', '/spec/bootstrap/dataSecretName', 'stolen')),
      notWritable('Machine /spec/bootstrap/dataSecretName'),
    ),
    c(
      'writes Machine /spec/failureDomain (not allowed by name)',
      plan(resp('Machine', '/spec/failureDomain', 'fd-2')),
      invalid(/\/spec\/failureDomain is writable only when the write policy allows it by name/),
    ),
    c(
      'writes InfraMachine /spec/providerID',
      plan(resp('InfraMachine', '/spec/providerID', 'x')),
      notWritable('InfraMachine /spec/providerID'),
    ),
    c(
      'writes InfraMachine /status/ready',
      plan(resp('InfraMachine', '/status/ready', true)),
      invalid(/status is written by the object's own controller/),
    ),
    c('writes Machine /metadata/name', plan(resp('Machine', '/metadata/name', 'renamed')), invalid(/metadata is never writable/)),
    c('writes Machine /kind', plan(resp('Machine', '/kind', 'Pod')), invalid(/kind is never writable/)),
    c('replaces the whole Machine /spec', plan(resp('Machine', '/spec', { version: 'v1.30.9' })), invalid(/whole spec is never writable/)),
    c(
      'writes a label under the default policy',
      plan(resp('Machine', '/metadata/labels/team', 'a')),
      invalid(/labels are not writable unless the write policy allows the key/),
    ),
    c(
      'writes an annotation under the default policy',
      plan(resp('Machine', '/metadata/annotations/note', 'a')),
      invalid(/annotations are not writable unless the write policy allows the key/),
    ),
    c(
      "writes CAPI's remediate-machine annotation",
      plan(resp('Machine', '/metadata/annotations/cluster.x-k8s.io~1remediate-machine', '')),
      invalid(/reserved prefix/),
    ),
    // Values the target schema rejects or prunes: found before any machine starts (validation, then the dry-run).
    c('a number for /spec/version', plan(version(130)), invalid(/130 breaks upgrade rule semver/)),
    c('"" for /spec/version', plan(version('')), invalid(/"" breaks upgrade rule semver/)),
    c('null for /spec/version', plan(version(null)), { kind: 'refused', mention: /value|null/ }),
    c('an object for /spec/version', plan(version({ major: 1, minor: 30 })), invalid(/breaks upgrade rule semver/)),
    // Over the product's value limit but far under any API server's object limit, so every server stores it and the
    // answer is the product's (a 2.5 MiB value got 500 from a real kube-apiserver: etcd's request limit, issue 24).
    c(
      'a 100 KiB string for /spec/version (over the 64 KiB plan value limit)',
      plan(version(`v1.30.${'9'.repeat(100 * 1024)}`)),
      invalid(/\/spec\/version has a 101 KiB value, more than the 64 KiB a plan value may have/),
    ),
    c('Machine /spec/notAField (pruned)', plan(resp('Machine', '/spec/notAField', 'x')), invalid(/notAField/)),
    c(
      'InfraMachine /spec/notAField (pruned, found by the dry-run)',
      plan(resp('InfraMachine', '/spec/notAField', 'x')),
      invalid(/\/spec\/notAField (would not be kept|cannot be committed)/),
    ),
    c('Machine /spec/version/x (through a string)', plan(resp('Machine', '/spec/version/x', 'y')), invalid(/\/spec\/version is a string/)),
    c(
      'Machine /spec/readinessGates/5 (index out of range)',
      plan(resp('Machine', '/spec/readinessGates/5', { conditionType: 'X' })),
      invalid(/readinessGates/),
    ),
    c(
      'Machine /spec/minReadySeconds as a string (the server rejects it)',
      plan(resp('Machine', '/spec/minReadySeconds', 'soon')),
      invalid(/Machine \/spec\/minReadySeconds (on Machine .*HTTP 4|would not be kept)/),
    ),
    // Upgrade rules (the world runs v1.30.0).
    c('a downgrade', plan(version('v1.29.9')), invalid(/upgrade rule no-downgrade/)),
    c('a skipped minor', plan(version('v1.32.0')), invalid(/upgrade rule no-skipped-minor/)),
    c(
      'workers ahead of the control plane',
      plan(
        specWith((s) => {
          s.machineDeployments[0]!.updaters = [
            updater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] }),
          ];
        }),
      ),
      invalid(/upgrade rule workers-not-ahead-of-control-plane/),
    ),
    // Uncovered changes: refused unless the plan accepts them.
    c(
      'an uncovered change without the opt-in',
      c2Workers(),
      invalid(/InfraMachine \/spec\/backend\/docker\/customImage is uncovered on 1 machine/),
    ),
    c('an uncovered change with acceptUncoveredChanges (valid, paused)', c2Workers({ acceptUncoveredChanges: true }), { kind: 'valid' }),
  ];
}

/** Writes that change existing objects in forbidden ways (the CRDs' transition rules). */
function transitionCases(): Case[] {
  const P = InPlaceUpdatePlans;
  const patchPlan = (body: Obj) => (w: World) => w.client.patch(P, w.ns, 'bad-target', body, { type: 'merge' });
  const patchTask =
    (body: Obj, status = false) =>
    (w: World) =>
      w.client.patch(UpdaterUpdateTasks, w.ns, 'rogue-task', body, {
        type: 'merge',
        ...(status ? { subresource: 'status' as const } : {}),
      });
  return [
    {
      name: 'plan: change clusterName after creation',
      res: P,
      write: patchPlan({ spec: { clusterName: 'c2' } }),
      outcome: rejected(/immutable/),
    },
    {
      name: 'plan: change the control plane after creation',
      res: P,
      write: patchPlan({ spec: { controlPlane: { name: 'c1-cp', sequence: 1, updaters: [updater({ name: 'changed' })] } } }),
      outcome: rejected(/immutable/),
    },
    {
      name: 'plan: change failurePolicy after creation',
      res: P,
      write: patchPlan({ spec: { failurePolicy: 'Continue' } }),
      outcome: rejected(/immutable/),
    },
    {
      name: 'plan: updatePhase back from aborting to updating',
      res: P,
      write: async (w) => {
        await w.client.patch(P, w.ns, 'bad-target', { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
        return w.client.patch(P, w.ns, 'bad-target', { spec: { updatePhase: 'updating' } }, { type: 'merge' });
      },
      outcome: rejected(/updating to aborting/),
    },
    {
      name: 'task: change machineRef after creation',
      res: UpdaterUpdateTasks,
      write: patchTask({ spec: { machineRef: { name: 'other' } } }),
      outcome: rejected(/immutable/),
    },
    {
      name: 'task: change updaterName after creation',
      res: UpdaterUpdateTasks,
      write: patchTask({ spec: { updaterName: 'other' } }),
      outcome: rejected(/immutable/),
    },
    {
      name: 'task: status.updateStatus not in the enum',
      res: UpdaterUpdateTasks,
      write: patchTask({ status: { updateStatus: 'done' } }, true),
      outcome: rejected(/updateStatus/),
    },
    {
      name: 'task: a condition with an invalid reason',
      res: UpdaterUpdateTasks,
      write: patchTask(
        {
          status: { conditions: [{ type: 'Ready', status: 'True', reason: 'not a reason!', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
        },
        true,
      ),
      outcome: rejected(/reason/),
    },
    {
      name: 'task: a condition with a status outside True/False/Unknown',
      res: UpdaterUpdateTasks,
      write: patchTask(
        { status: { conditions: [{ type: 'Ready', status: 'Maybe', reason: 'R', lastTransitionTime: '2026-01-01T00:00:00Z' }] } },
        true,
      ),
      outcome: rejected(/status/),
    },
  ];
}

const task = (name: string, spec: Obj | undefined, labels: Record<string, string> = {}): Obj => ({
  apiVersion: API_VERSION,
  kind: UpdaterUpdateTasks.kind,
  metadata: { name, labels },
  ...(spec === undefined ? {} : { spec }),
});
const taskSpec = (o: Obj = {}): Obj => ({
  updaterName: 'ref',
  machineRef: { name: 'some-machine' },
  responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v9.9.9' }],
  ...o,
});

function taskCases(): Case[] {
  const T = UpdaterUpdateTasks;
  const c = (name: string, obj: Obj, outcome: Outcome): Case => ({ name, res: T, obj, outcome });
  const mu = (name: string, spec: Obj | undefined): Obj => ({
    apiVersion: API_VERSION,
    kind: MachineUpdates.kind,
    metadata: { name },
    ...(spec === undefined ? {} : { spec }),
  });
  return [
    c('task without spec', task('t-nospec', undefined), rejected(/spec/)),
    c('task without updaterName', task('t-noname', { machineRef: { name: 'm' } }), rejected(/updaterName/)),
    c('task without machineRef', task('t-noref', { updaterName: 'ref' }), rejected(/machineRef/)),
    c('task with an invalid updaterName', task('t-badname', taskSpec({ updaterName: 'Bad Name' })), rejected(/updaterName/)),
    c('task with updatePhase not in the enum', task('t-phase', taskSpec({ updatePhase: 'paused' })), rejected(/updatePhase/)),
    c(
      'task selecting a Pod',
      task('t-pod', taskSpec({ responsibilities: [{ selectResource: 'Pod', path: '/spec', value: 1 }] })),
      rejected(/selectResource/),
    ),
    c(
      'task with a relative path',
      task('t-path', taskSpec({ responsibilities: [{ selectResource: 'Machine', path: 'version', value: 1 }] })),
      rejected(/path/),
    ),
    c('task machineRef is a string', task('t-refstr', taskSpec({ machineRef: 'm1' })), rejected(/machineRef/)),
    { name: 'MachineUpdate without spec', res: MachineUpdates, obj: mu('mu-nospec', undefined), outcome: rejected(/spec/) },
    {
      name: 'MachineUpdate with a wrong target kind',
      res: MachineUpdates,
      obj: mu('mu-kind', {
        planName: 'p',
        clusterName: 'c1',
        target: { kind: 'Pod', name: 'x' },
        machineRef: { name: 'm' },
        updatePhase: 'updating',
        updaters: [],
      }),
      outcome: rejected(/kind/),
    },
  ];
}

/** CAPI objects of the namespace by kind/name -> resourceVersion and a digest of their content (spec, labels, annotations). */
async function capiVersions(w: World): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const res of [
    Clusters,
    KubeadmControlPlanes,
    MachineDeployments,
    MachineSets,
    Machines,
    DevMachines,
    KubeadmConfigs,
    MachineHealthChecks,
    DevMachineTemplates,
    KubeadmConfigTemplates,
  ]) {
    for (const o of (await w.client.list(res, w.ns)).items) {
      const content = JSON.stringify([o['spec'], o.metadata.labels ?? {}, o.metadata.annotations ?? {}]);
      out.set(
        `${res.kind}/${o.metadata.name}`,
        `rv ${o.metadata.resourceVersion ?? ''} content ${createHash('sha256').update(content).digest('hex').slice(0, 16)}`,
      );
    }
  }
  return out;
}

describe('reliability: bad input (malformed plans, tasks and MachineUpdates)', function () {
  this.timeout(300_000);
  let w: World | undefined;
  let otherNs = '';
  let rvBefore = new Map<string, string>();
  const cases = [...planCases(), ...failClosedCases(), ...transitionCases(), ...taskCases()];
  const results = new Map<string, { error?: KubeApiError | Error; created?: KubeObject }>();

  before(async () => {
    w = await startWorld(
      { clusterName: 'c1', version: 'v1.30.0', workers: 6, mdSize: 3, maxUnavailable: 1, mhcTimeout: '30m' },
      'badinput',
    );
    // A second cluster (control plane + an OnDelete MachineDeployment) for the wrong-cluster references.
    await applyFleet(
      w.client,
      buildInventory({
        namespace: w.ns,
        clusterName: 'c2',
        version: 'v1.30.0',
        controlPlane: { name: 'c2-cp', replicas: 1 },
        machineDeployments: [
          { name: 'c2-md-0', replicas: 1 },
          { name: 'c2-md-ondelete', replicas: 1, strategy: 'OnDelete' },
        ],
      }),
    );
    // A template in the plan's namespace and one only in another namespace.
    otherNs = await w.env.newNamespace('badinput-other');
    const tmpl = (ns: string, name: string): KubeObject => ({
      apiVersion: `${SAMPLES_GROUP}/v1alpha1`,
      kind: OSImageUpdateTaskTemplates.kind,
      metadata: { name, namespace: ns },
      spec: { template: { spec: { image: 'ubuntu-24.04' } } },
    });
    await w.client.create(OSImageUpdateTaskTemplates, tmpl(w.ns, 'os-image'));
    await w.client.create(OSImageUpdateTaskTemplates, tmpl(otherNs, 'elsewhere'));
    const procs = startProcs(w, platformSpecs(w.env.kubeconfigPath, w.ns));
    await Promise.all(procs.map((p) => p.waitReady()));
    // Targets of the transition cases: a plan for a cluster that does not exist (touches nothing) and an orphan task.
    await w.client.create(InPlaceUpdatePlans, {
      ...plan(specWith((s) => (s['clusterName'] = 'ghost'))),
      metadata: { name: 'bad-target', namespace: w.ns },
    } as KubeObject);
    // The orphan task names a real machine and a new version: nothing may commit it (no MachineUpdate owns it).
    const real = w.fleet.objects.find((o) => o.kind === 'Machine' && o.metadata.labels?.[Labels.deploymentName])!.metadata.name!;
    await w.client.create(UpdaterUpdateTasks, {
      ...task('rogue-task', taskSpec({ machineRef: { name: real } })),
      metadata: {
        name: 'rogue-task',
        namespace: w.ns,
        labels: { [Labels.clusterName]: 'c1', [Labels.planName]: 'ghost-plan', [Labels.machineName]: real, [Labels.updaterName]: 'ref' },
      },
    } as KubeObject);
    // Drift for the uncovered-change cases: c2-md-0's owner wants another image than its machine has.
    await w.client.patch(
      DevMachineTemplates,
      w.ns,
      'c2-md-0',
      { spec: { template: { spec: { backend: { docker: { customImage: 'ubuntu-24.04-drifted' } } } } } },
      { type: 'merge' },
    );
    rvBefore = await capiVersions(w);

    await Promise.all(
      cases.map(async (c) => {
        try {
          if (c.write) await c.write(w!);
          else {
            const o = clone(c.obj!) as KubeObject;
            o.metadata = { ...o.metadata, namespace: w!.ns };
            results.set(c.name, { created: await w!.client.create(c.res, o) });
            return;
          }
          results.set(c.name, {});
        } catch (err) {
          results.set(c.name, { error: err as Error });
        }
      }),
    );
  });
  after(async () => stopWorld(w));

  it(`has at least 50 cases (${cases.length}), at least 25 of them fail-closed ones (${failClosedCases().length})`, () => {
    expect(cases.length).to.be.at.least(50);
    expect(failClosedCases().length).to.be.at.least(25);
  });

  const validCondition = async (name: string): Promise<{ status?: string; message?: string } | undefined> => {
    const p = await w!.client.get(InPlaceUpdatePlans, w!.ns, name);
    return ((p?.['status'] as Obj | undefined)?.['conditions'] as { type: string; status: string; message?: string }[] | undefined)?.find(
      (x) => x.type === 'Valid',
    );
  };

  for (const c of cases) {
    const o = c.outcome;
    if (o.kind === 'valid') {
      it(`${c.name}: Valid=True, nothing started`, async () => {
        const r = results.get(c.name)!;
        expect(r.error, r.error?.message).to.equal(undefined);
        const name = r.created!.metadata.name!;
        let msg = '';
        await waitFor(
          async () => {
            const v = await validCondition(name);
            msg = v?.message ?? '';
            return v?.status === 'True';
          },
          { timeoutMs: 30_000, intervalMs: 100, message: `Valid=True on plan ${name} (${c.name}); last message ${msg}` },
        );
        expect((await w!.client.list(MachineUpdates, w!.ns, { labelSelector: `${Labels.planName}=${name}` })).items).to.have.length(0);
      });
      continue;
    }
    if (o.kind === 'refused') {
      it(`${c.name}: rejected by the API server or Valid=False naming the problem, nothing started`, async () => {
        const r = results.get(c.name)!;
        if (r.error) {
          expect(r.error).to.be.instanceOf(KubeApiError);
          expect((r.error as KubeApiError).code, r.error.message).to.be.within(400, 422);
          expect(r.error.message.slice(0, 2000)).to.match(o.mention);
          return;
        }
        const name = r.created!.metadata.name!;
        let msg = '';
        await waitFor(
          async () => {
            const v = await validCondition(name);
            msg = v?.message ?? '';
            return v?.status === 'False';
          },
          { timeoutMs: 30_000, intervalMs: 100, message: `Valid=False on plan ${name} (${c.name})` },
        );
        expect(msg).to.match(o.mention);
        expect((await w!.client.list(MachineUpdates, w!.ns, { labelSelector: `${Labels.planName}=${name}` })).items).to.have.length(0);
      });
      continue;
    }
    if (o.kind === 'rejected') {
      it(`${c.name}: rejected by the API server with a 4xx naming the problem`, () => {
        const r = results.get(c.name)!;
        expect(r.error, `accepted: ${JSON.stringify(r.created?.['spec'])?.slice(0, 300)}`).to.be.instanceOf(KubeApiError);
        const e = r.error as KubeApiError;
        expect(e.code, e.message).to.be.within(400, 422);
        if (process.env['INPLACE_RELIABILITY_VERBOSE']) console.log(`        ${e.code} ${e.message.slice(0, 240)}`);
        expect((e.status?.message ?? e.message).slice(0, 2000)).to.match(o.mention);
      });
    } else {
      it(`${c.name}: Valid=False listing the problem, nothing started`, async () => {
        const r = results.get(c.name)!;
        expect(r.error, r.error?.message).to.equal(undefined);
        const name = r.created!.metadata.name!;
        const { message: msg } = await waitPlanInvalid(w!.client, w!.ns, name, 30_000, c.name);
        expect(msg).to.match(o.mention);
        const mus = (await w!.client.list(MachineUpdates, w!.ns, { labelSelector: `${Labels.planName}=${name}` })).items;
        expect(mus.map((m) => m.metadata.name)).to.deep.equal([]);
      });
    }
  }

  it('wrote nothing to any CAPI object (resourceVersions unchanged), and every controller process is still running', async () => {
    await new Promise((r) => setTimeout(r, 2000)); // give the controllers time to act on whatever they accepted
    const after = await capiVersions(w!);
    const changed = [...rvBefore].filter(([k, v]) => after.get(k) !== v).map(([k, v]) => `${k}: ${v} -> ${after.get(k) ?? 'gone'}`);
    expect(changed).to.deep.equal([]);
    // No task was created for any plan (the orphan task of the transition cases is the only one), nothing is labelled.
    expect((await w!.client.list(UpdaterUpdateTasks, w!.ns)).items.map((t) => t.metadata.name)).to.deep.equal(['rogue-task']);
    expect((await w!.client.list(MachineUpdates, w!.ns)).items.map((t) => t.metadata.name)).to.deep.equal([]);
    const labelled = (await w!.client.list(Machines, w!.ns)).items.filter(
      (m) =>
        m.metadata.labels?.[Labels.planName] !== undefined ||
        m.metadata.annotations?.['inplace.cluster.x-k8s.io/update-started-at'] !== undefined,
    );
    expect(labelled.map((m) => m.metadata.name)).to.deep.equal([]);
    expect(w!.procs.filter((p) => !p.running).map((p) => `${p.name}:\n${p.tail(10)}`)).to.deep.equal([]);
    // The other namespace was not touched either: nothing was created there.
    expect((await w!.client.list(UpdaterUpdateTasks, otherNs)).items).to.have.length(0);
    expect((await w!.client.get(Namespaces, undefined, otherNs))?.metadata.name).to.equal(otherNs);
  });

  // One validation: `inplace preview` on the same plan says NOT OK exactly when the controller says Valid=False.
  it('inplace preview agrees with the controller on every fail-closed case (NOT OK <=> Valid=False)', async () => {
    const disagreements: string[] = [];
    for (const c of cases.filter((x) => x.preview)) {
      const r = results.get(c.name)!;
      if (r.error || !r.created) continue; // refused by the API server: nothing to preview against
      const name = r.created.metadata.name!;
      const file = join(w!.logDir, `${name}.yaml`);
      writeFileSync(file, JSON.stringify({ ...clone(c.obj!), metadata: { name, namespace: w!.ns } }));
      const run = await cli('preview', '-f', file, '-o', 'json', '--kubeconfig', w!.env.kubeconfigPath);
      const v = await validCondition(name);
      const previewOk = run.code === 0;
      if (run.code !== 0 && run.code !== 1) disagreements.push(`${c.name}: preview exited ${run.code}: ${run.err.slice(0, 300)}`);
      else if (previewOk !== (v?.status === 'True'))
        disagreements.push(
          `${c.name}: preview ${previewOk ? 'OK' : 'NOT OK'} but Valid=${v?.status} (${v?.message?.slice(0, 200)}); preview problems ${JSON.stringify((JSON.parse(run.out || '{}') as { problems?: string[] }).problems)?.slice(0, 300)}`,
        );
    }
    expect(disagreements).to.deep.equal([]);
  });

  it('still runs a valid plan to completion afterwards', async () => {
    const before = await machinesBefore(w!.client, w!.ns);
    // Invalid plans of the same cluster never become active, so they must not block this one.
    const good = fleetPlan(w!.fleet, { name: 'good-after-bad', toVersion: 'v1.30.1', durationSeconds: 0 });
    await w!.client.create(InPlaceUpdatePlans, good);
    await waitPlan(w!, 'good-after-bad', ['updated'], 120_000);
    const c1Before = new Map([...before].filter(([name]) => name.startsWith('c1-')));
    const v = await settledInvariants(w!, {
      plan: 'good-after-bad',
      planStatuses: ['updated'],
      allUpdated: true,
      toVersion: 'v1.30.1',
      before: c1Before,
    });
    const onlyC1 = v.filter((x) => !/c2-/.test(x));
    expect(onlyC1, report(onlyC1)).to.deep.equal([]);
  });
});
