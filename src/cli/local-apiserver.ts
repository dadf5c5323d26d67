// `inplace local-apiserver`: the embedded API server alone (src/local-apiserver), e.g. to run the controllers,
// kubectl or the tests' INPLACE_TEST_KUBECONFIG against it from several terminals.
import { portOption, str, UsageError, type Verb } from './verb.js';

/** `inplace local-apiserver`. */
export const localApiserverVerb: Verb = {
  name: 'local-apiserver',
  summary: 'Start the embedded local API server and write a kubeconfig',
  help: `Usage: inplace local-apiserver [--port N] [--persist FILE] [--http] [--kubeconfig-out PATH]

Starts a local Kubernetes API server on 127.0.0.1 (HTTPS with a self-signed certificate), writes a
kubeconfig for it and prints its path; runs until SIGINT/SIGTERM. kubectl and the controllers work
against it unchanged:  inplace run --kubeconfig <printed path>

Options:
  --port N               listen port (default: a free port)
  --persist FILE         keep the state in FILE across restarts (snapshot + append log)
  --http                 plain HTTP instead of HTTPS
  --kubeconfig-out PATH  where to write the kubeconfig (default: .inplace/local-apiserver.kubeconfig)`,
  options: { port: { type: 'string' }, persist: { type: 'string' }, http: { type: 'boolean' }, 'kubeconfig-out': { type: 'string' } },
  async run(args) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const port = portOption(args, 'port');
    const argv: string[] = [];
    if (port !== undefined) argv.push('--port', String(port));
    if (str(args, 'persist')) argv.push('--persist', str(args, 'persist')!);
    if (args.values['http'] === true) argv.push('--http');
    if (str(args, 'kubeconfig-out')) argv.push('--kubeconfig-out', str(args, 'kubeconfig-out')!);
    const { main } = await import('../local-apiserver/index.js');
    return main(argv);
  },
};
