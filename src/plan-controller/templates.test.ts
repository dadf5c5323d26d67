import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { MAX_TASK_BYTES, UPDATER_CONTRACT_LABEL, judgeTemplate, templateTaskProblem } from '../contract/index.js';
import type { InPlaceUpdatePlan } from '../api/index.js';
import type { ScopeReader } from './scope.js';
import type { TemplateLookup, TemplateRef } from '../rules/inputs.js';
import { buildScope } from './scope.js';
import { kcp, md, plan, target, versionUpdater, cluster } from './testkit.js';
import { validatePlan } from '../rules/validate.js';
import { taskKindOfRef, templateProblems } from '../rules/templates.js';

const crd = (labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'footasks.example.com', ...(labels ? { labels } : {}) },
});
const ref = (apiVersion: string, kind: string): TemplateRef => ({ apiVersion, kind, name: 't' });
/** A template found and measured (100 bytes) unless `over` says otherwise. */
const lookup = (r: TemplateRef, over: Partial<TemplateLookup> = {}): TemplateLookup => ({ ref: r, found: true, bytes: 100, ...over });

describe('plan template checks (task kinds must declare the contract)', () => {
  it('maps a template reference to its task kind', () => {
    expect(taskKindOfRef(ref('example.com/v1', 'FooTaskTemplate'))).to.deep.equal({ group: 'example.com', kind: 'FooTask' });
    expect(taskKindOfRef(ref('example.com/v1', 'Foo'))).to.equal(undefined);
  });

  const ok = ref('example.com/v1', 'FooTaskTemplate');
  const cases: { name: string; ref: TemplateRef; lookup?: TemplateLookup; want: RegExp[] }[] = [
    {
      name: 'a labelled CRD and a small template pass',
      ref: ok,
      lookup: lookup(ok, { task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' }) }, bytes: 100 }),
      want: [],
    },
    {
      name: 'KubeadmConfigTemplate (a Cluster API kind) is refused without a lookup',
      ref: ref('bootstrap.cluster.x-k8s.io/v1beta2', 'KubeadmConfigTemplate'),
      want: [/KubeadmConfig.bootstrap.cluster.x-k8s.io is in a Cluster API group/],
    },
    {
      name: 'DevMachineTemplate is refused',
      ref: ref('infrastructure.cluster.x-k8s.io/v1beta2', 'DevMachineTemplate'),
      want: [/Cluster API group/],
    },
    { name: 'the core CAPI group is refused', ref: ref('cluster.x-k8s.io/v1beta2', 'MachineTemplate'), want: [/Cluster API group/] },
    {
      name: 'the inplace subgroups are not Cluster API',
      ref: ref('samples.inplace.cluster.x-k8s.io/v1alpha1', 'OSImageUpdateTaskTemplate'),
      lookup: lookup(ref('samples.inplace.cluster.x-k8s.io/v1alpha1', 'OSImageUpdateTaskTemplate'), {
        task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' }) },
      }),
      want: [],
    },
    { name: 'a task kind without CRD', ref: ok, lookup: lookup(ok, { task: {} }), want: [/has no CustomResourceDefinition/] },
    { name: 'an unlabelled CRD', ref: ok, lookup: lookup(ok, { task: { crd: crd() } }), want: [/does not declare the updater contract/] },
    {
      name: 'a CRD labelled with another contract version',
      ref: ok,
      lookup: lookup(ok, { task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v9' }) } }),
      want: [/found "v9"/],
    },
    {
      name: 'a template larger than a task may be',
      ref: ok,
      lookup: lookup(ok, { task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' }) }, bytes: MAX_TASK_BYTES + 1 }),
      want: [/more than the \d+ a task may have/],
    },
    { name: 'nothing said before the lookup got that far', ref: ok, lookup: lookup(ok, { found: false, bytes: undefined }), want: [] },
    // Fail closed (issue 42, item 10): what was found but not measured is never taken as small.
    {
      name: 'a template found but not judged (a partial read) is refused, saying why',
      ref: ok,
      lookup: lookup(ok, {
        task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' }) },
        bytes: undefined,
        unjudged: 'only its metadata was read',
      }),
      want: [/template FooTaskTemplate t: cannot be judged: only its metadata was read/],
    },
    {
      name: 'a template found without a size is refused',
      ref: ok,
      lookup: lookup(ok, { task: { crd: crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' }) }, bytes: undefined }),
      want: [/its size could not be measured/],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = templateProblems(c.ref, c.lookup);
      expect(got).to.have.length(c.want.length);
      c.want.forEach((w, i) => expect(got[i]).to.match(w));
    });
  }
});

describe('judging a template object (the plan, a campaign and the task controller judge alike)', () => {
  const tpl = (spec: unknown, kind = 'FooTaskTemplate'): KubeObject =>
    ({ apiVersion: 'example.com/v1', kind, metadata: { name: 't' }, ...(spec === undefined ? {} : { spec }) }) as KubeObject;

  it('measures the spec of a template with spec.template.spec', () => {
    const spec = { template: { spec: { image: 'x'.repeat(1000) } } };
    expect(judgeTemplate(tpl(spec))).to.deep.equal({ bytes: Buffer.byteLength(JSON.stringify(spec)) });
    expect(judgeTemplate(tpl({ template: { spec: {} } }))).to.deep.equal({ bytes: Buffer.byteLength('{"template":{"spec":{}}}') });
  });

  it('cannot judge what is not all there: no spec, no spec.template.spec, a metadata-only read, not an object', () => {
    expect(judgeTemplate(tpl(undefined)))
      .to.have.property('unjudged')
      .that.matches(/no spec/);
    expect(judgeTemplate(tpl({ blob: 'x' })))
      .to.have.property('unjudged')
      .that.matches(/no spec\.template\.spec/);
    expect(judgeTemplate(tpl({ template: { spec: 'x' } })))
      .to.have.property('unjudged')
      .that.matches(/no spec\.template\.spec/);
    expect(judgeTemplate(tpl({ template: { spec: {} } }, 'PartialObjectMetadata')))
      .to.have.property('unjudged')
      .that.matches(/metadata/);
    expect(judgeTemplate(null)).to.have.property('unjudged');
    expect(judgeTemplate([])).to.have.property('unjudged');
  });

  it('the task controller refuses the same: too large, or not judged; a template that fits passes', () => {
    const what = 'template FooTaskTemplate ns/t of updater u';
    expect(templateTaskProblem(what, tpl({ template: { spec: { a: 1 } } }))).to.equal(undefined);
    expect(templateTaskProblem(what, tpl({ template: { spec: { a: 'x'.repeat(MAX_TASK_BYTES) } } }))).to.match(
      new RegExp(`^${what} is \\d+ bytes, more than the ${MAX_TASK_BYTES} a task may have$`),
    );
    expect(templateTaskProblem(what, tpl({ note: 'hollow' }))).to.match(/cannot be judged: it has no spec\.template\.spec/);
  });
});

describe('template lookups fail closed (buildScope, the one builder of the controller and the preview)', () => {
  const osRef = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-task' };
  const p = plan({
    cp: target('cluster1-cp', 1, [versionUpdater({ updaterUpdateTemplateRef: osRef })]),
  }) as InPlaceUpdatePlan & KubeObject;
  const labelled = crd({ [UPDATER_CONTRACT_LABEL]: 'v1alpha1' });
  /** A reader over the fixtures whose template read answers `read` (or throws it). */
  const reader = (read: () => Promise<Awaited<ReturnType<ScopeReader['read']>>>): ScopeReader => ({
    now: () => '2026-01-01T00:01:00Z',
    cluster: async () => cluster(),
    machineDeployments: async () => [md()],
    machines: async () => [],
    machineUpdates: async () => [],
    plans: async () => [p],
    read: async (_ns, _g, _k, _n, purpose) => (purpose === 'controlPlane' ? { object: kcp() } : read()),
    taskCrd: async () => labelled,
  });
  const problemsWith = async (read: () => Promise<Awaited<ReturnType<ScopeReader['read']>>>): Promise<string[]> =>
    validatePlan(await buildScope(p, reader(read)));

  it('a template read and judged: valid', async () => {
    expect(
      await problemsWith(async () => ({
        object: { apiVersion: osRef.apiVersion, kind: osRef.kind, metadata: { name: osRef.name }, spec: { template: { spec: {} } } },
      })),
    ).to.deep.equal([]);
  });
  it('a read that fails: Valid=False naming it, not a template taken as small', async () => {
    const problems = await problemsWith(() => Promise.reject(new Error('connection reset by peer')));
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(
      /template OSImageUpdateTaskTemplate os-image-task: could not be read, so it cannot be judged \(connection reset by peer\)/,
    );
  });
  it('a partial read (metadata only): Valid=False, cannot be judged', async () => {
    const problems = await problemsWith(async () => ({
      object: { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: { name: osRef.name } },
    }));
    expect(problems.join('\n')).to.match(/cannot be judged: only its metadata was read/);
  });
  it('a template not in the cache: not found', async () => {
    expect((await problemsWith(async () => ({}))).join('\n')).to.match(/OSImageUpdateTaskTemplate \S*os-image-task not found/);
  });
});
