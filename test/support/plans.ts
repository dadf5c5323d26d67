// Waiting on plans in tests: one place that knows where the Valid condition lives.
import { InPlaceUpdatePlans, type InPlaceUpdatePlan, type KubeObject } from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/index.js';
import { waitFor } from './wait.js';

/** A plan as tests read it. */
export type PlanObject = InPlaceUpdatePlan & KubeObject;

/** The plan once the plan controller reports it Valid=False, and the message of that condition. */
export async function waitPlanInvalid(
  client: KubeClient,
  ns: string,
  name: string,
  timeoutMs = 30_000,
  what = '',
): Promise<{ plan: PlanObject; message: string }> {
  let message = '';
  const plan = await waitFor(
    async () => {
      const p = await client.get<PlanObject>(InPlaceUpdatePlans, ns, name);
      const valid = p?.status?.conditions?.find((c) => c.type === 'Valid');
      message = valid?.message ?? '';
      return valid?.status === 'False' ? p : undefined;
    },
    { timeoutMs, intervalMs: 100, message: `Valid=False on plan ${name}${what ? ` (${what})` : ''}` },
  );
  return { plan, message };
}
