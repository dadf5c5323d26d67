// Named views into the generated types, for code that handles one part of a resource.
import type { InPlaceUpdatePlanSpec, InPlaceUpdatePlanStatus, MachineUpdateSpec } from './generated/index.js';

/** A plan target (control plane or MachineDeployment) as written in the plan. */
export type PlanTarget = NonNullable<InPlaceUpdatePlanSpec['controlPlane']>;
/** One updater entry of a target. */
export type PlanUpdater = PlanTarget['updaters'][number];
/** One responsibility of an updater. */
export type Responsibility = PlanUpdater['responsibilities'][number];
/** A row of the plan's per-target status. */
export type TargetStatus = NonNullable<InPlaceUpdatePlanStatus['targets']>[number];
/** Kind of a plan target. */
export type TargetKind = MachineUpdateSpec['target']['kind'];
/** One entry of a MachineUpdate's spec.previous: a responsibility's value before the update (JSON-encoded; absent = none). */
export type PreviousValue = NonNullable<MachineUpdateSpec['previous']>[number];
