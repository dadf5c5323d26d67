// Whether a CRD that already exists on a cluster can stand in for the one a test suite would install: on a real
// cluster (INPLACE_TEST_KUBECONFIG) tests never update or delete CRDs they did not create, so they use an existing
// CRD only when it serves what the suite needs, and otherwise stop with a message naming the CRD and the difference.
// Both sides are compared in the form kube-apiserver stores (storedCrdForm): a real server drops empty optional
// fields and sets defaults, so a file is never compared with what the server made of it verbatim.
import { UPDATER_CONTRACT_LABEL, UPDATER_CONTRACT_VALUE } from '../../src/contract/index.js';
import { storedCrdForm } from '../../tools/local-apiserver/index.js';

/** The parts of a CRD the comparison looks at (a parsed YAML document or the API server's object). */
interface CrdLike {
  metadata?: { name?: string };
  spec?: {
    group?: string;
    scope?: string;
    names?: { kind?: string; plural?: string };
    versions?: {
      name?: string;
      served?: boolean;
      storage?: boolean;
      schema?: unknown;
      subresources?: unknown;
      additionalPrinterColumns?: unknown;
    }[];
  };
}

/** JSON with object keys sorted and undefined dropped, so that key order and absent-vs-undefined do not count. */
function canonical(v: unknown): string {
  return (
    JSON.stringify(v, (_k, x: unknown) =>
      x && typeof x === 'object' && !Array.isArray(x)
        ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
        : x,
    ) ?? 'undefined'
  );
}

/**
 * What makes `existing` unusable in place of `wanted`: group, scope, kind and plural, and for every version `wanted`
 * declares: served, storage, schema, subresources and printer columns, each side in its stored form. Versions only `existing` has do not count
 * (a newer CAPI may serve more). Empty when the existing CRD serves what the tests need.
 */
export function crdDifferences(existing: CrdLike, wanted: CrdLike): string[] {
  const out: string[] = [];
  const e = storedCrdForm(existing).spec ?? {};
  const w = storedCrdForm(wanted).spec ?? {};
  for (const [field, a, b] of [
    ['spec.group', e.group, w.group],
    ['spec.scope', e.scope, w.scope],
    ['spec.names.kind', e.names?.kind, w.names?.kind],
    ['spec.names.plural', e.names?.plural, w.names?.plural],
  ] as const) {
    if (a !== b) out.push(`${field} is ${JSON.stringify(a)}, tests need ${JSON.stringify(b)}`);
  }
  for (const wv of w.versions ?? []) {
    const ev = (e.versions ?? []).find((v) => v.name === wv.name);
    if (!ev) {
      out.push(`version ${wv.name} is missing`);
      continue;
    }
    if ((ev.served ?? false) !== (wv.served ?? false))
      out.push(`version ${wv.name}: served is ${String(ev.served)}, tests need ${String(wv.served)}`);
    if ((ev.storage ?? false) !== (wv.storage ?? false))
      out.push(`version ${wv.name}: storage is ${String(ev.storage)}, tests need ${String(wv.storage)}`);
    for (const field of ['schema', 'subresources', 'additionalPrinterColumns'] as const) {
      if (canonical(ev[field]) !== canonical(wv[field])) out.push(`version ${wv.name}: ${field} differs`);
    }
  }
  return out;
}

/** The error a suite fails with when a real cluster's CRDs differ from the ones it needs (never overwritten). */
export class ExistingCrdMismatchError extends Error {
  constructor(readonly mismatches: { name: string; differences: string[] }[]) {
    super(
      `the cluster of INPLACE_TEST_KUBECONFIG already has CRDs that differ from the ones these tests need; tests never ` +
        `update CRDs they did not create on a real cluster:\n` +
        mismatches.map((m) => `  ${m.name}: ${m.differences.join('; ')}`).join('\n') +
        `\nUse a cluster without them (e.g. a fresh kind cluster), or point CAPI_CRDS_DIR at the CRDs of the Cluster API ` +
        `version the cluster runs (for the platform's own CRDs: the version of this checkout).`,
    );
    this.name = 'ExistingCrdMismatchError';
  }
}

/**
 * A namespaced CRD of `group` whose spec and status keep any field (v1, status subresource); `contract` labels it as a
 * task kind of the updater contract. For tests that bring their own task kinds.
 */
export const openTaskKindCrd = (group: string, kind: string, contract: boolean): Record<string, unknown> => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: `${kind.toLowerCase()}s.${group}`,
    ...(contract ? { labels: { [UPDATER_CONTRACT_LABEL]: UPDATER_CONTRACT_VALUE } } : {}),
  },
  spec: {
    group,
    scope: 'Namespaced',
    names: { kind, listKind: `${kind}List`, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase() },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
});
