// `npm run synth [-- --image REF --namespace NS --namespace-scoped NS --replicas N --outdir DIR --samples
// --runtime-extension --dashboard --write-policy FILE --provider ROLE=plural.group ...]`: writes dist/manifests/ (the values:
// docs/operations.md, Deploying).
import { parseArgs } from 'node:util';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import { parseAlertGatePolicy, parseWritePolicy, type AlertGatePolicy, type WritePolicy } from '../src/api/index.js';
import { dirname, join, relative, resolve } from 'node:path';
import { DEFAULT_PROVIDERS, PROVIDER_ROLES, parseProvider, type ProviderResource } from '../src/runtime/rbac.js';
import { DASHBOARD, callerNamespaces, heapSizeMiB, type ContainerResources } from './charts.js';
import { GUARD_FILE, GUARD_LABEL, guardCoversOf, synthesizeGuard } from './in-place-guard.js';
import { runOcm } from './ocm-cli.js';
import {
  CLUSTERCTL_COMPONENTS_FILE,
  CLUSTERCTL_PLANS_ONLY_FILE,
  CLUSTERCTL_PROVIDER,
  CLUSTERCTL_PROVIDER_LABEL,
  clusterctlRelease,
} from './clusterctl.js';
import {
  DEFAULT_IMAGE,
  DEFAULTS,
  PROJECT_ROOT,
  SAMPLES_FILE,
  imageWarning,
  installNamespace,
  parseResourceFlags,
  sampleUpdaterWorkloads,
  synthesize,
  writeManifests,
  type ManifestFile,
} from './synth.js';

/** The samples of their own task kinds: the node-simulating ones (the generic one simulates no node). */
const SIMULATING = sampleUpdaterWorkloads()
  .filter((u) => u.names === undefined)
  .map((u) => u.name);

const USAGE = `Usage: npm run synth -- --image REF [--namespace NS] [--namespace-scoped NS] [--replicas N] [--outdir DIR]
                         [--write-policy FILE] [--alert-gate-policy FILE] [--provider ROLE=plural.group]... [--no-default-providers]
                         [--instance NAME] [--priority-class NAME] [--api-server-port N]... [--api-server-cidr CIDR]...
                         [--cpu-request Q] [--cpu-limit Q|none] [--memory-request Q] [--memory-limit Q]
                         [--no-network-policy] [--runtime-extension --runtime-extension-caller-namespace NS...
                         [--runtime-extension-secret NAME]] [--dashboard] [--samples] [--in-place-guard FILE]...
       npm run synth -- --clusterctl DIR [--clusterctl-version vX.Y.Z] [--image REF] [--namespace NS] ...
       npm run synth -- --ocm FILE [--outdir DIR]   (Open Cluster Management hub objects, docs/ocm.md; default dist/ocm/)

Writes the deployment manifests (CRDs, controllers, RBAC, metrics Service, NetworkPolicy) to dist/manifests/.
  --image REF       container image of the platform, with registry and tag or digest, e.g.
                    ghcr.io/ORG/inplace-capi:0.1.0 or ghcr.io/ORG/inplace-capi@sha256:<64 hex>
                    (default: $INPLACE_IMAGE, else ${DEFAULT_IMAGE} with a warning: no registry, not pullable)
  --namespace NS    namespace the controllers run in (default: ${DEFAULTS.namespace}; with --namespace-scoped NS:
                    ${installNamespace({ watchNamespace: 'NS' })}, one per watched namespace, so that two installs share no object)
  --namespace-scoped NS
                    watch and act in namespace NS only: the components run with --namespace NS and are granted
                    Roles there instead of ClusterRoles (a small ClusterRole keeps the cluster-scoped kinds: CRDs,
                    TokenReviews, SubjectAccessReviews); default: every namespace, ClusterRoles
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
  --cpu-request Q, --cpu-limit Q|none, --memory-request Q, --memory-limit Q
                    requests and limits of every container (CPU: 250m or 1; memory: 512Mi or 1Gi); the V8 heap
                    (NODE_OPTIONS=--max-old-space-size) is 75 % of the memory limit (defaults: CPU
                    ${DEFAULTS.resources.cpuRequestMillis}m / ${DEFAULTS.resources.cpuLimitMillis}m, memory ${DEFAULTS.resources.memoryRequestMiB}Mi / ${DEFAULTS.resources.memoryLimitMiB}Mi, heap ${heapSizeMiB(DEFAULTS.resources.memoryLimitMiB)} MiB)
  --no-network-policy
                    leave the NetworkPolicies out
  --runtime-extension
                    also deploy the runtime extension (Cluster API's in-place update hooks, docs/hooks.md): its
                    Deployment, Service, a cert-manager self-signed Certificate and the ExtensionConfig; needs
                    cert-manager and Cluster API's ExtensionConfig CRD (RuntimeSDK)
  --runtime-extension-caller-namespace NS
                    a namespace whose pods may call the hooks (port 9443): where Cluster API's controllers run, e.g.
                    capi-system and capi-kubeadm-control-plane-system (repeatable; required with
                    --runtime-extension unless --no-network-policy)
  --runtime-extension-secret NAME
                    serve the certificate of this kubernetes.io/tls Secret (yours, with ca.crt) instead of
                    cert-manager's; implies --runtime-extension
  --dashboard       also deploy the read-only fleet dashboard (docs/dashboard.md): \`inplace dashboard --auth kube
                    --self-signed\` on HTTPS port ${DASHBOARD.port}, a Service (${DASHBOARD.servicePort}) and a NetworkPolicy opening that port; it
                    may list and watch campaigns, plans and MachineUpdates and create TokenReviews and
                    SubjectAccessReviews, nothing else (default: no dashboard)
  --outdir DIR      output directory (default: dist/manifests)
  --samples         also write the sample updaters (CRDs, Deployments, grants) to ${SAMPLES_FILE}
                    under the output directory: samples, not products; the node-simulating ones
                    (${SIMULATING.join(', ')}) run only against the embedded API server of npm start
                    (default: no samples)
  --in-place-guard FILE
                    also write the in-place-only guard to ${GUARD_FILE}: a ValidatingAdmissionPolicy per owner kind
                    refusing, for a KubeadmControlPlane or MachineDeployment labelled ${GUARD_LABEL}=true,
                    a change that would make Cluster API replace machines; FILE holds the InPlaceUpdaters whose
                    covers it judges by (repeatable; e.g. examples/hooks/updaters.yaml; docs/operations.md,
                    "In-place-only guard"; Kubernetes >= 1.30) (default: no guard)
  --clusterctl DIR  instead, write a clusterctl provider release (a RuntimeExtensionProvider) into the local
                    repository DIR: DIR/${CLUSTERCTL_PROVIDER_LABEL}/VERSION/{metadata.yaml,${CLUSTERCTL_COMPONENTS_FILE}},
                    the runtime extension included, and ${CLUSTERCTL_PLANS_ONLY_FILE} without it (plans only); image, namespace, priority class and the callers' namespaces are
                    clusterctl variables whose defaults are the values given here (docs/operations.md, "Installing
                    with clusterctl"); not with --namespace-scoped, --samples, --no-network-policy, --dashboard,
                    --in-place-guard (synthesize the guard apart) or the --runtime-extension flags
  --clusterctl-version V
                    the release version (default: v + the version in package.json)
  --write-policy FILE  the write policy (YAML, allow/deny per selectResource) as a ConfigMap passed to the
                    plan-controller and machine-task-controller (default: the built-in policy)
  --alert-gate-policy FILE
                    the alert endpoints plans may call and the Secrets they may send there (YAML: endpoints:
                    [{url, secrets: [namespace/name]}]) as a ConfigMap passed to the plan-controller and
                    campaign-controller, and a Role per namespace granting get on exactly those Secrets
                    (default: none allowed, no Secret readable)
  --provider P      grant the controllers a provider kind, e.g. InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io
                    (repeatable; ROLE is one of ${PROVIDER_ROLES.join(', ')})
  --no-default-providers
                    do not grant the default kinds (DevMachine, KubeadmConfig, KubeadmControlPlane and their templates)`;

/** The version in package.json (the default release version of --clusterctl). */
const packageVersion = (): string => (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function main(): number {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        image: { type: 'string' },
        namespace: { type: 'string' },
        replicas: { type: 'string' },
        outdir: { type: 'string' },
        samples: { type: 'boolean' },
        // The default now; still accepted so that scripts written for earlier versions keep working.
        'no-samples': { type: 'boolean' },
        'namespace-scoped': { type: 'string' },
        'cpu-request': { type: 'string' },
        'cpu-limit': { type: 'string' },
        'memory-request': { type: 'string' },
        'memory-limit': { type: 'string' },
        'runtime-extension-caller-namespace': { type: 'string', multiple: true },
        'write-policy': { type: 'string' },
        'alert-gate-policy': { type: 'string' },
        provider: { type: 'string', multiple: true },
        'no-default-providers': { type: 'boolean' },
        instance: { type: 'string' },
        'priority-class': { type: 'string' },
        'api-server-port': { type: 'string', multiple: true },
        'api-server-cidr': { type: 'string', multiple: true },
        'no-network-policy': { type: 'boolean' },
        'runtime-extension': { type: 'boolean' },
        'runtime-extension-secret': { type: 'string' },
        dashboard: { type: 'boolean' },
        clusterctl: { type: 'string' },
        'in-place-guard': { type: 'string', multiple: true },
        'clusterctl-version': { type: 'string' },
        ocm: { type: 'string' },
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
  // Open Cluster Management hub objects for a campaign over management clusters (docs/ocm.md): a variant of its own.
  if (values.ocm !== undefined) return runOcm(values.ocm, values.outdir, Object.keys(values));
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
  if (values.samples && values['no-samples']) {
    process.stderr.write('error: --samples and --no-samples contradict each other\n');
    return 2;
  }
  const dns1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  const scoped = values['namespace-scoped'];
  if (scoped !== undefined && (!dns1123.test(scoped) || scoped.length > 63)) {
    process.stderr.write(`error: --namespace-scoped must be a namespace name, got "${scoped}"\n`);
    return 2;
  }
  const callers = values['runtime-extension-caller-namespace'] ?? [];
  const badCaller = callers.find((c) => !dns1123.test(c) || c.length > 63);
  if (badCaller !== undefined) {
    process.stderr.write(`error: --runtime-extension-caller-namespace must be a namespace name, got "${badCaller}"\n`);
    return 2;
  }
  let resources: Partial<ContainerResources>;
  try {
    resources = parseResourceFlags(values);
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
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
  let alertGatePolicy: AlertGatePolicy | undefined;
  try {
    if (values['alert-gate-policy']) alertGatePolicy = parseAlertGatePolicy(parse(readFileSync(values['alert-gate-policy'], 'utf8')) ?? {});
  } catch (e) {
    process.stderr.write(`error: --alert-gate-policy ${values['alert-gate-policy']}: ${(e as Error).message}\n`);
    return 2;
  }
  const image = values.image ?? process.env.INPLACE_IMAGE ?? DEFAULT_IMAGE;
  const warning = imageWarning(image);
  // A warning, not an error: synthesizing to read or diff the manifests needs no image.
  if (warning) process.stderr.write(`warning: ${warning}\n`);
  const runtimeExtension = values['runtime-extension'] || values['runtime-extension-secret'] !== undefined;
  if (callers.length > 0 && !runtimeExtension && values.clusterctl === undefined) {
    process.stderr.write('error: --runtime-extension-caller-namespace applies to the runtime extension; add --runtime-extension\n');
    return 2;
  }
  if (values['clusterctl-version'] !== undefined && values.clusterctl === undefined) {
    process.stderr.write('error: --clusterctl-version applies to --clusterctl DIR\n');
    return 2;
  }
  if (values.clusterctl !== undefined) {
    // clusterctl installs every namespaced object into one namespace and the release always carries the extension
    // with its callers as variables: the options that contradict that are refused rather than ignored.
    const clash = (
      [
        ['--namespace-scoped', scoped !== undefined],
        ['--samples', values.samples === true],
        ['--no-network-policy', values['no-network-policy'] === true],
        ['--runtime-extension', values['runtime-extension'] === true],
        ['--runtime-extension-secret', values['runtime-extension-secret'] !== undefined],
        ['--runtime-extension-caller-namespace', callers.length > 0],
        ['--in-place-guard', values['in-place-guard'] !== undefined],
        ['--dashboard', values.dashboard === true],
      ] as const
    ).filter(([, set]) => set);
    if (clash.length > 0) {
      process.stderr.write(
        `error: --clusterctl does not take ${clash.map(([f]) => f).join(', ')} (the release is one namespace with the runtime extension; its callers' namespaces are the variables INPLACE_CAPI_NAMESPACE and INPLACE_KCP_NAMESPACE)\n`,
      );
      return 2;
    }
    const version = values['clusterctl-version'] ?? `v${packageVersion()}`;
    let release: ManifestFile[];
    try {
      release = clusterctlRelease({
        version,
        providers,
        ...(writePolicy ? { writePolicy } : {}),
        ...(alertGatePolicy ? { alertGatePolicy } : {}),
        image,
        namespace: values.namespace ?? DEFAULTS.namespace,
        replicas,
        ...(values.instance !== undefined ? { instance: values.instance } : {}),
        ...(values['priority-class'] !== undefined ? { priorityClassName: values['priority-class'] } : {}),
        ...(ports.length || cidrs.length ? { apiServer: { ports: ports.length ? ports : DEFAULTS.apiServer.ports, cidrs } } : {}),
        resources,
      });
    } catch (e) {
      process.stderr.write(`error: ${(e as Error).message}\n`);
      return 2;
    }
    const dir = join(values.clusterctl, CLUSTERCTL_PROVIDER_LABEL, version);
    const show = (p: string): string => relative(process.cwd(), p) || p;
    for (const p of writeManifests(release, dir)) process.stdout.write(`wrote ${show(p)}\n`);
    process.stdout.write(
      `add to clusterctl.yaml:\n  providers:\n    - name: ${CLUSTERCTL_PROVIDER}\n      url: file://${resolve(dir, CLUSTERCTL_COMPONENTS_FILE)}\n      type: RuntimeExtensionProvider\n` +
        `(plans only, without the runtime extension: url: file://${resolve(dir, CLUSTERCTL_PLANS_ONLY_FILE)})\n` +
        `then: clusterctl init --runtime-extension ${CLUSTERCTL_PROVIDER}:${version}\n`,
    );
    return 0;
  }
  let files: ManifestFile[];
  try {
    files = synthesize({
      providers,
      ...(writePolicy ? { writePolicy } : {}),
      ...(alertGatePolicy ? { alertGatePolicy } : {}),
      image,
      ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
      replicas,
      ...(values.instance !== undefined ? { instance: values.instance } : {}),
      ...(values['priority-class'] !== undefined ? { priorityClassName: values['priority-class'] } : {}),
      ...(ports.length || cidrs.length ? { apiServer: { ports: ports.length ? ports : DEFAULTS.apiServer.ports, cidrs } } : {}),
      ...(values['no-network-policy'] ? { noNetworkPolicy: true } : {}),
      ...(values.dashboard ? { dashboard: true } : {}),
      resources,
      ...(scoped !== undefined ? { watchNamespace: scoped } : {}),
      ...(runtimeExtension
        ? {
            runtimeExtension: {
              ...(values['runtime-extension-secret'] !== undefined ? { secretName: values['runtime-extension-secret'] } : {}),
              ...(callers.length > 0 ? { callerNamespaceSelector: callerNamespaces(callers) } : {}),
            },
          }
        : {}),
      ...(values.samples ? { updaters: sampleUpdaterWorkloads() } : {}),
    });
  } catch (e) {
    // Every refusal of synthesize names what to change (an option, the flag to add).
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    const guardFiles = values['in-place-guard'] ?? [];
    if (guardFiles.length > 0) {
      const covers = guardFiles.flatMap((f) => {
        try {
          const docs = parseAllDocuments(readFileSync(f, 'utf8'));
          // The yaml parser records syntax errors on the document instead of throwing: a broken file must not read as
          // "no updaters here".
          const syntax = docs.flatMap((d) => d.errors)[0];
          if (syntax) throw new Error(syntax.message);
          return guardCoversOf(docs.map((d) => d.toJS() as unknown));
        } catch (e) {
          throw new Error(`--in-place-guard ${f}: ${(e as Error).message}`);
        }
      });
      if (covers.length === 0)
        throw new Error(`--in-place-guard ${guardFiles.join(', ')}: no InPlaceUpdater found (the guard would refuse every rollout change)`);
      files = [
        ...files,
        synthesizeGuard({
          covers,
          namespace: installNamespace({ namespace: values.namespace, watchNamespace: scoped }),
          instance: values.instance ?? DEFAULTS.instance,
        }),
      ];
    }
  } catch (e) {
    // An updaters file that cannot be read or judged is named with the flag.
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 2;
  }
  const outdir = values.outdir ?? join(PROJECT_ROOT, 'dist', 'manifests');
  const show = (p: string): string => relative(process.cwd(), p) || p;
  // Earlier versions wrote the samples next to the platform, where `kubectl apply -f DIR/` applied them: remove that
  // file, and a samples file this run did not write, so that nothing stale is applied.
  for (const stale of [join(outdir, '20-sample-updaters.yaml'), ...(values.samples ? [] : [join(outdir, SAMPLES_FILE)])]) {
    if (!existsSync(stale)) continue;
    rmSync(stale);
    process.stdout.write(`removed ${show(stale)} (samples are written only with --samples, to ${SAMPLES_FILE})\n`);
  }
  // A guard an earlier run wrote would still be applied by `kubectl apply -f DIR/`, judging by stale covers.
  const staleGuard = join(outdir, GUARD_FILE);
  if (values['in-place-guard'] === undefined && existsSync(staleGuard)) {
    rmSync(staleGuard);
    process.stdout.write(`removed ${show(staleGuard)} (the in-place-only guard is written only with --in-place-guard)\n`);
  }
  for (const p of writeManifests(files, outdir)) process.stdout.write(`wrote ${show(p)}\n`);
  process.stdout.write(`apply with: kubectl apply --server-side -f ${show(outdir)}/\n`);
  if (values.samples)
    process.stdout.write(
      `samples (not for production; the node-simulating updaters refuse a real cluster): kubectl apply --server-side -f ${show(dirname(join(outdir, SAMPLES_FILE)))}/\n`,
    );
  return 0;
}

process.exitCode = main();
