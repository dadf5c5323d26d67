// The conformance kit: runs an updater that is already running against the cluster through the contract's
// workflows — acting as the platform — and reports, per rule, pass/fail with evidence. See docs/contract.md.
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  CustomResourceDefinitions,
  Labels,
  UpdaterUpdateTasks,
  apiVersionOf,
  isTerminal,
  type KubeObject,
  type ResourceType,
  type Responsibility,
} from '../../api/index.js';
import { isNotFound } from '../../runtime/pure/errors.js';
import type { KubeClient } from '../../runtime/pure/types.js';
import {
  TASK_LABEL_KEYS,
  buildGenericTask,
  buildTaskFromTemplate,
  machineUpdateOwnerRef,
  taskGeneration,
  taskKindOfTemplate,
  taskLabels,
  taskReadyCondition,
  type Task,
  type TaskInputs,
} from '../accessors.js';
import { RULES, type RuleId } from '../rules.js';
import { crdName, taskKindProblem } from '../task-kinds.js';
import { RUN_LABEL, createScratch, defaultResponsibilities, deleteScratch, diffCapi, snapshotCapi, type Scratch } from './scratch.js';
import { responsibilitiesProblem, scenarioSpec, taskSpecProblem } from './specs.js';

/** Options of runConformance. */
export interface ConformanceOptions {
  client: KubeClient;
  /** Namespace to run in (scratch objects are created and deleted there). */
  namespace: string;
  /** The task kind the updater reconciles. */
  kind: ResourceType;
  /** The template kind (FooTemplate for task kind Foo): tasks are then built from a template, as the platform does. */
  template?: ResourceType;
  /** Generic kind: the updater name the updater serves (default `conformance`). */
  updaterName?: string;
  /** How long to wait for each expected status (default 30 s). */
  timeoutMs?: number;
  /** How long to watch for unwanted status changes after re-reconcile triggers (default 1.5 s). */
  settleMs?: number;
  /**
   * Spec fields of every scratch task: what a task this updater can do carries (for the generic kind e.g.
   * `parameters`; for a template kind the template's spec.template.spec; `responsibilities` too). The scenario specs
   * below are merged over it as JSON merge patches (RFC 7386). `updatePhase` (and for the generic kind `updaterName`)
   * is the kit's to set: runConformance throws when given.
   */
  taskSpec?: Record<string, unknown>;
  /**
   * Spec fields of a task the updater must fail — bad input by the contract's rule that a task an updater cannot do
   * ends `failed` saying why (C4, C6): a parameter out of its bounds, a responsibility it does not handle, a machine
   * that does not exist. The contract gives no way to force any updater to fail, so without it the failure scenario
   * is reported as not exercised (not failed).
   */
  failingTaskSpec?: Record<string, unknown>;
  /** Older name of failingTaskSpec. */
  failureSpec?: Record<string, unknown>;
  /**
   * Spec fields of a task that lasts long enough to be aborted or restarted mid-way, yet ends within the timeout (the
   * abort and restart scenarios). Without it those scenarios use the task spec; an update that finished before the
   * abort is still conforming (C4), and the report says that aborting mid-way was not exercised.
   */
  slowTaskSpec?: Record<string, unknown>;
  /** Older name of slowTaskSpec. */
  slowSpec?: Record<string, unknown>;
  /**
   * Responsibilities of the scratch tasks (default: Machine /spec/version and an InfraMachine image, see
   * defaultResponsibilities): give the ones the updater handles. Throws when taskSpec has responsibilities too.
   */
  responsibilities?: Responsibility[];
  /** Restarts the updater (stop + start); when given, the kit checks that a restart mid-update resumes (C7). */
  restart?: () => Promise<void>;
  /** Progress lines (e.g. console.error). */
  log?: (line: string) => void;
  /**
   * The field manager the updater under test writes task status with (an SDK updater: its name). When given, a status
   * written by any other manager (as the API server's managedFields record it) fails the run.
   */
  fieldManager?: string;
}

/** Outcome of one rule. */
export type RuleOutcome = 'pass' | 'fail' | 'skip' | 'n/a';

/** One row of the report. */
export interface RuleReport {
  id: RuleId;
  title: string;
  mandatory: boolean;
  result: RuleOutcome;
  evidence: string[];
}

/** Whether a scenario ran, and why not when it could not be exercised for this updater (not a failure). */
export interface ScenarioReport {
  name: 'normal update' | 'failure' | 'abort' | 'restart';
  result: 'run' | 'not exercised';
  /** What the scenario showed beyond the rules, or (a whole phrase) why it was not exercised and how to enable it. */
  note?: string;
}

/** What runConformance returns. */
export interface ConformanceReport {
  kind: string;
  template?: string;
  updaterName?: string;
  namespace: string;
  /** True when no mandatory rule failed and nothing below refuses the run. */
  passed: boolean;
  /**
   * Why the kit refuses to pass whatever the rules say: nothing reconciled its tasks, or someone other than the
   * updater under test did (a catch-all updater, a second updater of the kind). Empty when none.
   */
  refusals: string[];
  /** The field managers the API server recorded as writing the status of the kit's tasks, with how many tasks each. */
  statusWriters: Record<string, number>;
  /** The scenarios in the order they ran. */
  scenarios: ScenarioReport[];
  rules: RuleReport[];
  durationMs: number;
}

const POLL_MS = 50;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Collects evidence per rule. */
class Evidence {
  private readonly items = new Map<RuleId, { ok: boolean; text: string; note?: boolean }[]>();
  pass(id: RuleId, text: string): void {
    this.add(id, true, text);
  }
  /** Evidence that decides nothing (a scenario that could not run). */
  note(id: RuleId, text: string): void {
    this.add(id, true, text, true);
  }
  fail(id: RuleId, text: string): void {
    this.add(id, false, text);
  }
  check(id: RuleId, ok: boolean, passText: string, failText: string): boolean {
    this.add(id, ok, ok ? passText : failText);
    return ok;
  }
  private add(id: RuleId, ok: boolean, text: string, note = false): void {
    const list = this.items.get(id) ?? [];
    list.push({ ok, text, ...(note ? { note } : {}) });
    this.items.set(id, list);
  }
  report(): RuleReport[] {
    return RULES.map((r) => {
      const list = this.items.get(r.id) ?? [];
      const platformRule = r.id === 'C9' || r.id === 'C10';
      const result: RuleOutcome = platformRule ? 'n/a' : list.some((x) => !x.ok) ? 'fail' : list.some((x) => !x.note) ? 'pass' : 'skip';
      const order = [...list.filter((x) => !x.ok), ...list.filter((x) => x.ok && !x.note), ...list.filter((x) => x.note)];
      const evidence =
        r.id === 'C9'
          ? ['platform rule (task names are chosen by the platform); covered by the platform tests']
          : r.id === 'C10'
            ? ['registration rule (InPlaceUpdater objects, read by the runtime extension); covered by the runtime extension tests']
            : order.map((x) => `${x.note ? '-' : x.ok ? '✓' : '✗'} ${x.text}`);
      return { id: r.id, title: r.title, mandatory: r.mandatory, result, evidence };
    });
  }
}

const describeStatus = (t: Task | undefined): string => {
  if (!t) return 'task deleted';
  const st = t.status;
  if (!st?.updateStatus) return `no status (generation ${taskGeneration(t)})`;
  const ready = taskReadyCondition(t);
  return `${st.updateStatus} (observedGeneration ${st.observedGeneration ?? 'unset'} of ${taskGeneration(t)}${ready ? `, Ready=${ready.status} ${ready.reason}: ${ready.message ?? ''}` : ', no Ready condition'})`;
};

/** The field managers that wrote a task's status (managedFields entries of the status subresource or naming f:status). */
export function statusManagers(t: KubeObject): string[] {
  const entries = (t.metadata as { managedFields?: { manager?: string; subresource?: string; fieldsV1?: Record<string, unknown> }[] })
    .managedFields;
  const out = new Set<string>();
  for (const e of entries ?? []) {
    if (!e.manager) continue;
    if (e.subresource === 'status' || (e.fieldsV1 && 'f:status' in e.fieldsV1)) out.add(e.manager);
  }
  return [...out].sort();
}

/** The subset of a status compared for "nothing changed" (everything the updater writes). */
const statusOf = (t: Task | undefined): unknown => t?.status ?? null;

/** One run's settings and what it gathers; every scenario function below takes it. */
interface KitRun {
  opts: ConformanceOptions;
  client: KubeClient;
  namespace: string;
  kind: ResourceType;
  timeoutMs: number;
  settleMs: number;
  log: (line: string) => void;
  generic: boolean;
  updaterName: string;
  id: string;
  ev: Evidence;
  failingTaskSpec: Record<string, unknown> | undefined;
  slowTaskSpec: Record<string, unknown> | undefined;
  resps: Responsibility[];
  /** The responsibilities of a task without a scenario spec (the task spec's, else the option's or the default). */
  baseResps: Responsibility[];
  scenarios: ScenarioReport[];
  refusals: string[];
  /** Field manager → the tasks whose status it wrote. */
  writers: Map<string, Set<string>>;
  created: { res: ResourceType; name: string }[];
  scratch: Scratch;
  templateObj?: KubeObject;
  template?: { res: ResourceType; name: string };
}

/** The options checked before anything is created: a spec the kit would silently overwrite would test another task than the user's. */
function checkOptions(opts: ConformanceOptions, generic: boolean): void {
  const given: [string, Record<string, unknown> | undefined][] = [
    ['taskSpec', opts.taskSpec],
    ['failingTaskSpec', opts.failingTaskSpec ?? opts.failureSpec],
    ['slowTaskSpec', opts.slowTaskSpec ?? opts.slowSpec],
  ];
  for (const [what, spec] of given) {
    const problem = spec === undefined ? undefined : taskSpecProblem(what, spec, generic);
    if (problem) throw new Error(problem);
  }
  if (opts.responsibilities) {
    const problem = responsibilitiesProblem(opts.responsibilities);
    if (problem) throw new Error(`responsibilities: ${problem}`);
    if (opts.taskSpec && 'responsibilities' in opts.taskSpec)
      throw new Error('responsibilities are given twice (the responsibilities option and taskSpec.responsibilities): give them once');
  }
}

/** C3 for the kind itself: the template creates it, and a custom kind's CRD declares the contract. */
async function checkTaskKind(opts: ConformanceOptions, generic: boolean, ev: Evidence): Promise<void> {
  const { client, kind } = opts;
  if (opts.template) {
    try {
      const expected = taskKindOfTemplate(opts.template.kind);
      ev.check(
        'C3',
        expected === kind.kind,
        `template kind ${opts.template.kind} creates ${kind.kind}`,
        `template kind ${opts.template.kind} would create ${expected}, not ${kind.kind}`,
      );
    } catch (err) {
      ev.fail('C3', (err as Error).message);
    }
  }
  if (generic) return;
  // The platform creates tasks only of kinds whose CRD declares the contract (docs/contract.md, custom task kinds).
  let crd: KubeObject | undefined;
  let unreadable: string | undefined;
  try {
    crd = await client.get(CustomResourceDefinitions, undefined, crdName(kind.plural, kind.group));
  } catch (err) {
    unreadable = err instanceof Error ? err.message : String(err);
  }
  if (unreadable) ev.note('C3', `could not read the CRD of ${kind.kind} to check its updater-contract label: ${unreadable}`);
  else {
    const problem = taskKindProblem(kind.group, kind.kind, crd);
    ev.check('C3', !problem, `task kind ${kind.kind}: its CRD declares the updater contract`, problem ?? '');
  }
}

/** Creates the scratch objects (and the template) and returns the run. */
async function startRun(opts: ConformanceOptions, generic: boolean, ev: Evidence): Promise<KitRun> {
  const { client, namespace, kind } = opts;
  const updaterName = opts.updaterName ?? 'conformance';
  const id = randomBytes(3).toString('hex');
  const resps = opts.responsibilities ?? defaultResponsibilities();
  const baseResps = scenarioSpec(opts.taskSpec, undefined, resps).responsibilities;
  const log = opts.log ?? (() => undefined);
  log(`conformance ${id}: ${kind.kind}${generic ? ` (updater name ${updaterName})` : ''} in ${namespace}`);
  const scratch = await createScratch(client, namespace, id, updaterName, baseResps);
  const c: KitRun = {
    ...{ opts, client, namespace, kind, log, generic, updaterName, id, ev, resps, baseResps, scratch },
    timeoutMs: opts.timeoutMs ?? 30_000,
    settleMs: opts.settleMs ?? 1_500,
    failingTaskSpec: opts.failingTaskSpec ?? opts.failureSpec,
    slowTaskSpec: opts.slowTaskSpec ?? opts.slowSpec,
    ...{ scenarios: [], refusals: [], writers: new Map(), created: [] },
  };
  if (opts.template) {
    c.templateObj = await client.create(opts.template, {
      apiVersion: apiVersionOf(opts.template),
      kind: opts.template.kind,
      metadata: { name: `cf-${id}`, namespace, labels: { [RUN_LABEL]: id } },
      // The task spec minus responsibilities: the platform sets those over the template's fields (C3).
      spec: { template: { spec: scenarioSpec(opts.taskSpec, undefined, resps).spec } },
    });
    c.template = { res: opts.template, name: c.templateObj.metadata.name! };
  }
  return c;
}

/**
 * Creates a scratch task as the platform would: the task spec with the scenario's spec merged over it, and the
 * contract fields (C1-C3) set over both — but a machineRef the user gave (a task naming a machine that does not
 * exist is one an updater must fail).
 */
async function createTask(
  c: KitRun,
  scenario: string,
  extra: Record<string, unknown> | undefined,
  taskName = `cf-${c.id}-${scenario}`,
  taskUpdater = c.updaterName,
): Promise<Task> {
  const { kind, namespace, scratch, generic, templateObj } = c;
  const name = taskName;
  const { spec: userSpec, responsibilities } = scenarioSpec(c.opts.taskSpec, extra, c.resps);
  const inputs: TaskInputs = {
    name,
    namespace,
    labels: {
      ...taskLabels({ cluster: scratch.cluster, plan: 'conformance', machine: scratch.machine, updater: taskUpdater }),
      [RUN_LABEL]: c.id,
    },
    owner: machineUpdateOwnerRef(scratch.machineUpdate),
    updatePhase: 'updating',
    machineName: scratch.machine,
    responsibilities,
  };
  let task: Task = generic
    ? buildGenericTask({ ...inputs, updaterName: taskUpdater })
    : templateObj
      ? buildTaskFromTemplate(templateObj, inputs)
      : {
          apiVersion: apiVersionOf(kind),
          kind: kind.kind,
          metadata: { name, namespace, labels: inputs.labels, ownerReferences: [inputs.owner] },
          spec: { updatePhase: inputs.updatePhase, machineRef: { name: scratch.machine }, responsibilities },
        };
  task.apiVersion = apiVersionOf(kind);
  const { updaterName: un, updatePhase, machineRef, responsibilities: rs } = task.spec as Task['spec'] & { updaterName?: string };
  task.spec = {
    ...userSpec,
    ...(un === undefined ? {} : { updaterName: un }),
    updatePhase,
    machineRef: (userSpec['machineRef'] as Task['spec']['machineRef'] | undefined) ?? machineRef,
    responsibilities: rs,
  };
  task = await c.client.create<Task>(kind, task);
  c.created.push({ res: kind, name });
  c.log(`  created ${kind.kind} ${name}`);
  return task;
}

/** Reads a task, recording who wrote its status. */
async function getTask(c: KitRun, name: string): Promise<Task | undefined> {
  const t = await c.client.get<Task>(c.kind, c.namespace, name);
  for (const m of t ? statusManagers(t) : []) c.writers.set(m, (c.writers.get(m) ?? new Set()).add(name));
  return t;
}

/** Polls until `pred` holds; returns the last task seen and whether it held. */
async function waitTask(
  c: KitRun,
  name: string,
  pred: (t: Task) => boolean,
  ms = c.timeoutMs,
): Promise<{ task: Task | undefined; ok: boolean }> {
  const deadline = Date.now() + ms;
  let t: Task | undefined;
  for (;;) {
    t = await getTask(c, name);
    if (t && pred(t)) return { task: t, ok: true };
    if (Date.now() >= deadline) return { task: t, ok: false };
    await sleep(POLL_MS);
  }
}

const answered =
  (gen: number) =>
  (t: Task): boolean =>
    (t.status?.observedGeneration ?? -1) >= gen;
const terminalAt =
  (gen: number) =>
  (t: Task): boolean =>
    answered(gen)(t) && isTerminal(t.status?.updateStatus);

/** Watches a task for `ms`; returns every status change seen (description and the new updateStatus). */
async function watchForChanges(
  c: KitRun,
  name: string,
  base: Task,
  ms: number,
): Promise<{ desc: string; updateStatus: string | undefined }[]> {
  const changes: { desc: string; updateStatus: string | undefined }[] = [];
  let last = statusOf(base);
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    await sleep(POLL_MS);
    const t = await getTask(c, name);
    const cur = statusOf(t);
    if (!isDeepStrictEqual(cur, last)) {
      changes.push({
        desc: `${describeStatus({ ...base, status: last as Task['status'] })} -> ${describeStatus(t)}`,
        updateStatus: t?.status?.updateStatus,
      });
      last = cur;
    }
  }
  return changes;
}

/**
 * Records why no terminal status answering `gen` came: a terminal status with a stale or missing
 * observedGeneration is a C5 violation, anything else (no status, still updating) a C4 one.
 */
function noAnswer(c: KitRun, scenario: string, t: Task | undefined, gen: number, after = ''): void {
  const terminalButStale = !!t && isTerminal(t.status?.updateStatus) && (t.status?.observedGeneration ?? -1) < gen;
  c.ev.fail(
    terminalButStale ? 'C5' : 'C4',
    terminalButStale
      ? `${scenario}: the status is ${t?.status?.updateStatus} but its observedGeneration ${t?.status?.observedGeneration ?? 'unset'} does not answer generation ${gen}, so the platform must ignore it`
      : `${scenario}: no terminal status answering generation ${gen} within ${c.timeoutMs / 1000}s${after}; last seen: ${describeStatus(t)}`,
  );
}

/** Checks that the updater kept the platform's fields (C1-C3) of a task. */
function checkPlatformFields(c: KitRun, scenario: string, createdTask: Task, now: Task | undefined, phase: 'updating' | 'aborting'): void {
  if (!now) return;
  const { ev } = c;
  const missing = TASK_LABEL_KEYS.filter((k) => now.metadata.labels?.[k] !== createdTask.metadata.labels?.[k]);
  const owner = now.metadata.ownerReferences?.find((r) => r.controller && r.uid === c.scratch.machineUpdate.metadata.uid);
  ev.check(
    'C1',
    missing.length === 0 && !!owner,
    `${scenario}: contract labels and controller ownerReference kept`,
    `${scenario}: ${missing.length ? `labels changed or removed: ${missing.join(', ')}` : ''}${!owner ? ' controller ownerReference to the MachineUpdate removed' : ''}`,
  );
  ev.check(
    'C2',
    (now.spec.updatePhase ?? 'updating') === phase,
    `${scenario}: spec.updatePhase left as the platform set it (${phase})`,
    `${scenario}: spec.updatePhase is ${now.spec.updatePhase}, the platform set ${phase}`,
  );
  const { updatePhase: _a, ...specNow } = now.spec;
  const { updatePhase: _b, ...specCreated } = createdTask.spec;
  ev.check(
    'C3',
    isDeepStrictEqual(specNow, specCreated),
    `${scenario}: spec (machineRef, responsibilities, template fields) unchanged`,
    `${scenario}: the updater changed the spec: ${JSON.stringify(specCreated)} -> ${JSON.stringify(specNow)}`,
  );
}

/** Checks Ready (C6) and observedGeneration (C5) of a task that answered generation `gen`. */
function checkReportFields(c: KitRun, scenario: string, t: Task, gen: number): void {
  const og = t.status?.observedGeneration;
  c.ev.check(
    'C5',
    og === gen,
    `${scenario}: observedGeneration ${og} answers generation ${gen}`,
    `${scenario}: observedGeneration ${og ?? 'unset'} while the status answers generation ${gen}${og !== undefined && og > gen ? ' (ahead of the object: never valid)' : ''}`,
  );
  const ready = taskReadyCondition(t);
  const st = t.status?.updateStatus;
  const wantTrue = st === 'updated';
  c.ev.check(
    'C6',
    !!ready && !!ready.reason && !!ready.message && (ready.status === 'True') === wantTrue,
    `${scenario}: Ready=${ready?.status} reason ${ready?.reason}, message "${ready?.message}"`,
    ready
      ? `${scenario}: Ready=${ready.status} reason "${ready.reason}" message "${ready.message ?? ''}" does not fit ${st} (Ready must be True exactly when updated, with a reason and a message)`
      : `${scenario}: no Ready condition on a ${st} task`,
  );
}

/** Why the run cannot pass when a task got no status at all: nothing under test runs, or it ignores the kit's tasks. */
function nobodyAnswered(c: KitRun, task: string): string {
  const { generic, updaterName, kind, namespace } = c;
  const label = `${Labels.updaterName}=${updaterName}`;
  const hint = generic
    ? `an updater serving the generic updater name \`${updaterName}\` (pass the name it serves with --updater-name)`
    : `an updater of ${kind.kind}; if it only takes tasks whose label ${Labels.updaterName} names it, pass that name with --updater-name (the kit's tasks carry ${label})`;
  return `no updater reconciled ${kind.kind} ${namespace}/${task} within ${c.timeoutMs / 1000}s (no status at all): is the updater under test running against this cluster and watching namespace ${namespace}? The kit needs ${hint}`;
}

/**
 * Normal update, then re-reconcile triggers and a spec bump on the terminal task; false when the other scenarios
 * cannot tell anything: nothing answered at all, or the updater failed the task (see below).
 */
async function normalScenario(c: KitRun): Promise<boolean> {
  const { ev } = c;
  c.scenarios.push({ name: 'normal update', result: 'run' });
  const t0 = await createTask(c, 'normal', undefined);
  const seen = new Set<string>();
  const r = await waitTask(c, t0.metadata.name!, (t) => {
    if (t.status?.updateStatus) seen.add(t.status.updateStatus);
    return terminalAt(taskGeneration(t0))(t);
  });
  if (!r.ok || !r.task) return normalNotEnded(c, t0, r.task);
  const st = r.task.status!.updateStatus;
  checkReportFields(c, 'normal update', r.task, taskGeneration(r.task));
  checkPlatformFields(c, 'normal update', t0, r.task, 'updating');
  if (st === 'failed') {
    // Failing a task it cannot do is what the contract asks (C4), so no rule is violated; but without one update
    // that succeeds the kit cannot judge the updater, and the likeliest cause is a task that is not for it (the
    // kit's default responsibilities, or parameters it does not take).
    c.refusals.push(
      `the updater failed the normal update's task (${taskReadyCondition(r.task)?.message ?? 'no message'}), so the kit could not check a successful update. If that task is not one this updater can do, describe one: the responsibilities it handles (--responsibility 'BootstrapConfig /spec/ntp={"servers":["time.example.com"]}', repeatable; the kit sent ${c.baseResps.map((x) => `${x.selectResource} ${x.path}`).join(', ')}) and its parameters or template fields (--task-spec FILE)`,
    );
    return false;
  }
  ev.check(
    'C4',
    st === 'updated',
    `normal update: updating -> updated (seen: ${[...seen].join(' -> ')})`,
    `normal update ended ${st}, expected updated: ${describeStatus(r.task)}`,
  );
  const bad = [...seen].filter((s) => !['updating', 'updated', 'failed'].includes(s));
  if (bad.length) ev.fail('C4', `normal update: status ${bad.join(', ')} reported although the task was never aborting`);
  if (st !== 'updated') return true;
  await reReconcile(c, r.task);
  await specChangeOnUpdated(c, r.task);
  return true;
}

/** The normal update's task got no terminal status: a refusal when nothing answered at all, else C4/C5/C6. */
function normalNotEnded(c: KitRun, t0: Task, last: Task | undefined): boolean {
  if (!last?.status) {
    c.refusals.push(nobodyAnswered(c, t0.metadata.name!));
    return false;
  }
  noAnswer(c, 'normal update', last, taskGeneration(t0));
  if (last.status.updateStatus) checkReportFields(c, 'normal update (in progress)', last, taskGeneration(last));
  else c.ev.fail('C6', 'normal update: the updater never reported a status, so no Ready condition either');
  checkPlatformFields(c, 'normal update', t0, last, 'updating');
  return true;
}

/** Idempotency: metadata-only touches re-trigger reconciles; a terminal, idempotent updater changes nothing. */
async function reReconcile(c: KitRun, terminal: Task): Promise<void> {
  for (let i = 1; i <= 2; i++) {
    await c.client.patch(
      c.kind,
      c.namespace,
      terminal.metadata.name!,
      {
        metadata: {
          labels: { 'inplace.cluster.x-k8s.io/conformance-touch': String(i) },
          annotations: { 'inplace.cluster.x-k8s.io/conformance-touch': new Date().toISOString() },
        },
      },
      { type: 'merge' },
    );
  }
  const changes = await watchForChanges(c, terminal.metadata.name!, terminal, c.settleMs);
  const left = changes.filter((x) => x.updateStatus !== terminal.status!.updateStatus);
  if (left.length) c.ev.fail('C4', `terminal status left after re-reconcile: ${left.map((x) => x.desc).join('; ')}`);
  else c.ev.pass('C4', `terminal updated kept through 2 re-reconcile triggers (${c.settleMs / 1000}s watched)`);
  c.ev.check(
    'C7',
    changes.length === 0,
    `re-reconciling the updated task twice changed nothing`,
    `re-reconciling the updated task changed its status: ${changes.map((x) => x.desc).join('; ')}`,
  );
}

/** observedGeneration follows a spec change, and the terminal status stays. */
async function specChangeOnUpdated(c: KitRun, terminal: Task): Promise<void> {
  const name = terminal.metadata.name!;
  const bumped = await c.client.patch<Task>(c.kind, c.namespace, name, { spec: { updatePhase: 'aborting' } }, { type: 'merge' });
  const gen = taskGeneration(bumped);
  const f = await waitTask(c, name, answered(gen));
  if (!f.ok || !f.task) {
    c.ev.fail(
      'C5',
      `after a spec change to generation ${gen} (updatePhase aborting on an updated task) observedGeneration stayed ${f.task?.status?.observedGeneration ?? 'unset'} for ${c.timeoutMs / 1000}s`,
    );
    return;
  }
  checkReportFields(c, 'spec change on the updated task', f.task, gen);
  c.ev.check(
    'C4',
    f.task.status?.updateStatus === 'updated',
    `aborting an updated task kept it updated (observedGeneration ${gen})`,
    `aborting an updated task changed it to ${f.task.status?.updateStatus}: a terminal status is never left`,
  );
}

/**
 * Abort: `aborting` on a task the updater reported on. Every outcome C4 allows is conforming — `aborted`, or
 * `updated` / `failed` when the work finished (or passed its point of no return) first — as long as it answers the
 * new generation (C5) and stays. Whether aborting mid-way was exercised is reported, not judged.
 */
async function abortScenario(c: KitRun): Promise<void> {
  const t0 = await createTask(c, 'abort', c.slowTaskSpec);
  const first = await waitTask(c, t0.metadata.name!, (t) => !!t.status?.updateStatus);
  if (!first.ok || !first.task) {
    c.scenarios.push({ name: 'abort', result: 'run', note: 'the updater never reported on the task' });
    c.ev.fail(
      'C4',
      `abort: the updater never reported on the task within ${c.timeoutMs / 1000}s; last seen: ${describeStatus(first.task)}`,
    );
    return;
  }
  const finishedFirst = isTerminal(first.task.status?.updateStatus) ? first.task.status?.updateStatus : undefined;
  const patched = await c.client.patch<Task>(
    c.kind,
    c.namespace,
    t0.metadata.name!,
    { spec: { updatePhase: 'aborting' } },
    { type: 'merge' },
  );
  const gen = taskGeneration(patched);
  const r = await waitTask(c, t0.metadata.name!, terminalAt(gen));
  if (!r.ok || !r.task) {
    c.scenarios.push({ name: 'abort', result: 'run', note: 'no terminal status answered the abort' });
    noAnswer(c, 'abort', r.task, gen, ' after spec.updatePhase became aborting');
    checkPlatformFields(c, 'abort', t0, r.task, 'aborting');
    return;
  }
  judgeAbort(c, r.task, gen, finishedFirst);
  checkReportFields(c, 'abort', r.task, gen);
  checkPlatformFields(c, 'abort', t0, r.task, 'aborting');
  const st = r.task.status!.updateStatus;
  const changes = await watchForChanges(c, t0.metadata.name!, r.task, c.settleMs / 2);
  c.ev.check('C4', changes.length === 0, `${st} is kept after the abort`, `${st} was not kept: ${changes.map((x) => x.desc).join('; ')}`);
}

/** C4 for the status an aborted task ended in, and the abort scenario's note. */
function judgeAbort(c: KitRun, task: Task, gen: number, finishedFirst: string | undefined): void {
  const st = task.status!.updateStatus;
  const howToSlow = c.slowTaskSpec
    ? ''
    : ': give a task that lasts long enough to be aborted (--slow-task-spec FILE) to exercise aborting mid-way';
  if (finishedFirst) {
    c.ev.check(
      'C4',
      st === finishedFirst,
      `abort: the update had ended ${finishedFirst} before the abort was sent, and stayed ${st} at generation ${gen}`,
      `abort: the update had ended ${finishedFirst}, then changed to ${st} when aborted: a terminal status is never left`,
    );
    c.scenarios.push({ name: 'abort', result: 'run', note: `the update ended ${finishedFirst} before the abort was sent${howToSlow}` });
    return;
  }
  c.ev.check(
    'C4',
    st === 'aborted' || st === 'updated' || st === 'failed',
    `abort: updating -> aborting -> ${st}${st === 'aborted' ? '' : ' (the work finished first, as C4 allows)'}`,
    `abort ended ${st}`,
  );
  c.scenarios.push({
    name: 'abort',
    result: 'run',
    note: st === 'aborted' ? 'aborted mid-update' : `the update finished ${st} before it saw the abort (conforming, C4)${howToSlow}`,
  });
}

/**
 * Failure: a task the user says the updater must fail (bad input: the contract's rule that a task an updater cannot
 * do ends failed, saying why). The contract gives no way to make every updater fail, so without one the scenario is
 * not exercised — reported, not failed.
 */
async function failureScenario(c: KitRun): Promise<void> {
  const { ev } = c;
  if (!c.failingTaskSpec) {
    const why =
      "the contract defines no task every updater must fail (what is bad input is the updater's to say, C4); give one this updater must fail, e.g. a parameter out of its bounds or a responsibility it does not handle (--failing-task-spec FILE; programmatic API: failingTaskSpec)";
    c.scenarios.push({ name: 'failure', result: 'not exercised', note: `cannot be exercised for this updater (${why})` });
    ev.note('C6', `failure scenario cannot be exercised for this updater: ${why}`);
    return;
  }
  c.scenarios.push({ name: 'failure', result: 'run' });
  const t0 = await createTask(c, 'failure', c.failingTaskSpec);
  const r = await waitTask(c, t0.metadata.name!, terminalAt(taskGeneration(t0)));
  if (!r.ok || !r.task) {
    const why = ' for a task it must fail (a task an updater cannot do ends failed, saying why: retrying it forever hides the problem)';
    noAnswer(c, 'failure', r.task, taskGeneration(t0), why);
    return;
  }
  const st = r.task.status!.updateStatus;
  const said = taskReadyCondition(r.task)?.message ?? '';
  ev.check(
    'C4',
    st === 'failed',
    'failure: updating -> failed',
    `failure: ended ${st} for the failing task spec (a task it cannot do ends failed); if this updater can do that task, the spec is not a failing one: give another`,
  );
  if (st === 'failed')
    ev.check(
      'C6',
      said.trim().length > 0,
      `failure: Ready message says why: "${said}"`,
      `failure: Ready message "${said}" does not say why`,
    );
  checkReportFields(c, 'failure', r.task, taskGeneration(t0));
  checkPlatformFields(c, 'failure', t0, r.task, 'updating');
  const changes = await watchForChanges(c, t0.metadata.name!, r.task, c.settleMs / 2);
  ev.check('C4', changes.length === 0, 'failed is kept', `failed was not kept: ${changes.map((x) => x.desc).join('; ')}`);
}

/** Restart mid-update: the update resumes (startTime kept) and finishes once. */
async function restartScenario(c: KitRun): Promise<void> {
  const { ev, opts } = c;
  if (!opts.restart) {
    const why = 'no restart hook given (programmatic API: restart); the CLI cannot restart the updater';
    c.scenarios.push({ name: 'restart', result: 'not exercised', note: `not exercised: ${why}` });
    ev.note('C7', `restart scenario not run: ${why}`);
    return;
  }
  const t0 = await createTask(c, 'restart', c.slowTaskSpec);
  const first = await waitTask(c, t0.metadata.name!, (t) => !!t.status?.updateStatus);
  const startTime = first.task?.status?.startTime;
  await opts.restart();
  const r = await waitTask(c, t0.metadata.name!, terminalAt(taskGeneration(t0)));
  if (!r.ok || !r.task) {
    c.scenarios.push({ name: 'restart', result: 'run', note: 'no terminal status after the restart' });
    ev.fail(
      'C7',
      `restart: no terminal status within ${c.timeoutMs / 1000}s after restarting the updater; last seen: ${describeStatus(r.task)}`,
    );
    return;
  }
  ev.check(
    'C7',
    r.task.status?.updateStatus === 'updated',
    'restart mid-update: the update finished updated',
    `restart mid-update: ended ${r.task.status?.updateStatus}`,
  );
  if (startTime && first.task?.status?.updateStatus === 'updating') {
    c.scenarios.push({ name: 'restart', result: 'run', note: 'restarted mid-update' });
    ev.check(
      'C7',
      r.task.status?.startTime === startTime,
      `restart mid-update: resumed (startTime ${startTime} kept)`,
      `restart mid-update: startTime moved ${startTime} -> ${r.task.status?.startTime}: the update restarted instead of resuming`,
    );
  } else {
    const why = `the update was ${first.task?.status?.updateStatus ?? 'not reported'} before the restart, so resuming was not exercised${c.slowTaskSpec ? '' : ' (give a longer task with --slow-task-spec)'}`;
    c.scenarios.push({ name: 'restart', result: 'run', note: why });
    ev.note('C7', `restart: ${why}`);
  }
}

/** A status on the decoy task (an updater name nobody may serve) means a catch-all updater answers here: refused. */
async function checkDecoy(c: KitRun, decoyName: string, decoyUpdater: string): Promise<void> {
  const d = await c.client.get<Task>(c.kind, c.namespace, decoyName);
  if (!d?.status) return;
  const who = statusManagers(d);
  c.refusals.push(
    `task ${decoyName} of updater name \`${decoyUpdater}\`, which no updater may serve, got a status${who.length ? ` (written by ${who.join(', ')})` : ''}: an updater serving every name (a catch-all such as \`inplace updater reference --catch-all\`, or the demo's reference updater) runs against this namespace, so the kit cannot tell whether the updater under test answered its tasks. Stop it (the demo: npm start -- --reference-names <names> or --no-reference-updater) and run the kit again`,
  );
}

/** Refuses when the tasks' status was written by anyone but the updater under test. */
function checkWriters(c: KitRun): void {
  const names = [...c.writers.keys()].sort();
  const { fieldManager } = c.opts;
  if (fieldManager && names.some((m) => m !== fieldManager))
    c.refusals.push(
      `the status of the kit's tasks was written by ${names.filter((m) => m !== fieldManager).join(', ')}, not only by ${fieldManager} (the field manager of the updater under test): another updater reconciles these tasks`,
    );
  else if (!fieldManager && names.length > 1)
    c.refusals.push(
      `the status of the kit's tasks was written by several field managers (${names.join(', ')}): more than one updater reconciles these tasks; stop the others, or pass --field-manager <the updater under test's> to say which one is under test`,
    );
}

/** C8: the scratch CAPI objects are as they were before the scenarios. */
async function checkCapi(c: KitRun, before: Awaited<ReturnType<typeof snapshotCapi>>): Promise<void> {
  const after = await snapshotCapi(c.client, c.scratch);
  const { violations, notes } = diffCapi(before, after);
  if (violations.length) for (const v of violations) c.ev.fail('C8', `the updater wrote a CAPI object: ${v}`);
  else
    c.ev.pass(
      'C8',
      `Machine, DevMachine and KubeadmConfig ${c.scratch.machine}: spec, labels, annotations unchanged through every scenario${notes.length ? ` (${notes.join('; ')})` : ''}`,
    );
}

/** Runs the scenarios one at a time, then the checks over all of them. */
async function runScenarios(c: KitRun): Promise<void> {
  const before = c.scratch.capi ? await snapshotCapi(c.client, c.scratch) : undefined;
  if (!c.scratch.capi)
    c.ev.note(
      'C8',
      `not checked: the scratch Machine/DevMachine/KubeadmConfig could not be created (${c.scratch.capiProblem ?? 'CAPI kinds not served'})`,
    );
  // Generic kind: a task of an updater name nobody may serve. A status on it means a catch-all updater runs here, and
  // then nothing tells whether the updater under test or the catch-all answered the other tasks.
  const decoyName = c.generic ? `cf-${c.id}-decoy` : undefined;
  const decoyUpdater = `inplace-conformance-unserved-${c.id}`;
  // Like the other tasks (the user's spec), so that only its updater name tells it apart.
  if (decoyName) await createTask(c, 'decoy', undefined, decoyName, decoyUpdater);
  // One scenario at a time: the platform never runs two tasks on one machine at once, and updaters may rely on it.
  if (await normalScenario(c)) {
    await failureScenario(c);
    await abortScenario(c);
    await restartScenario(c);
  }
  if (decoyName) await checkDecoy(c, decoyName, decoyUpdater);
  checkWriters(c);
  if (before) await checkCapi(c, before);
}

/** Runs the updater through the contract's workflows. The updater must already be running. */
export async function runConformance(opts: ConformanceOptions): Promise<ConformanceReport> {
  const started = Date.now();
  const { kind } = opts;
  const generic = kind.group === UpdaterUpdateTasks.group && kind.kind === UpdaterUpdateTasks.kind;
  const ev = new Evidence();
  checkOptions(opts, generic);
  await checkTaskKind(opts, generic, ev);
  const c = await startRun(opts, generic, ev);
  try {
    await runScenarios(c);
  } finally {
    await deleteScratch(c.client, c.scratch, c.created, c.template).catch((err: unknown) => {
      if (!isNotFound(err)) c.log(`  cleanup failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
  const rules = ev.report();
  return {
    kind: kind.kind,
    ...(opts.template ? { template: opts.template.kind } : {}),
    ...(generic ? { updaterName: c.updaterName } : {}),
    namespace: opts.namespace,
    passed: c.refusals.length === 0 && rules.every((r) => !r.mandatory || r.result !== 'fail'),
    refusals: c.refusals,
    statusWriters: Object.fromEntries([...c.writers].map(([m, tasks]) => [m, tasks.size])),
    scenarios: c.scenarios,
    rules,
    durationMs: Date.now() - started,
  };
}

/** The report as a table (Rule | Result | Evidence) followed by the verdict. */
export function formatReport(r: ConformanceReport): string {
  const head = `Conformance of ${r.kind}${r.template ? ` (template ${r.template})` : ''}${r.updaterName ? ` serving updater name ${r.updaterName}` : ''} — namespace ${r.namespace}, ${(r.durationMs / 1000).toFixed(1)}s`;
  const rows = r.rules.map((x) => [`${x.id} ${x.title}`, x.result.toUpperCase(), x.evidence[0] ?? '', ...x.evidence.slice(1)] as string[]);
  const w0 = Math.max(4, ...rows.map((x) => x[0]!.length));
  const w1 = Math.max(6, ...rows.map((x) => x[1]!.length));
  const line = (a: string, b: string, c: string): string => `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`;
  const out = [head, '', line('RULE', 'RESULT', 'EVIDENCE')];
  for (const row of rows) {
    out.push(line(row[0]!, row[1]!, row[2]!));
    for (const more of row.slice(3)) out.push(line('', '', more));
  }
  const failedRules = r.rules.filter((x) => x.result === 'fail').map((x) => x.id);
  if (r.scenarios?.length) {
    const w = Math.max(...r.scenarios.map((x) => x.name.length));
    out.push('', 'SCENARIO');
    for (const x of r.scenarios)
      out.push(`${x.name.padEnd(w)}  ${x.result === 'run' ? `run${x.note ? `: ${x.note}` : ''}` : (x.note ?? 'not exercised')}`);
  }
  const writers = Object.entries(r.statusWriters ?? {});
  out.push(
    '',
    writers.length
      ? `Task status written by (field managers, from managedFields): ${writers.map(([m, n]) => `${m} (${n} task${n === 1 ? '' : 's'})`).join(', ')}`
      : 'Task status written by: not recorded by this API server (managedFields)',
  );
  for (const why of r.refusals ?? []) out.push(`FAILED: ${why}`);
  if (r.refusals?.length) return out.join('\n');
  out.push(r.passed ? 'PASSED: every mandatory rule holds.' : `FAILED: ${failedRules.join(', ')} violated.`);
  return out.join('\n');
}
