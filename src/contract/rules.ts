// The updater contract's rules as data. docs/contract.md's rules table is checked against this list by a test,
// and the conformance kit reports against these ids, so the document, the platform and the kit cannot drift.

/** Identifier of a contract rule. */
export type RuleId = 'C1' | 'C2' | 'C3' | 'C4' | 'C5' | 'C6' | 'C7' | 'C8' | 'C9' | 'C10';

/** Who is bound by a rule. */
export type RuleWriter = 'platform' | 'platform only' | 'updater' | 'updater only';

/** One rule of the updater contract. */
export interface ContractRule {
  id: RuleId;
  /** Short name, used as the heading of the rule's section in docs/contract.md. */
  title: string;
  /** Mandatory rules must hold for an updater (or the platform) to be conformant. */
  mandatory: boolean;
  /** Who writes the fields the rule is about (who must keep it). */
  who: RuleWriter;
  /** One-sentence statement of the rule as printed in the rules table. */
  note: string;
}

/** Version of the contract this code implements; see "Versioning" in docs/contract.md. */
export const CONTRACT_VERSION = 'v1alpha1';

/** The rules C1..C9 in order (docs/design.md §3), then C10 (Cluster API's in-place update hooks, docs/hooks.md). */
export const RULES: readonly ContractRule[] = [
  {
    id: 'C1',
    title: 'Task labels and owner',
    mandatory: true,
    who: 'platform',
    note: 'The task carries the labels cluster.x-k8s.io/cluster-name, inplace.cluster.x-k8s.io/plan-name, inplace.cluster.x-k8s.io/machine-name, inplace.cluster.x-k8s.io/updater-name and a controller ownerReference to its MachineUpdate; updaters must not remove them.',
  },
  {
    id: 'C2',
    title: 'Update phase',
    mandatory: true,
    who: 'platform only',
    note: 'spec.updatePhase is updating, later possibly aborting, never back; only the platform writes it.',
  },
  {
    id: 'C3',
    title: 'Machine and responsibilities',
    mandatory: true,
    who: 'platform only',
    note: 'spec.machineRef and spec.responsibilities (plus the template spec) are written by the platform at creation and never change.',
  },
  {
    id: 'C4',
    title: 'Update status',
    mandatory: true,
    who: 'updater only',
    note: 'status.updateStatus goes updating -> updated or failed, and after aborting -> aborted (or updated or failed if it finished first); updated, aborted and failed are terminal and never left.',
  },
  {
    id: 'C5',
    title: 'Observed generation',
    mandatory: true,
    who: 'updater',
    note: 'status.observedGeneration is the metadata.generation the status answers; the platform ignores a status whose observedGeneration is behind.',
  },
  {
    id: 'C6',
    title: 'Ready condition',
    mandatory: true,
    who: 'updater',
    note: 'status.conditions has Ready with a reason and a human message; on failed the message says why and is shown on the MachineUpdate and the plan.',
  },
  {
    id: 'C7',
    title: 'Idempotency',
    mandatory: true,
    who: 'updater',
    note: 'The same task may be reconciled any number of times, across updater restarts, without repeating or losing work.',
  },
  {
    id: 'C8',
    title: 'Commit by the platform',
    mandatory: true,
    who: 'platform',
    note: 'Updaters never write CAPI objects; when every updater of a machine is updated the platform writes each responsibility value at its JSON pointer, all or nothing across objects, then marks the MachineUpdate updated; nothing is committed on abort or failure.',
  },
  {
    id: 'C9',
    title: 'Deterministic task names',
    mandatory: true,
    who: 'platform',
    note: 'A task name is derived from the plan, machine and updater names only, so a restarted controller never creates a second task and two plans never share one.',
  },
  {
    id: 'C10',
    title: 'Coverage declaration',
    mandatory: false,
    who: 'updater',
    note: "Behind Cluster API's in-place update hooks, an updater declares the fields it changes in one InPlaceUpdater (spec.covers: selectResource and JSON pointer under /spec, spec.sequence, its task template or parameters); a change is done in place only when every changed field is covered, and each covering updater gets the desired values as responsibilities.",
  },
];

/** Looks a rule up by id. */
export function rule(id: RuleId): ContractRule {
  const r = RULES.find((x) => x.id === id);
  if (!r) throw new Error(`unknown contract rule ${id}`);
  return r;
}
