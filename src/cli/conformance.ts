// `inplace conformance --kind <Kind>`: runs an updater (already running against the cluster) through the updater
// contract's workflows and reports which rules hold (src/contract/conformance).
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { CustomResourceDefinitions, Namespaces, UpdaterUpdateTasks, type ResourceType, type Responsibility } from '../api/index.js';
import { parseResponsibility, taskSpecProblem } from '../contract/conformance/specs.js';
import { isNotFound } from '../runtime/pure/errors.js';
import { call, connect, type Connection } from './kube.js';
import { CliError, ExitCode, KUBE_OPTIONS_HELP, kubeOptions, secondsOption, str, UsageError, type ParsedArgs, type Verb } from './verb.js';

/** `inplace conformance`. */
export const conformanceVerb: Verb = {
  name: 'conformance',
  summary: 'Check an updater against the updater contract',
  help: `Usage: inplace conformance --kind <Kind[.group]> [--template <TemplateKind[.group]>] [options]

Acts as the platform towards an updater that is already running against the cluster: creates scratch
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
  (--failure-spec and --slow-spec are older names of --failing-task-spec and --slow-task-spec.)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
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
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const kindArg = str(args, 'kind');
    if (!kindArg) throw new UsageError('missing --kind <Kind>');
    const output = str(args, 'output') ?? 'text';
    if (output !== 'text' && output !== 'json') throw new UsageError(`--output must be text or json, got "${output}"`);
    const generic = kindArg === UpdaterUpdateTasks.kind || kindArg === `${UpdaterUpdateTasks.kind}.${UpdaterUpdateTasks.group}`;
    const specOption = (names: string[]): Record<string, unknown> | undefined => readSpecOption(args, names, generic);
    const taskSpec = specOption(['task-spec']);
    const failingTaskSpec = specOption(['failing-task-spec', 'failure-spec']);
    const slowTaskSpec = specOption(['slow-task-spec', 'slow-spec']);
    const respArgs = (args.values['responsibility'] as string[] | undefined) ?? [];
    let responsibilities: Responsibility[] | undefined;
    try {
      responsibilities = respArgs.length ? respArgs.map(parseResponsibility) : undefined;
    } catch (e) {
      throw new UsageError(`--responsibility: ${(e as Error).message}`);
    }
    if (responsibilities && taskSpec && 'responsibilities' in taskSpec)
      throw new UsageError('responsibilities are given twice (--responsibility and the responsibilities of --task-spec): give them once');
    const timeoutMs = secondsOption(args, 'timeout', 30) * 1000;
    const conn = connect(args, 'inplace-conformance');
    let scratchNs: string | undefined;
    try {
      const kind = await resolveKind(conn, kindArg);
      const template = str(args, 'template') ? await resolveKind(conn, str(args, 'template')!) : undefined;
      let namespace = str(args, 'namespace');
      if (!namespace) {
        scratchNs = `inplace-conformance-${Math.random().toString(36).slice(2, 8)}`;
        await call(conn, Namespaces, () =>
          conn.client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: scratchNs! } }),
        );
        namespace = scratchNs;
      }
      const { runConformance, formatReport } = await import('../contract/conformance/index.js');
      const updaterName = str(args, 'updater-name');
      const fieldManager = str(args, 'field-manager');
      const report = await runConformance({
        client: conn.client,
        namespace,
        kind,
        timeoutMs,
        ...(template ? { template } : {}),
        ...(updaterName ? { updaterName } : {}),
        ...(fieldManager ? { fieldManager } : {}),
        ...(responsibilities ? { responsibilities } : {}),
        ...(taskSpec ? { taskSpec } : {}),
        ...(slowTaskSpec ? { slowTaskSpec } : {}),
        ...(failingTaskSpec ? { failingTaskSpec } : {}),
        ...(output === 'text' ? { log: (line: string) => io.err(`${line}\n`) } : {}),
      });
      io.out(output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`);
      return report.passed ? ExitCode.ok : ExitCode.failure;
    } finally {
      if (scratchNs) await conn.client.delete(Namespaces, undefined, scratchNs).catch(() => undefined);
      conn.client.close();
    }
  },
};

/** A spec option: a YAML/JSON file, or inline JSON; checked before anything is created (exit 2). */
function readSpecOption(args: ParsedArgs, names: string[], generic: boolean): Record<string, unknown> | undefined {
  const given = names.filter((n) => str(args, n) !== undefined);
  if (given.length > 1) throw new UsageError(`--${given[0]} and --${given[1]} are the same option: give one`);
  const name = given[0];
  const v = name === undefined ? undefined : str(args, name);
  if (name === undefined || v === undefined) return undefined;
  let text = v;
  if (!v.trimStart().startsWith('{')) {
    try {
      text = readFileSync(v, 'utf8');
    } catch (e) {
      throw new UsageError(`--${name}: cannot read ${v} (${(e as Error).message}); give a YAML or JSON file, or inline JSON`);
    }
  }
  let o: unknown;
  try {
    o = parseYaml(text) as unknown;
  } catch (e) {
    throw new UsageError(`--${name}: ${v} is not YAML or JSON (${(e as Error).message})`);
  }
  const problem = taskSpecProblem(`--${name}`, o, generic);
  if (problem) throw new UsageError(problem);
  return o as Record<string, unknown>;
}

/** Resolves `Kind` or `Kind.group` to a served resource, through the installed CRDs for a bare kind. */
async function resolveKind(conn: Connection, arg: string): Promise<ResourceType> {
  const dot = arg.indexOf('.');
  const kind = dot < 0 ? arg : arg.slice(0, dot);
  let group = dot < 0 ? undefined : arg.slice(dot + 1);
  if (group === undefined) {
    const crds = await call(conn, CustomResourceDefinitions, () => conn.client.list(CustomResourceDefinitions, undefined));
    const groups = crds.items
      .map((c) => c['spec'] as { group: string; names: { kind: string } })
      .filter((s) => s.names.kind === kind)
      .map((s) => s.group);
    if (groups.length === 0) throw new CliError(`no CRD defines kind ${kind}`, "install the updater's CRDs, or pass --kind Kind.group");
    if (groups.length > 1)
      throw new CliError(`kind ${kind} exists in several groups (${groups.join(', ')})`, `pass --kind ${kind}.<group>`);
    group = groups[0]!;
  }
  try {
    return await conn.client.resolve(group, kind);
  } catch (e) {
    if (isNotFound(e) || /not found|no resource|not served/i.test((e as Error).message))
      throw new CliError(`the API server does not serve ${kind}.${group}`, 'install its CRD first');
    throw e;
  }
}
