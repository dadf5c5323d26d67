import { expect } from 'chai';
import {
  ALERT_GATE_CREDENTIALS_LABEL,
  alertGatePolicyProblems,
  alertGateRefusals,
  alertGateSecretsByNamespace,
  alertsTarget,
  credentialsLabelRefusal,
  parseAlertGatePolicy,
  type AlertGatePolicy,
} from './alert-gate-policy.js';

const policy: AlertGatePolicy = {
  endpoints: [
    { url: 'https://prometheus.monitoring:9090', secrets: ['fleet-a/prom-creds'] },
    { url: 'http://127.0.0.1:19090/prom', secrets: [] },
  ],
};
const refused = (url: string, secret?: string, ns = 'fleet-a'): string[] =>
  alertGateRefusals(policy, { url, ...(secret ? { secretRef: { name: secret } } : {}) }, ns, 'spec.alertGate');

describe('api alert-gate policy (the operator decides which endpoints and Secrets a gate may use)', () => {
  it('allows the listed origin at or below its path, with a Secret listed for that endpoint', () => {
    expect(refused('https://prometheus.monitoring:9090')).to.deep.equal([]);
    expect(refused('https://prometheus.monitoring:9090/')).to.deep.equal([]);
    expect(refused('HTTPS://Prometheus.Monitoring:9090')).to.deep.equal([]);
    expect(refused('https://prometheus.monitoring:9090', 'prom-creds')).to.deep.equal([]);
    expect(refused('http://127.0.0.1:19090/prom')).to.deep.equal([]);
    expect(refused('http://127.0.0.1:19090/prom/sub')).to.deep.equal([]);
    // 127.1 is 127.0.0.1 to the URL parser and to the socket: the same endpoint.
    expect(refused('http://127.1:19090/prom')).to.deep.equal([]);
  });

  const hostile: [string, string, RegExp][] = [
    ['userinfo naming the allowed host', 'http://prometheus.monitoring:9090@evil.example:9090', /carries user info/],
    ['userinfo with a password', 'https://a:b@prometheus.monitoring:9090', /carries user info/],
    ['a different port', 'https://prometheus.monitoring:9091', /no allowed endpoint has its scheme, host, port and path/],
    ['the default port', 'https://prometheus.monitoring', /no allowed endpoint/],
    ['a scheme downgrade', 'http://prometheus.monitoring:9090', /no allowed endpoint/],
    ['a trailing dot', 'https://prometheus.monitoring.:9090', /no allowed endpoint/],
    ['a suffix host', 'https://prometheus.monitoring.evil.example:9090', /no allowed endpoint/],
    ['path traversal out of the prefix', 'http://127.0.0.1:19090/prom/../admin', /no allowed endpoint/],
    ['encoded traversal', 'http://127.0.0.1:19090/prom/%2e%2e/admin', /no allowed endpoint/],
    ['an encoded slash', 'http://127.0.0.1:19090/prom/..%2fadmin', /encoded or ambiguous path separator/],
    ['a backslash', 'http://127.0.0.1:19090/prom\\..\\admin', /encoded or ambiguous path separator|no allowed endpoint/],
    ['a prefix that is not a path segment', 'http://127.0.0.1:19090/prometheus', /no allowed endpoint/],
    ['IPv6 loopback', 'http://[::1]:19090/prom', /no allowed endpoint/],
    ['IPv4-mapped IPv6', 'http://[::ffff:127.0.0.1]:19090/prom', /no allowed endpoint/],
    ['localhost for 127.0.0.1', 'http://localhost:19090/prom', /no allowed endpoint/],
    ['a query', 'https://prometheus.monitoring:9090/?x=1', /query or fragment/],
    ['a fragment', 'https://prometheus.monitoring:9090#x', /query or fragment/],
    ['not http(s)', 'file:///etc/passwd', /not an http\(s\) URL/],
    ['not a URL', 'prometheus:9090 x', /not a URL|not an http/],
  ];
  for (const [what, url, why] of hostile)
    it(`refuses ${what}: ${url}`, () => {
      const r = refused(url);
      expect(r).to.have.length(1);
      expect(r[0]).to.match(/^spec\.alertGate\.url: /);
      expect(r[0]).to.match(why);
      expect(r[0]!.length).to.be.below(400);
    });

  it('refuses a Secret not listed for the endpoint, one of another namespace, and everything without a policy', () => {
    expect(refused('https://prometheus.monitoring:9090', 'sa-token')).to.deep.equal([
      'spec.alertGate.secretRef: Secret fleet-a/sa-token refused by the alert-gate policy: not listed for endpoint https://prometheus.monitoring:9090 (its secrets: fleet-a/prom-creds)',
    ]);
    // The same name in another namespace is another Secret.
    expect(refused('https://prometheus.monitoring:9090', 'prom-creds', 'fleet-b')[0]).to.match(/Secret fleet-b\/prom-creds refused/);
    // A Secret listed for one endpoint is not usable with another.
    expect(refused('http://127.0.0.1:19090/prom', 'prom-creds')[0]).to.match(/not listed for endpoint http:\/\/127\.0\.0\.1:19090\/prom/);
    expect(alertGateRefusals(undefined, { url: 'https://prometheus.monitoring:9090' }, 'fleet-a', 'spec.alertGate')[0]).to.match(
      /refused: the operator allows no alert endpoint/,
    );
  });

  it('a Secret must carry the opt-in label', () => {
    expect(credentialsLabelRefusal('fleet-a/x', { [ALERT_GATE_CREDENTIALS_LABEL]: 'true' }, 'spec.alertGate')).to.equal(undefined);
    for (const labels of [undefined, {}, { [ALERT_GATE_CREDENTIALS_LABEL]: 'yes' }] as (Record<string, string> | undefined)[])
      expect(credentialsLabelRefusal('fleet-a/x', labels, 'spec.alertGate')).to.match(
        /lacks the label inplace\.cluster\.x-k8s\.io\/alert-gate-credentials/,
      );
  });

  it('the target called is the one checked: <url>/api/v1/alerts on the normalised origin', () => {
    expect(String(alertsTarget('HTTP://127.1:19090/prom/'))).to.equal('http://127.0.0.1:19090/prom/api/v1/alerts');
  });

  it('checks a policy file: shape, URLs, Secret names; lists the Secrets per namespace for the RBAC', () => {
    expect(alertGatePolicyProblems({ endpoints: [{ url: 'http://u@h:1', secrets: ['nonamespace', 'a/b/c'] }], extra: 1 })).to.deep.equal([
      'extra: unknown key (endpoints)',
      'endpoints[0].url: "http://u@h:1" carries user info (user@host): never allowed, credentials come from secretRef',
      'endpoints[0].secrets: "nonamespace" is not namespace/name',
      'endpoints[0].secrets: "a/b/c" is not namespace/name',
    ]);
    expect(() => parseAlertGatePolicy([])).to.throw(/invalid alert-gate policy/);
    expect(parseAlertGatePolicy({})).to.deep.equal({ endpoints: [] });
    expect([...alertGateSecretsByNamespace(policy)]).to.deep.equal([['fleet-a', ['prom-creds']]]);
    expect([...alertGateSecretsByNamespace(undefined)]).to.deep.equal([]);
  });
});
