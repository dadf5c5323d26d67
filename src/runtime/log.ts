// Logging: pino, JSON by default (production), pretty when stdout is a terminal or LOG_FORMAT=pretty.
import { pino, type Logger as PinoLogger } from 'pino';
import pretty from 'pino-pretty';
import type { Logger } from './pure/types.js';

/** Options of `createLogger`. */
export interface LoggerOptions {
  /** Logger name (the component), bound to every line. */
  name?: string;
  /** Level (default: LOG_LEVEL env or `info`). */
  level?: string;
  /** Force pretty (true) or JSON (false) output; default: LOG_FORMAT env, else pretty only on a TTY. */
  pretty?: boolean;
  /** Write to this stream instead of stdout (tests). */
  destination?: NodeJS.WritableStream;
}

/** Where loggers created without a destination write instead of stdout; set by the tests' log capture. */
let defaultDestination: NodeJS.WritableStream | undefined;

/** Routes every logger created afterwards without a destination to `d` (undefined: stdout again). For tests. */
export function setDefaultLogDestination(d: NodeJS.WritableStream | undefined): void {
  defaultDestination = d;
}

/** Creates a pino logger per the environment (LOG_LEVEL, LOG_FORMAT=json|pretty). */
export function createLogger(opts: LoggerOptions = {}): Logger {
  opts = { ...opts, ...(opts.destination === undefined && defaultDestination !== undefined ? { destination: defaultDestination } : {}) };
  const level = opts.level ?? process.env['LOG_LEVEL'] ?? 'info';
  const format = process.env['LOG_FORMAT'];
  const usePretty = opts.pretty ?? (format ? format === 'pretty' : process.stdout.isTTY === true);
  const base = { level, ...(opts.name ? { name: opts.name } : {}) };
  let logger: PinoLogger;
  if (usePretty) {
    // A synchronous in-process stream: no worker thread, lines stay in order with other output.
    logger = pino(
      base,
      pretty({
        sync: true,
        colorize: opts.destination ? false : process.stdout.isTTY === true,
        destination: (opts.destination ?? process.stdout) as NodeJS.WritableStream & { write: (s: string) => boolean },
      }),
    );
  } else {
    logger = opts.destination ? pino(base, opts.destination as NodeJS.WritableStream & { write: (s: string) => boolean }) : pino(base);
  }
  return logger as unknown as Logger;
}

/** A logger that drops everything (default for library pieces used without a manager). */
export const noopLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => noopLogger,
};

/** The message and cause chain of an error, for log fields. */
export function errorFields(err: unknown): { err: string; cause?: string } {
  if (!(err instanceof Error)) return { err: String(err) };
  const out: { err: string; cause?: string } = { err: err.message };
  const cause = err.cause;
  if (cause instanceof Error && !err.message.includes(cause.message)) out.cause = cause.message;
  return out;
}
