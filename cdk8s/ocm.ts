// `npm run synth -- --ocm FILE` (docs/ocm.md): one fleet campaign over several Cluster API management clusters,
// rolled out by Open Cluster Management. The hub's Placement picks the management clusters (the canaries as the
// first decision group), a ManifestWorkReplicaSet carries the per-management-cluster InPlaceUpdateCampaign to each of
// them under a Progressive rollout mapped from our campaign vocabulary, and the work's conditionRules (CEL over the
// applied campaign) and feedbackRules tell the hub how each management cluster's campaign is doing. OCM does the
// ordering, the concurrency, the failure budget and the soak one level up: nothing here re-implements them.
// Pure: the input is parsed and the objects are built without I/O.
import { Yaml } from 'cdk8s';
import { z } from 'zod';
import { API_VERSION, GROUP } from '../src/api/constants.js';
import type { ManifestFile } from './synth.js';

/** Where `--ocm` writes by default (under the project root). */
export const OCM_OUTDIR = ['dist', 'ocm'] as const;

/** The decision group of the canary management clusters (the rollout's mandatory group). */
export const CANARY_GROUP = 'canary';

const OCM_CLUSTER_API = 'cluster.open-cluster-management.io';
const OCM_WORK_API = 'work.open-cluster-management.io';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsLabel = z
  .string()
  .max(63)
  .regex(DNS_LABEL, 'must be a DNS label: lower-case letters, digits and "-", starting and ending with a letter or digit');
const dnsSubdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a DNS subdomain (lower-case, digits, "-", ".")');

const labelSelector = z
  .strictObject({
    matchLabels: z.record(z.string().max(317), z.string().max(63)).optional(),
    matchExpressions: z
      .array(
        z.strictObject({
          key: z.string().min(1).max(317),
          operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
          values: z.array(z.string().max(63)).max(64).optional(),
        }),
      )
      .max(32)
      .optional(),
  })
  .refine((s) => Object.keys(s.matchLabels ?? {}).length + (s.matchExpressions?.length ?? 0) > 0, {
    message: 'a label selector needs matchLabels or matchExpressions (an empty one would select every ManagedCluster)',
  });

/** A count, or a percentage "N%" within [min%, 100%], as our campaign's int-or-string fields. */
const countOrPercent = (min: number) =>
  z.union([
    z.number().int().min(min),
    z
      .string()
      .regex(/^[0-9]{1,3}%$/, `must be a count (integer >= ${min}) or a percentage such as 25%`)
      .refine((s) => Number(s.slice(0, -1)) >= min && Number(s.slice(0, -1)) <= 100, `a percentage must be ${min}% to 100%`),
  ]);

/** The input of `--ocm`: the hub side (which management clusters), the rollout over them, and the campaign each runs. */
export const OcmFleetInputSchema = z.strictObject({
  name: dnsLabel.describe('names the Placement, the ManifestWorkReplicaSet and (by default) the campaign'),
  hub: z.strictObject({
    namespace: dnsLabel,
    clusterSets: z
      .array(dnsLabel)
      .min(1, 'name at least one ManagedClusterSet: a Placement selects only from sets bound to its namespace')
      .max(32),
    managementClusters: labelSelector.optional(),
  }),
  rollout: z
    .strictObject({
      canary: labelSelector.optional(),
      maxConcurrentClusters: countOrPercent(1).default(1),
      failureBudget: countOrPercent(0).default(0),
      soakSeconds: z.number().int().min(0).max(604_800).default(0),
      progressDeadline: z
        .string()
        .regex(/^(([0-9]+[hms])|None)$/, 'must be a duration such as 90m, 6h or 3600s, or None (wait forever)')
        .default('None'),
    })
    .prefault({}),
  campaign: z.strictObject({
    name: dnsSubdomain.optional(),
    namespace: dnsLabel.describe('the namespace of the Clusters on every management cluster (it must exist there)'),
    labels: z.record(z.string().max(317), z.string().max(63)).optional(),
    spec: z
      .looseObject({
        template: z.looseObject({}),
        clusterSelector: z.looseObject({}).optional(),
        clusterNames: z.array(z.string()).optional(),
      })
      .refine((s) => s.clusterSelector !== undefined || (s.clusterNames?.length ?? 0) > 0, {
        message: 'a campaign selects Clusters by clusterSelector or clusterNames (or both)',
      }),
  }),
});

/** A parsed `--ocm` input, defaults applied. */
export type OcmFleetInput = z.infer<typeof OcmFleetInputSchema>;

/**
 * Parses an `--ocm` input document; throws one Error listing every problem ("path: message" lines), so that a
 * broken file is reported whole and nothing is written.
 */
export function parseOcmFleetInput(doc: unknown): OcmFleetInput {
  const r = OcmFleetInputSchema.safeParse(doc ?? {});
  const problems = r.success ? [] : r.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
  if (r.success) {
    // OCM labels every ManifestWork with "<namespace>.<name>" of its ManifestWorkReplicaSet: a label value, 63 at most.
    const key = `${r.data.hub.namespace}.${r.data.name}`;
    if (key.length > 63)
      problems.push(`name: hub.namespace + "." + name must be at most 63 characters (OCM's work label), got ${key.length}`);
  }
  if (problems.length > 0)
    throw new Error(`invalid --ocm input (${problems.length} problem${problems.length > 1 ? 's' : ''}):\n  ${problems.join('\n  ')}`);
  return r.data!;
}

/** A Kubernetes object as written. */
export type OcmObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
} & Record<string, unknown>;

// ------------------------------------------------------------------ what the hub learns from a campaign

/** The campaign is `updated` and that status is about its current spec. */
const UPDATED =
  "has(object.status) && has(object.status.updateStatus) && object.status.updateStatus == 'updated' && has(object.status.observedGeneration) && has(object.metadata.generation) && object.status.observedGeneration == object.metadata.generation";

/** The campaign failed, was halted (its Failed condition: failure budget spent, canary failed) or is being aborted. */
const FAILED_OR_HALTED =
  "has(object.status) && ((has(object.status.updateStatus) && object.status.updateStatus in ['failed', 'aborting', 'aborted']) || (has(object.status.conditions) && object.status.conditions.exists(c, c.type == 'Failed' && c.status == 'True')))";

/** A message for people on the hub: the campaign's status, phase and cluster progress (absent fields say so). */
const MESSAGE =
  "'campaign ' + (has(object.status) && has(object.status.updateStatus) ? object.status.updateStatus : 'not started') + (has(object.status) && has(object.status.phase) ? ' (' + object.status.phase + ')' : '') + (has(object.status) && has(object.status.progress) ? ', clusters ' + object.status.progress : '') + (has(object.status) && has(object.status.machineProgress) ? ', machines ' + object.status.machineProgress : '')";

/** One CEL condition rule of a ManifestWork manifest (work.open-cluster-management.io/v1 ConditionRule). */
export interface OcmConditionRule {
  condition: string;
  type: 'CEL';
  celExpressions: string[];
  messageExpression: string;
}

/**
 * The conditionRules on the campaign. OCM's work agent evaluates each rule's expressions (ANDed; an error counts as
 * false) with `object` = the campaign as the management cluster stores it, sets the condition on the manifest and
 * aggregates it onto the ManifestWork; the ManifestWorkReplicaSet rollout reads the work's `Progressing` and
 * `Degraded` (Progressing=False: succeeded; Progressing=True with Degraded=True: failed). `Complete` is OCM's
 * "finished" condition: the agent stops updating a completed manifest. `Failed` says the same as `Degraded` in the
 * campaign's own word, for people and `kubectl wait` on the hub (OCM's rollout does not read it). Every expression
 * guards with has() so that a campaign without status yet is Progressing, never an error read as "not progressing"
 * (which OCM would count as succeeded).
 */
export function campaignConditionRules(): OcmConditionRule[] {
  return [
    { condition: 'Complete', type: 'CEL', celExpressions: [UPDATED], messageExpression: MESSAGE },
    { condition: 'Progressing', type: 'CEL', celExpressions: [`!(${UPDATED})`], messageExpression: MESSAGE },
    { condition: 'Degraded', type: 'CEL', celExpressions: [FAILED_OR_HALTED], messageExpression: MESSAGE },
    { condition: 'Failed', type: 'CEL', celExpressions: [FAILED_OR_HALTED], messageExpression: MESSAGE },
  ];
}

/** The feedback the hub receives per management cluster: name → JSONPath into the campaign (scalars only, as OCM requires). */
export const CAMPAIGN_FEEDBACK: Readonly<Record<string, string>> = {
  updateStatus: '.status.updateStatus',
  phase: '.status.phase',
  progress: '.status.progress',
  machineProgress: '.status.machineProgress',
  clustersSelected: '.status.clusters.selected',
  clustersUpdated: '.status.clusters.updated',
  clustersFailed: '.status.clusters.failed',
  clustersUpdating: '.status.clusters.updating',
  machinesTotal: '.status.machines.total',
  machinesUpdated: '.status.machines.updated',
  machinesFailed: '.status.machines.failed',
};

// ------------------------------------------------------------------ the objects

/** The InPlaceUpdateCampaign each management cluster receives. */
export function campaignManifest(input: OcmFleetInput): OcmObject {
  const { campaign } = input;
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdateCampaign',
    metadata: {
      name: campaign.name ?? input.name,
      namespace: campaign.namespace,
      ...(campaign.labels ? { labels: campaign.labels } : {}),
    },
    spec: campaign.spec,
  };
}

/** The ClusterRole every ManifestWork carries: the label aggregates it into OCM's work agent's role. */
export const WORK_AGENT_ROLE = 'inplace-capi:ocm-work-agent';

/**
 * What OCM's work agent needs on a management cluster to apply the campaign and read it back: its default role
 * (admin plus a few kinds) covers no custom resource. Aggregated into the agent's role by OCM's label; the same object
 * in every work, so that several campaigns' works share it without fighting over it.
 */
export function workAgentRole(): OcmObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: WORK_AGENT_ROLE, labels: { 'open-cluster-management.io/aggregate-to-work': 'true' } },
    rules: [{ apiGroups: [GROUP], resources: ['inplaceupdatecampaigns'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] }],
  };
}

/** The hub objects: a ManagedClusterSetBinding per cluster set, the Placement and the ManifestWorkReplicaSet. */
export function ocmObjects(input: OcmFleetInput): OcmObject[] {
  const ns = input.hub.namespace;
  const { rollout } = input;
  const bindings: OcmObject[] = input.hub.clusterSets.map((set) => ({
    apiVersion: `${OCM_CLUSTER_API}/v1beta2`,
    kind: 'ManagedClusterSetBinding',
    metadata: { name: set, namespace: ns },
    spec: { clusterSet: set },
  }));
  const placement: OcmObject = {
    apiVersion: `${OCM_CLUSTER_API}/v1beta1`,
    kind: 'Placement',
    metadata: { name: input.name, namespace: ns },
    spec: {
      clusterSets: input.hub.clusterSets,
      ...(input.hub.managementClusters
        ? { predicates: [{ requiredClusterSelector: { labelSelector: input.hub.managementClusters } }] }
        : {}),
      ...(rollout.canary
        ? {
            decisionStrategy: {
              groupStrategy: { decisionGroups: [{ groupName: CANARY_GROUP, groupClusterSelector: { labelSelector: rollout.canary } }] },
            },
          }
        : {}),
    },
  };
  const campaign = campaignManifest(input);
  const work: OcmObject = {
    apiVersion: `${OCM_WORK_API}/v1alpha1`,
    kind: 'ManifestWorkReplicaSet',
    metadata: { name: input.name, namespace: ns },
    spec: {
      cascadeDeletionPolicy: 'Background',
      placementRefs: [
        {
          name: input.name,
          rolloutStrategy: {
            type: 'Progressive',
            progressive: {
              // The canaries first, tolerating no failure (OCM's mandatory decision groups), as our canary wave.
              ...(rollout.canary ? { mandatoryDecisionGroups: [{ groupName: CANARY_GROUP }] } : {}),
              maxConcurrency: rollout.maxConcurrentClusters,
              maxFailures: rollout.failureBudget,
              minSuccessTime: `${rollout.soakSeconds}s`,
              progressDeadline: rollout.progressDeadline,
            },
          },
        },
      ],
      manifestWorkTemplate: {
        // A management cluster leaving the placement, or the replica set being deleted, must not delete a campaign
        // that may be updating machines there (and, through its plans, abort them): the campaign is left in place,
        // and so is the agent's role (other works use it).
        deleteOption: { propagationPolicy: 'Orphan' },
        workload: { manifests: [workAgentRole(), campaign] },
        manifestConfigs: [
          {
            resourceIdentifier: {
              group: GROUP,
              resource: 'inplaceupdatecampaigns',
              namespace: campaign.metadata.namespace,
              name: campaign.metadata.name,
            },
            // Server-side apply owns only the fields written here: a local pause or abort (spec.paused,
            // spec.updatePhase, other field managers) is not reverted by the agent; force: the hub's fields win.
            updateStrategy: { type: 'ServerSideApply', serverSideApply: { fieldManager: 'work-agent', force: true } },
            feedbackRules: [{ type: 'JSONPaths', jsonPaths: Object.entries(CAMPAIGN_FEEDBACK).map(([name, path]) => ({ name, path })) }],
            conditionRules: campaignConditionRules(),
          },
        ],
      },
    },
  };
  return [...bindings, placement, work];
}

/** The file `--ocm` writes: every hub object, to apply on the OCM hub. */
export function synthesizeOcm(input: OcmFleetInput): ManifestFile {
  return { name: `${input.name}.yaml`, content: Yaml.stringify(...ocmObjects(input)) };
}
