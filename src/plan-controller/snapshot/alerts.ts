// The alert gate's effect: GET <url>/api/v1/alerts of a Prometheus-compatible endpoint. The result (alerts, or why
// they could not be read) feeds the plan's snapshot; the decision (gates.ts alertGate) stays pure. node:http(s), not
// fetch: Node's fetch cannot trust a CA of the Secret's (ca.crt) for one request, and node:http never follows a
// redirect (a 3xx is an error here), so credentials never travel to an origin the operator's policy did not allow.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { alertGateRefusals, alertsTarget, credentialsLabelRefusal, type AlertGatePolicy } from '../../api/alert-gate-policy.js';
import type { Alert, AlertsRead, AlertsResult } from '../../rules/inputs.js';

/** How long one query may take: a hanging endpoint must not hold the plan's worker. */
export const ALERTS_QUERY_TIMEOUT_MS = 5_000;
/** Largest response read: a Prometheus with thousands of alerts answers in a few MiB. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

const isRecordOfStrings = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/** Parses an /api/v1/alerts body; a shape other than Prometheus's is an error naming what is wrong. */
export function parseAlerts(body: string): AlertsResult {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, error: `not a Prometheus alerts API: the response is not JSON (${JSON.stringify(body.slice(0, 60))})` };
  }
  const o = json as { status?: unknown; data?: { alerts?: unknown } };
  if (o?.status !== 'success' || !Array.isArray(o.data?.alerts))
    return { ok: false, error: 'not a Prometheus alerts API: expected {"status":"success","data":{"alerts":[…]}}' };
  const alerts: Alert[] = [];
  for (const a of o.data.alerts as unknown[]) {
    const x = a as { labels?: unknown; state?: unknown; activeAt?: unknown };
    if (!isRecordOfStrings(x?.labels) || typeof x.state !== 'string')
      return { ok: false, error: 'not a Prometheus alerts API: an alert without string labels and state' };
    alerts.push({ labels: x.labels, state: x.state, ...(typeof x.activeAt === 'string' ? { activeAt: x.activeAt } : {}) });
  }
  return { ok: true, alerts };
}

/** How the alerts endpoint is reached: credentials and a TLS CA from spec.alertGate.secretRef. */
export interface AlertsAccess {
  /** An Authorization header value (Bearer … or Basic …). */
  authorization?: string;
  /** PEM CA bundle trusted for an https endpoint (instead of the system's). */
  ca?: string;
}

/** Largest value read from the Secret (a CA bundle of a few certificates is a few KiB). */
const MAX_SECRET_VALUE_BYTES = 256 * 1024;

/**
 * What spec.alertGate.secretRef's Secret gives (its `data`, base64 as the API serves it): token (bearer) or
 * username + password (basic), and/or ca.crt; a string names what is missing or wrong. Pure.
 */
export function accessFromSecret(secretName: string, data: Record<string, string> | undefined, url: string): AlertsAccess | string {
  const value = (k: string): string | undefined => {
    const b64 = data?.[k];
    if (typeof b64 !== 'string' || b64 === '') return undefined;
    return Buffer.from(b64, 'base64').toString('utf8');
  };
  const token = value('token');
  const username = value('username');
  const password = value('password');
  const ca = value('ca.crt');
  const name = `Secret ${secretName}`;
  for (const [k, v] of [
    ['token', token],
    ['username', username],
    ['password', password],
    ['ca.crt', ca],
  ] as const)
    if (v !== undefined && v.length > MAX_SECRET_VALUE_BYTES) return `${name}: key ${k} is larger than ${MAX_SECRET_VALUE_BYTES} bytes`;
  if (token === undefined && username === undefined && password === undefined && ca === undefined)
    return `${name} has none of the keys token, username/password, ca.crt`;
  if (token !== undefined && (username !== undefined || password !== undefined))
    return `${name} has both token and username/password: keep one`;
  if ((username === undefined) !== (password === undefined))
    return `${name} has key ${username === undefined ? 'password' : 'username'} but not key ${username === undefined ? 'username' : 'password'}`;
  if (token !== undefined && /[\r\n]/.test(token.trim())) return `${name}: key token spans several lines`;
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) return `${name}: key ca.crt is not a PEM certificate`;
  if (ca !== undefined && !url.startsWith('https:')) return `${name} has key ca.crt but spec.alertGate.url is not https`;
  const access: AlertsAccess = {};
  if (token !== undefined) access.authorization = `Bearer ${token.trim()}`;
  if (username !== undefined && password !== undefined)
    access.authorization = `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
  if (ca !== undefined) access.ca = ca;
  return access;
}

/** The reason of an HTTP error answer, with a hint where the Secret is the likely cause. */
function httpError(href: string, status: number): string {
  const hint =
    status === 401 || status === 403
      ? ' (check the credentials in spec.alertGate.secretRef)'
      : status >= 300 && status < 400
        ? ' (redirects are not followed: set spec.alertGate.url to the endpoint itself)'
        : '';
  return `GET ${href} answered HTTP ${status}${hint}`;
}

/** A GET of `target` with `access`, its body capped at MAX_BODY_BYTES; rejects on network and TLS errors and timeout. */
function get(target: URL, access: AlertsAccess, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (access.authorization) headers['authorization'] = access.authorization;
    const options = { method: 'GET', headers, signal: AbortSignal.timeout(timeoutMs), ...(access.ca ? { ca: access.ca } : {}) };
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        size += b.length;
        if (size > MAX_BODY_BYTES) {
          res.destroy();
          reject(new Error(`response larger than ${MAX_BODY_BYTES} bytes`));
        } else chunks.push(b);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Queries `<url>/api/v1/alerts` (with `access`: credentials, CA); every failure (network, TLS, status, shape,
 * timeout) is a bounded error, never a throw.
 */
export async function queryAlerts(url: string, timeoutMs = ALERTS_QUERY_TIMEOUT_MS, access: AlertsAccess = {}): Promise<AlertsResult> {
  // The same target the policy check judged (alert-gate-policy.ts alertsTarget): what is checked is what is called.
  const target = alertsTarget(url);
  if (typeof target === 'string') return { ok: false, error: target };
  try {
    const res = await get(target, access, timeoutMs);
    if (res.status < 200 || res.status > 299) return { ok: false, error: httpError(target.href, res.status) };
    return parseAlerts(res.body);
  } catch (err) {
    const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
    const why =
      e.name === 'TimeoutError' || e.name === 'AbortError'
        ? `no answer within ${timeoutMs / 1000}s`
        : (e.code ?? e.cause?.code ?? e.cause?.message ?? e.message);
    const tls = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(String(why))
      ? ' (TLS: is ca.crt in spec.alertGate.secretRef the CA of the endpoint?)'
      : '';
    return { ok: false, error: `GET ${target.href} failed: ${String(why).slice(0, 200)}${tls}` };
  }
}

/** A Secret as alerts.ts reads it: its labels (the opt-in) and data. */
export type GateSecret = { metadata?: { labels?: Record<string, string> }; data?: Record<string, string> };

/**
 * Reads the plan's alert gate. First the operator's policy (`policy`, alert-gate-policy.ts): a url or Secret it does not
 * allow is refused before anything is read or sent. Then spec.alertGate.secretRef's Secret with a live GET (see
 * docs/operations.md: the plan controller may get the Secrets the policy names, not list or watch them), refused
 * unless it carries the opt-in label; then the endpoint. A missing Secret or key is not queried around: the result
 * names it (fail closed).
 */
export async function readAlerts(
  getSecret: (namespace: string, name: string) => Promise<GateSecret | undefined>,
  namespace: string,
  spec: { url: string; secretRef?: { name: string } },
  policy: AlertGatePolicy | undefined,
): Promise<AlertsRead> {
  const refused = alertGateRefusals(policy, spec, namespace, 'spec.alertGate');
  if (refused.length > 0) return { ok: false, error: refused.join('; '), refused };
  let access: AlertsAccess = {};
  if (spec.secretRef) {
    const name = `${namespace}/${spec.secretRef.name}`;
    let secret: GateSecret | undefined;
    try {
      secret = await getSecret(namespace, spec.secretRef.name);
    } catch (err) {
      const problem = `spec.alertGate.secretRef: Secret ${name} could not be read: ${String((err as Error).message).slice(0, 200)}`;
      return { ok: false, error: problem, secretProblem: problem };
    }
    if (!secret) {
      const problem = `spec.alertGate.secretRef: Secret ${name} not found`;
      return { ok: false, error: problem, secretProblem: problem };
    }
    // The opt-in label before the data is looked at: a Secret its owner did not mark is never sent anywhere.
    const unlabelled = credentialsLabelRefusal(name, secret.metadata?.labels, 'spec.alertGate');
    if (unlabelled) return { ok: false, error: unlabelled, refused: [unlabelled] };
    const a = accessFromSecret(name, secret.data, spec.url);
    if (typeof a === 'string')
      return { ok: false, error: `spec.alertGate.secretRef: ${a}`, secretProblem: `spec.alertGate.secretRef: ${a}` };
    access = a;
  }
  return queryAlerts(spec.url, ALERTS_QUERY_TIMEOUT_MS, access);
}
