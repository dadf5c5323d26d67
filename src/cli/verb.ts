// The CLI's building blocks: a verb (name, usage, options, run), the I/O it writes to, and the two error kinds
// that map to exit codes (usage mistakes -> 2, anything else that failed -> 1).
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Exit codes of every verb. */
export const ExitCode = { ok: 0, failure: 1, usage: 2 } as const;

/** Where a verb writes and how it learns it must stop (Ctrl-C / SIGTERM). */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  /** True when stdout is a terminal (live redraw allowed). */
  isTTY: boolean;
  /** Terminal width (80 when unknown). */
  columns: number;
  /** Terminal height (24 when unknown). */
  rows?: number;
  /** Aborted on SIGINT/SIGTERM: long-running verbs shut down and return. */
  signal: AbortSignal;
}

/** The user called the command wrongly (unknown flag, missing argument): exit 2 with the verb's usage. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The command was right but something failed: exit 1 with what went wrong and what to do about it. */
export class CliError extends Error {
  constructor(
    message: string,
    /** What the user can do about it, printed on its own line. */
    readonly hint?: string,
    readonly exitCode: number = ExitCode.failure,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** True for a UsageError (by name, so it also holds across module instances). */
export const isUsageError = (e: unknown): e is UsageError => e instanceof Error && e.name === 'UsageError';
/** True for a CliError (by name, so it also holds across module instances). */
export const isCliError = (e: unknown): e is CliError => e instanceof Error && e.name === 'CliError';

/** Option definitions in node:util parseArgs form. */
export type Options = NonNullable<ParseArgsConfig['options']>;

/** A verb of the `inplace` command. */
export interface Verb {
  name: string;
  /** One line for the command's help. */
  summary: string;
  /** Usage line(s) and option descriptions, printed by `--help` and on usage errors. */
  help: string;
  options: Options;
  /** Hidden verbs are internal (e.g. the demo's CAPI simulator process) and not listed in help. */
  hidden?: boolean;
  run(args: ParsedArgs, io: Io): Promise<number>;
}

/** Parsed command line of a verb. */
export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/** Options every verb that talks to a cluster accepts. */
export const kubeOptions = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const satisfies Options;

/** Help text of the kube options. */
export const KUBE_OPTIONS_HELP = `  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --context NAME      kubeconfig context to use (default: the current context)`;

/** Parses a verb's arguments strictly; unknown flags and missing values become UsageErrors. */
export function parseVerbArgs(verb: Verb, argv: string[]): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...verb.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as ParsedArgs['values'], positionals };
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
}

/** A string option's value (undefined when absent). */
export const str = (a: ParsedArgs, name: string): string | undefined => {
  const v = a.values[name];
  return typeof v === 'string' ? v : undefined;
};

/** A boolean flag's value. */
export const flag = (a: ParsedArgs, name: string): boolean => a.values[name] === true;

/** A port number option (0..65535), or undefined when absent. */
export function portOption(a: ParsedArgs, name: string): number | undefined {
  const v = str(a, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--${name} must be a port number (0-65535), got "${v}"`);
  return n;
}

/** `--concurrency`: keys reconciled in parallel, a positive integer, or undefined when absent. */
export function concurrencyOption(a: ParsedArgs): number | undefined {
  const v = str(a, 'concurrency');
  if (v === undefined) return undefined;
  // Strict digits: Number() would also take "1e3", "0x10" or " 8 ", which are more likely typos than intent.
  const n = /^[0-9]+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--concurrency must be a positive integer (keys reconciled in parallel), got "${v}"`);
  return n;
}

/** A positive duration in seconds, or the default. */
export function secondsOption(a: ParsedArgs, name: string, dflt: number): number {
  const v = str(a, name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of seconds, got "${v}"`);
  return n;
}

/** Exactly `n` positionals named by `names`, or a UsageError saying which is missing / extra. */
export function positionals(a: ParsedArgs, names: string[]): string[] {
  if (a.positionals.length < names.length)
    throw new UsageError(
      `missing ${names
        .slice(a.positionals.length)
        .map((n) => `<${n}>`)
        .join(' ')}`,
    );
  if (a.positionals.length > names.length) throw new UsageError(`unexpected argument "${a.positionals[names.length]}"`);
  return a.positionals;
}

/** Resolves when the signal aborts (used by long-running verbs to wait for Ctrl-C). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
