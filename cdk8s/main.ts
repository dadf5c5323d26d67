// `npm run synth [-- --image REF --namespace NS --replicas N --outdir DIR --no-samples --runtime-extension --write-policy FILE
// --provider ROLE=plural.group ...]`: writes dist/manifests/ (the values: docs/operations.md, Deploying).
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseWritePolicy, type WritePolicy } from '../src/api/index.js';
import { join, relative } from 'node:path';
import { sampleUpdaters } from '../src/sample-updaters/index.js';
import { DEFAULT_PROVIDERS, PROVIDER_ROLES, parseProvider, type ProviderResource } from '../src/runtime/rbac.js';
import { DEFAULT_IMAGE, DEFAULTS, PROJECT_ROOT, imageWarning, synthesize, writeManifests } from './synth.js';

const USAGE = `Usage: npm run synth -- --image REF [--namespace NS] [--replicas N] [--outdir DIR] [--no-samples]
                         [--write-policy FILE] [--provider ROLE=plural.group]... [--no-default-providers]
                         [--instance NAME] [--priority-class NAME] [--api-server-port N]... [--api-server-cidr CIDR]...
                         [--no-network-policy] [--runtime-extension [--runtime-extension-secret NAME]]

Writes the deployment manifests (CRDs, controllers, RBAC, metrics Service, NetworkPolicy, sample updaters) to
dist/manifests/.
  --image REF       container image of the platform, with registry and tag, e.g. ghcr.io/ORG/inplace-capi:0.1.0
                    (default: $INPLACE_IMAGE, else ${DEFAULT_IMAGE} with a warning: no registry, not pullable)
  --namespace NS    namespace the controllers run in (default: ${DEFAULTS.namespace})
  --replicas N      replicas per controller; leader election makes > 1 safe, and adds a PodDisruptionBudget
                    (default: ${DEFAULTS.replicas})
  --instance NAME   app.kubernetes.io/instance of every object and selector (default: ${DEFAULTS.instance})
  --priority-class NAME
                    priorityClassName of the pods; "" for none (default: ${DEFAULTS.priorityClassName})
  --api-server-port N
                    port of the API server endpoints the NetworkPolicy lets the pods reach (repeatable;
                    default: ${DEFAULTS.apiServer.ports.join(', ')})
  --api-server-cidr CIDR
                    restrict that egress to these addresses (repeatable; default: any address)
  --no-network-policy
                    leave the NetworkPolicy out
  --runtime-extension
                    also deploy the runtime extension (Cluster API's in-place update hooks, docs/hooks.md): its
                    Deployment, Service, a cert-manager self-signed Certificate and the ExtensionConfig; needs
                    cert-manager and Cluster API's ExtensionConfig CRD (RuntimeSDK)
  --runtime-extension-secret NAME
                    serve the certificate of this kubernetes.io/tls Secret (yours, with ca.crt) instead of
                    cert-manager's; implies --runtime-extension
  --outdir DIR      output directory (default: dist/manifests)
  --no-samples      leave out the sample updaters chart
  --write-policy FILE  the write policy (YAML, allow/deny per selectResource) as a ConfigMap passed to the
                    plan-controller and machine-task-controller (default: the built-in policy)
  --provider P      grant the controllers a provider kind, e.g. InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io
                    (repeatable; ROLE is one of ${PROVIDER_ROLES.join(', ')})
  --no-default-providers
                    do not grant the default kinds (DevMachine, KubeadmConfig, KubeadmControlPlane and their templates)`;

function main(): number {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        image: { type: 'string' },
        namespace: { type: 'string' },
        replicas: { type: 'string' },
        outdir: { type: 'string' },
        'no-samples': { type: 'boolean' },
        'write-policy': { type: 'string' },
        provider: { type: 'string', multiple: true },
        'no-default-providers': { type: 'boolean' },
        instance: { type: 'string' },
        'priority-class': { type: 'string' },
        'api-server-port': { type: 'string', multiple: true },
        'api-server-cidr': { type: 'string', multiple: true },
        'no-network-policy': { type: 'boolean' },
        'runtime-extension': { type: 'boolean' },
        'runtime-extension-secret': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const replicas = values.replicas === undefined ? DEFAULTS.replicas : Number(values.replicas);
  if (!Number.isInteger(replicas) || replicas < 1) {
    process.stderr.write(`error: --replicas must be a positive integer, got "${values.replicas}"\n`);
    return 2;
  }
  const ports = (values['api-server-port'] ?? []).map(Number);
  if (ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
    process.stderr.write(`error: --api-server-port must be a port number, got "${(values['api-server-port'] ?? []).join(', ')}"\n`);
    return 2;
  }
  const cidrs = values['api-server-cidr'] ?? [];
  const badCidr = cidrs.find((c) => !/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(c));
  if (badCidr !== undefined) {
    process.stderr.write(`error: --api-server-cidr must be a CIDR (e.g. 10.0.0.1/32), got "${badCidr}"\n`);
    return 2;
  }
  let providers: ProviderResource[];
  try {
    providers = [...(values['no-default-providers'] ? [] : DEFAULT_PROVIDERS), ...(values.provider ?? []).map(parseProvider)];
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 2;
  }
  let writePolicy: WritePolicy | undefined;
  try {
    if (values['write-policy']) writePolicy = parseWritePolicy(parse(readFileSync(values['write-policy'], 'utf8')) ?? {});
  } catch (e) {
    process.stderr.write(`error: --write-policy ${values['write-policy']}: ${(e as Error).message}\n`);
    return 2;
  }
  const image = values.image ?? process.env.INPLACE_IMAGE ?? DEFAULT_IMAGE;
  const warning = imageWarning(image);
  // A warning, not an error: synthesizing to read or diff the manifests needs no image.
  if (warning) process.stderr.write(`warning: ${warning}\n`);
  const files = synthesize({
    providers,
    ...(writePolicy ? { writePolicy } : {}),
    image,
    namespace: values.namespace ?? DEFAULTS.namespace,
    replicas,
    ...(values.instance !== undefined ? { instance: values.instance } : {}),
    ...(values['priority-class'] !== undefined ? { priorityClassName: values['priority-class'] } : {}),
    ...(ports.length || cidrs.length ? { apiServer: { ports: ports.length ? ports : DEFAULTS.apiServer.ports, cidrs } } : {}),
    ...(values['no-network-policy'] ? { noNetworkPolicy: true } : {}),
    ...(values['runtime-extension'] || values['runtime-extension-secret'] !== undefined
      ? { runtimeExtension: values['runtime-extension-secret'] !== undefined ? { secretName: values['runtime-extension-secret'] } : {} }
      : {}),
    ...(values['no-samples'] ? {} : { updaters: Object.values(sampleUpdaters) }),
  });
  const outdir = values.outdir ?? join(PROJECT_ROOT, 'dist', 'manifests');
  for (const p of writeManifests(files, outdir)) process.stdout.write(`wrote ${relative(process.cwd(), p) || p}\n`);
  process.stdout.write(`apply with: kubectl apply --server-side -f ${relative(process.cwd(), outdir) || outdir}/\n`);
  return 0;
}

process.exitCode = main();
