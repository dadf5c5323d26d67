import { expect } from 'chai';
import { crdDifferences, ExistingCrdMismatchError } from './crds.js';

const crd = (
  over: { group?: string; schema?: unknown; versions?: string[]; served?: boolean; storage?: boolean; subresources?: unknown } = {},
) => ({
  metadata: { name: 'widgets.example.dev' },
  spec: {
    group: over.group ?? 'example.dev',
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets' },
    versions: (over.versions ?? ['v1']).map((name) => ({
      name,
      served: over.served ?? true,
      storage: over.storage ?? true,
      schema: over.schema ?? {
        openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } },
      },
      ...(over.subresources !== undefined ? { subresources: over.subresources } : {}),
    })),
  },
});

describe('test support: may an existing CRD stand in for the one a suite needs', () => {
  const cases: { name: string; existing: ReturnType<typeof crd>; want: RegExp[] }[] = [
    { name: 'identical: usable', existing: crd(), want: [] },
    {
      name: 'same schema with keys in another order: usable',
      existing: crd({
        schema: {
          openAPIV3Schema: { properties: { spec: { properties: { size: { type: 'integer' } }, type: 'object' } }, type: 'object' },
        },
      }),
      want: [],
    },
    { name: 'more versions served than the tests need: usable', existing: crd({ versions: ['v1', 'v2'] }), want: [] },
    { name: 'another group', existing: crd({ group: 'other.dev' }), want: [/spec.group is "other.dev"/] },
    {
      name: 'a different schema',
      existing: crd({ schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }),
      want: [/version v1: schema differs/],
    },
    { name: 'the version the tests use is missing', existing: crd({ versions: ['v2'] }), want: [/version v1 is missing/] },
    { name: 'not served', existing: crd({ served: false }), want: [/served is false/] },
    {
      name: 'a status subresource the tests do not expect',
      existing: crd({ subresources: { status: {} } }),
      want: [/subresources differs/],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = crdDifferences(c.existing, crd());
      expect(d).to.have.length(c.want.length);
      c.want.forEach((re, i) => expect(d[i]).to.match(re));
    });
  }

  it('compares the form a real server stores: empty optional fields and defaults do not count, real differences do', () => {
    const spec = { type: 'object', properties: { size: { type: 'integer' } } };
    const file = crd({
      schema: { openAPIV3Schema: { type: 'object', description: '', properties: { spec, status: { type: 'object', properties: {} } } } },
    });
    const stored = crd({ schema: { openAPIV3Schema: { type: 'object', properties: { spec, status: { type: 'object' } } } } });
    const withDefaults = {
      ...stored,
      spec: { ...stored.spec, names: { ...stored.spec.names, singular: 'widget', listKind: 'WidgetList' } },
    };
    expect(crdDifferences(withDefaults, file)).to.deep.equal([]);
    const otherStatus = crd({
      schema: {
        openAPIV3Schema: { type: 'object', properties: { spec, status: { type: 'object', properties: { x: { type: 'string' } } } } },
      },
    });
    expect(crdDifferences(otherStatus, file)).to.deep.equal(['version v1: schema differs']);
  });

  it('fails with a message naming each CRD, the difference and what to do', () => {
    const e = new ExistingCrdMismatchError([{ name: 'machines.cluster.x-k8s.io', differences: ['version v1beta2: schema differs'] }]);
    expect(e.message).to.match(/machines\.cluster\.x-k8s\.io: version v1beta2: schema differs/);
    expect(e.message).to.match(/never update CRDs they did not create/);
    expect(e.message).to.match(/CAPI_CRDS_DIR/);
  });
});
