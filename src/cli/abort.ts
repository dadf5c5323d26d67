// `inplace abort <plan>`.
import { controlVerb, decideAbort } from './control.js';

/** `inplace abort`. */
export const abortVerb = controlVerb(
  'abort',
  'Abort a plan: no new machines start, machines in update are aborted',
  'Sets spec.updatePhase: aborting (one way). Machines whose update is in flight get their current task aborted;\nthe plan ends `aborted` once every machine is terminal. Nothing is committed for aborted machines.',
  decideAbort,
);
