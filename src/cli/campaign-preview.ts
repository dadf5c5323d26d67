// `inplace preview -f campaign.yaml`: what a campaign would do, read-only. The campaign's own validation (the same
// snapshot and decisions as its controller: selection, canaries, budget, overlap, the template per cluster), its
// waves in order, and per cluster the plan preview of the plan the campaign would create (the plan controller's
// validation, sequence groups, machines and what changes, uncovered drift). The campaign's validation runs the
// controller's own per-cluster pre-start check (campaign-controller/prestart.ts: updater template objects, uncovered
// drift and the server-side dry-run of the commit on one machine per target), so NOT VALID here is Valid=False there.
import { resolve as resolvePath } from 'node:path';
import {
  Clusters,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  MachineDeployments,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../api/index.js';
import {
  campaignPlanName,
  decideCampaign,
  projectWaves,
  resolveIntOrPercent,
  type CampaignSnapshot,
} from '../campaign-controller/decide.js';
import { buildCampaignScope, type CampaignObject, type PlanObject } from '../campaign-controller/scope.js';
import { CampaignPrestart } from '../campaign-controller/prestart.js';
import { templateRefsOf } from '../rules/inputs.js';
import type { PlanPreview } from '../rules/preview.js';
import { call, connect, type Connection } from './kube.js';
import type { PreviewSnapshot } from '../rules/preview.js';
import { safeJson, safeText } from './safe-text.js';
import { CliError, ExitCode, str, type Io, type ParsedArgs } from './verb.js';
import { gatePolicyOf } from './alert-gate-policy.js';

/** Clusters previewed in detail by default (in rollout order); the rest are listed in their wave only. */
const DEFAULT_DETAIL = 25;

/** One cluster's preview, short. */
export interface ClusterPreview {
  cluster: string;
  wave: number;
  valid: boolean;
  problems: string[];
  machines: number;
  atTarget: number;
  targets: string[];
  changes: string[];
  uncovered: number;
}

/** The campaign preview (also the -o json output). */
export interface CampaignPreview {
  campaign: string;
  valid: boolean;
  problems: string[];
  selected: number;
  rollout: string;
  waves: { index: number; clusters: string[]; started: boolean }[];
  clusters: ClusterPreview[];
  notPreviewed: number;
}

const show = (v: unknown): string => {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? 'nothing');
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
};

/** A cluster's plan preview in short. */
export function summarizeClusterPreview(cluster: string, wave: number, r: PlanPreview): ClusterPreview {
  const machines = r.groups.flatMap((g) => g.targets.flatMap((t) => t.machines));
  return {
    cluster,
    wave,
    valid: r.valid,
    problems: r.problems,
    machines: machines.length,
    atTarget: machines.filter((m) => m.state === 'alreadyAtTarget').length,
    targets: r.groups.flatMap((g) => g.targets.map((t) => `${t.kind} ${t.name} x${t.machines.length} (seq ${g.sequence})`)),
    changes: [...new Set(r.coverage.map((c) => `${c.selectResource} ${c.path} -> ${show(c.value)} (${c.updater})`))],
    uncovered: r.uncovered.length,
  };
}

/** Renders the preview as text. */
export function renderCampaignPreview(p: CampaignPreview): string {
  const out: string[] = [];
  out.push(`InPlaceUpdateCampaign ${p.campaign}: ${p.selected} clusters selected, ${p.valid ? 'VALID' : 'NOT VALID'}`);
  for (const x of p.problems) out.push(`  ✗ ${x}`);
  out.push(`Rollout: ${p.rollout}`);
  out.push('');
  out.push('Waves (if every cluster succeeds):');
  for (const w of p.waves) {
    const names =
      w.clusters.length > 20 ? `${w.clusters.slice(0, 20).join(', ')} and ${w.clusters.length - 20} more` : w.clusters.join(', ');
    out.push(
      `  ${w.index === 0 ? 'wave 0 (canary)' : `wave ${w.index}`}${w.started ? ' [started]' : ''}: ${w.clusters.length} clusters: ${names}`,
    );
  }
  out.push('');
  out.push(
    `Per cluster (the plan the campaign would create${p.notPreviewed > 0 ? `; first ${p.clusters.length} in rollout order, ${p.notPreviewed} more not previewed (--max-clusters)` : ''}):`,
  );
  for (const c of p.clusters) {
    out.push(
      `  ${c.valid ? 'OK    ' : 'NOT OK'} ${c.cluster} (wave ${c.wave}): ${c.machines} machines${c.atTarget ? `, ${c.atTarget} already at target (skipped, no MachineUpdate)` : ''}; ${c.targets.join(', ')}`,
    );
    for (const ch of c.changes) out.push(`           changes ${ch}`);
    for (const x of c.problems.slice(0, 5)) out.push(`           ✗ ${x}`);
    if (c.problems.length > 5) out.push(`           ... and ${c.problems.length - 5} more problems`);
  }
  // Line by line: the line breaks are ours, while a newline inside a cluster name or a problem (untrusted text) stays
  // escaped on its own line.
  return `${out.map(safeText).join('\n')}\n`;
}

/** Reads the namespace the way the controller's informers would see it (list calls, and the controller's per-cluster checks). */
async function readCampaignScope(conn: Connection, c: CampaignObject, ns: string, docs: KubeObject[]): Promise<CampaignSnapshot> {
  const list = async <T extends KubeObject>(res: typeof Clusters): Promise<T[]> =>
    (await call(conn, res, () => conn.client.list<T>(res, ns))).items;
  const [clusters, mds, plans, campaigns] = await Promise.all([
    list(Clusters),
    list(MachineDeployments),
    list<PlanObject>(InPlaceUpdatePlans),
    list<CampaignObject>(InPlaceUpdateCampaigns),
  ]);
  // The campaign as applied now: if it exists already, its uid and status (its plans, its waves) count.
  // One object by name, or why its kind cannot be read (the control plane and the template lookups share it).
  const readNamed = async (apiGroup: string, kind: string, name: string): Promise<{ object?: KubeObject; notServed?: string }> => {
    let res;
    try {
      res = await conn.client.resolve(apiGroup, kind);
    } catch (err) {
      return { notServed: (err as Error).message };
    }
    const object = await call(conn, res, () => conn.client.get(res, ns, name));
    return object ? { object } : {};
  };
  const live = campaigns.find((x) => x.metadata.name === c.metadata.name);
  const subject: CampaignObject = live ? { ...c, metadata: { ...live.metadata }, status: live.status ?? {} } : c;
  return buildCampaignScope(subject, {
    now: () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    clusters: () => clusters,
    machineDeployments: () => mds,
    plans: () => plans,
    // A campaign not yet applied has no creation time: every existing one is older.
    campaigns: () => campaigns.filter((x) => x.metadata.name !== c.metadata.name),
    templateProblems: async (x) => {
      const t = x.spec.template;
      const refs = [...(t.controlPlane?.updaters ?? []), ...(t.machineDeployments ?? []).flatMap((g) => g.updaters ?? [])]
        .map((u) => u.updaterUpdateTemplateRef)
        .filter((r): r is NonNullable<typeof r> => !!r);
      const problems = new Set<string>();
      for (const r of refs) {
        try {
          await conn.client.resolve(r.apiVersion.includes('/') ? r.apiVersion.split('/')[0]! : '', r.kind);
        } catch {
          problems.add(`updater template kind ${r.kind} (${r.apiVersion}) is not served by the API server`);
        }
      }
      return [...problems];
    },
    controlPlane: async (_ns, apiGroup, kind, name) => readNamed(apiGroup, kind, name),
    async clusterChecks(x, toCheck) {
      const prestart = new CampaignPrestart(conn.client, {
        async template(_ns, apiGroup, kind, name) {
          // Templates in the same file count as present: they are applied together (as for a plan's preview).
          const inFile = docs.find(
            (d) =>
              d.kind === kind &&
              d.metadata?.name === name &&
              (d.apiVersion ?? '').split('/')[0] === apiGroup &&
              (d.metadata.namespace ?? ns) === ns,
          );
          return inFile ? { object: inFile } : readNamed(apiGroup, kind, name);
        },
      });
      const templates = await prestart.templates(
        ns,
        toCheck.flatMap((t) => templateRefsOf(t.plan)),
      );
      const checks = await prestart.check(ns, `${x.metadata.uid ?? ''}/${x.metadata.generation ?? 0}`, templates, toCheck);
      return { templates, checks };
    },
  });
}

/** `inplace preview -f campaign.yaml` (called by src/cli/preview.ts for a file with an InPlaceUpdateCampaign). */
export async function runCampaignPreview(
  { file, docs }: { file: string; docs: KubeObject[] },
  args: ParsedArgs,
  io: Io,
  output: 'text' | 'json',
  // The plan preview's snapshot reader (src/cli/preview.ts passes its own: one reader for plans and campaigns).
  readPreviewSnapshot: (conn: Connection, plan: InPlaceUpdatePlan & KubeObject, ns: string, docs: KubeObject[]) => Promise<PreviewSnapshot>,
): Promise<number> {
  const campaigns = docs.filter((d) => d.kind === 'InPlaceUpdateCampaign') as CampaignObject[];
  if (campaigns.length !== 1)
    throw new CliError(
      `"${file}" must contain exactly one InPlaceUpdateCampaign, found ${campaigns.length}`,
      'preview one campaign at a time',
    );
  const c = structuredClone(campaigns[0]!);
  if (!c.spec?.template) throw new CliError(`"${resolvePath(file)}": the campaign has no spec.template`, 'see examples/campaign.yaml');
  const maxRaw = str(args, 'max-clusters');
  const detail = maxRaw !== undefined ? Number(maxRaw) : DEFAULT_DETAIL;
  if (!Number.isInteger(detail) || detail < 0) throw new CliError(`--max-clusters must be a whole number, got "${maxRaw}"`);
  const conn = connect(args);
  try {
    const ns = c.metadata.namespace ?? str(args, 'namespace') ?? conn.contextNamespace ?? 'default';
    c.metadata.namespace = ns;
    c.metadata.name ??= 'campaign';
    const snap = await readCampaignScope(conn, c, ns, docs);
    const gatePolicy = gatePolicyOf(args);
    if (gatePolicy) snap.alertGatePolicy = gatePolicy;
    const d = decideCampaign(snap);
    const waves = projectWaves(snap);
    const waveOf = new Map(waves.flatMap((w) => w.clusters.map((n) => [n, w.index] as const)));
    const { buildPlanSpec } = await import('../campaign-controller/decide.js');
    const { previewPlan } = await import('../rules/preview.js');
    const order = waves.filter((w) => !w.started).flatMap((w) => w.clusters);
    const clusters: ClusterPreview[] = [];
    for (const name of order.slice(0, detail)) {
      const view = snap.selected.find((s) => s.name === name);
      if (!view) continue;
      const { spec } = buildPlanSpec(c.spec.template, view, c.spec);
      const plan: InPlaceUpdatePlan & KubeObject = {
        apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
        kind: 'InPlaceUpdatePlan',
        metadata: { name: campaignPlanName(c.metadata.name, name), namespace: ns },
        spec,
      };
      const s = await readPreviewSnapshot(conn, plan, ns, docs);
      // The commit dry-run of the campaign's check (one machine per target) counts for the cluster's preview too.
      const pre = view.objects?.prestart;
      if (pre) s.dryRunProblems = pre.schemaProblems;
      if (gatePolicy) s.alertGatePolicy = gatePolicy;
      const cp = summarizeClusterPreview(name, waveOf.get(name) ?? 0, previewPlan(plan, s));
      if (view.checkError) cp.problems.push(view.checkError);
      cp.valid = cp.valid && !view.checkError;
      clusters.push(cp);
    }
    const r = c.spec.rollout ?? {};
    const n = snap.selected.length;
    const preview: CampaignPreview = {
      campaign: `${ns}/${c.metadata.name}`,
      valid: d.problems.length === 0 && d.checking.length === 0 && clusters.every((x) => x.valid),
      problems: [...d.problems, ...d.checking],
      selected: n,
      rollout: [
        r.canary?.clusterNames?.length
          ? `canaries ${r.canary.clusterNames.join(', ')}`
          : `canaries ${resolveIntOrPercent(r.canary?.count, n, 0, 'up')}${typeof r.canary?.count === 'string' ? ` (${r.canary.count})` : ''}`,
        `waves of at most ${Math.max(1, resolveIntOrPercent(r.maxConcurrentClusters, n, 1, 'down'))}${typeof r.maxConcurrentClusters === 'string' ? ` (${r.maxConcurrentClusters})` : ''}`,
        `soak ${r.soakSeconds ?? 0}s after the canaries and each wave`,
        `failure budget ${d.failureBudget}${typeof r.failureBudget === 'string' ? ` (${r.failureBudget})` : ''} failed clusters (one more halts)`,
        `order ${r.orderBy ? `by ${r.orderBy}, then ` : 'by '}name`,
      ].join('; '),
      waves,
      clusters,
      notPreviewed: Math.max(0, order.length - clusters.length),
    };
    io.out(output === 'json' ? `${safeJson(preview)}\n` : renderCampaignPreview(preview));
    return preview.valid ? ExitCode.ok : ExitCode.failure;
  } finally {
    conn.client.close();
  }
}
