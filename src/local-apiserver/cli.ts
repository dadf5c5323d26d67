/** `inplace local-apiserver`: runs the local API server until SIGINT/SIGTERM and prints the kubeconfig path. */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { startLocalApiServer, type LocalApiServerOptions } from './index.js';

const USAGE = `usage: inplace local-apiserver [--port N] [--persist FILE] [--http] [--kubeconfig-out PATH]

Starts a local Kubernetes API server on 127.0.0.1 and writes a kubeconfig for it.
  --port N              listen port (default: random free port)
  --persist FILE        keep state in FILE across restarts (snapshot + append log)
  --http                plain HTTP instead of HTTPS with a self-signed certificate
  --kubeconfig-out PATH where to write the kubeconfig (default: .inplace/local-apiserver.kubeconfig)
`;

/** Parses argv (without the verb) and runs until a signal; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const opts: LocalApiServerOptions = {};
  let out = '.inplace/local-apiserver.kubeconfig';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    try {
      if (a === '--port') {
        const p = Number(value());
        if (!Number.isInteger(p) || p < 0 || p > 65535) throw new Error(`invalid --port`);
        opts.port = p;
      } else if (a === '--persist') opts.persistFile = resolve(value());
      else if (a === '--http') opts.https = false;
      else if (a === '--kubeconfig-out') out = value();
      else if (a === '--help' || a === '-h') {
        process.stdout.write(USAGE);
        return 0;
      } else throw new Error(`unknown argument ${a}`);
    } catch (e) {
      process.stderr.write(`${(e as Error).message}\n${USAGE}`);
      return 2;
    }
  }
  const server = await startLocalApiServer(opts);
  const path = resolve(out);
  await mkdir(dirname(path), { recursive: true });
  await server.writeKubeconfig(path);
  process.stdout.write(`${path}\n`);
  process.stderr.write(`local API server listening on ${server.url}\n  export KUBECONFIG=${path}\n`);
  await new Promise<void>((resolveSignal) => {
    const stop = (): void => resolveSignal();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return 0;
}
