// The patch that labels a machine to start its update: the plan label and the start time, and, when an MHC the MHC
// extension acts on selects the machine, the extension's protection from remediation (skip-remediation, its prior
// state), so that the extension finds the machine protected and writes nothing (one Machine write per start, not two:
// issue 25). The rule for the protection is src/api's (mhc-protection.ts), the extension's own. Pure.
import { Annotations, Labels, annotationPath, mhcSelects, startProtection, type AnnotationOp } from '../../api/index.js';
import type { Machine, MachineHealthCheck } from '../../api/capi/index.js';
import { labelSelectorMatches } from '../../runtime/pure/labels.js';
import { encodePointer } from '../../runtime/pure/jsonpointer.js';

/**
 * The label patch: a merge patch when it protects nothing (the label and start time rest on nothing they read, as
 * before); when it protects, either JSON-patch ops guarded by a `test` of the annotation map as read (the protection
 * rests on skip-remediation being absent or present: an operator's concurrent change fails the patch, 422, and the
 * start is decided again) or, for a machine without annotations or labels (no map to test or add into), a merge
 * patch guarded by the resourceVersion read.
 */
export type LabelPatch =
  | { type: 'merge'; body: { metadata: Record<string, unknown> }; protectedBy?: string }
  | { type: 'json'; ops: AnnotationOp[]; protectedBy: string };

/** The MHCs among `mhcs` (the machine's namespace) that select the machine (the extension's selection rule). */
export const selectingMhcs = (m: Machine, mhcs: readonly MachineHealthCheck[]): MachineHealthCheck[] =>
  mhcs.filter((h) => mhcSelects(h, m, labelSelectorMatches));

/**
 * The patch labelling machine `m` (as cached) for the plan whose label value is `planLabel`, its update `update`
 * starting at `startedAt` (RFC 3339), given the MHCs of its namespace.
 */
export function labelPatch(
  m: Machine,
  planLabel: string,
  startedAt: string,
  update: string,
  mhcs: readonly MachineHealthCheck[],
): LabelPatch {
  const startMs = Date.parse(startedAt);
  const protection = Number.isNaN(startMs) ? undefined : startProtection(m, selectingMhcs(m, mhcs), update, startMs);
  const annotations: Record<string, string> = { [Annotations.updateStartedAt]: startedAt };
  if (!protection) return { type: 'merge', body: { metadata: { labels: { [Labels.planName]: planLabel }, annotations } } };
  for (const [k, v] of Object.entries(protection.patch)) if (v !== null) annotations[k] = v;
  const seen = m.metadata.annotations;
  if (!seen || !m.metadata.labels)
    return {
      type: 'merge',
      body: {
        metadata: {
          ...(m.metadata.resourceVersion ? { resourceVersion: m.metadata.resourceVersion } : {}),
          labels: { [Labels.planName]: planLabel },
          annotations,
        },
      },
      protectedBy: protection.mhc,
    };
  const ops: AnnotationOp[] = [
    { op: 'test', path: '/metadata/annotations', value: seen },
    { op: 'add', path: `/metadata/labels/${encodePointer([Labels.planName]).slice(1)}`, value: planLabel },
  ];
  for (const [k, v] of Object.entries(annotations)) ops.push({ op: 'add', path: annotationPath(k), value: v });
  return { type: 'json', ops, protectedBy: protection.mhc };
}
