// Offline plan check for `inplace preview`: every problem of a plan file in one list, without the cluster.
// A real kube-apiserver stops at the first layer that fails (schema errors hide the CEL rules, and the controller only
// sees a stored plan), so an operator fixing a plan against a real cluster would otherwise learn one layer per round.
import { join } from 'node:path';
import type { InPlaceUpdatePlan, KubeObject, WritePolicy } from '../api/index.js';
import type { PlanPreview } from '../plan-controller/index.js';
import { crdVersionChecks, type CrdVersionCheck } from '../../tools/local-apiserver/offline.js';
import { validatePlan, type ValidationInput } from '../plan-controller/index.js';
import { readYamlDocs } from './install.js';
import { projectRoot } from './procs.js';

/** Where a problem was found: the CRD's structural schema, its CEL rules, or the plan controller's own validation. */
export type PlanCheckSource = 'schema' | 'rule' | 'controller';

/** One problem of a plan. */
export interface PlanCheckProblem {
  source: PlanCheckSource;
  message: string;
}

/** The InPlaceUpdatePlan CRD file of this checkout (the one `kubectl apply -f crds/` installs). */
export const PLAN_CRD_FILE = 'crds/inplace.cluster.x-k8s.io_inplaceupdateplans.yaml';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The served versions of the plan CRD, with their rules compiled (once per process). */
let planVersions: Map<string, CrdVersionCheck> | undefined;

function versionsOf(crdFile: string | undefined): Map<string, CrdVersionCheck> {
  if (!crdFile && planVersions) return planVersions;
  const crd = readYamlDocs(crdFile ?? join(projectRoot(), PLAN_CRD_FILE)).find((d) => d.kind === 'CustomResourceDefinition');
  if (!crd) throw new Error(`no CustomResourceDefinition in ${crdFile ?? PLAN_CRD_FILE}`);
  let out: Map<string, CrdVersionCheck>;
  try {
    out = crdVersionChecks(crd);
  } catch (e) {
    throw new Error(`the InPlaceUpdatePlan ${(e as Error).message.replace(/^the /, '')}`);
  }
  if (!crdFile) planVersions = out;
  return out;
}

/** The objects a plan names, as if they all existed and belonged to its cluster: only the plan's own problems remain. */
function offlineInput(plan: InPlaceUpdatePlan, writePolicy: WritePolicy | undefined): ValidationInput {
  const ns = plan.metadata?.namespace ?? 'default';
  const clusterName = typeof plan.spec?.clusterName === 'string' ? plan.spec.clusterName : '';
  const object = (name: string, spec: Obj = {}): KubeObject => ({ metadata: { name, namespace: ns }, spec });
  const mds = Array.isArray(plan.spec?.machineDeployments) ? plan.spec.machineDeployments : [];
  const refs = [plan.spec?.controlPlane, ...mds]
    .flatMap((t) => (Array.isArray(t?.updaters) ? t.updaters : []))
    .flatMap((u) => (u.updaterUpdateTemplateRef ? [u.updaterUpdateTemplateRef] : []));
  return {
    plan,
    cluster: object(clusterName),
    ...(plan.spec?.controlPlane
      ? {
          controlPlane: {
            kind: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane' },
            object: object(String(plan.spec.controlPlane.name)),
          },
        }
      : {}),
    machineDeployments: mds.map((md) => object(String(md.name), { clusterName })),
    // Not looked up offline: the controller looks each one up (and judges its size) when the plan is applied.
    templates: refs.map((ref) => ({ ref, found: false, unchecked: true })),
    ...(writePolicy ? { writePolicy } : {}),
  };
}

/**
 * Checks a plan document without the cluster: the CRD's structural schema (unknown fields, types, enums, patterns,
 * bounds), its CEL rules (evaluated even when the schema failed, unlike a real server), and the plan controller's
 * validation of everything that does not depend on the cluster's objects. Returns every problem; empty = none found.
 */
export function checkPlan(doc: KubeObject, opts: { writePolicy?: WritePolicy; crdFile?: string } = {}): PlanCheckProblem[] {
  const problems: PlanCheckProblem[] = [];
  const add = (source: PlanCheckSource, message: string): void => {
    if (!problems.some((p) => p.message === message)) problems.push({ source, message });
  };
  const versions = versionsOf(opts.crdFile);
  const version = versions.get(String(doc.apiVersion));
  if (!version) {
    add('schema', `apiVersion ${String(doc.apiVersion)} is not served for InPlaceUpdatePlan (served: ${[...versions.keys()].join(', ')})`);
    return problems;
  }
  const checked = version.check(doc as unknown as Obj);
  const obj = checked.object;
  for (const u of checked.unknownFields) add('schema', `${u}: unknown field (kubectl apply refuses it: strict field validation)`);
  for (const e of checked.schemaErrors) add('schema', e);
  for (const e of checked.ruleErrors) add('rule', e);
  if (isObj(obj.spec)) {
    try {
      for (const p of validatePlan(offlineInput(obj as unknown as InPlaceUpdatePlan, opts.writePolicy))) add('controller', p);
    } catch (e) {
      // The controller's checks assume a schema-valid plan; report that they could not all run rather than guess.
      add('controller', `the controller's checks stopped on this malformed plan (${(e as Error).message}); fix the schema problems first`);
    }
  }
  return problems;
}

const HEADINGS: Record<PlanCheckSource, string> = {
  schema: 'schema (crds/ openAPIV3Schema)',
  rule: 'rules (x-kubernetes-validations)',
  controller: 'plan controller validation',
};

/** The problems as the preview prints them, grouped by where they were found. */
export function renderPlanProblems(file: string, problems: PlanCheckProblem[]): string {
  const lines = [
    `"${file}" is not a valid InPlaceUpdatePlan (${problems.length} problem${problems.length === 1 ? '' : 's'}, found without the cluster):`,
  ];
  for (const source of ['schema', 'rule', 'controller'] as const) {
    const of = problems.filter((p) => p.source === source);
    if (of.length === 0) continue;
    lines.push(`  ${HEADINGS[source]}:`);
    for (const p of of) lines.push(`    - ${p.message}`);
  }
  return lines.join('\n');
}

/**
 * Adds the schema and rule problems to a preview made against the cluster (its controller checks already ran on the
 * real objects), so a plan a real server would refuse is NOT OK with all its problems in one list.
 */
export function withOfflineProblems(preview: PlanPreview, problems: PlanCheckProblem[]): PlanPreview {
  const extra = problems.filter((p) => p.source !== 'controller').map((p) => p.message);
  if (extra.length === 0) return preview;
  return { ...preview, valid: false, problems: [...new Set([...extra, ...preview.problems])] };
}
