// What the kit sends: the spec of its scratch tasks per scenario, from what the user says about the updater under test
// (its responsibilities, the spec of a task it can do, of one it must fail, of one slow enough to abort). The kit knows
// no updater's parameters: everything beyond the contract's fields comes from the user (issue 42, item 4).
import { ResponsibilitySchema, type Responsibility } from '../../api/index.js';
import { applyMergePatch } from '../../runtime/pure/merge-patch.js';

/** The `selectResource` values of a responsibility (C3). */
export const SELECT_RESOURCES = ResponsibilitySchema.shape.selectResource.options;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Why `value` cannot be a task's responsibilities (C3), or undefined. */
export function responsibilitiesProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'responsibilities must be a list of {selectResource, path, value}';
  if (value.length === 0) return 'responsibilities must not be empty';
  for (const [i, r] of value.entries()) {
    const parsed = ResponsibilitySchema.safeParse(r);
    if (!parsed.success || !isObject(r) || !('value' in r))
      return `responsibility ${i + 1} (${JSON.stringify(r)}) must be {selectResource: ${SELECT_RESOURCES.join(' | ')}, path: <JSON pointer>, value: <JSON>}`;
  }
  return undefined;
}

/**
 * Why a user-given task spec cannot be sent, or undefined. The kit plays the platform, so the fields only the
 * platform decides per scenario are refused rather than silently overwritten: `updatePhase` (C2) and, for the
 * generic kind, `updaterName` (it routes the task: --updater-name says which).
 */
export function taskSpecProblem(what: string, spec: unknown, generic: boolean): string | undefined {
  if (!isObject(spec)) return `${what} must be an object (the fields of a task's spec), got ${JSON.stringify(spec)}`;
  if ('updatePhase' in spec) return `${what}: spec.updatePhase is the platform's to set (C2); the kit sets it per scenario`;
  if (generic && 'updaterName' in spec) return `${what}: spec.updaterName routes a generic task; give the updater name with --updater-name`;
  if ('responsibilities' in spec) {
    const p = responsibilitiesProblem(spec['responsibilities']);
    if (p) return `${what}: ${p}`;
  }
  return undefined;
}

/**
 * Parses `SELECT /json/pointer=VALUE` (the CLI's --responsibility): VALUE is JSON when it parses as JSON, else a
 * string, so `Machine /spec/version=v1.30.1` and `BootstrapConfig /spec/ntp={"servers":["a"]}` both work.
 */
export function parseResponsibility(arg: string): Responsibility {
  const m = /^\s*(\S+)\s+(\/[^=]*)=([\s\S]*)$/.exec(arg);
  const usage = `a responsibility is 'SELECT /json/pointer=VALUE' with SELECT one of ${SELECT_RESOURCES.join(', ')} and VALUE JSON or a string, got '${arg}'`;
  if (!m) throw new Error(usage);
  let value: unknown = m[3]!;
  try {
    value = JSON.parse(m[3]!);
  } catch {
    // Not JSON: the value is the text itself (e.g. v1.30.1).
  }
  const r = { selectResource: m[1]!, path: m[2]!.trim(), value };
  const problem = responsibilitiesProblem([r]);
  if (problem) throw new Error(usage);
  return r as Responsibility;
}

/**
 * The spec of a scenario's task before the kit sets the contract fields: `taskSpec` with the scenario's spec merged
 * over it as a JSON merge patch (RFC 7386: objects merge, null removes a field, anything else replaces), and the
 * responsibilities split off (the scenario's, else the task spec's, else `fallback`).
 */
export function scenarioSpec(
  base: Record<string, unknown> | undefined,
  scenario: Record<string, unknown> | undefined,
  fallback: Responsibility[],
): { spec: Record<string, unknown>; responsibilities: Responsibility[] } {
  const merged = applyMergePatch(structuredClone(base ?? {}), structuredClone(scenario ?? {})) as Record<string, unknown>;
  const { responsibilities, ...spec } = merged;
  return { spec, responsibilities: (responsibilities as Responsibility[] | undefined) ?? fallback };
}
