// `inplace conformance --kind <Kind>`: runs an updater (already running against the cluster) through the updater
// contract's workflows and reports which rules hold (src/contract/conformance).
import { CustomResourceDefinitions, Namespaces, type ResourceType } from '../api/index.js';
import { isNotFound } from '../runtime/pure/errors.js';
import { call, connect, type Connection } from './kube.js';
import { CliError, ExitCode, KUBE_OPTIONS_HELP, kubeOptions, secondsOption, str, UsageError, type Verb } from './verb.js';

/** `inplace conformance`. */
export const conformanceVerb: Verb = {
  name: 'conformance',
  summary: 'Check an updater against the updater contract',
  help: `Usage: inplace conformance --kind <Kind[.group]> [--template <TemplateKind[.group]>] [options]

Acts as the platform towards an updater that is already running against the cluster: creates scratch
CAPI objects and tasks of the kind, drives the normal, abort, failure and re-reconcile workflows and
reports per contract rule (C1..C10; C9 and C10 are platform rules, reported n/a) pass / fail / skip with evidence (see docs/contract.md).
It refuses to pass, and says why, when no updater reconciles its tasks (nothing under test runs, or it ignores them:
a custom-kind updater that filters on the label inplace.cluster.x-k8s.io/updater-name needs --updater-name), when
a catch-all updater answers a generic task of a name nobody serves, or when the status of its tasks was written by
more than one field manager (or, with --field-manager, by any other).
Exit code 0 when no mandatory rule failed and nothing was refused, 1 otherwise.

Options:
  --kind KIND            the task kind the updater reconciles, e.g. OSImageUpdateTask or UpdaterUpdateTask
  --template KIND        its template kind (tasks are then built from a template, as the platform does)
  --updater-name NAME    the updater name on the tasks' label inplace.cluster.x-k8s.io/updater-name: for the
                         generic kind the name the updater serves; for a custom kind, the name an updater that
                         filters on that label takes (default: conformance)
  --field-manager NAME   the field manager the updater under test writes status with (SDK updaters: their name);
                         a status written by any other manager fails the run
  --task-spec JSON       spec fields of every scratch task (e.g. a short simulated step time)
  --slow-spec JSON       spec fields that make an update last long enough to abort it
  --failure-spec JSON    spec fields that make the updater fail (no failure scenario without it for custom kinds)
  -n, --namespace NS     run in this namespace (default: a new scratch namespace, deleted afterwards)
  --timeout SECONDS      how long to wait for each expected status (default: 30)
  -o, --output FORMAT    text (default) or json
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    kind: { type: 'string' },
    template: { type: 'string' },
    'updater-name': { type: 'string' },
    'field-manager': { type: 'string' },
    'task-spec': { type: 'string' },
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
    const json = (name: string): Record<string, unknown> | undefined => {
      const v = str(args, name);
      if (v === undefined) return undefined;
      try {
        const o = JSON.parse(v) as unknown;
        if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('not an object');
        return o as Record<string, unknown>;
      } catch (e) {
        throw new UsageError(`--${name} must be a JSON object, e.g. '{"stepSeconds":0.1}' (${(e as Error).message})`);
      }
    };
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
      const taskSpec = json('task-spec');
      const slowSpec = json('slow-spec');
      const failureSpec = json('failure-spec');
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
        ...(taskSpec ? { taskSpec } : {}),
        ...(slowSpec ? { slowSpec } : {}),
        ...(failureSpec ? { failureSpec } : {}),
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
