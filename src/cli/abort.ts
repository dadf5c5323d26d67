// `inplace abort <plan>`.
import { controlVerb, decideAbort } from './control.js';

/** `inplace abort`. */
export const abortVerb = controlVerb(
  'abort',
  'Abort a plan: no new machines start; machines in update stop at their current task (or finish)',
  'Sets spec.updatePhase: aborting (one way). No new machine starts. A machine in update gets its current task\n' +
    'aborted; a machine whose updaters already finished (or whose updater finishes before it sees the abort) may\n' +
    'still commit and end `updated` (contract C4). The plan ends `aborted` once every machine is terminal, or\n' +
    '`updated` if every machine finished first. Nothing is committed for an aborted machine. An owner whose\n' +
    'machines end mixed stays paused (OwnersAligned=False MixedMachines): `inplace status <plan>` says what to do.',
  decideAbort,
);
