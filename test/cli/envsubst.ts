// Variable substitution as clusterctl does it on a provider's components YAML (its yaml processor runs
// drone/envsubst): `$NAME` and `${NAME}` take the value; `${NAME:=default}` / `${NAME:-default}` take the default when
// the value is unset or empty, `${NAME=default}` / `${NAME-default}` only when it is unset. Before substituting,
// clusterctl lists the variables and refuses, naming them, those that have neither a value nor a default. A `$` not
// followed by a name or `{` stays as it is (regular expressions in CRD patterns end in `$`).

/** A variable reference found in a text. */
export interface VariableRef {
  /** The variable's name. */
  readonly name: string;
  /** Its default, when the reference has one. */
  readonly default?: string;
}

const REF = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[=-])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** Every variable reference of `text`, in order (the same name may occur more than once). */
export function variableRefs(text: string): VariableRef[] {
  return [...text.matchAll(REF)].map((m) => {
    const name = (m[1] ?? m[4])!;
    return m[2] !== undefined ? { name, default: m[3] ?? '' } : { name };
  });
}

/** Thrown for variables that have neither a value nor a default, named as clusterctl names them. */
export class MissingVariablesError extends Error {
  constructor(readonly names: readonly string[]) {
    super(
      `value for variables [${names.join(', ')}] is not set. Please set the value using os environment variables or the clusterctl config file`,
    );
  }
}

/** Substitutes the variables of `text` from `values` (clusterctl's environment + config); throws MissingVariablesError. */
export function envsubst(text: string, values: Readonly<Record<string, string | undefined>>): string {
  const missing = [
    ...new Set(
      variableRefs(text)
        .filter((r) => r.default === undefined && values[r.name] === undefined)
        .map((r) => r.name),
    ),
  ].sort();
  if (missing.length > 0) throw new MissingVariablesError(missing);
  return text.replace(
    REF,
    (_all, braced: string | undefined, op: string | undefined, def: string | undefined, bare: string | undefined) => {
      const name = (braced ?? bare)!;
      const value = values[name];
      if (op === undefined) return value ?? '';
      const useDefault = op.startsWith(':') ? value === undefined || value === '' : value === undefined;
      return useDefault ? (def ?? '') : value!;
    },
  );
}
