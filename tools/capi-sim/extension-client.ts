// How Cluster API's runtime client reaches a runtime extension (internal/runtime/client), for the simulator's in-place
// flow: ExtensionConfig → discovery (handlers written to status.handlers as `<handler>.<extensionconfig>`), then hook
// calls as HTTPS POSTs of the request JSON to `/hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook>/<handler>?timeout=…`,
// trusting spec.clientConfig.caBundle, with the handler's timeout and failurePolicy.
import { request as httpsRequest } from 'node:https';
import type { KubeObject, ResourceType } from '../../src/api/index.js';

/** runtime.cluster.x-k8s.io ExtensionConfig (cluster-scoped; v1beta2 stored, v1alpha1 served with the same fields used here). */
export const ExtensionConfigs: ResourceType = {
  group: 'runtime.cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'extensionconfigs',
  kind: 'ExtensionConfig',
  namespaced: false,
};

/** The group/version of the Runtime SDK hooks. */
export const HOOKS_API_VERSION = 'hooks.runtime.cluster.x-k8s.io/v1alpha1';
/** Upstream's discovery timeout (defaultDiscoveryTimeout). */
export const DISCOVERY_TIMEOUT_SECONDS = 10;
/** Upstream's default handler timeout (DefaultHandlersTimeoutSeconds). */
export const DEFAULT_HANDLER_TIMEOUT_SECONDS = 10;

/** ExtensionConfig spec.clientConfig. */
export interface ClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  /** Base64 of the PEM CA bundle. */
  caBundle?: string;
}

/** A handler as discovery registers it in ExtensionConfig status.handlers. */
export interface ExtensionHandler {
  /** `<handler name>.<ExtensionConfig name>`. */
  name: string;
  requestHook: { apiVersion: string; hook: string };
  timeoutSeconds?: number;
  failurePolicy: 'Fail' | 'Ignore';
}

/** runtime.cluster.x-k8s.io ExtensionConfig, the fields the simulator uses. */
export interface ExtensionConfig extends KubeObject {
  spec: { clientConfig: ClientConfig; settings?: Record<string, string> };
  status?: { handlers?: ExtensionHandler[]; conditions?: unknown[] };
}

/** A handler ready to call: where, and under which registration. */
export interface Registration {
  extensionConfig: string;
  handler: ExtensionHandler;
  clientConfig: ClientConfig;
  settings?: Record<string, string>;
}

/** The extension could not be reached or answered badly (upstream errCallingExtensionHandler: failurePolicy applies). */
export class CallExtensionError extends Error {
  override readonly name = 'CallExtensionError';
}
/** The extension answered with status Failure (or an unknown status): never subject to failurePolicy. */
export class ExtensionFailureError extends Error {
  override readonly name = 'ExtensionFailureError';
  constructor(
    message: string,
    /** The extension's own message. */
    readonly extensionMessage: string,
  ) {
    super(message);
  }
}
/** The discovery answer was invalid (upstream defaultAndValidateDiscoveryResponse). */
export class DiscoveryInvalidError extends Error {
  override readonly name = 'DiscoveryInvalidError';
}

/** catalog.GVHToPath: `/hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook lowercased>[/<handler lowercased>]`. */
export const hookPath = (hook: string, handler?: string): string =>
  `/${HOOKS_API_VERSION}/${hook.toLowerCase()}${handler ? `/${handler.toLowerCase()}` : ''}`;

/** urlForExtension: the URL, or the Service's https URL, with the hook's path appended; plain http is refused. */
export function hookUrl(config: ClientConfig, hook: string, handler?: string): URL {
  let u: URL;
  if (config.service) {
    const s = config.service;
    u = new URL(`https://${s.name}.${s.namespace}.svc${s.port !== undefined ? `:${s.port}` : ''}`);
    if (s.path) u.pathname = s.path;
  } else {
    if (!config.url) throw new CallExtensionError('failed to compute URL: at least one of service and url should be defined in config');
    u = new URL(config.url);
    if (u.protocol !== 'https:')
      throw new CallExtensionError(`failed to compute URL: expected https scheme, got ${u.protocol.replace(':', '')}`);
  }
  u.pathname = (u.pathname.replace(/\/+$/, '') + hookPath(hook, handler)).replace(/\/{2,}/g, '/');
  return u;
}

/** Go's time.Duration String() for whole seconds (the `timeout` query parameter upstream adds). */
const goDuration = (seconds: number): string => `${seconds}s`;

/** One HTTPS POST of a hook request, as upstream's httpCall: 200 with a JSON body or a CallExtensionError. */
export async function postHook(
  config: ClientConfig,
  hook: string,
  handler: string | undefined,
  body: unknown,
  timeoutSeconds: number,
): Promise<unknown> {
  const url = hookUrl(config, hook, handler);
  if (timeoutSeconds > 0) url.searchParams.set('timeout', goDuration(timeoutSeconds));
  const ca = config.caBundle ? Buffer.from(config.caBundle, 'base64') : undefined;
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': payload.length },
        ...(ca ? { ca } : {}),
        ...(timeoutSeconds > 0 ? { timeout: timeoutSeconds * 1000 } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new CallExtensionError(`http call failed: ${e.message}`)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) {
            const shown = text.length > 512 ? `${text.slice(0, 512)}...` : text;
            reject(
              new CallExtensionError(
                `http call failed: got response with status code ${res.statusCode ?? 0} != 200: response : ${JSON.stringify(shown)}`,
              ),
            );
            return;
          }
          try {
            resolve(JSON.parse(text));
          } catch (e) {
            reject(new CallExtensionError(`http call failed: failed to decode response: ${(e as Error).message}`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('http request timeout expired')));
    req.on('error', (e) => reject(new CallExtensionError(`http call failed: ${e.message}`)));
    req.end(payload);
  });
}

interface DiscoveryHandler {
  name?: string;
  requestHook?: { apiVersion?: string; hook?: string };
  timeoutSeconds?: number;
  failurePolicy?: string;
}

/**
 * Discover: POSTs a DiscoveryRequest, requires status Success, defaults failurePolicy (Fail) and timeoutSeconds (10),
 * validates them (0–30 s, Ignore|Fail) and returns the handlers as status.handlers records them.
 */
export async function discover(ec: ExtensionConfig): Promise<ExtensionHandler[]> {
  const name = ec.metadata.name ?? '';
  const resp = (await postHook(
    ec.spec.clientConfig,
    'Discovery',
    undefined,
    { apiVersion: HOOKS_API_VERSION, kind: 'DiscoveryRequest' },
    DISCOVERY_TIMEOUT_SECONDS,
  )) as { status?: string; message?: string; handlers?: DiscoveryHandler[] };
  if (resp.status !== 'Success')
    throw new ExtensionFailureError(
      `failed to discover extension ${JSON.stringify(name)}: got ${resp.status ?? 'no'} status with message: ${resp.message ?? ''}`,
      resp.message ?? '',
    );
  const problems: string[] = [];
  const seen = new Set<string>();
  const handlers = (resp.handlers ?? []).map((h): ExtensionHandler => {
    const timeoutSeconds = h.timeoutSeconds ?? DEFAULT_HANDLER_TIMEOUT_SECONDS;
    const failurePolicy = h.failurePolicy ?? 'Fail';
    const hname = h.name ?? '';
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(hname))
      problems.push(`handler name ${JSON.stringify(hname)} is not a valid DNS-1123 label`);
    if (seen.has(hname)) problems.push(`duplicate handler name ${hname}`);
    seen.add(hname);
    if (timeoutSeconds < 0 || timeoutSeconds > 30)
      problems.push(`handler ${hname} timeoutSeconds ${timeoutSeconds} must be between 0 and 30`);
    if (failurePolicy !== 'Fail' && failurePolicy !== 'Ignore')
      problems.push(`handler ${hname} failurePolicy ${failurePolicy} must equal "Ignore" or "Fail"`);
    if (!h.requestHook?.hook || !h.requestHook.apiVersion) problems.push(`handler ${hname} has no requestHook`);
    return {
      name: `${hname}.${name}`,
      requestHook: { apiVersion: h.requestHook?.apiVersion ?? '', hook: h.requestHook?.hook ?? '' },
      timeoutSeconds,
      failurePolicy: failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
    };
  });
  if (problems.length > 0) throw new DiscoveryInvalidError(`failed to discover extension ${JSON.stringify(name)}: ${problems.join('; ')}`);
  return handlers;
}

/** GetAllExtensions: the registered handlers of `hook` across ExtensionConfigs (namespaceSelector not modelled). */
export function registrationsFor(configs: readonly ExtensionConfig[], hook: string): Registration[] {
  return configs
    .filter((ec) => !ec.metadata.deletionTimestamp)
    .flatMap((ec) =>
      (ec.status?.handlers ?? [])
        .filter((h) => h.requestHook.hook === hook)
        .map((handler) => ({
          extensionConfig: ec.metadata.name ?? '',
          handler,
          clientConfig: ec.spec.clientConfig,
          ...(ec.spec.settings ? { settings: ec.spec.settings } : {}),
        })),
    )
    .sort((a, b) => a.handler.name.localeCompare(b.handler.name));
}

/** A hook answer: CommonResponse (status, message) plus the hook's own fields. */
export interface HookResponse {
  status?: string;
  message?: string;
  [field: string]: unknown;
}

/**
 * CallExtension: adds the registration's settings and the request's kind, POSTs to the handler's path with its timeout;
 * a failed call (unreachable, timeout, non-200, bad JSON) counts as Success under failurePolicy Ignore and is an error
 * under Fail; an answer whose status is not Success is always an ExtensionFailureError.
 */
export async function callExtension(reg: Registration, hook: string, request: Record<string, unknown>): Promise<HookResponse> {
  const handlerName = reg.handler.name.endsWith(`.${reg.extensionConfig}`)
    ? reg.handler.name.slice(0, -(reg.extensionConfig.length + 1))
    : reg.handler.name;
  const settings = { ...(reg.settings ?? {}), ...((request['settings'] as Record<string, string> | undefined) ?? {}) };
  const body = {
    ...request,
    apiVersion: HOOKS_API_VERSION,
    kind: `${hook}Request`,
    ...(Object.keys(settings).length > 0 ? { settings } : {}),
  };
  let resp: HookResponse;
  try {
    resp = (await postHook(
      reg.clientConfig,
      hook,
      handlerName,
      body,
      reg.handler.timeoutSeconds ?? DEFAULT_HANDLER_TIMEOUT_SECONDS,
    )) as HookResponse;
  } catch (err) {
    if (err instanceof CallExtensionError && reg.handler.failurePolicy === 'Ignore') return { status: 'Success', message: '' };
    throw err;
  }
  if (resp.status !== 'Success') {
    const what = resp.status === 'Failure' ? 'got failure response' : `got unknown response status ${JSON.stringify(resp.status ?? '')}`;
    throw new ExtensionFailureError(
      `failed to call extension handler ${JSON.stringify(reg.handler.name)}: ${what} with message: ${resp.message ?? ''}`,
      resp.message ?? '',
    );
  }
  return resp;
}
