// The `inplace-conformance` command of the @inplace-capi/conformance package: the same options and run as
// `inplace conformance` (command.ts), connecting with a kubeconfig the way kubectl does.
import { parseArgs } from 'node:util';
import { createClient, loadKubeConfig } from '../../runtime/client.js';
import type { KubeClient } from '../../runtime/pure/types.js';
import {
  CONFORMANCE_HELP,
  CONFORMANCE_OPTIONS,
  ConformanceSetupError,
  ConformanceUsageError,
  conformanceRequest,
  runConformanceCommand,
  type ConformanceIo,
} from './command.js';

/** The full help of the `inplace-conformance` command. */
export const CONFORMANCE_MAIN_HELP = `Usage: inplace-conformance --kind <Kind[.group]> [--template <TemplateKind[.group]>] [options]

${CONFORMANCE_HELP}
  --kubeconfig FILE      kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --context NAME         kubeconfig context to use (default: the current context)
  -h, --help             this help`;

const stdio: ConformanceIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) };

/**
 * An API client from a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster) and optionally one of its
 * contexts, for runConformance; close() it when done. A context the kubeconfig lacks is a ConformanceUsageError.
 */
export function connectKube(opts: { kubeconfigPath?: string; context?: string } = {}): KubeClient & { close(): void } {
  const { kubeconfigPath, context } = opts;
  const kc = loadKubeConfig(kubeconfigPath);
  if (context !== undefined) {
    if (!kc.getContexts().some((c) => c.name === context))
      throw new ConformanceUsageError(
        `context "${context}" is not in the kubeconfig (available: ${
          kc
            .getContexts()
            .map((c) => c.name)
            .join(', ') || 'none'
        })`,
      );
    kc.setCurrentContext(context);
  }
  return createClient(kc, { userAgent: 'inplace-conformance' });
}

/** Runs `inplace-conformance` with `argv` (the arguments after the command name); resolves to the exit code. */
export async function conformanceMain(argv: string[], io: ConformanceIo = stdio): Promise<number> {
  let client: (KubeClient & { close(): void }) | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        ...CONFORMANCE_OPTIONS,
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      io.out(`${CONFORMANCE_MAIN_HELP}\n`);
      return 0;
    }
    const req = conformanceRequest(values, positionals);
    client = connectKube({
      ...(values.kubeconfig !== undefined ? { kubeconfigPath: values.kubeconfig } : {}),
      ...(values.context !== undefined ? { context: values.context } : {}),
    });
    return await runConformanceCommand(client, req, io);
  } catch (e) {
    // parseArgs' own errors (unknown option, missing value) are wrong usage too.
    const usage = e instanceof ConformanceUsageError || String((e as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS');
    const message = e instanceof Error ? e.message : String(e);
    io.err(`inplace-conformance: ${message}\n`);
    if (e instanceof ConformanceSetupError) io.err(`  hint: ${e.hint}\n`);
    if (usage) {
      io.err('run inplace-conformance --help for the options\n');
      return 2;
    }
    return 1;
  } finally {
    client?.close();
  }
}
