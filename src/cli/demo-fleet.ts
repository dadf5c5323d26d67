// `inplace demo --fleet` (npm start -- --fleet): a fleet campaign on the local API server. 24 simulated clusters of
// three shapes (single-node, three-node, one control-plane machine with two workers) in namespace fleet-edge, in
// three rollout rings (label rollout-ring), updated by examples/campaign.yaml: two canaries, a soak, then waves of at
// most 25% of the clusters. The campaign controller creates one ordinary plan per cluster; the plan controller, the
// machine task controller and the reference updater do the work. Ends with a summary per wave.
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  CampaignLabels,
  InPlaceUpdateCampaigns,
  InPlaceUpdatePlans,
  Namespaces,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../api/index.js';
import type { RestClient } from '../runtime/index.js';
import { campaignFrame, type CampaignObject } from './campaign-status.js';
import { demoDashboard } from './dashboard.js';
import {
  INTERRUPTED,
  demoControllerArgs,
  freePort,
  reportExit,
  serveOn,
  startComponents,
  startLocalPlatform,
  stayUp,
  watchExits,
} from './demo-platform.js';
import type { ComponentSpec, LocalPlatform } from './demo-platform.js';
import { applyFile, createOrReplace, readYamlDocs } from './install.js';
import { secs } from './progress.js';
import { ExitCode, type Io } from './verb.js';

/** The fleet of the demo. */
export const FLEET = { namespace: 'fleet-edge', clusters: 24, version: 'v1.30.0', label: { fleet: 'edge' } } as const;

/** Options of the fleet demo. */
export interface FleetDemoOptions {
  root: string;
  keepRunning: boolean;
  stateOut: string | undefined;
  timeoutMs: number;
  workDir: string;
  /** The campaign file (default examples/campaign.yaml). */
  campaignPath?: string;
  /** The write policy file of the controllers that take one (`--write-policy`). */
  writePolicy?: string;
  /** Also start the dashboard (`--dashboard`). */
  dashboard?: boolean;
}

/** Follows the campaign until it ends (its last state) or the demo must stop (the exit code), printing each change. */
async function followCampaign(
  p: LocalPlatform,
  io: Io,
  f: { name: string; started: number; timeoutMs: number },
): Promise<CampaignObject | number> {
  const exited = watchExits(p.children);
  const deadline = Date.now() + f.timeoutMs;
  let lastLine = '';
  for (;;) {
    if (io.signal.aborted) {
      p.say('\ninterrupted: stopping every process');
      return INTERRUPTED;
    }
    const dead = exited();
    if (dead) {
      reportExit(dead, io);
      return ExitCode.failure;
    }
    const c = await p.client.get<CampaignObject>(InPlaceUpdateCampaigns, FLEET.namespace, f.name);
    const st = c?.status;
    if (c && st) {
      const cl = st.clusters ?? {};
      const line = `${secs(Date.now() - f.started).padStart(6)}  ${(st.phase ?? '').padEnd(10)} clusters ${st.progress ?? ''} done: ${cl.updated ?? 0} updated, ${cl.skipped ?? 0} at target, ${cl.failed ?? 0} failed, ${cl.updating ?? 0} updating, ${cl.pending ?? 0} pending; machines ${st.machineProgress ?? ''}`;
      const key = line.slice(8);
      if (key !== lastLine.slice(8)) {
        p.say(line);
        lastLine = line;
      }
      if (['updated', 'failed', 'aborted'].includes(st.updateStatus ?? '')) return c;
    }
    if (Date.now() > deadline) {
      io.err(`\nerror: the campaign is not finished after ${secs(f.timeoutMs)}; see the logs in ${p.logDir}\n`);
      return ExitCode.failure;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Runs the fleet demo; the exit code is 0 when the campaign ended updated. */
export async function runFleetDemo(o: FleetDemoOptions, io: Io): Promise<number> {
  const started = Date.now();
  const campaignPath = o.campaignPath ?? join(o.root, 'examples', 'campaign.yaml');
  let close: (() => Promise<void>) | undefined;
  try {
    const p = await startLocalPlatform(
      o,
      io,
      (rel) => [
        `kubectl --kubeconfig ${rel} get inplaceupdatecampaigns -n ${FLEET.namespace} -w`,
        `kubectl --kubeconfig ${rel} get inplaceupdateplans -n ${FLEET.namespace} -w`,
        `npx inplace status campaign/edge-v1-30-1 -n ${FLEET.namespace} -w --kubeconfig ${rel}`,
      ],
      (c) => (close = c),
    );
    if (!p) return INTERRUPTED;
    const { client, say } = p;
    const machines = await applyFleet(client);
    say(
      `✔ fleet: ${FLEET.clusters} clusters in ${FLEET.namespace} (single-node, three-node, 1+2 workers), ${machines} machines at ${FLEET.version}`,
    );

    const kc = ['--kubeconfig', p.kubeconfig];
    const specs: ComponentSpec[] = [{ name: 'capi-sim', args: ['capi-sim', ...kc] }];
    for (const c of ['plan-controller', 'machine-task-controller', 'campaign-controller']) {
      const port = await freePort();
      specs.push({ name: c, args: ['run', c, ...kc, ...serveOn(port), ...demoControllerArgs(c, o.writePolicy)], port });
    }
    const port = await freePort();
    // The reference updater serves exactly the generic updater names the campaign's template uses (never a catch-all).
    const names = campaignUpdaterNames(campaignPath);
    if (names.length === 0) {
      io.err(`error: ${campaignPath} names no generic updater for the reference updater to serve\n`);
      return ExitCode.usage;
    }
    specs.push({ name: 'updater-reference', args: ['updater', 'reference', '--names', names.join(','), ...kc, ...serveOn(port)], port });
    const dashboard = o.dashboard ? await demoDashboard(kc) : undefined;
    if (dashboard) specs.push(dashboard.spec);
    const ready = await startComponents(p, specs, io);
    if (ready !== true) return ready;
    if (dashboard) say(`✔ dashboard: ${dashboard.url}  (open it to follow the campaign from the canaries to the last wave)`);

    const applied = await applyFile(client, campaignPath, FLEET.namespace);
    const campaign = applied.find((x) => x.kind === 'InPlaceUpdateCampaign');
    if (!campaign?.metadata.name) {
      io.err(`error: ${campaignPath} contains no InPlaceUpdateCampaign\n`);
      return ExitCode.failure;
    }
    say(
      `✔ applied ${relative(process.cwd(), campaignPath) || campaignPath}: InPlaceUpdateCampaign ${FLEET.namespace}/${campaign.metadata.name}\n`,
    );

    const final = await followCampaign(p, io, { name: campaign.metadata.name, started, timeoutMs: o.timeoutMs });
    if (typeof final === 'number') return final;
    const plans = (
      await client.list<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, FLEET.namespace, {
        labelSelector: `${CampaignLabels.campaign}=${final.metadata.name}`,
      })
    ).items;
    say('');
    io.out(campaignFrame(final, plans, new Date(), io.isTTY ? io.columns : 200));
    io.out(renderSummary(final, Date.now() - started));
    if (o.stateOut) writeFileSync(o.stateOut, JSON.stringify({ campaign: final, plans }, null, 2));
    if (o.keepRunning) await stayUp(p, io, `inplace status campaign/${final.metadata.name} -n ${FLEET.namespace} --kubeconfig ${p.rel}`);
    return final.status?.updateStatus === 'updated' ? ExitCode.ok : ExitCode.failure;
  } finally {
    await close?.();
  }
}

/** Creates the namespace and the fleet's clusters; returns the number of machines. */
async function applyFleet(client: RestClient): Promise<number> {
  const { applyInventory, buildFleetInventory, fleetOf } = await import('../../tools/capi-sim/index.js');
  // Three rollout rings mixing the shapes (pairs of clusters take turns); the campaign orders by ring, then name.
  const clusters = fleetOf(FLEET.clusters, 'edge', FLEET.label).map((c, i) => ({
    ...c,
    labels: { ...c.labels, 'rollout-ring': String(Math.floor(i / 2) % 3) },
  }));
  await createOrReplace(client, Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: FLEET.namespace } });
  const objs: KubeObject[] = buildFleetInventory({ namespace: FLEET.namespace, version: FLEET.version, clusters });
  await applyInventory(client, objs);
  return objs.filter((x) => x.kind === 'Machine').length;
}

/** The closing summary: outcome, waves, counts, wall time. */
export function renderSummary(c: CampaignObject, wallMs: number): string {
  const st = c.status ?? {};
  const cl = st.clusters ?? {};
  const m = st.machines ?? {};
  const lines = [
    '',
    `Summary: InPlaceUpdateCampaign ${c.metadata.namespace}/${c.metadata.name} ${st.updateStatus} (${c.status?.conditions?.find((x) => x.type === 'Ready')?.message ?? ''})`,
    `  clusters: ${cl.selected ?? 0} selected, ${cl.updated ?? 0} updated, ${cl.skipped ?? 0} already at target, ${cl.failed ?? 0} failed, ${cl.aborted ?? 0} aborted, ${cl.removed ?? 0} removed`,
    `  machines: ${m.updated ?? 0}/${m.total ?? 0} updated (${m.skipped ?? 0} skipped at target, ${m.failed ?? 0} failed)`,
    `  waves:    ${(st.waves ?? []).map((w) => `${w.index === 0 ? 'canary' : `#${w.index}`} ${w.clusters} clusters`).join(' -> ')}`,
    `  wall time: ${secs(wallMs)}`,
  ];
  for (const f of st.failedClusters ?? []) lines.push(`  failed: ${f.name} (wave ${f.wave}): ${f.reason ?? ''}`);
  return `${lines.join('\n')}\n`;
}

/** The generic updater names (no task template kind of their own) in a campaign file's plan template. */
export function campaignUpdaterNames(campaignPath: string): string[] {
  type U = { name?: string; updaterUpdateTemplateRef?: unknown };
  type T = { updaters?: U[] };
  const doc = readYamlDocs(campaignPath).find((d) => d.kind === 'InPlaceUpdateCampaign') as
    { spec?: { template?: { controlPlane?: T; machineDeployments?: T[] } } } | undefined;
  const t = doc?.spec?.template;
  const updaters = [...(t?.controlPlane?.updaters ?? []), ...(t?.machineDeployments ?? []).flatMap((m) => m.updaters ?? [])];
  return [...new Set(updaters.filter((u) => u.name && u.updaterUpdateTemplateRef === undefined).map((u) => u.name!))].sort();
}
