// The plan's pre-start check per cluster, before the cluster's plan exists (docs/operations.md "Fleet campaigns"): the
// updater template objects, uncovered drift and the commit dry-run, with the plan controller's own code
// (prestartCheck) on ONE sampled machine per target, read by a label-selected list with a limit: no Machine informer,
// no per-machine state, so a check costs O(targets). Dry-runs are shared across the fleet per (kind, patch), checks
// run with bounded concurrency and are memoised per cluster by what they read (campaign generation, the owners' and
// templates' resourceVersions). A failed read is not a verdict: the cluster's check is retried (Valid=Unknown).
// Used by the controller (scope.ts reader) and `inplace preview -f campaign.yaml` (one implementation).
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { Labels, Machines, parseApiVersion } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { isNotFound } from '../runtime/pure/errors.js';
import type { KubeClient } from '../runtime/pure/types.js';
import { forEachLimit } from '../runtime/parallel.js';
import { judgeTemplate } from '../contract/index.js';
import { prestartCheck, type PrestartReads } from '../effects/prestart.js';
import type { KindRead, PrestartResult, TemplateLookup, TemplateRef } from '../rules/inputs.js';
import { templateKey, unlookedTemplate } from '../rules/inputs.js';
import { targetsOf } from '../rules/validate.js';
import type { ClusterObjects } from './decide.js';
import { objectsVersion } from './decide/rules.js';

/** Cluster checks in flight at once (each is a few reads and, for a new patch, a dry-run). */
const CHECKS_IN_FLIGHT = 8;
/**
 * A check that found problems is run again after this long (a machine or a schema may be fixed without an owner
 * change; a fix of the owners, the templates or the campaign changes the memo key and is seen at once). Not shorter: a
 * fleet invalid everywhere would otherwise cost its whole check again every few reconciles.
 */
const PROBLEM_RECHECK_MS = 120_000;
/** Clean dry-run answers are trusted this long (a CRD's schema may change). */
const CLEAN_DRY_RUN_TTL_MS = 10 * 60_000;
const MEMO_MAX = 20_000;

// What decides a cluster's commit patches: its targets' kinds and responsibilities (not their names).
const shapeOf = (plan: InPlaceUpdatePlan): string =>
  JSON.stringify(targetsOf(plan).map((t) => [t.kind, (t.target.updaters ?? []).map((u) => [u.sequence, u.responsibilities])]));

/** What the campaign's check reads besides its client: an updater template object by name. */
export interface CampaignCheckReads {
  /** An updater template object (the controller: an informer of its kind; the CLI: a GET, or the file's documents). */
  template(ns: string, apiGroup: string, kind: string, name: string): Promise<KindRead>;
}

/** One cluster to check: the plan the campaign would create for it, and the objects its validation reads. */
export interface ClusterToCheck {
  name: string;
  plan: InPlaceUpdatePlan;
  objects: ClusterObjects;
}

/** A cluster's check: the plan's pre-start result (and the memo key it is valid for), or why it could not run. */
export type ClusterCheck = { result: PrestartResult; key: string } | { error: string };

/** The updater template lookups of a campaign (shared by its clusters: one namespace) and their version string. */
export interface TemplateLookups {
  lookups: TemplateLookup[];
  /** Changes when a template object appears, disappears or changes. */
  version: string;
}

/** The campaign's pre-start checks with their memo; one per controller (or CLI run). */
export class CampaignPrestart {
  private readonly memo = new Map<string, { result: PrestartResult; at: number }>();
  private clean = new Set<string>();
  private cleanSince = Date.now();

  /** `client` reads the sampled machines and their objects and sends the dry-runs. */
  constructor(
    private readonly client: KubeClient,
    private readonly reads: CampaignCheckReads,
  ) {}

  /** Looks up every distinct updater template reference (the plan's own lookup rules; the task CRD is left to the plan). */
  async templates(ns: string, refs: readonly TemplateRef[]): Promise<TemplateLookups> {
    const distinct = new Map(refs.map((r) => [templateKey(r), r]));
    const lookups: TemplateLookup[] = [];
    const versions: string[] = [];
    for (const [key, ref] of [...distinct].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (unlookedTemplate(ref)) {
        lookups.push({ ref, found: false });
        continue;
      }
      const r = await this.reads.template(ns, parseApiVersion(ref.apiVersion).group, ref.kind, ref.name);
      if ('notServed' in r) lookups.push({ ref, found: false, error: `kind ${ref.kind} is not served (is its CRD installed?)` });
      else if ('unreadable' in r) lookups.push({ ref, found: false, error: r.unreadable });
      else {
        const l: TemplateLookup = { ref, found: r.object !== undefined };
        if (r.object) Object.assign(l, judgeTemplate(r.object));
        lookups.push(l);
      }
      const v = 'notServed' in r ? 'not-served' : 'unreadable' in r ? 'unreadable' : (r.object?.metadata.resourceVersion ?? 'absent');
      versions.push(`${key}=${v}`);
    }
    return { lookups, version: versions.join(',') };
  }

  /**
   * Runs the plan's pre-start check for each cluster (bounded concurrency), from the memo when what it read is
   * unchanged. `campaignVersion` is the campaign's uid/generation.
   */
  async check(
    ns: string,
    campaignVersion: string,
    templates: TemplateLookups,
    clusters: readonly ClusterToCheck[],
  ): Promise<Map<string, ClusterCheck>> {
    if (Date.now() - this.cleanSince > CLEAN_DRY_RUN_TTL_MS) {
      this.clean = new Set();
      this.cleanSince = Date.now();
    }
    const out = new Map<string, ClusterCheck>();
    const problems = (r: PrestartResult): boolean => r.schemaProblems.length > 0 || r.uncovered.length > 0;
    // Answered from the memo first: on most reconciles every cluster is, and nothing else is derived for it.
    const toRun: { c: ClusterToCheck; objects: string | undefined; key: string }[] = [];
    for (const c of clusters) {
      const objects = objectsVersion(c.objects);
      const key = `${campaignVersion}|${c.name}|${objects ?? `unversioned-${Date.now()}`}|${templates.version}`;
      const hit = this.memo.get(key);
      if (hit && (!problems(hit.result) || Date.now() - hit.at < PROBLEM_RECHECK_MS)) out.set(c.name, { result: hit.result, key });
      else toRun.push({ c, objects, key });
    }
    const run = async ({ c, objects, key }: (typeof toRun)[number]): Promise<void> => {
      try {
        const result = await this.checkCluster(ns, c, templates.lookups);
        if (objects !== undefined) {
          if (this.memo.size >= MEMO_MAX) this.memo.delete(this.memo.keys().next().value!);
          this.memo.set(key, { result, at: Date.now() });
        }
        out.set(c.name, { result, key });
      } catch (err) {
        out.set(c.name, { error: `the pre-start check could not run: ${String((err as Error).message ?? err).slice(0, 300)}` });
      }
    };
    // One cluster per plan shape first: its clean dry-runs then answer for the rest of the fleet, which runs
    // concurrently (started together, every cluster would send the same dry-run before any answer is known).
    const firsts = new Map<string, (typeof toRun)[number]>();
    for (const t of toRun) {
      const shape = shapeOf(t.c.plan);
      if (!firsts.has(shape)) firsts.set(shape, t);
    }
    const leaders = new Set(firsts.values());
    await forEachLimit([...leaders], CHECKS_IN_FLIGHT, run);
    await forEachLimit(
      toRun.filter((t) => !leaders.has(t)),
      CHECKS_IN_FLIGHT,
      run,
    );
    return out;
  }

  private async checkCluster(ns: string, c: ClusterToCheck, templates: TemplateLookup[]): Promise<PrestartResult> {
    const machines = await this.sampleMachines(ns, c.plan);
    const reads: PrestartReads = {
      list: () => Promise.resolve(undefined),
      get: (n, ref) => this.getRef(n, ref),
      cleanDryRuns: this.clean,
      permissionHint:
        'the campaign controller needs list and patch on Machines, get and patch on the InfraMachine and BootstrapConfig kinds and get on their templates',
    };
    return prestartCheck(
      this.client,
      {
        plan: c.plan,
        cluster: c.objects.cluster,
        ...(c.objects.controlPlane ? { controlPlane: c.objects.controlPlane } : {}),
        machineDeployments: c.objects.machineDeployments,
        templates,
        machines,
      },
      reads,
    );
  }

  // One machine per target, by its Cluster API labels, limit 1: the check needs a machine's objects, not all of them.
  private async sampleMachines(ns: string, plan: InPlaceUpdatePlan): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const t of targetsOf(plan)) {
      const label = t.kind === 'ControlPlane' ? Labels.controlPlaneName : Labels.deploymentName;
      const selector = `${Labels.clusterName}=${plan.spec.clusterName},${label}=${t.target.name}`;
      const items = (await this.client.list(Machines, ns, { labelSelector: selector, limit: 1 })).items;
      out.push(...items.map((m) => ({ ...m, kind: 'Machine' })));
    }
    return out;
  }

  private async getRef(ns: string, ref: ContractRef): Promise<KubeObject | undefined> {
    let res;
    try {
      res = await this.client.resolve(ref.apiGroup, ref.kind);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    return this.client.get(res, ns, ref.name);
  }
}
