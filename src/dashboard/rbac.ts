// RBAC the deployed dashboard (`inplace dashboard --auth kube`, npm run synth -- --dashboard) needs: exactly the calls
// it makes (cdk8s synthesizes its roles from this list; test/cli/rbac-calls.test.ts records them). Its informers list
// and watch the three kinds the page shows (never a get, never a write); each viewer's token is checked with a
// TokenReview and their access with SubjectAccessReviews. No Events, no Lease: it writes nothing and elects no leader.
import { METRICS_AUTH_RULES } from '../runtime/rbac.js';
import type { PolicyRule } from '../runtime/pure/types.js';

/** The dashboard's RBAC rules (no wildcards, no write verb on any object of the cluster). */
export const rbac: PolicyRule[] = [
  {
    apiGroups: ['inplace.cluster.x-k8s.io'],
    resources: ['inplaceupdatecampaigns', 'inplaceupdateplans', 'machineupdates'],
    verbs: ['list', 'watch'],
  },
  // TokenReviews and SubjectAccessReviews are questions to the API server (created, never stored).
  ...METRICS_AUTH_RULES.map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] })),
];
