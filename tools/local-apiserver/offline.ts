// The server's validation of custom resources without a server: the public entry for checking a document against a
// CRD offline (the CLI's `inplace preview` of a plan file), so callers need not know the schema or CEL internals.
import { compileCelExpression, type CelExpression } from './cel.js';
import { celValidate, crdToResource, hasBlockingError } from './crd.js';
import { fieldErrorString, type FieldError } from './errors.js';
import { applyDefaults, prune, validate, type Schema } from './schema.js';

type Obj = Record<string, unknown>;

/** What checking one document found, each problem as the server words it. */
export interface OfflineCheck {
  /** The document as the server would store it: unknown fields pruned, defaults applied (a copy). */
  object: Obj;
  /** Paths of fields the schema does not know (strict field validation refuses them). */
  unknownFields: string[];
  /** Structural schema errors (types, enums, patterns, bounds, required fields). */
  schemaErrors: string[];
  /**
   * Failed x-kubernetes-validations rules, evaluated even when the schema failed (unlike a real server); a rule that
   * could not run on a malformed value only repeats a schema error in other words and is left out.
   */
  ruleErrors: string[];
}

/** One served version of a CRD, compiled once, checking documents as the server does on create. */
export interface CrdVersionCheck {
  /** Checks a document of this version; ObjectMeta is not validated (a file's metadata is the server's business). */
  check(doc: Obj): OfflineCheck;
}

/**
 * The served versions of a CRD with a schema, by apiVersion (group/version). Throws, with the server's words, when
 * the server would refuse the CRD itself.
 */
export function crdVersionChecks(crd: Obj): Map<string, CrdVersionCheck> {
  const { def, errors } = crdToResource(crd);
  if (!def) throw new Error(`the CRD is not acceptable: ${errors.map((e) => fieldErrorString(e)).join('; ')}`);
  return new Map(def.versions.flatMap((v) => (v.schema ? [[`${def.group}/${v.name}`, versionCheck(v.schema)] as const] : [])));
}

function versionCheck(schema: Schema): CrdVersionCheck {
  return {
    check(doc) {
      const obj = structuredClone(doc);
      const unknownFields: string[] = [];
      prune(obj, schema, '', unknownFields, true);
      applyDefaults(obj, schema);
      const errs: FieldError[] = [];
      const { metadata: _meta, ...rest } = obj;
      validate(rest, { ...schema, required: (schema.required ?? []).filter((r) => r !== 'metadata') }, '', errs);
      const ruleErrs: FieldError[] = [];
      celValidate(obj, undefined, schema, '', ruleErrs);
      const blocked = hasBlockingError(errs);
      return {
        object: obj,
        unknownFields,
        schemaErrors: errs.map((e) => fieldErrorString(e)),
        ruleErrors: ruleErrs.filter((e) => !(blocked && e.detail.includes(' evaluating rule: '))).map((e) => fieldErrorString(e)),
      };
    },
  };
}

export { CelError } from './cel.js';

const expressions = new Map<string, CelExpression>();

/**
 * Evaluates a CEL expression over JSON variables (e.g. `object`, `oldObject`, `request`, `params` of a
 * ValidatingAdmissionPolicy) as the server's CEL does: integers are CEL ints, results come back as JSON (ints as
 * numbers, lists as arrays, maps as objects). Compiled once per expression and variable names. Throws CelError, with
 * cel-go's words, when the expression does not compile (syntax, undeclared reference, no matching overload) or fails
 * at run time (no such key, division by zero...).
 */
export function evaluateCel(expression: string, variables: Readonly<Record<string, unknown>>): unknown {
  const names = Object.keys(variables).sort();
  const key = `${names.join(',')}\n${expression}`;
  let compiled = expressions.get(key);
  if (!compiled) {
    compiled = compileCelExpression(expression, names);
    // Bounded: a caller evaluating generated expressions must not grow this without limit.
    if (expressions.size >= 1000) expressions.clear();
    expressions.set(key, compiled);
  }
  return compiled.eval(variables);
}
