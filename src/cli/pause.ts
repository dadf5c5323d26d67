// `inplace pause <plan>`.
import { controlVerb, decidePause } from './control.js';

/** `inplace pause`. */
export const pauseVerb = controlVerb(
  'pause',
  'Pause a plan: no new machines start; machines in update finish',
  'Sets spec.paused: true. Machines already in update finish; resume with `inplace resume <plan>`.',
  decidePause,
);
