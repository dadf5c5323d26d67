// The conformance command's options, help and run, shared by `inplace conformance` (src/cli/conformance.ts) and the
// package's own `inplace-conformance` bin (main.ts): one parser and one run, so both take the same options and
// report the same way. Connecting (kubeconfig, context) and how errors are shown stay with each front end.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { CustomResourceDefinitions, Namespaces, UpdaterUpdateTasks, type ResourceType, type Responsibility } from '../../api/index.js';
import { isNotFound } from '../../runtime/pure/errors.js';
import type { KubeClient } from '../../runtime/pure/types.js';
import { formatReport, runConformance } from './kit.js';
import { parseResponsibility, taskSpecProblem } from './specs.js';

/** Wrong usage (exit 2): a missing or bad option, caught before anything is created. */
export class ConformanceUsageError extends Error {}

/** The cluster cannot run the check as asked (exit 1), with a hint saying what to do. */
export class ConformanceSetupError extends Error {
  /** Builds the error; `hint` says what to do about it. */
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

/** The command's options (node:util parseArgs), besides how to connect (--kubeconfig, --context). */
export const CONFORMANCE_OPTIONS = {
  kind: { type: 'string' },
  template: { type: 'string' },
  'updater-name': { type: 'string' },
  'field-manager': { type: 'string' },
  responsibility: { type: 'string', multiple: true },
  'task-spec': { type: 'string' },
  'failing-task-spec': { type: 'string' },
  'slow-task-spec': { type: 'string' },
  'slow-spec': { type: 'string' },
  'failure-spec': { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  timeout: { type: 'string' },
  output: { type: 'string', short: 'o' },
} as const;

/** The command's help after its usage line: what it does and its options (the connection options are added by each front end). */
export const CONFORMANCE_HELP = `Acts as the platform towards an updater that is already running against the cluster: creates scratch
CAPI objects and tasks of the kind, drives the normal update, failure, abort and re-reconcile workflows and
reports per contract rule (C1..C10; C9 and C10 are platform rules, reported n/a) pass / fail / skip with evidence,
and per scenario whether it ran (see docs/contract.md, "Conformance kit"). It judges by the contract alone and knows
no updater's parameters: tell it what a task of your updater looks like.
  * normal update: a task with the responsibilities (--responsibility; default Machine /spec/version and an
    InfraMachine image) and the spec (--task-spec) your updater can do; it must end updated.
  * failure: only with --failing-task-spec, a task your updater must fail (bad input: it ends failed, saying why);
    without it the scenario "cannot be exercised for this updater" (the contract defines no task every updater
    must fail).
  * abort: aborting sent once the updater reported; aborted, or updated / failed if it finished first, all conform.
    --slow-task-spec makes the update last long enough to abort it mid-way.
It refuses to pass, and says why, when no updater reconciles its tasks (nothing under test runs, or it ignores them:
a custom-kind updater that filters on the label inplace.cluster.x-k8s.io/updater-name needs --updater-name), when the
updater fails the normal update's task, when a catch-all updater answers a generic task of a name nobody serves, or
when the status of its tasks was written by more than one field manager (or, with --field-manager, by any other).
Exit code 0 when no mandatory rule failed and nothing was refused, 1 otherwise, 2 for wrong usage.

Options:
  --kind KIND            the task kind the updater reconciles, e.g. OSImageUpdateTask or UpdaterUpdateTask
  --template KIND        its template kind (tasks are then built from a template, as the platform does)
  --updater-name NAME    the updater name on the tasks' label inplace.cluster.x-k8s.io/updater-name: for the
                         generic kind the name the updater serves; for a custom kind, the name an updater that
                         filters on that label takes (default: conformance)
  --responsibility 'SELECT /json/pointer=VALUE'
                         a responsibility of every task (repeatable): SELECT is Machine, InfraMachine or
                         BootstrapConfig, VALUE JSON or else a string,
                         e.g. 'BootstrapConfig /spec/ntp={"servers":["a"]}' or 'Machine /spec/version=v1.30.1'
  --task-spec FILE       spec fields of every task, YAML or JSON (or inline JSON starting with {): generic kind
                         e.g. parameters; template kind the template's spec.template.spec; may hold responsibilities
  --failing-task-spec FILE
                         spec fields merged over the task spec (JSON merge patch) for a task the updater must fail,
                         e.g. a parameter out of its bounds or responsibilities it does not handle
  --slow-task-spec FILE  spec fields merged over the task spec for a task that lasts long enough to be aborted,
                         yet ends within --timeout
  --field-manager NAME   the field manager the updater under test writes status with (SDK updaters: their name);
                         a status written by any other manager fails the run
  -n, --namespace NS     run in this namespace (default: a new scratch namespace, deleted afterwards)
  --timeout SECONDS      how long to wait for each expected status (default: 30)
  -o, --output FORMAT    text (default) or json
  (--failure-spec and --slow-spec are older names of --failing-task-spec and --slow-task-spec.)`;

/** Parsed option values, as node:util parseArgs returns them. */
export type ConformanceArgValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** A checked conformance command: everything known before connecting. */
export interface ConformanceRequest {
  kind: string;
  template?: string;
  namespace?: string;
  output: 'text' | 'json';
  updaterName?: string;
  fieldManager?: string;
  responsibilities?: Responsibility[];
  taskSpec?: Record<string, unknown>;
  failingTaskSpec?: Record<string, unknown>;
  slowTaskSpec?: Record<string, unknown>;
  timeoutMs: number;
}

/** Where the command writes: the report to `out`, progress lines (text output only) to `err`. */
export interface ConformanceIo {
  out(text: string): void;
  err(text: string): void;
}

/** Runs one API call; a front end passes one that explains API errors its own way (default: as they are). */
export type ApiCall = <T>(res: ResourceType | undefined, fn: () => Promise<T>) => Promise<T>;

const str = (values: ConformanceArgValues, name: string): string | undefined => {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
};

/** A spec option: a YAML/JSON file, or inline JSON; checked before anything is created. */
function specOption(values: ConformanceArgValues, names: string[], generic: boolean): Record<string, unknown> | undefined {
  const given = names.filter((n) => str(values, n) !== undefined);
  if (given.length > 1) throw new ConformanceUsageError(`--${given[0]} and --${given[1]} are the same option: give one`);
  const name = given[0];
  const v = name === undefined ? undefined : str(values, name);
  if (name === undefined || v === undefined) return undefined;
  let text = v;
  if (!v.trimStart().startsWith('{')) {
    try {
      text = readFileSync(v, 'utf8');
    } catch (e) {
      throw new ConformanceUsageError(`--${name}: cannot read ${v} (${(e as Error).message}); give a YAML or JSON file, or inline JSON`);
    }
  }
  let o: unknown;
  try {
    o = parseYaml(text) as unknown;
  } catch (e) {
    throw new ConformanceUsageError(`--${name}: ${v} is not YAML or JSON (${(e as Error).message})`);
  }
  const problem = taskSpecProblem(`--${name}`, o, generic);
  if (problem) throw new ConformanceUsageError(problem);
  return o as Record<string, unknown>;
}

/** The --responsibility options, parsed. */
function responsibilitiesOption(values: ConformanceArgValues): Responsibility[] | undefined {
  const raw = values['responsibility'];
  const respArgs = Array.isArray(raw) ? raw.filter((r): r is string => typeof r === 'string') : [];
  try {
    return respArgs.length ? respArgs.map(parseResponsibility) : undefined;
  } catch (e) {
    throw new ConformanceUsageError(`--responsibility: ${(e as Error).message}`);
  }
}

/** The --timeout option in milliseconds (default 30 s). */
function timeoutOption(values: ConformanceArgValues): number {
  const v = str(values, 'timeout');
  if (v === undefined) return 30_000;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new ConformanceUsageError(`--timeout must be a positive number of seconds, got "${v}"`);
  return n * 1000;
}

/** Checks the parsed options (files read, specs checked); ConformanceUsageError names what is wrong. */
export function conformanceRequest(values: ConformanceArgValues, positionals: string[]): ConformanceRequest {
  if (positionals.length > 0) throw new ConformanceUsageError(`unexpected argument "${positionals[0]}"`);
  const kind = str(values, 'kind');
  if (!kind) throw new ConformanceUsageError('missing --kind <Kind>');
  const output = str(values, 'output') ?? 'text';
  if (output !== 'text' && output !== 'json') throw new ConformanceUsageError(`--output must be text or json, got "${output}"`);
  const generic = kind === UpdaterUpdateTasks.kind || kind === `${UpdaterUpdateTasks.kind}.${UpdaterUpdateTasks.group}`;
  const taskSpec = specOption(values, ['task-spec'], generic);
  const failingTaskSpec = specOption(values, ['failing-task-spec', 'failure-spec'], generic);
  const slowTaskSpec = specOption(values, ['slow-task-spec', 'slow-spec'], generic);
  const responsibilities = responsibilitiesOption(values);
  if (responsibilities && taskSpec && 'responsibilities' in taskSpec)
    throw new ConformanceUsageError(
      'responsibilities are given twice (--responsibility and the responsibilities of --task-spec): give them once',
    );
  const optional = { template: 'template', namespace: 'namespace', updaterName: 'updater-name', fieldManager: 'field-manager' } as const;
  const req: ConformanceRequest = { kind, output, timeoutMs: timeoutOption(values) };
  for (const [key, opt] of Object.entries(optional) as [keyof typeof optional, string][]) {
    const v = str(values, opt);
    if (v) req[key] = v;
  }
  return {
    ...req,
    ...(responsibilities ? { responsibilities } : {}),
    ...(taskSpec ? { taskSpec } : {}),
    ...(failingTaskSpec ? { failingTaskSpec } : {}),
    ...(slowTaskSpec ? { slowTaskSpec } : {}),
  };
}

const direct: ApiCall = (_res, fn) => fn();

/** Resolves `Kind` or `Kind.group` to a served resource, through the installed CRDs for a bare kind. */
export async function resolveKindArg(client: KubeClient, arg: string, call: ApiCall = direct): Promise<ResourceType> {
  const dot = arg.indexOf('.');
  const kind = dot < 0 ? arg : arg.slice(0, dot);
  let group = dot < 0 ? undefined : arg.slice(dot + 1);
  if (group === undefined) {
    const crds = await call(CustomResourceDefinitions, () => client.list(CustomResourceDefinitions, undefined));
    const groups = crds.items
      .map((c) => c['spec'] as { group: string; names: { kind: string } })
      .filter((s) => s.names.kind === kind)
      .map((s) => s.group);
    if (groups.length === 0)
      throw new ConformanceSetupError(`no CRD defines kind ${kind}`, "install the updater's CRDs, or pass --kind Kind.group");
    if (groups.length > 1)
      throw new ConformanceSetupError(`kind ${kind} exists in several groups (${groups.join(', ')})`, `pass --kind ${kind}.<group>`);
    group = groups[0]!;
  }
  try {
    return await client.resolve(group, kind);
  } catch (e) {
    if (isNotFound(e) || /not found|no resource|not served/i.test((e as Error).message))
      throw new ConformanceSetupError(`the API server does not serve ${kind}.${group}`, 'install its CRD first');
    throw e;
  }
}

/**
 * Runs the kit as the command does: resolves the kinds, runs in `req.namespace` or a new scratch namespace (deleted
 * afterwards), writes the report (text or JSON) and returns the exit code: 0 passed, 1 not.
 */
export async function runConformanceCommand(
  client: KubeClient,
  req: ConformanceRequest,
  io: ConformanceIo,
  call: ApiCall = direct,
): Promise<0 | 1> {
  const kind = await resolveKindArg(client, req.kind, call);
  const template = req.template ? await resolveKindArg(client, req.template, call) : undefined;
  let scratchNs: string | undefined;
  try {
    let namespace = req.namespace;
    if (!namespace) {
      scratchNs = `inplace-conformance-${Math.random().toString(36).slice(2, 8)}`;
      const name = scratchNs;
      await call(Namespaces, () => client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
      namespace = scratchNs;
    }
    const { output, template: _t, namespace: _n, kind: _k, ...rest } = req;
    const report = await runConformance({
      ...rest,
      client,
      namespace,
      kind,
      ...(template ? { template } : {}),
      ...(output === 'text' ? { log: (line: string) => io.err(`${line}\n`) } : {}),
    });
    io.out(output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`);
    return report.passed ? 0 : 1;
  } finally {
    if (scratchNs) await client.delete(Namespaces, undefined, scratchNs).catch(() => undefined);
  }
}
