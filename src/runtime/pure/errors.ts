// Typed errors of the runtime: every error names the operation that failed and says whether a retry can help.

/** A metav1.Status body as the API server returns it with an error. */
export interface StatusBody {
  kind?: string;
  apiVersion?: string;
  status?: string;
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; message?: string; field?: string }[];
    retryAfterSeconds?: number;
  };
  code?: number;
}

/** HTTP codes a retry can fix (the object changed, the server is busy or broken for now). */
const RETRYABLE_CODES = new Set([408, 409, 410, 425, 429]);

/**
 * An error answered by the API server (`code` is the HTTP status) or a network failure (`code` 0).
 * `operation` says what was attempted, e.g. `patch machines.cluster.x-k8s.io demo/m1`.
 */
export class KubeApiError extends Error {
  /** HTTP status code, 0 for a network error. */
  readonly code: number;
  /** The Status reason (`NotFound`, `Conflict`, ...) or `NetworkError`. */
  readonly reason: string;
  /** The Status body the server sent, if any. */
  readonly status: StatusBody | undefined;
  /** The operation that failed. */
  readonly operation: string;

  constructor(operation: string, code: number, status?: StatusBody, cause?: unknown) {
    const reason = status?.reason ?? (code === 0 ? 'NetworkError' : `HTTP${code}`);
    const detail = status?.message ?? (cause instanceof Error ? cause.message : undefined) ?? reason;
    super(`${operation}: ${code ? `${code} ` : ''}${detail}`, cause === undefined ? undefined : { cause });
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
    this.status = status;
    this.operation = operation;
  }

  /** True for conflicts, throttling, server errors and network errors; false for 400/401/403/404/405/415/422. */
  get retryable(): boolean {
    return this.code === 0 || this.code >= 500 || RETRYABLE_CODES.has(this.code);
  }
}

/** An error that must not be retried until the inputs change (invalid spec, forbidden, ...). */
export class TerminalError extends Error {
  /** The operation that failed. */
  readonly operation: string;
  constructor(operation: string, cause?: unknown) {
    super(`${operation}: ${describe(cause)}`, cause === undefined ? undefined : { cause });
    this.name = 'TerminalError';
    this.operation = operation;
  }
}

/** An error a later retry (with backoff) is expected to fix. */
export class RetryableError extends Error {
  /** The operation that failed. */
  readonly operation: string;
  constructor(operation: string, cause?: unknown) {
    super(`${operation}: ${describe(cause)}`, cause === undefined ? undefined : { cause });
    this.name = 'RetryableError';
    this.operation = operation;
  }
}

/** The object changed since it was read (HTTP 409 on an optimistic-concurrency write); retry from fresh state. */
export class ConflictError extends RetryableError {
  constructor(operation: string, cause?: unknown) {
    super(operation, cause);
    this.name = 'ConflictError';
  }
}

function describe(cause: unknown): string {
  if (cause === undefined) return 'failed';
  if (cause instanceof Error) return cause.message;
  return String(cause);
}

/** The HTTP code of a `KubeApiError` found in `err` or its cause chain, or undefined. */
export function apiErrorCode(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof KubeApiError) return e.code;
  }
  return undefined;
}

/** True when the error (or its cause) is a 404 Not Found. */
export const isNotFound = (err: unknown): boolean => apiErrorCode(err) === 404;
/** True when the error (or its cause) is a 409 Conflict (stale resourceVersion), not AlreadyExists. */
export const isConflict = (err: unknown): boolean =>
  err instanceof ConflictError || (apiErrorCode(err) === 409 && reasonOf(err) !== 'AlreadyExists');
/** True when the error (or its cause) is a 409 AlreadyExists from a create. */
export const isAlreadyExists = (err: unknown): boolean => apiErrorCode(err) === 409 && reasonOf(err) === 'AlreadyExists';

function reasonOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof KubeApiError) return e.reason;
  }
  return undefined;
}

/**
 * Whether retrying can help: TerminalError no, RetryableError yes, KubeApiError by its code,
 * anything else yes (unknown failures are retried with backoff rather than dropped).
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof TerminalError) return false;
  if (err instanceof RetryableError) return true;
  if (err instanceof KubeApiError) return err.retryable;
  return true;
}
