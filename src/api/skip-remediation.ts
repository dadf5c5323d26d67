// The end of an in-place update's MHC protection: put `cluster.x-k8s.io/skip-remediation` back as it was before the
// update and forget the prior state. One rule, two forms: a merge fragment (the MHC extension's own restore) and
// guarded JSON-patch ops (appended by the plan controller to its unlabel, so the end of an update is one Machine
// patch). Here in src/api so that both components share it without one importing the other. Pure.
import { Annotations } from './constants.js';

/** Annotation changes as a merge patch fragment (null removes). */
export type AnnotationPatch = Record<string, string | null>;

/** One RFC 6902 operation on a Machine's annotations. */
export type AnnotationOp =
  { op: 'test'; path: string; value: unknown } | { op: 'add'; path: string; value: string } | { op: 'remove'; path: string };

/** The restore as a merge fragment: undefined when the machine carries no prior state (the extension never protected it). */
export function restoreSkipRemediation(annotations: Record<string, string> | undefined): AnnotationPatch | undefined {
  const a = annotations ?? {};
  const prior = a[Annotations.skipRemediationPrior];
  if (prior === undefined) return undefined;
  const patch: AnnotationPatch = { [Annotations.skipRemediationPrior]: null };
  if (prior === 'true' && a[Annotations.skipRemediation] === undefined) patch[Annotations.skipRemediation] = '';
  if (prior !== 'true' && a[Annotations.skipRemediation] !== undefined) patch[Annotations.skipRemediation] = null;
  return patch;
}

/** The JSON pointer of an annotation (RFC 6901 escapes; src/api imports nothing of the runtime). */
export const annotationPath = (key: string): string => `/metadata/annotations/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;

/**
 * The restore as JSON-patch ops, derived from `restoreSkipRemediation` on the same annotations and guarded by what
 * it read: a `test` of each annotation value it rests on, so that a concurrent change (the MHC extension protecting
 * again, an operator's edit) fails the whole patch (422) and the restore is decided again, never clobbering. JSON
 * patch cannot test that a key is absent: when the decision rests on an absent annotation, the whole map as read is
 * tested instead. Empty when there is nothing to restore.
 */
export function restoreSkipRemediationOps(annotations: Record<string, string> | undefined): AnnotationOp[] {
  const patch = restoreSkipRemediation(annotations);
  if (!patch || !annotations) return [];
  const read = [Annotations.skipRemediationPrior, Annotations.skipRemediation];
  const ops: AnnotationOp[] = read.every((k) => annotations[k] !== undefined)
    ? read.map((k) => ({ op: 'test', path: annotationPath(k), value: annotations[k] }))
    : [{ op: 'test', path: '/metadata/annotations', value: annotations }];
  for (const [k, v] of Object.entries(patch))
    if (v !== null) ops.push({ op: 'add', path: annotationPath(k), value: v });
    else if (annotations[k] !== undefined) ops.push({ op: 'remove', path: annotationPath(k) });
  return ops;
}
