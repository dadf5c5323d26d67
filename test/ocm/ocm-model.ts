// What Open Cluster Management computes from our conditionRules and feedbackRules, for the tests: the work agent's
// evaluation of a CEL condition rule (open-cluster-management-io/ocm pkg/work/spoke/conditions: variable `object`,
// expressions ANDed, a compile or evaluation error or a non-bool result gives status False), its aggregation onto the
// ManifestWork (one manifest here: the work's condition is the manifest's), the ManifestWorkReplicaSet's judgement of
// a cluster's rollout status (pkg/work/hub/controllers/manifestworkreplicasetcontroller clusterRolloutStatusFunc:
// Progressing=True and Degraded=True is Failed, Progressing=True is Progressing, Progressing=False is Succeeded) and the
// JSONPath feedback of the simple `.a.b.c` paths our rules use (scalars only). Written from OCM's documented
// behaviour and source as read, with the project's CEL library (@bufbuild/cel, tools/local-apiserver/cel.ts).
import { compileCelExpression } from '../../tools/local-apiserver/cel.js';
import type { OcmConditionRule } from '../../cdk8s/ocm.js';

/** A condition the work agent would set on the manifest (and, aggregated, on the ManifestWork). */
export interface OcmCondition {
  type: string;
  status: 'True' | 'False';
  reason: 'ConditionRuleEvaluated' | 'ConditionRuleExpressionError';
  message: string;
}

/** The rollout status the ManifestWorkReplicaSet gives a management cluster whose work is applied. */
export type OcmRolloutStatus = 'Progressing' | 'Succeeded' | 'Failed';

function evalBool(expr: string, vars: Record<string, unknown>, names: string[]): boolean | Error {
  try {
    const v = compileCelExpression(expr, names).eval(vars);
    return typeof v === 'boolean' ? v : new Error(`expected bool result, got ${typeof v}`);
  } catch (e) {
    return e as Error;
  }
}

/** One rule on `object`, as the work agent evaluates it. */
export function evaluateRule(rule: OcmConditionRule, object: unknown): OcmCondition {
  for (const expr of rule.celExpressions) {
    const r = evalBool(expr, { object }, ['object']);
    if (r instanceof Error) return { type: rule.condition, status: 'False', reason: 'ConditionRuleExpressionError', message: r.message };
    if (!r) return { type: rule.condition, status: 'False', reason: 'ConditionRuleEvaluated', message: messageOf(rule, object, false) };
  }
  return { type: rule.condition, status: 'True', reason: 'ConditionRuleEvaluated', message: messageOf(rule, object, true) };
}

function messageOf(rule: OcmConditionRule, object: unknown, result: boolean): string {
  try {
    const m = compileCelExpression(rule.messageExpression, ['object', 'result']).eval({ object, result });
    if (typeof m === 'string' && m !== '') return m;
  } catch (e) {
    return (e as Error).message;
  }
  return `Manifest is ${result ? '' : 'not '}${rule.condition}`;
}

/** The rollout status of a management cluster whose ManifestWork carries these conditions (Applied and observed). */
export function rolloutStatus(conditions: readonly OcmCondition[]): OcmRolloutStatus {
  const progressing = conditions.find((c) => c.type === 'Progressing');
  const degraded = conditions.find((c) => c.type === 'Degraded');
  // Without a Progressing rule OCM falls back to Available (the campaign exists): succeeded at once. Ours always has one.
  if (!progressing) return 'Succeeded';
  if (progressing.status === 'True') return degraded?.status === 'True' ? 'Failed' : 'Progressing';
  return 'Succeeded';
}

/** The feedback values of simple `.a.b` JSONPaths (missing or non-scalar: no value, as OCM reports none). */
export function feedbackValues(paths: Readonly<Record<string, string>>, object: unknown): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, path] of Object.entries(paths)) {
    let v: unknown = object;
    for (const key of path.split('.').slice(1)) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[name] = v;
  }
  return out;
}
