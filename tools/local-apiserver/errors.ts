/** Kubernetes `Status` errors with the reasons and codes kube-apiserver uses. */

/** One `details.causes[]` entry of a Status. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** `details` of a Status. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A request failure carried as a Kubernetes Status (thrown inside handlers, rendered by the server). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The Status object a real API server would send. */
  toStatus(): Record<string, unknown> {
    const s: Record<string, unknown> = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message };
    if (this.reason) s.reason = this.reason;
    if (this.details) s.details = this.details;
    s.code = this.code;
    return s;
  }
}

/** Group-qualified resource, e.g. `machines.cluster.x-k8s.io` or `configmaps`. */
export function qualifiedResource(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

/** 404 NotFound for a named object. */
export function notFound(group: string, resource: string, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualifiedResource(group, resource)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** 404 for a path that names no known resource. */
export function resourceNotFound(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** 409 AlreadyExists. */
export function alreadyExists(group: string, resource: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualifiedResource(group, resource)} "${name}" already exists`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** 409 Conflict (stale resourceVersion, failed precondition). */
export function conflict(
  group: string,
  resource: string,
  name: string,
  why = 'the object has been modified; please apply your changes to the latest version and try again',
): ApiError {
  return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(group, resource)} "${name}": ${why}`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** One field error, rendered like k8s.io/apimachinery field.Error. */
export interface FieldError {
  type: string;
  field: string;
  detail: string;
  value?: unknown;
  hasValue?: boolean;
  /** Pre-rendered value (Go %#v form). */ rendered?: string;
}

function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Renders a field error the way field.Error.Error() does. */
export function fieldErrorString(e: FieldError, withField = true): string {
  const parts: string[] = [];
  const head = withField && e.field ? `${e.field}: ` : '';
  parts.push(FIELD_ERROR_TYPE_TEXT[e.type] ?? e.type);
  if (e.rendered !== undefined) parts.push(`: ${e.rendered}`);
  else if (e.hasValue) parts.push(`: ${goValue(e.value)}`);
  if (e.detail) parts.push(`: ${e.detail}`);
  return head + parts.join('');
}

const FIELD_ERROR_TYPE_TEXT: Record<string, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueTypeInvalid: 'Invalid value',
  InternalError: 'Internal error',
};

/** 422 Invalid with field causes, message formatted like apierrors.NewInvalid. */
export function invalid(kind: string, group: string, name: string, errs: FieldError[]): ApiError {
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  const rendered = errs.map((e) => fieldErrorString(e));
  const msg = rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${msg}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: errs.map((e) => ({ reason: e.type, message: fieldErrorString(e, false), field: e.field })),
  });
}

/** 400 BadRequest. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(): ApiError {
  return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

/** 415 UnsupportedMediaType. */
export function unsupportedMediaType(accepted: string[]): ApiError {
  return new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

/** 413 RequestEntityTooLarge. */
export function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);
}

/** 401 Unauthorized. */
export function unauthorized(): ApiError {
  return new ApiError(401, 'Unauthorized', 'Unauthorized');
}

/** 403 Forbidden. */
export function forbidden(message: string, details?: StatusDetails): ApiError {
  return new ApiError(403, 'Forbidden', message, details);
}

/** 410 Expired (watch/continue from a compacted resourceVersion). */
export function expired(message: string): ApiError {
  return new ApiError(410, 'Expired', message);
}

/** 500 InternalError. */
export function internalError(message: string): ApiError {
  return new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
}

/** 429 TooManyRequests. */
export function tooManyRequests(): ApiError {
  return new ApiError(429, 'TooManyRequests', 'the server has received too many requests and has asked us to try again later', {
    retryAfterSeconds: 1,
  });
}

/** 406 NotAcceptable. */
export function notAcceptable(): ApiError {
  return new ApiError(406, 'NotAcceptable', 'only the following media types are accepted: application/json, application/yaml');
}
