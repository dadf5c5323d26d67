// The alert gate's credentials and TLS (spec.alertGate.secretRef) against a REAL Prometheus behind basic auth and TLS
// (--web.config.file; Debian's `prometheus`, which .ci/run installs): the right Secret reads the alerts, a wrong
// password or CA holds with a bounded reason, a missing Secret makes the plan Valid=False before any machine starts,
// and a Secret that disappears after the start holds the plan (fail closed).
import { expect } from 'chai';
import { ALERT_GATE_CREDENTIALS_LABEL, Secrets, type KubeObject } from '../../src/api/index.js';
import { readAlerts } from '../../src/plan-controller/snapshot/alerts.js';
import { selfSignedCertificate } from '../../src/runtime/tls.js';
import { prometheusBinary, startPrometheus, type TestPrometheus } from '../support/prometheus.js';
import { useE2eEnv } from './env.js';
import { conditionOf, planObject, refUpdater } from './harness.js';

// Prometheus wants bcrypt hashes of basic-auth passwords; this is "gate-pass" at cost 4 (cheap to check per request),
// made once with Python's crypt.crypt('gate-pass', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)).
const USER = 'gate';
const PASSWORD = 'gate-pass';
const BCRYPT = '$2b$04$3NWMXVAjVw2sjZnSXeIsfOUbfrOt2/a2LviLe6R9Oo.285cnX4XWS';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

describe('e2e: alert gate credentials and TLS from a Secret (real Prometheus)', function () {
  this.timeout(180_000);
  const env = useE2eEnv();
  let prom: TestPrometheus | undefined;
  let ca = '';
  let otherCa = '';

  before(async function () {
    const bin = prometheusBinary();
    if (!bin) {
      console.warn(
        '    SKIPPED: the prometheus binary is absent (apt-get install -y prometheus, or PROMETHEUS_BIN=…); .ci/run installs it',
      );
      this.skip();
    }
    const tls = await selfSignedCertificate('prometheus');
    ca = tls.cert;
    otherCa = (await selfSignedCertificate('someone-else')).cert;
    prom = await startPrometheus(
      bin,
      'NodeDown',
      { severity: 'critical', cluster: 'cluster1' },
      { basicAuth: { username: USER, password: PASSWORD, bcrypt: BCRYPT }, tls },
    );
  });
  after(async () => {
    await prom?.stop();
  });

  const secretData = (o: { password?: string; ca?: string } = {}): Record<string, string> => ({
    username: b64(USER),
    password: b64(o.password ?? PASSWORD),
    'ca.crt': b64(o.ca ?? ca),
  });

  it('reads the alerts with the right Secret; a wrong password, a wrong CA or a missing key give a bounded reason', async () => {
    prom!.set(1);
    await prom!.waitAlert(true);
    const secrets = new Map<string, Record<string, string>>([
      ['right', secretData()],
      ['wrong-password', secretData({ password: 'nope' })],
      ['wrong-ca', secretData({ ca: otherCa })],
      ['no-password', { username: b64(USER), 'ca.crt': b64(ca) }],
    ]);
    // The operator allows the endpoint with each of these Secrets (labelled as credentials).
    const policy = { endpoints: [{ url: prom!.url, secrets: [...secrets.keys(), 'missing'].map((n) => `fleet-a/${n}`) }] };
    const read = (name: string) =>
      readAlerts(
        async (_ns, n) => {
          const data = secrets.get(n);
          return data ? { metadata: { labels: { [ALERT_GATE_CREDENTIALS_LABEL]: 'true' } }, data } : undefined;
        },
        'fleet-a',
        { url: prom!.url, secretRef: { name } },
        policy,
      );

    const right = await read('right');
    expect(right.ok, JSON.stringify(right)).to.equal(true);
    if (right.ok) expect(right.alerts.some((a) => a.labels['alertname'] === 'NodeDown' && a.state === 'firing')).to.equal(true);

    const wrongPassword = await read('wrong-password');
    expect(wrongPassword).to.deep.equal({
      ok: false,
      error: `GET ${prom!.url}/api/v1/alerts answered HTTP 401 (check the credentials in spec.alertGate.secretRef)`,
    });

    const wrongCa = await read('wrong-ca');
    expect(wrongCa.ok).to.equal(false);
    if (!wrongCa.ok) {
      expect(wrongCa.error).to.match(
        /^GET https:\/\/127\.0\.0\.1:\d+\/api\/v1\/alerts failed: \S+ \(TLS: is ca\.crt in spec\.alertGate\.secretRef/,
      );
      expect(wrongCa.error.length).to.be.below(400);
    }

    // Without a Secret the endpoint's own CA is not trusted and no credentials are sent: never readable.
    const none = await readAlerts(async () => undefined, 'fleet-a', { url: prom!.url }, policy);
    expect(none.ok).to.equal(false);

    expect(await read('no-password')).to.deep.equal({
      ok: false,
      error: 'spec.alertGate.secretRef: Secret fleet-a/no-password has key username but not key password',
      secretProblem: 'spec.alertGate.secretRef: Secret fleet-a/no-password has key username but not key password',
    });
    expect(await read('missing')).to.deep.include({
      ok: false,
      secretProblem: 'spec.alertGate.secretRef: Secret fleet-a/missing not found',
    });
    prom!.set(0);
    await prom!.waitAlert(false);
  });

  it('on the embedded server: a missing Secret is Valid=False before any machine starts; one gone after the start holds the plan', async () => {
    prom!.set(0);
    await prom!.waitAlert(false);
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({
      referenceNames: ['ref'],
      alertGatePolicy: { endpoints: [{ url: prom!.url, secrets: [`${p.ns}/prom-creds`] }] },
    });
    const plan = planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] });
    plan.spec.alertGate = {
      url: prom!.url,
      matchers: ['severity="critical"', 'cluster="cluster1"'],
      holdTimeout: '1h',
      secretRef: { name: 'prom-creds' },
    };
    await p.apply(plan);

    const invalid = await p.waitPlan('p', (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False for the missing Secret');
    expect(conditionOf(invalid, 'Valid')?.message).to.include(`spec.alertGate.secretRef: Secret ${p.ns}/prom-creds not found`);
    expect(await p.machineUpdates()).to.deep.equal([]);

    // With the Secret (and a new generation, so the verdict is not the ended one) the gate reads Prometheus and the
    // plan starts its first machine.
    const secret: KubeObject & { data: Record<string, string> } = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'prom-creds', namespace: p.ns, labels: { [ALERT_GATE_CREDENTIALS_LABEL]: 'true' } },
      data: secretData(),
    };
    await p.client.create(Secrets, secret);
    await p.patchPlan('p', { alertGate: { ...plan.spec.alertGate, holdTimeout: '2h' } });
    await p.waitTasks('manual', 1);
    const started = await p.waitPlan('p', (x) => x.status?.alertGate?.state === 'Clear', 'alert gate Clear through the Secret');
    expect(conditionOf(started, 'Valid')?.status).to.equal('True');

    // The Secret goes away: the gate holds (fail closed) and names it; the machine in flight finishes, no other starts.
    await p.client.delete(Secrets, p.ns, 'prom-creds');
    const held = await p.waitPlan('p', (x) => conditionOf(x, 'Ready')?.reason === 'WaitingForAlerts', 'held for the missing Secret');
    expect(conditionOf(held, 'Ready')?.message).to.match(
      new RegExp(
        `^alert endpoint unreadable, holding the plan \\(fail closed\\): spec\\.alertGate\\.secretRef: Secret ${p.ns}/prom-creds not found; 0/2 machines updated`,
      ),
    );
    expect(held.status?.alertGate?.state).to.equal('Unreachable');
    await p.finishTasks('manual');
    await p.waitPlan('p', (x) => x.status?.updatedMachines === 1, 'the machine in flight finished');
    expect((await p.machineUpdates()).length).to.equal(1);

    // Back with a wrong password: still held, now naming the HTTP 401.
    await p.client.create(Secrets, { ...secret, data: secretData({ password: 'nope' }) });
    const wrong = await p.waitPlan(
      'p',
      (x) => (conditionOf(x, 'Ready')?.message ?? '').includes('HTTP 401'),
      'held for the wrong password',
    );
    expect(conditionOf(wrong, 'Ready')?.message).to.include('check the credentials in spec.alertGate.secretRef');
    expect((await p.machineUpdates()).length).to.equal(1);

    // The right password: the plan runs to the end.
    await p.client.patch(Secrets, p.ns, 'prom-creds', { data: secretData() }, { type: 'merge' });
    const done = await p.drive('p', 'manual');
    expect(done.status?.progress).to.equal('2/2');
    expect(done.status?.alertGate?.state).to.equal('Clear');
  });
});
