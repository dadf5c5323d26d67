// The Runtime SDK HTTPS surface as Cluster API calls it (internal/runtime/client upstream): POST with a JSON body to
// /hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery and /hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook>/<handler>,
// answered with the hook's response object. TLS always (CAPI only calls https): a certificate directory with
// tls.crt/tls.key (cert-manager's Secret mounted), else a self-signed certificate whose PEM is the caBundle.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Logger } from '../runtime/index.js';
import { selfSignedCertificate } from '../runtime/tls.js';
import { badRequestMessage, requestProblems } from './validate.js';
import {
  CanUpdateMachineRequestSchema,
  CanUpdateMachineSetRequestSchema,
  DiscoveryRequestSchema,
  HOOKS_API_VERSION,
  HandlerNames,
  Hooks,
  UpdateMachineRequestSchema,
  hookPath,
  type CommonResponse,
  type DiscoveryResponse,
  type HookName,
} from './hooks.js';

/** Seconds CAPI waits for each handler (upstream's default; its limit is 30). */
export const HANDLER_TIMEOUT_SECONDS = 10;
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The handlers the server dispatches to (controller.ts, bound to the component's dependencies). */
export interface HookHandlers {
  CanUpdateMachine(req: z.infer<typeof CanUpdateMachineRequestSchema>): Promise<CommonResponse> | CommonResponse;
  CanUpdateMachineSet(req: z.infer<typeof CanUpdateMachineSetRequestSchema>): Promise<CommonResponse> | CommonResponse;
  UpdateMachine(req: z.infer<typeof UpdateMachineRequestSchema>): Promise<CommonResponse> | CommonResponse;
  /** Called after each answer (metrics). */
  observe?(hook: HookName, res: CommonResponse, seconds: number): void;
}

/** Where and how to serve. */
export interface ServerOptions {
  port: number;
  bindAddress?: string;
  /** Directory holding tls.crt and tls.key; a self-signed certificate when absent. */
  certDir?: string;
  /** Extra DNS names of the self-signed certificate (e.g. the Service's), besides localhost and 127.0.0.1. */
  dnsNames?: string[];
}

/** A running extension server. */
export interface ExtensionServer {
  /** The bound port (the real one when asked for 0). */
  port: number;
  /** https://<host>:<port> to put in an ExtensionConfig's spec.clientConfig.url. */
  url: string;
  /** The PEM CAPI must trust (spec.clientConfig.caBundle, base64 of it): the self-signed certificate or tls.crt. */
  caBundle: string;
  close(): Promise<void>;
}

/** Reading the serving certificate failed. */
export class LoadCertificateError extends Error {
  constructor(dir: string, cause: unknown) {
    super(`load serving certificate from ${dir} (tls.crt, tls.key): ${(cause as Error).message}`, { cause });
    this.name = 'LoadCertificateError';
  }
}

/** The discovery answer: the three in-place hooks, upstream's default timeout, failurePolicy Fail. */
export function discoveryResponse(): DiscoveryResponse {
  const handler = (hook: keyof typeof HandlerNames) => ({
    name: HandlerNames[hook],
    requestHook: { apiVersion: HOOKS_API_VERSION, hook },
    timeoutSeconds: HANDLER_TIMEOUT_SECONDS,
    // Fail, as upstream defaults: an extension that cannot answer must not be read as "nothing to cover" silently.
    failurePolicy: 'Fail' as const,
  });
  return {
    apiVersion: HOOKS_API_VERSION,
    kind: 'DiscoveryResponse',
    status: 'Success',
    handlers: [handler('CanUpdateMachine'), handler('CanUpdateMachineSet'), handler('UpdateMachine')],
  };
}

const failure = (hook: string, message: string): CommonResponse & { retryAfterSeconds?: number } => ({
  apiVersion: HOOKS_API_VERSION,
  kind: `${hook}Response`,
  status: 'Failure',
  message,
  ...(hook === Hooks.updateMachine ? { retryAfterSeconds: 0 } : {}),
});

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    const b = c as Buffer;
    size += b.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const send = (res: ServerResponse, code: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

/** A hook request the extension cannot read (not JSON, another type, a v1beta1 object): answered Failure, nothing done. */
export class BadHookRequestError extends Error {
  constructor(hook: HookName, problems: readonly string[]) {
    super(badRequestMessage(hook, problems));
    this.name = 'BadHookRequestError';
  }
}

function parseBody(hook: HookName, text: string): unknown {
  try {
    return JSON.parse(text || '{}') as unknown;
  } catch (err) {
    throw new BadHookRequestError(hook, [`the body is not JSON (${(err as Error).message})`]);
  }
}

/** Why a path has no handler, naming the hook API version served when the path asks for another (as upstream: 404). */
export function notServed(path: string): string {
  const m = /^\/hooks\.runtime\.cluster\.x-k8s\.io\/([^/]+)\//.exec(path);
  if (m && `hooks.runtime.cluster.x-k8s.io/${m[1]}` !== HOOKS_API_VERSION)
    return `no handler at ${path}: hook API version ${m[1]} is not served; this extension serves ${HOOKS_API_VERSION}`;
  return `no handler at ${path}`;
}

/** The route of a path: the hook, and whether the handler name is one announced. */
function route(path: string): HookName | undefined {
  if (path === hookPath(Hooks.discovery)) return Hooks.discovery;
  for (const hook of [Hooks.canUpdateMachine, Hooks.canUpdateMachineSet, Hooks.updateMachine] as const) {
    if (path === hookPath(hook, HandlerNames[hook])) return hook;
  }
  return undefined;
}

/** Starts the HTTPS server. */
export async function startExtensionServer(opts: ServerOptions, handlers: HookHandlers, log: Logger): Promise<ExtensionServer> {
  let tls: { key: string; cert: string };
  if (opts.certDir) {
    try {
      tls = { cert: readFileSync(join(opts.certDir, 'tls.crt'), 'utf8'), key: readFileSync(join(opts.certDir, 'tls.key'), 'utf8') };
    } catch (err) {
      throw new LoadCertificateError(opts.certDir, err);
    }
  } else tls = await selfSignedCertificate('inplace-runtime-extension', opts.dnsNames ?? []);
  const server: Server = createServer({ key: tls.key, cert: tls.cert, minVersion: 'TLSv1.2' }, (req, res) => {
    void serve(req, res);
  });
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const hook = route(path);
    if (!hook) return send(res, 404, { message: notServed(path) });
    if (req.method !== 'POST') return send(res, 405, { message: 'hooks are called with POST' });
    const started = process.hrtime.bigint();
    let answer: CommonResponse;
    try {
      const body = parseBody(hook, await readBody(req));
      const problems = requestProblems(hook, body);
      if (problems.length > 0) throw new BadHookRequestError(hook, problems);
      if (hook === Hooks.discovery) {
        DiscoveryRequestSchema.parse(body);
        answer = discoveryResponse();
      } else if (hook === Hooks.canUpdateMachine) answer = await handlers.CanUpdateMachine(CanUpdateMachineRequestSchema.parse(body));
      else if (hook === Hooks.canUpdateMachineSet)
        answer = await handlers.CanUpdateMachineSet(CanUpdateMachineSetRequestSchema.parse(body));
      else answer = await handlers.UpdateMachine(UpdateMachineRequestSchema.parse(body));
    } catch (err) {
      log.warn({ hook, err: (err as Error).message }, 'hook call failed');
      answer = failure(hook, (err as Error).message);
    }
    handlers.observe?.(hook, answer, Number(process.hrtime.bigint() - started) / 1e9);
    send(res, 200, answer);
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.bindAddress, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = !opts.bindAddress || opts.bindAddress === '0.0.0.0' || opts.bindAddress === '::' ? '127.0.0.1' : opts.bindAddress;
  log.info({ port, certDir: opts.certDir ?? '(self-signed)' }, 'runtime extension serving');
  return {
    port,
    url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caBundle: tls.cert,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
