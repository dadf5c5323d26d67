// `inplace conformance --kind <Kind>`: runs an updater (already running against the cluster) through the updater
// contract's workflows and reports which rules hold. The options and the run are the conformance kit's own
// (src/contract/conformance/command.ts), shared with the package's `inplace-conformance` command.
import {
  CONFORMANCE_HELP,
  CONFORMANCE_OPTIONS,
  ConformanceSetupError,
  ConformanceUsageError,
  conformanceRequest,
  runConformanceCommand,
  type ConformanceRequest,
} from '../contract/conformance/command.js';
import { call, connect } from './kube.js';
import { CliError, ExitCode, KUBE_OPTIONS_HELP, kubeOptions, UsageError, type Verb } from './verb.js';

/** `inplace conformance`. */
export const conformanceVerb: Verb = {
  name: 'conformance',
  summary: 'Check an updater against the updater contract',
  help: `Usage: inplace conformance --kind <Kind[.group]> [--template <TemplateKind[.group]>] [options]

${CONFORMANCE_HELP}
${KUBE_OPTIONS_HELP}`,
  options: { ...kubeOptions, ...CONFORMANCE_OPTIONS },
  async run(args, io) {
    let req: ConformanceRequest;
    try {
      req = conformanceRequest(args.values, args.positionals);
    } catch (e) {
      throw e instanceof ConformanceUsageError ? new UsageError(e.message) : e;
    }
    const conn = connect(args, 'inplace-conformance');
    try {
      const code = await runConformanceCommand(conn.client, req, io, (res, fn) => call(conn, res, fn));
      return code === 0 ? ExitCode.ok : ExitCode.failure;
    } catch (e) {
      throw e instanceof ConformanceSetupError ? new CliError(e.message, e.hint) : e;
    } finally {
      conn.client.close();
    }
  },
};
