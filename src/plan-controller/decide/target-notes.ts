// Notes of a target's decision that name machines: labelled by another plan, failed with their updaters' messages.
import type { KubeObject } from '../../api/index.js';
import { Labels, MessageBudget, summarizeList } from '../../api/index.js';
import type { TargetScope } from './types.js';

/** The other plan a machine is labelled in update by, if any. */
export const inUpdateByOther = (scope: TargetScope, m: KubeObject): string | undefined => {
  const v = m.metadata.labels?.[Labels.planName];
  return v !== undefined && v !== scope.planLabel ? v : undefined;
};

// Messages are built from unbounded input (machine names, updaters' messages, many targets): each list is
// summarised under a budget so that the status write never exceeds the schema's limits, however many fail.
/** The failed machines with their updaters' messages, bounded for a status message. */
export const failureNote = (scope: TargetScope, names: string[]): string =>
  summarizeList(
    names.map((n) => {
      const msg = scope.mus.get(n)?.status?.message;
      return msg ? `${n}: ${msg}` : n;
    }),
    { maxBytes: MessageBudget.status, itemMaxBytes: MessageBudget.item },
  );
