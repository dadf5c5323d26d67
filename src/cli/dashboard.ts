// `inplace dashboard`: the live, read-only fleet dashboard (src/dashboard/) on a port, against the kubeconfig's
// cluster; and the demo's dashboard component (`npm start -- --fleet --dashboard`).
import { readFileSync } from 'node:fs';
import { connect } from './kube.js';
import { freePort, type ComponentSpec } from './demo-platform.js';
import { CliError, ExitCode, flag, KUBE_OPTIONS_HELP, kubeOptions, portOption, str, untilAborted, UsageError, type Verb } from './verb.js';

/** `inplace dashboard`. */
export const dashboardVerb: Verb = {
  name: 'dashboard',
  summary: 'Serve a live, read-only web page of the campaigns, plans and machines (waves, gates, failures, progress)',
  help: `Usage: inplace dashboard [--port N] [--address ADDR] [-n NAMESPACE] [--no-machines]
                         [--auth kubeconfig|kube] [--tls-cert-file FILE --tls-key-file FILE | --self-signed]
                         [--kubeconfig FILE] [--context NAME]

Serves a web page showing every InPlaceUpdateCampaign -> waves -> clusters -> plans -> machines, what holds each
(a closed maintenance window, a firing alert, a soak, a pause), each failure's message and a plot of each campaign's
progress, updated live from watches (one list+watch per resource for every viewer together; pages get changes by
Server-Sent Events). Read-only: it answers GET and HEAD only (anything else: 405) and writes nothing.

--auth kubeconfig (default): for local use; the page shows what the kubeconfig's user may list, to anyone who can
reach the port (so it listens on 127.0.0.1 unless --address says otherwise).
--auth kube: for a Deployment in the cluster; each viewer sends a bearer token (an authenticating proxy's, or one
pasted into the page), checked with a TokenReview, and sees only the namespaces where a SubjectAccessReview allows
them to list campaigns, plans and MachineUpdates (docs/dashboard.md). Decisions are cached for 30 s.
Runs until Ctrl-C.

Options:
  --port N              port to listen on (default 8090; 0: any free port)
  --address ADDR        address to listen on (default 127.0.0.1; 0.0.0.0 in a pod)
  -n, --namespace NS    watch only this namespace (default: every namespace)
  --no-machines         do not watch MachineUpdates (the page shows plans and targets, not machines)
  --auth MODE           kubeconfig (default) or kube
  --tls-cert-file FILE  serve HTTPS with this certificate (and --tls-key-file)
  --tls-key-file FILE
  --self-signed         serve HTTPS with a self-signed certificate
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    port: { type: 'string' },
    address: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    'no-machines': { type: 'boolean' },
    auth: { type: 'string' },
    'tls-cert-file': { type: 'string' },
    'tls-key-file': { type: 'string' },
    'self-signed': { type: 'boolean' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const auth = str(args, 'auth') ?? 'kubeconfig';
    if (auth !== 'kubeconfig' && auth !== 'kube') throw new UsageError(`--auth must be kubeconfig or kube, got "${auth}"`);
    const certFile = str(args, 'tls-cert-file');
    const keyFile = str(args, 'tls-key-file');
    if ((certFile === undefined) !== (keyFile === undefined)) throw new UsageError('pass --tls-cert-file and --tls-key-file together');
    if (certFile && flag(args, 'self-signed'))
      throw new UsageError('pass either --tls-cert-file/--tls-key-file or --self-signed, not both');
    const port = portOption(args, 'port') ?? 8090;
    const conn = connect(args, 'inplace-dashboard');
    const { startDashboard } = await import('../dashboard/server.js');
    const { kubeAccess, localAccess } = await import('../dashboard/access.js');
    const { createLogger } = await import('../runtime/index.js');
    let tls: { key: string; cert: string } | undefined;
    if (certFile && keyFile) {
      try {
        tls = { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
      } catch (e) {
        throw new CliError(`cannot read the TLS files: ${(e as Error).message}`, undefined, ExitCode.usage);
      }
    } else if (flag(args, 'self-signed')) {
      const { selfSignedCertificate } = await import('../runtime/tls.js');
      tls = await selfSignedCertificate('inplace-dashboard');
    }
    const namespace = str(args, 'namespace');
    const dash = await startDashboard({
      client: conn.client,
      port,
      host: str(args, 'address') ?? '127.0.0.1',
      access: auth === 'kube' ? kubeAccess(conn.client) : localAccess(conn.kc.getCurrentUser()?.name ?? 'kubeconfig user'),
      machines: !flag(args, 'no-machines'),
      log: createLogger({ name: 'dashboard' }),
      ...(tls ? { tls } : {}),
      ...(namespace ? { namespace } : {}),
    });
    io.out(`dashboard: ${dash.url}  (${auth === 'kube' ? 'viewers authenticated by TokenReview' : `as ${conn.source}`}; Ctrl-C to stop)\n`);
    await untilAborted(io.signal);
    await dash.close();
    conn.client.close();
    return ExitCode.ok;
  },
};

/** The demo's dashboard: a component of its own (`inplace dashboard` on a free loopback port), and its URL. */
export async function demoDashboard(kubeconfigArgs: string[]): Promise<{ spec: ComponentSpec; url: string }> {
  const port = await freePort();
  return {
    spec: { name: 'dashboard', args: ['dashboard', ...kubeconfigArgs, '--port', String(port)], port, noMetrics: true },
    url: `http://127.0.0.1:${port}/`,
  };
}
