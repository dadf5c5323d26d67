// Template references checked before a plan starts anything: the template's task kind (FooTemplate -> Foo) must be
// one the platform creates — not a Cluster API kind, its CRD installed and declaring the updater contract — and the
// template small enough to become a task. The machine task controller refuses the same at run time. Pure.
import { parseApiVersion } from '../api/index.js';
import { MAX_TASK_BYTES, isClusterApiGroup, taskKindOfTemplate, taskKindProblem } from '../contract/index.js';
import type { TemplateLookup, TemplateRef } from './inputs.js';

/** The task kind a template reference creates (group and kind), or undefined for a malformed reference. */
export function taskKindOfRef(ref: TemplateRef): { group: string; kind: string } | undefined {
  const { group } = parseApiVersion(ref.apiVersion ?? '');
  try {
    return { group, kind: taskKindOfTemplate(ref.kind ?? '') };
  } catch {
    return undefined;
  }
}

/**
 * Why the platform would refuse the tasks of a template reference (empty when it would not). A Cluster API group is
 * refused from the reference alone; the CRD and size checks need what the lookup found (`task`, `bytes`); a template
 * found but not judged (`unjudged`, or no `bytes`) is refused.
 */
export function templateProblems(ref: TemplateRef, lookup: TemplateLookup | undefined): string[] {
  const tk = taskKindOfRef(ref);
  if (!tk || !tk.group) return [];
  if (isClusterApiGroup(tk.group)) return [`template ${ref.kind}: ${taskKindProblem(tk.group, tk.kind, undefined)!}`];
  const problems: string[] = [];
  if (lookup?.task) {
    const p = taskKindProblem(tk.group, tk.kind, lookup.task.crd);
    if (p) problems.push(`template ${ref.kind} ${ref.name}: ${p}`);
  }
  // Fail closed: a template found but not measured (unjudged, or no size at all) is refused, never taken as small.
  if (lookup?.unjudged !== undefined) problems.push(`template ${ref.kind} ${ref.name}: cannot be judged: ${lookup.unjudged}`);
  else if (lookup?.found && lookup.bytes === undefined)
    problems.push(`template ${ref.kind} ${ref.name}: its size could not be measured, so it cannot be judged to fit a task`);
  else if (lookup?.bytes !== undefined && lookup.bytes > MAX_TASK_BYTES) {
    problems.push(`template ${ref.kind} ${ref.name} is ${lookup.bytes} bytes, more than the ${MAX_TASK_BYTES} a task may have`);
  }
  return problems;
}
