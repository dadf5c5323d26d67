// Connecting to a cluster from CLI flags, finding plans, and turning API failures into errors that say what to do.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { InPlaceUpdatePlans, type InPlaceUpdatePlan, type KubeObject, type ResourceType } from '../api/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../runtime/client.js';
import { KubeApiError } from '../runtime/pure/errors.js';
import { CliError, ExitCode, str, type ParsedArgs } from './verb.js';

const KUBECONFIG_HINT = 'pass --kubeconfig FILE, set KUBECONFIG, or run `npm start` for a local demo cluster';

/**
 * Why a kubeconfig file cannot be one (empty, not YAML, not a mapping), before the client library reads it: given
 * `/dev/null` or an empty file it fails with a TypeError about `clusters`, which tells the user nothing.
 */
export function kubeconfigFileProblem(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return `cannot read kubeconfig "${file}": ${(e as Error).message}`;
  }
  if (text.trim() === '') return `kubeconfig "${file}" is empty`;
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    return `kubeconfig "${file}" is not valid YAML: ${(e as Error).message.split('\n')[0]!.replace(/:$/, '')}`;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    return `kubeconfig "${file}" is not a kubeconfig (a YAML mapping with clusters, users and contexts)`;
  return undefined;
}

/** The ServiceAccount token a pod has: the default chain's last resort (in-cluster configuration). */
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Why the default chain finds no kubeconfig at all (no --kubeconfig, $KUBECONFIG unset or empty, no ~/.kube/config,
 * not in a pod), or undefined when it finds one. The client library would then silently fall back to
 * http://localhost:8080, and every command would fail later with "cannot reach", blaming a cluster that was never
 * configured. `env` and `home` are parameters for the tests.
 */
export function missingKubeconfig(
  path: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  home: string = env.HOME || homedir(),
): string | undefined {
  if (path !== undefined) return undefined;
  if ((env.KUBECONFIG ?? '').split(delimiter).some((f) => f !== '')) return undefined;
  const config = join(home, '.kube', 'config');
  if (existsSync(config) || existsSync(IN_CLUSTER_TOKEN)) return undefined;
  return `no kubeconfig: no --kubeconfig, $KUBECONFIG is not set, ${config} does not exist and this is not a pod`;
}

/** A connection made from --kubeconfig / --context (or the default chain). */
export interface Connection {
  client: RestClient;
  kc: KubeConfig;
  /** The namespace of the kubeconfig context, if it names one. */
  contextNamespace: string | undefined;
  /** Where the kubeconfig came from, for messages. */
  source: string;
}

/** Loads the kubeconfig named by the flags (or the default chain) and creates a client. */
export function connect(args: ParsedArgs, userAgent = 'inplace-cli'): Connection {
  const path = str(args, 'kubeconfig');
  const missing = missingKubeconfig(path);
  if (missing) throw new CliError(missing, KUBECONFIG_HINT, ExitCode.usage);
  if (path !== undefined && !existsSync(path)) {
    throw new CliError(
      `kubeconfig "${path}" does not exist`,
      'pass the path of an existing kubeconfig, or run `inplace local-apiserver` to start a local API server and write one',
      ExitCode.usage,
    );
  }
  // A configuration mistake, not a failure of the cluster: exit 2 with what is wrong, never the loader's TypeError.
  const envFiles = (process.env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '' && existsSync(f));
  for (const file of path !== undefined ? [path] : envFiles) {
    const problem = kubeconfigFileProblem(file);
    if (problem)
      throw new CliError(problem, `${path !== undefined ? '' : `it comes from $KUBECONFIG; `}${KUBECONFIG_HINT}`, ExitCode.usage);
  }
  let kc: KubeConfig;
  try {
    kc = loadKubeConfig(path);
  } catch (e) {
    throw new CliError(
      `cannot load kubeconfig${path ? ` "${path}"` : ''}: ${e instanceof TypeError ? 'it is not a valid kubeconfig' : (e as Error).message}`,
      'check that the file is a valid kubeconfig (kubectl config view --kubeconfig FILE)',
      ExitCode.usage,
    );
  }
  const context = str(args, 'context');
  if (context !== undefined) {
    if (!kc.getContexts().some((c) => c.name === context)) {
      throw new CliError(
        `context "${context}" is not in the kubeconfig`,
        `available contexts: ${
          kc
            .getContexts()
            .map((c) => c.name)
            .join(', ') || '(none)'
        }`,
        ExitCode.usage,
      );
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) {
    throw new CliError('no cluster configured: the kubeconfig has no current context', KUBECONFIG_HINT, ExitCode.usage);
  }
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return {
    client: createClient(kc, { userAgent }),
    kc,
    contextNamespace: ctx?.namespace || undefined,
    source: path ?? (process.env.KUBECONFIG ? `$KUBECONFIG (${process.env.KUBECONFIG})` : 'the default kubeconfig'),
  };
}

/** Rewrites an API failure as a CliError that says what to do; other errors pass through. */
export function explainApiError(err: unknown, conn: Pick<Connection, 'client' | 'source'>, res?: ResourceType): unknown {
  if (!(err instanceof KubeApiError)) return err;
  if (err.code === 0) {
    return new CliError(
      `cannot reach the API server at ${conn.client.server}: ${err.message}`,
      `check that the cluster in ${conn.source} is running (for a local one: npm start, or inplace local-apiserver)`,
    );
  }
  if (err.code === 401)
    return new CliError(
      `the API server rejected the credentials of ${conn.source}: ${err.message}`,
      'refresh the credentials in the kubeconfig',
    );
  if (err.code === 403)
    return new CliError(`forbidden: ${err.message}`, 'ask for RBAC that allows this call, or use a kubeconfig with more rights');
  if (
    err.code === 404 &&
    res &&
    /the server could not find the requested resource|not found/i.test(err.message) &&
    !err.status?.details?.name
  ) {
    return new CliError(
      `the API server does not serve ${res.plural}.${res.group}/${res.version}`,
      'install the CRDs first: kubectl apply --server-side -f crds/ (or dist/manifests/00-crds.yaml)',
    );
  }
  return new CliError(err.message);
}

/** Runs an API call, rewriting its failure with `explainApiError`. */
export async function call<T>(
  conn: Pick<Connection, 'client' | 'source'>,
  res: ResourceType | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw explainApiError(e, conn, res);
  }
}

/**
 * Finds a plan by name: in `namespace` when given; otherwise in every namespace (the name must be unique then).
 * An unknown plan is a CliError listing where plans exist.
 */
export async function findPlan(conn: Connection, name: string, namespace: string | undefined): Promise<InPlaceUpdatePlan & KubeObject> {
  const { client } = conn;
  type Plan = InPlaceUpdatePlan & KubeObject;
  if (namespace !== undefined) {
    const plan = await call(conn, InPlaceUpdatePlans, () => client.get<Plan>(InPlaceUpdatePlans, namespace, name));
    if (plan) return plan;
    const all = await call(conn, InPlaceUpdatePlans, () => client.list<Plan>(InPlaceUpdatePlans, undefined));
    const elsewhere = all.items.filter((p) => p.metadata.name === name).map((p) => p.metadata.namespace);
    throw new CliError(
      `InPlaceUpdatePlan "${name}" not found in namespace "${namespace}"`,
      elsewhere.length > 0 ? `it exists in namespace ${elsewhere.join(', ')}: pass -n ${elsewhere[0]}` : listHint(all.items),
    );
  }
  const all = await call(conn, InPlaceUpdatePlans, () => client.list<Plan>(InPlaceUpdatePlans, undefined));
  const matches = all.items.filter((p) => p.metadata.name === name);
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new CliError(
      `InPlaceUpdatePlan "${name}" exists in several namespaces (${matches.map((p) => p.metadata.namespace).join(', ')})`,
      'pass -n NAMESPACE to pick one',
    );
  }
  throw new CliError(`InPlaceUpdatePlan "${name}" not found in any namespace`, listHint(all.items));
}

function listHint(plans: KubeObject[]): string {
  if (plans.length === 0) return 'there are no plans in this cluster; apply one with kubectl apply -f plan.yaml (see examples/plan.yaml)';
  const names = plans.slice(0, 5).map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  return `existing plans: ${names.join(', ')}${plans.length > 5 ? ', ...' : ''} (kubectl get inplaceupdateplans -A)`;
}
