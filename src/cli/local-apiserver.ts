// `inplace local-apiserver`: the embedded API server alone (src/local-apiserver), e.g. to run the controllers,
// kubectl or the tests' INPLACE_TEST_KUBECONFIG against it from several terminals. The options are parsed here, once;
// src/local-apiserver only exports startLocalApiServer.
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { portOption, str, untilAborted, UsageError, type Verb } from './verb.js';

/** Where the kubeconfig goes when --kubeconfig-out is not given. */
const DEFAULT_KUBECONFIG_OUT = '.inplace/local-apiserver.kubeconfig';

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
  --kubeconfig-out PATH  where to write the kubeconfig (default: ${DEFAULT_KUBECONFIG_OUT})`,
  options: { port: { type: 'string' }, persist: { type: 'string' }, http: { type: 'boolean' }, 'kubeconfig-out': { type: 'string' } },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const port = portOption(args, 'port');
    const persist = str(args, 'persist');
    const { startLocalApiServer } = await import('../local-apiserver/index.js');
    const server = await startLocalApiServer({
      ...(port !== undefined ? { port } : {}),
      ...(persist ? { persistFile: resolve(persist) } : {}),
      ...(args.values['http'] === true ? { https: false } : {}),
    });
    const path = resolve(str(args, 'kubeconfig-out') ?? DEFAULT_KUBECONFIG_OUT);
    await mkdir(dirname(path), { recursive: true });
    await server.writeKubeconfig(path);
    io.out(`${path}\n`);
    io.err(`local API server listening on ${server.url}\n  export KUBECONFIG=${path}\n`);
    // Runs until SIGINT/SIGTERM (src/cli/main.ts turns them into io.signal).
    await untilAborted(io.signal);
    await server.close();
    return 0;
  },
};
