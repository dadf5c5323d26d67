// The alert gate's effect: GET <url>/api/v1/alerts of a Prometheus-compatible endpoint. The result (alerts, or why
// they could not be read) feeds the plan's snapshot; the decision (gates.ts alertGate) stays pure.

/** One alert as the Prometheus API reports it. */
export interface Alert {
  labels: Record<string, string>;
  state: string;
  activeAt?: string;
}

/** What one query of the alerts endpoint gave. */
export type AlertsResult = { ok: true; alerts: Alert[] } | { ok: false; error: string };

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

/** Queries `<url>/api/v1/alerts`; every failure (network, status, shape, timeout) is a bounded error, never a throw. */
export async function queryAlerts(url: string, timeoutMs = ALERTS_QUERY_TIMEOUT_MS): Promise<AlertsResult> {
  let target: URL;
  try {
    target = new URL(`${url.replace(/\/+$/, '')}/api/v1/alerts`);
  } catch {
    return { ok: false, error: `${url.slice(0, 200)} is not a URL` };
  }
  try {
    const res = await fetch(target, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    const body = await res.text();
    if (!res.ok) return { ok: false, error: `GET ${target.href} answered HTTP ${res.status}` };
    if (body.length > MAX_BODY_BYTES) return { ok: false, error: `GET ${target.href}: response larger than ${MAX_BODY_BYTES} bytes` };
    return parseAlerts(body);
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000}s` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { ok: false, error: `GET ${target.href} failed: ${String(why).slice(0, 200)}` };
  }
}
