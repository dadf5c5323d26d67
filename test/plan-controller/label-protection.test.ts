// Unit (issue 25, write 3 folded into write 1): the patch that labels a machine to start its update also protects it
// from remediation, exactly as the MHC extension would, when an MHC the extension acts on selects it; the extension
// then finds it protected and decides nothing to write. The patch is applied here as the API server applies it (the
// local server's JSON patch), against the Machine as cached and against one an operator changed meanwhile.
import { expect } from 'chai';
import { API_VERSION, Annotations, Labels, UpdateStatus, type KubeObject } from '../../src/api/index.js';
import type { Machine, MachineHealthCheck } from '../../src/api/capi/index.js';
import { labelPatch } from '../../src/plan-controller/decide/label.js';
import { planMachineHealthCheck } from '../../src/mhc-extension/decide.js';
import type { MachineUpdate } from '../../src/mhc-extension/scope.js';
import { jsonPatch } from '../../tools/local-apiserver/patch.js';

const NS = 'ns1';
const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const STARTED = Annotations.updateStartedAt;
const START = '2026-01-01T00:00:00Z';
const START_MS = Date.parse(START);
const MU = 'p1-m1-abcdef12';
const OTHER = 'example.com/keep';

const machine = (o: { annotations?: Record<string, string>; initialized?: boolean; labels?: Record<string, string> } = {}): Machine => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: {
    name: 'm1',
    namespace: NS,
    resourceVersion: '7',
    labels: { [Labels.clusterName]: 'c1', role: 'worker', ...o.labels },
    ...(o.annotations ? { annotations: o.annotations } : {}),
  },
  spec: { clusterName: 'c1' } as Machine['spec'],
  ...(o.initialized
    ? { status: { nodeRef: { name: 'n1' }, initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true } } }
    : {}),
});

const mhc = (
  name: string,
  o: { timeout?: string | null; selector?: Record<string, string>; cluster?: string; nodeStartup?: number; trigger?: string } = {},
): MachineHealthCheck => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'MachineHealthCheck',
  metadata: {
    name,
    namespace: NS,
    ...(o.timeout === null ? {} : { annotations: { [Annotations.inPlaceUpdateTimeout]: o.timeout ?? '30m' } }),
  },
  spec: {
    clusterName: o.cluster ?? 'c1',
    selector: { matchLabels: o.selector ?? { role: 'worker' } },
    ...(o.nodeStartup !== undefined ? { checks: { nodeStartupTimeoutSeconds: o.nodeStartup } } : {}),
    ...(o.trigger ? { remediation: { triggerIf: { unhealthyLessThanOrEqualTo: o.trigger } } } : {}),
  },
});

/** The label patch of m1 applied to `live` (the server's copy; default: as cached), as the API server applies it. */
function applyLabel(cached: Machine, mhcs: MachineHealthCheck[], live: Machine = cached): Machine {
  const p = labelPatch(cached, 'p1', START, MU, mhcs);
  if (p.type === 'json') return jsonPatch(structuredClone(live), p.ops) as Machine;
  const meta = p.body.metadata as { labels: Record<string, string>; annotations: Record<string, string>; resourceVersion?: string };
  if (meta.resourceVersion !== undefined && meta.resourceVersion !== live.metadata.resourceVersion) throw new Error('409 conflict');
  return {
    ...live,
    metadata: {
      ...live.metadata,
      labels: { ...live.metadata.labels, ...meta.labels },
      annotations: { ...live.metadata.annotations, ...meta.annotations },
    },
  };
}

const note = (mhcName: string, untilMs: number): string =>
  `in-place update ${MU}: MachineHealthCheck ${mhcName} skips remediation until ${new Date(untilMs).toISOString()}`;

describe('plan-controller label patch carries the MHC protection (issue 25)', () => {
  it('protects a machine an acting MHC selects: prior false, skip-remediation naming the update, the MHC and start + timeout', () => {
    const after = applyLabel(machine({ annotations: { [OTHER]: 'x' }, initialized: true }), [mhc('h1', { timeout: '30m' })]);
    expect(after.metadata.labels).to.include({ [Labels.planName]: 'p1' });
    expect(after.metadata.annotations).to.deep.equal({
      [OTHER]: 'x',
      [STARTED]: START,
      [P]: 'false',
      [S]: note('h1', START_MS + 30 * 60_000),
    });
  });

  it("adds the node startup timeout while the node is not initialized (the MHC's, else CAPI's default 10 m)", () => {
    const a = applyLabel(machine({ annotations: {} }), [mhc('h1', { timeout: '30m', nodeStartup: 120 })]);
    expect(a.metadata.annotations?.[S]).to.equal(note('h1', START_MS + 30 * 60_000 + 120_000));
    const b = applyLabel(machine({ annotations: {} }), [mhc('h1', { timeout: '30m' })]);
    expect(b.metadata.annotations?.[S]).to.equal(note('h1', START_MS + 30 * 60_000 + 600_000));
  });

  it("leaves an operator's own skip-remediation untouched and records prior true", () => {
    const after = applyLabel(machine({ annotations: { [S]: 'operator' }, initialized: true }), [mhc('h1')]);
    expect(after.metadata.annotations).to.deep.equal({ [S]: 'operator', [P]: 'true', [STARTED]: START });
  });

  it('fails (changes nothing) when an operator set skip-remediation after the read: the start is decided again, never clobbered', () => {
    const cached = machine({ annotations: { [OTHER]: 'x' }, initialized: true });
    const live = machine({ annotations: { [OTHER]: 'x', [S]: 'operator' }, initialized: true });
    expect(() => applyLabel(cached, [mhc('h1')], live)).to.throw();
    // Decided again on the fresh annotations: the operator's value stays, prior true.
    expect(applyLabel(live, [mhc('h1')]).metadata.annotations).to.include({ [S]: 'operator', [P]: 'true' });
  });

  it('guards a machine without annotations by its resourceVersion (no map to test)', () => {
    const p = labelPatch(machine({ initialized: true }), 'p1', START, MU, [mhc('h1')]);
    expect(p.type).to.equal('merge');
    expect((p as { body: { metadata: { resourceVersion?: string } } }).body.metadata.resourceVersion).to.equal('7');
    expect(applyLabel(machine({ initialized: true }), [mhc('h1')]).metadata.annotations).to.include({ [P]: 'false' });
  });

  it('several MHCs select the machine: the first by name of those the extension acts on protects it, with its own timeout', () => {
    const mhcs = [
      mhc('c', { timeout: '5m' }),
      mhc('a', { timeout: 'bogus' }), // invalid timeout: ignored by the extension
      mhc('b', { timeout: '1h', trigger: 'x%' }), // invalid trigger: ignored too
      mhc('aa', { timeout: '2m', selector: { role: 'control-plane' } }), // does not select the machine
      mhc('ab', { timeout: '2m', cluster: 'c2' }), // another cluster
      mhc('d', { timeout: '20m' }),
    ];
    const after = applyLabel(machine({ annotations: {}, initialized: true }), mhcs);
    expect(after.metadata.annotations?.[S]).to.equal(note('c', START_MS + 5 * 60_000));
  });

  it('protects nothing when no MHC the extension acts on selects the machine (invalid or absent timeout, other selection)', () => {
    for (const mhcs of [
      [],
      [mhc('h1', { timeout: 'bogus' })],
      [mhc('h1', { timeout: '0s' })],
      [mhc('h1', { timeout: null })],
      [mhc('h1', { selector: { role: 'x' } })],
    ]) {
      const p = labelPatch(machine({ annotations: { [OTHER]: 'x' } }), 'p1', START, MU, mhcs);
      expect(p).to.deep.equal({
        type: 'merge',
        body: { metadata: { labels: { [Labels.planName]: 'p1' }, annotations: { [STARTED]: START } } },
      });
    }
  });

  it('adds nothing to a machine already protected (prior state recorded): the label patch stays unguarded', () => {
    const p = labelPatch(machine({ annotations: { [S]: 'x', [P]: 'false' } }), 'p1', START, MU, [mhc('h1')]);
    expect(p.type).to.equal('merge');
    expect(p.protectedBy).to.equal(undefined);
  });

  it('the MHC extension then finds the machine protected and decides nothing to write', () => {
    const h = mhc('h1', { timeout: '30m' });
    const after = Object.freeze(applyLabel(machine({ annotations: {}, initialized: true }), [h]));
    const update: MachineUpdate = {
      apiVersion: API_VERSION,
      kind: 'MachineUpdate',
      metadata: { name: MU, namespace: NS, creationTimestamp: START, labels: { [Labels.planName]: 'p1', [Labels.machineName]: 'm1' } },
      spec: {
        planName: 'p1',
        clusterName: 'c1',
        target: { kind: 'MachineDeployment', name: 'md' },
        machineRef: { name: 'm1' },
        updatePhase: 'updating',
        updaters: [],
      },
      status: { updateStatus: UpdateStatus.updating, startTime: START },
    } as unknown as MachineUpdate;
    const plan = planMachineHealthCheck(h, [after], [update], START_MS + 60_000);
    expect(plan.ignored).to.equal(false);
    expect(plan.actions).to.have.length(1);
    expect(plan.actions[0]).to.not.have.property('annotations');
    expect(plan.actions[0]).to.not.have.property('update');
    // Control: the same machine labelled without the protection gets the extension's protect patch (its own write).
    const bare = { ...after, metadata: { ...after.metadata, annotations: { [STARTED]: START } } } as KubeObject as Machine;
    const control = planMachineHealthCheck(h, [bare], [update], START_MS + 60_000);
    expect(control.actions[0]?.annotations).to.deep.equal({ [P]: 'false', [S]: note('h1', START_MS + 30 * 60_000) });
  });
});
