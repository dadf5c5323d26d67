// `npm run synth [-- --image REF --namespace NS --replicas N --outdir DIR --no-samples --write-policy FILE
// --provider ROLE=plural.group]`: writes dist/manifests/.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseWritePolicy, type WritePolicy } from '../src/api/index.js';
import { join, relative } from 'node:path';
import { sampleUpdaters } from '../src/sample-updaters/index.js';
import { DEFAULT_PROVIDERS, PROVIDER_ROLES, parseProvider, type ProviderResource } from '../src/runtime/rbac.js';
import { DEFAULT_IMAGE, PROJECT_ROOT, synthesize, writeManifests } from './synth.js';

const USAGE = `Usage: npm run synth -- [--image REF] [--namespace NS] [--replicas N] [--outdir DIR] [--no-samples]
                         [--write-policy FILE] [--provider ROLE=plural.group]... [--no-default-providers]

Writes the deployment manifests (CRDs, controllers, RBAC, metrics Service, sample updaters) to dist/manifests/.
  --image REF       container image of the platform (default: $INPLACE_IMAGE or ${DEFAULT_IMAGE})
  --namespace NS    namespace the controllers run in (default: inplace-system)
  --replicas N      replicas per controller; leader election makes > 1 safe (default: 1)
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
  const replicas = values.replicas === undefined ? 1 : Number(values.replicas);
  if (!Number.isInteger(replicas) || replicas < 1) {
    process.stderr.write(`error: --replicas must be a positive integer, got "${values.replicas}"\n`);
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
  const files = synthesize({
    providers,
    ...(writePolicy ? { writePolicy } : {}),
    image: values.image ?? process.env.INPLACE_IMAGE ?? DEFAULT_IMAGE,
    namespace: values.namespace ?? 'inplace-system',
    replicas,
    ...(values['no-samples'] ? {} : { updaters: Object.values(sampleUpdaters) }),
  });
  const outdir = values.outdir ?? join(PROJECT_ROOT, 'dist', 'manifests');
  for (const p of writeManifests(files, outdir)) process.stdout.write(`wrote ${relative(process.cwd(), p) || p}\n`);
  process.stdout.write(`apply with: kubectl apply --server-side -f ${relative(process.cwd(), outdir) || outdir}/\n`);
  return 0;
}

process.exitCode = main();
