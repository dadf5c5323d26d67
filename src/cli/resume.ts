// `inplace resume <plan>`.
import { controlVerb, decideResume } from './control.js';

/** `inplace resume`. */
export const resumeVerb = controlVerb(
  'resume',
  'Resume a paused plan',
  'Sets spec.paused: false; the plan starts new machines again.',
  decideResume,
);
