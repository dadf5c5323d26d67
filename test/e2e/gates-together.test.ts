// Held together, end to end on the embedded API server and the CAPI simulator: a plan with a maintenance window (open
// now), an alert gate against a REAL Prometheus behind basic auth (credentials from a Secret), a soak, and
// verification of what the sample updaters declare (the OS image they boot, a reboot, the kubelet) against what the
// simulator mirrors from the Node into Machine.status.nodeInfo. The alert fires first (nothing starts), then resolves;
// the plan completes, one machine after the other's soak, and the gate metrics show the waits.
import { expect } from 'chai';
import {
  ALERT_GATE_CREDENTIALS_LABEL,
  KubernetesVersionUpdateTaskTemplates,
  Machines,
  OSImageUpdateTaskTemplates,
  Secrets,
  apiVersionOf,
  type KubeObject,
} from '../../src/api/index.js';
import { prometheusBinary, startPrometheus, type TestPrometheus } from '../support/prometheus.js';
import { useE2eEnv } from './env.js';
import { TO_VERSION, conditionOf, planObject } from './harness.js';

// "gate-pass" at bcrypt cost 4 (see alert-credentials.test.ts).
const BCRYPT = '$2b$04$3NWMXVAjVw2sjZnSXeIsfOUbfrOt2/a2LviLe6R9Oo.285cnX4XWS';
const IMAGE = 'ubuntu-24.04-k8s-1.30.1';

type NodeInfo = { osImage?: string; kubeletVersion?: string; bootID?: string };
const nodeInfoOf = (m: KubeObject | undefined): NodeInfo => (m?.['status'] as { nodeInfo?: NodeInfo } | undefined)?.nodeInfo ?? {};

/** The value of a sample of `name` with labels containing `labels` in a Prometheus text exposition. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

describe('e2e: window, alert gate, soak and verification held together (real Prometheus)', function () {
  this.timeout(240_000);
  const env = useE2eEnv();
  let prom: TestPrometheus | undefined;

  before(async function () {
    const bin = prometheusBinary();
    if (!bin) {
      console.warn(
        '    SKIPPED: the prometheus binary is absent (apt-get install -y prometheus, or PROMETHEUS_BIN=…); .ci/run installs it',
      );
      this.skip();
    }
    prom = await startPrometheus(
      bin,
      'NodeDown',
      { severity: 'critical', cluster: 'cluster1' },
      { basicAuth: { username: 'gate', password: 'gate-pass', bcrypt: BCRYPT } },
    );
  });
  after(async () => {
    await prom?.stop();
  });

  it('holds while the alert fires, then completes one soaked and verified machine at a time', async () => {
    prom!.set(1);
    await prom!.waitAlert(true);
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ alertGatePolicy: { endpoints: [{ url: prom!.url, secrets: [`${p.ns}/prom-creds`] }] } });
    await p.startSampleUpdaters(['os-image', 'kubernetes-version']);
    const c = env().client;
    await c.create(OSImageUpdateTaskTemplates, {
      apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
      kind: OSImageUpdateTaskTemplates.kind,
      metadata: { name: 'os-image-task', namespace: p.ns },
      spec: { template: { spec: { simulatedStepSeconds: 0 } } },
    });
    await c.create(KubernetesVersionUpdateTaskTemplates, {
      apiVersion: apiVersionOf(KubernetesVersionUpdateTaskTemplates),
      kind: KubernetesVersionUpdateTaskTemplates.kind,
      metadata: { name: 'kubernetes-version-task', namespace: p.ns },
      spec: { template: { spec: { simulatedStepSeconds: 0 } } },
    });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await c.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'prom-creds', namespace: p.ns, labels: { [ALERT_GATE_CREDENTIALS_LABEL]: 'true' } },
      data: { username: b64('gate'), password: b64('gate-pass') },
    } as KubeObject);
    const bootBefore = new Map<string, string | undefined>();
    for (const m of await p.machines())
      if (m.metadata.name!.startsWith('cluster1-md-0-')) bootBefore.set(m.metadata.name!, nodeInfoOf(m).bootID);
    expect(bootBefore.size).to.equal(2);

    const plan = planObject(p.ns, 'p', {
      mds: [
        {
          name: 'cluster1-md-0',
          sequence: 2,
          updaters: [
            {
              name: 'os-image',
              sequence: 1,
              updaterUpdateTemplateRef: {
                apiVersion: apiVersionOf(OSImageUpdateTaskTemplates),
                kind: OSImageUpdateTaskTemplates.kind,
                name: 'os-image-task',
              },
              verify: { osImage: IMAGE, reboot: true },
              responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: IMAGE }],
            },
            {
              name: 'kubernetes-version',
              sequence: 2,
              updaterUpdateTemplateRef: {
                apiVersion: apiVersionOf(KubernetesVersionUpdateTaskTemplates),
                kind: KubernetesVersionUpdateTaskTemplates.kind,
                name: 'kubernetes-version-task',
              },
              responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: TO_VERSION }],
            },
          ],
        },
      ],
    });
    // A week-long window from Monday 00:00 UTC: open whenever the test runs.
    plan.spec.maintenanceWindows = [{ days: ['Mon'], start: '00:00', duration: '168h', timeZone: 'UTC' }];
    plan.spec.alertGate = {
      url: prom!.url,
      matchers: ['severity="critical"', 'cluster="cluster1"'],
      holdTimeout: '1h',
      secretRef: { name: 'prom-creds' },
    };
    plan.spec.soak = '2s';
    plan.spec.verification = { timeout: '5m' };
    await p.apply(plan);

    const held = await p.waitPlan('p', (x) => conditionOf(x, 'Ready')?.reason === 'WaitingForAlerts', 'held by the alert');
    expect(conditionOf(held, 'Ready')?.message).to.equal('alert NodeDown firing (severity="critical", cluster="cluster1")');
    expect(held.status?.maintenanceWindow).to.include({ state: 'Open' });
    expect(await p.machineUpdates()).to.deep.equal([]);

    prom!.set(0);
    await prom!.waitAlert(false);
    const done = await p.waitPlan('p', (x) => x.status?.updateStatus === 'updated', 'plan updated', 120_000);
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.gateFailures).to.equal(undefined);
    expect(done.status?.alertGate?.state).to.equal('Clear');

    // One at a time, the second only after the first one's soak.
    const [a, b] = (await p.machineUpdates()).sort((x, y) => (x.status?.startTime ?? '').localeCompare(y.status?.startTime ?? ''));
    expect(Date.parse(b!.status!.startTime!)).to.be.at.least(Date.parse(a!.status!.completionTime!) + 2000);
    // What verification read: Cluster API's mirror of each Node shows the image booted, a new boot and the new kubelet.
    for (const name of bootBefore.keys()) {
      const info = nodeInfoOf(await c.get(Machines, p.ns, name));
      expect(info.osImage, name).to.equal(IMAGE);
      expect(info.kubeletVersion, name).to.equal(TO_VERSION);
      expect(info.bootID, name).to.not.equal(bootBefore.get(name));
    }

    // The gate metrics on the plan controller's /metrics: the alert hold and the soaks were counted, nothing failed.
    const metrics = await p.metrics('plan-controller');
    expect(sample(metrics, 'inplace_plan_controller_gate_wait_seconds_total', 'gate="alerts"')).to.be.greaterThan(0);
    expect(sample(metrics, 'inplace_plan_controller_gate_wait_seconds_total', 'gate="soak"')).to.be.greaterThan(0);
    expect(
      sample(metrics, 'inplace_plan_controller_plan_gate_wait_seconds_total', `namespace="${p.ns}",plan="p",gate="alerts"`),
    ).to.be.greaterThan(0);
    for (const gate of ['soak', 'verification', 'alerts'])
      expect(sample(metrics, 'inplace_plan_controller_gate_failures_total', `gate="${gate}"`), gate).to.equal(0);
  });
});
