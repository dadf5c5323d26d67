// `inplace status campaign/<name>`: a campaign as a tree, waves -> clusters -> progress (once, or live with -w). The
// tree is built from the campaign's status and its plans' status only (never machines), so it stays one list call
// per frame at a thousand clusters.
import {
  CampaignLabels,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  type InPlaceUpdateCampaign,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../api/index.js';
import { call, type Connection } from './kube.js';
import { safeText } from './safe-text.js';
import { humanAge, renderTree, type TreeNode } from './tree.js';
import { CliError, ExitCode, flag, str, type Io, type ParsedArgs } from './verb.js';

/** A campaign object. */
export type CampaignObject = InPlaceUpdateCampaign & KubeObject;
type Plan = InPlaceUpdatePlan & KubeObject;

/** Clusters listed per wave before "... and N more" (running and failed ones first). */
const CLUSTERS_PER_WAVE = 12;

/** The campaign `name` in `namespace`, or looked up in every namespace (exactly one must match). */
export async function findCampaign(conn: Connection, name: string, namespace: string | undefined): Promise<CampaignObject> {
  if (namespace) {
    const c = await call(conn, InPlaceUpdateCampaigns, () => conn.client.get<CampaignObject>(InPlaceUpdateCampaigns, namespace, name));
    if (!c)
      throw new CliError(
        `InPlaceUpdateCampaign ${namespace}/${name} not found`,
        `list them: kubectl get inplaceupdatecampaigns -n ${namespace}`,
      );
    return c;
  }
  const all = await call(conn, InPlaceUpdateCampaigns, () => conn.client.list<CampaignObject>(InPlaceUpdateCampaigns, undefined));
  const found = all.items.filter((c) => c.metadata.name === name);
  if (found.length === 0)
    throw new CliError(`InPlaceUpdateCampaign ${name} not found in any namespace`, 'list them: kubectl get inplaceupdatecampaigns -A');
  if (found.length > 1)
    throw new CliError(
      `InPlaceUpdateCampaign ${name} exists in ${found.length} namespaces (${found.map((c) => c.metadata.namespace).join(', ')})`,
      'name the namespace with -n',
    );
  return found[0]!;
}

/** The campaign's plans (by its label; the controller ownerReference is the truth). */
export async function campaignPlans(conn: Connection, c: CampaignObject): Promise<Plan[]> {
  const list = await call(conn, InPlaceUpdatePlans, () =>
    conn.client.list<Plan>(InPlaceUpdatePlans, c.metadata.namespace, { labelSelector: `${CampaignLabels.campaign}=${c.metadata.name}` }),
  );
  return list.items.filter((p) => p.metadata.ownerReferences?.some((r) => r.controller && r.uid === c.metadata.uid));
}

const reasonOf = (o: { status?: { conditions?: { type: string; reason: string }[] } }): string =>
  o.status?.conditions?.find((x) => x.type === 'Ready')?.reason ?? '';

const planState = (p: Plan): string => {
  const s = p.status?.updateStatus ?? 'pending';
  if (s === 'updated' && (p.status?.machines ?? 0) > 0 && p.status?.skippedMachines === p.status?.machines) return 'at-target';
  return s;
};

/** Why a cluster failed, or why its plan holds (Valid=False: the plan's problems). */
const whyOf = (p: Plan): string => {
  const cond = (t: string) => p.status?.conditions?.find((x) => x.type === t);
  if (planState(p) === 'failed') return `: ${cond('Ready')?.message ?? ''}`;
  if (cond('Valid')?.status === 'False') return `: the plan is invalid: ${cond('Valid')?.message ?? ''}`;
  return '';
};

const RANK: Record<string, number> = { failed: 0, updating: 1, aborting: 1, pending: 2, aborted: 3, updated: 4, 'at-target': 5 };

/** The campaign as a tree: the campaign line, one node per wave with its clusters, then pending and skipped clusters. */
export function buildCampaignTree(c: CampaignObject, plans: readonly Plan[], now: Date): TreeNode {
  const st = c.status ?? {};
  const cl = st.clusters ?? {};
  const waves = new Map<number, Plan[]>();
  for (const p of plans) {
    const w = Number(p.metadata.labels?.[CampaignLabels.wave] ?? 0);
    waves.set(w, [...(waves.get(w) ?? []), p]);
  }
  const children: TreeNode[] = [];
  for (const [w, ps] of [...waves.entries()].sort((a, b) => a[0] - b[0])) {
    const sorted = [...ps].sort(
      (a, b) => (RANK[planState(a)] ?? 9) - (RANK[planState(b)] ?? 9) || a.spec.clusterName.localeCompare(b.spec.clusterName),
    );
    const counts = new Map<string, number>();
    for (const p of ps) counts.set(planState(p), (counts.get(planState(p)) ?? 0) + 1);
    const shown = sorted.slice(0, CLUSTERS_PER_WAVE).map((p): TreeNode => ({
      name: `Cluster ${p.spec.clusterName}`,
      status: planState(p),
      reason: reasonOf(p),
      age: humanAge(p.status?.startTime ?? p.metadata.creationTimestamp, now),
      message: `${p.status?.progress ?? '0/0'} machines${whyOf(p)}`,
      children: [],
    }));
    if (sorted.length > shown.length)
      shown.push({ name: `... ${sorted.length - shown.length} more clusters`, status: '', reason: '', age: '', message: '', children: [] });
    const waveDone = ps.every((p) => ['updated', 'failed', 'aborted'].includes(p.status?.updateStatus ?? ''));
    children.push({
      name: w === 0 ? 'Wave 0 (canary)' : `Wave ${w}`,
      status: waveDone ? 'done' : 'running',
      reason: '',
      age: humanAge(ps.map((p) => p.metadata.creationTimestamp ?? '').sort()[0], now),
      message: [...counts.entries()]
        .sort((a, b) => (RANK[a[0]] ?? 9) - (RANK[b[0]] ?? 9))
        .map(([s, n]) => `${n} ${s}`)
        .join(', '),
      children: shown,
    });
  }
  const pending = (cl.pending ?? 0) + (cl.waiting ?? 0);
  if (pending > 0)
    children.push({
      name: 'Not started',
      status: 'pending',
      reason: '',
      age: '',
      message: `${cl.pending ?? 0} pending${cl.waiting ? `, ${cl.waiting} waiting for another plan` : ''}${st.plannedWaves !== undefined && st.currentWave !== undefined ? `; ${Math.max(0, st.plannedWaves - st.currentWave - 1)} more waves planned` : ''}`,
      children: [],
    });
  for (const s of st.skippedClusters ?? [])
    children.push({ name: `Cluster ${s.name}`, status: 'skipped', reason: '', age: '', message: s.reason ?? '', children: [] });
  const m = st.machines ?? {};
  return {
    name: `InPlaceUpdateCampaign ${c.metadata.name}`,
    status: st.updateStatus ?? 'pending',
    reason: reasonOf(c),
    age: humanAge(c.metadata.creationTimestamp, now),
    message:
      `${st.phase ?? ''}${st.soakUntil ? ` until ${st.soakUntil}` : ''}${st.maintenanceWindow?.message ? ` (maintenance ${st.maintenanceWindow.message})` : ''}; clusters ${st.progress ?? '0/0'} done (${cl.updated ?? 0} updated, ${cl.skipped ?? 0} at target, ${cl.failed ?? 0} failed, ${cl.updating ?? 0} updating); ` +
      `machines ${machinesText(st.machineProgress, m)}${c.spec.paused ? '; PAUSED' : ''}`,
    children,
  };
}

/**
 * "updated/total" machines; while clusters still wait for their wave the total leaves them out (status.machineProgress
 * ends with "+"), and says so rather than look final.
 */
export function machinesText(progress: string | undefined, m: { updated?: number; total?: number }): string {
  const text = progress ?? `${m.updated ?? 0}/${m.total ?? 0}`;
  return text.endsWith('+') ? `${text.slice(0, -1)} so far (clusters not started yet are not counted)` : text;
}

/** The status frame of a campaign. */
export const campaignFrame = (c: CampaignObject, plans: readonly Plan[], now: Date, width: number): string =>
  `Namespace: ${safeText(c.metadata.namespace ?? '')}\n${renderTree(buildCampaignTree(c, plans, now), width)}`;

const isFinal = (c: CampaignObject): boolean => ['updated', 'failed', 'aborted'].includes(c.status?.updateStatus ?? '');

/** `inplace status campaign/<name>` (called by src/cli/status.ts). */
export async function runCampaignStatus(conn: Connection, name: string, args: ParsedArgs, io: Io): Promise<number> {
  let c = await findCampaign(conn, name, str(args, 'namespace'));
  const width = io.isTTY ? io.columns : 200;
  if (!flag(args, 'watch')) {
    io.out(campaignFrame(c, await campaignPlans(conn, c), new Date(), width));
    return ExitCode.ok;
  }
  let last = '';
  let drawn = 0;
  const ages = /\s+\d+[smhd](\d+[smh])?(?=\s)/g;
  for (;;) {
    const frame = campaignFrame(c, await campaignPlans(conn, c), new Date(), width);
    if (io.isTTY) {
      io.out(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${frame}`);
      drawn = frame.split('\n').length - 1;
    } else if (frame.replace(ages, '') !== last) {
      io.out(`${frame}\n`);
      last = frame.replace(ages, '');
    }
    // A halted campaign (failed) is not final for its operator (a higher budget resumes it), but -w ends there.
    if (isFinal(c)) return c.status?.updateStatus === 'updated' ? ExitCode.ok : ExitCode.failure;
    if (io.signal.aborted) return ExitCode.ok;
    await new Promise((r) => setTimeout(r, 1000));
    const next = await call(conn, InPlaceUpdateCampaigns, () =>
      conn.client.get<CampaignObject>(InPlaceUpdateCampaigns, c.metadata.namespace, c.metadata.name!),
    );
    if (!next) throw new CliError(`InPlaceUpdateCampaign ${c.metadata.namespace}/${c.metadata.name} was deleted`);
    c = next;
  }
}
