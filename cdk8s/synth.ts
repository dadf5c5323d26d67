// Synthesis entry points shared by `npm run synth` and the tests: build the app, render each chart to YAML.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Yaml } from 'cdk8s';
import {
  EXTENSION,
  addCharts,
  extensionArgs,
  resourcesProblem,
  type ContainerResources,
  type DeploymentOptions,
  type SampleWorkloadSpec,
  type WorkloadSpec,
} from './charts.js';
import { COMPONENTS } from './components.js';
import { sampleUpdaters } from '../src/sample-updaters/index.js';
import { DEFAULT_PROVIDERS, providerProblems, providerRules, type ProviderResource } from '../src/runtime/rbac.js';

/** Project root (cdk8s/ lives directly under it, also in dist/). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', ...(import.meta.url.includes('/dist/') ? ['..'] : []));

/** A sample updater as the samples chart needs it (a subset of SampleUpdater from src/sample-updaters). */
export interface UpdaterWorkload {
  /** `inplace updater <name>`. */
  readonly name: string;
  /** One line, written as an annotation on the Deployment. */
  readonly description: string;
  /** The rules its ServiceAccount needs. */
  readonly rbac: WorkloadSpec['rbac'];
  /** CRD files of its kinds (relative to the project root, or absolute). */
  readonly crds: readonly string[];
  /**
   * The generic updater names it serves (`--names`), for an updater of the generic UpdaterUpdateTask kind: such an
   * updater serves no name it was not given, so that nothing simulated answers for an updater nobody runs.
   * @default undefined (an updater of its own task kind)
   */
  readonly names?: readonly string[];
}

/** Options of a synthesis run; every prop has a default (DEFAULTS; the image's default is warned about by main.ts). */
export interface SynthOptions extends Partial<Omit<DeploymentOptions, 'resources'>> {
  /** Sample updaters to add as the opt-in samples chart (sampleUpdaterWorkloads()). @default undefined (no samples) */
  readonly updaters?: readonly UpdaterWorkload[];
  /**
   * The provider kinds the controllers may read and write (InfraMachines, BootstrapConfigs, control planes and their
   * templates; the template kind of each machine kind is added by construction, withTemplateKinds). More can be added
   * later without re-synthesizing: a ClusterRole labelled `inplace.cluster.x-k8s.io/aggregate-to-<component>: "true"`
   * (docs/operations.md).
   * @default DEFAULT_PROVIDERS (DevMachine + kubeadm)
   */
  readonly providers?: readonly ProviderResource[];
  /** Requests and limits; the props given replace the defaults one by one. @default DEFAULTS.resources */
  readonly resources?: Partial<ContainerResources>;
}

/**
 * The image used when none is given: the local `docker build -t inplace-capi:0.1.0 .` name, which names no registry,
 * so a cluster cannot pull it (main.ts warns). Give the real one with --image / INPLACE_IMAGE / the `image` prop.
 */
export const DEFAULT_IMAGE = 'inplace-capi:0.1.0';

/** The defaults of the tunable values (docs/operations.md, Deploying). */
export const DEFAULTS = {
  namespace: 'inplace-system',
  replicas: 1,
  instance: 'inplace-capi',
  priorityClassName: 'system-cluster-critical',
  apiServer: { ports: [443, 6443], cidrs: [] as string[] },
  resources: { cpuRequestMillis: 100, cpuLimitMillis: 1000, memoryRequestMiB: 256, memoryLimitMiB: 512 },
} as const;

/** The file the opt-in samples chart is written to, apart from the platform: `kubectl apply -f DIR/` does not apply it. */
export const SAMPLES_FILE = 'samples/20-sample-updaters.yaml';

/**
 * The generic updater names the sample reference updater serves when deployed by the samples chart: the generic
 * updaters of examples/plan.yaml (a test checks), so that the example plan completes and no other name is answered.
 */
export const SAMPLE_GENERIC_UPDATER_NAMES: readonly string[] = ['ntp-config'];

/** True for an updater of the generic UpdaterUpdateTask kind (it reads and writes updaterupdatetasks). */
const servesGenericKind = (u: { readonly rbac: WorkloadSpec['rbac'] }): boolean =>
  u.rbac.some((r) => r.apiGroups.includes('inplace.cluster.x-k8s.io') && r.resources.includes('updaterupdatetasks'));

/** The sample updaters as the samples chart deploys them: the generic one narrowed to SAMPLE_GENERIC_UPDATER_NAMES. */
export const sampleUpdaterWorkloads = (): UpdaterWorkload[] =>
  Object.values(sampleUpdaters).map((u) => ({
    name: u.name,
    description: u.description,
    rbac: u.rbac,
    crds: u.crds,
    ...(servesGenericKind(u) ? { names: SAMPLE_GENERIC_UPDATER_NAMES } : {}),
  }));

/**
 * Why an image reference cannot be used (a malformed digest); undefined when it can. `repo@sha256:<64 hex>` and
 * `repo:tag@sha256:<64 hex>` pin the image by content.
 */
export function imageProblem(image: string): string | undefined {
  if (image.trim() === '' || /\s/.test(image)) return `image "${image}" is empty or contains whitespace`;
  const at = image.indexOf('@');
  if (at < 0) return undefined;
  if (!/^sha256:[0-9a-f]{64}$/.test(image.slice(at + 1)))
    return `image ${image}: a digest must be sha256: followed by 64 lowercase hex digits (repo@sha256:<digest>)`;
  if (at === 0) return `image ${image}: the digest names no repository`;
  return undefined;
}

/**
 * Why an image reference is unlikely to be pullable by a cluster (the default, no registry host, no tag or digest);
 * undefined when it looks fine. A registry host is the first path segment when it has a dot or a port, or is localhost.
 */
export function imageWarning(image: string): string | undefined {
  if (image === DEFAULT_IMAGE) {
    return `no --image given: the manifests use ${DEFAULT_IMAGE}, which names no registry and cannot be pulled by a cluster; push the image (docker build -t REGISTRY/inplace-capi:TAG .) and pass --image REGISTRY/inplace-capi:TAG or REGISTRY/inplace-capi@sha256:DIGEST (or set INPLACE_IMAGE)`;
  }
  const first = image.split('/')[0] ?? '';
  const hasRegistry = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const hasTag = lastSegment.includes(':') || image.includes('@sha256:');
  if (!hasRegistry) return `image ${image} names no registry host (e.g. ghcr.io/ORG/inplace-capi:TAG): nodes resolve it on Docker Hub`;
  if (!hasTag) return `image ${image} has no tag or digest: it resolves to :latest, which changes under a running deployment`;
  return undefined;
}

/** A synthesized manifest file. */
export interface ManifestFile {
  /** Path relative to the output directory (the samples are in a directory of their own). */
  readonly name: string;
  /** The YAML. */
  readonly content: string;
}

/** Options of componentWorkloads. */
export interface ComponentWorkloadsOptions {
  /** The provider kinds granted. @default DEFAULT_PROVIDERS */
  readonly providers?: readonly ProviderResource[];
  /** Include the opt-in components (the runtime extension). @default false */
  readonly optIn?: boolean;
}

/**
 * The workloads of the platform chart: one per component, running `inplace run <component>`, granted these provider
 * kinds (and their template kinds); the opt-in components (the runtime extension) only when `optIn` is true.
 */
export const componentWorkloads = (o: ComponentWorkloadsOptions = {}): WorkloadSpec[] =>
  COMPONENTS.filter((c) => o.optIn === true || !c.optIn).map((c) => ({
    name: c.name,
    description: c.description,
    args: ['run', c.name, ...(c.name === EXTENSION.component ? extensionArgs() : [])],
    rbac: c.baseRbac,
    providerRbac: providerRules(o.providers ?? DEFAULT_PROVIDERS, c.providerVerbs),
  }));

/**
 * The namespace the controllers run in: --namespace when given; in namespace-scoped mode otherwise `inplace-<NS>`, one
 * per watched namespace, so that two teams' installs share no Deployment, ServiceAccount, Role or Service (with one
 * install namespace, applying the second would silently retarget the first team's controllers); else inplace-system.
 */
export function installNamespace(o: { namespace?: string | undefined; watchNamespace?: string | undefined }): string {
  if (o.namespace !== undefined) return o.namespace;
  return o.watchNamespace !== undefined ? `${DEFAULTS.namespace.replace(/-system$/, '')}-${o.watchNamespace}` : DEFAULTS.namespace;
}

/** Synthesizes every chart to YAML in memory, in apply order (CRDs first); throws on invalid options, naming them. */
export function synthesize(opts: SynthOptions = {}): ManifestFile[] {
  const root = opts.root ?? PROJECT_ROOT;
  const providers = opts.providers ?? DEFAULT_PROVIDERS;
  const problems = providerProblems(providers);
  if (problems.length > 0) throw new Error(`invalid provider list: ${problems.join('; ')}`);
  const image = opts.image ?? DEFAULT_IMAGE;
  const badImage = imageProblem(image);
  if (badImage) throw new Error(badImage);
  // A namespace that is not a DNS label would synthesize objects every API server rejects.
  for (const [prop, ns] of [
    ['namespace', opts.namespace],
    ['watchNamespace', opts.watchNamespace],
  ] as const)
    if (ns !== undefined && (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns) || ns.length > 63))
      throw new Error(`${prop} must be a namespace name (a DNS label), got "${ns}"`);
  const namespace = installNamespace(opts);
  if (namespace.length > 63)
    throw new Error(
      `the install namespace ${namespace} (inplace-<watchNamespace>) is longer than 63 characters: name one with namespace (--namespace NS)`,
    );
  const resources: ContainerResources = { ...DEFAULTS.resources, ...opts.resources };
  const badResources = resourcesProblem(resources);
  if (badResources) throw new Error(badResources);
  const o: DeploymentOptions = {
    image,
    namespace,
    replicas: opts.replicas ?? DEFAULTS.replicas,
    instance: opts.instance ?? DEFAULTS.instance,
    priorityClassName: opts.priorityClassName ?? DEFAULTS.priorityClassName,
    apiServer: opts.apiServer ?? DEFAULTS.apiServer,
    resources,
    ...(opts.noNetworkPolicy ? { noNetworkPolicy: true } : {}),
    root,
    ...(opts.watchNamespace !== undefined ? { watchNamespace: opts.watchNamespace } : {}),
    ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
    ...(opts.alertGatePolicy ? { alertGatePolicy: opts.alertGatePolicy } : {}),
    ...(opts.runtimeExtension ? { runtimeExtension: opts.runtimeExtension } : {}),
    ...(opts.dashboard ? { dashboard: true } : {}),
  };
  const updaters = opts.updaters?.map((u): SampleWorkloadSpec => ({
    name: u.name,
    description: u.description,
    args: ['updater', u.name, ...(u.names !== undefined ? ['--names', u.names.join(',')] : [])],
    rbac: u.rbac,
    crds: u.crds.map((p) => (isAbsolute(p) ? p : join(root, p))),
  }));
  const app = new App();
  const charts = addCharts(app, {
    deployment: o,
    components: componentWorkloads({ providers, optIn: opts.runtimeExtension !== undefined }),
    ...(updaters ? { updaters } : {}),
  });
  return charts.map((chart, i) => {
    const file = `${String(i * 10).padStart(2, '0')}-${chart.node.id}.yaml`;
    return { name: chart.node.id === 'sample-updaters' ? SAMPLES_FILE : file, content: Yaml.stringify(...chart.toJson()) };
  });
}

/** Writes synthesized files to `outdir` (created if needed, with the samples' directory); returns their paths. */
export function writeManifests(files: readonly ManifestFile[], outdir: string): string[] {
  return files.map((f) => {
    const p = join(outdir, f.name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, f.content);
    return p;
  });
}

/** A CPU quantity (`250m`, `1`, `1.5`) in millicores; `none` (limits only) is 0. Throws with the accepted forms. */
function cpuMillis(flag: string, text: string, allowNone: boolean): number {
  if (allowNone && text === 'none') return 0;
  const m = /^([0-9]+)m$/.exec(text);
  const millis = m ? Number(m[1]) : /^[0-9]+(\.[0-9]{1,3})?$/.test(text) ? Math.round(Number(text) * 1000) : NaN;
  if (!Number.isSafeInteger(millis) || millis < 1)
    throw new Error(`${flag} must be a CPU quantity such as 250m or 1${allowNone ? ', or none' : ''}, got "${text}"`);
  return millis;
}

/** A memory quantity (`512Mi`, `1Gi`) in MiB. Throws with the accepted forms. */
function memoryMiB(flag: string, text: string): number {
  const m = /^([0-9]+)(Mi|Gi)$/.exec(text);
  const mib = m ? Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1) : NaN;
  if (!Number.isSafeInteger(mib) || mib < 1) throw new Error(`${flag} must be a memory quantity such as 512Mi or 1Gi, got "${text}"`);
  return mib;
}

/** The resources flags of `npm run synth` (`cpu-request`, `cpu-limit`, `memory-request`, `memory-limit`) as the `resources` prop; throws naming the flag. */
export function parseResourceFlags(v: Readonly<Record<string, unknown>>): Partial<ContainerResources> {
  const str = (k: string): string | undefined => (typeof v[k] === 'string' ? v[k] : undefined);
  const out: { -readonly [K in keyof ContainerResources]?: number } = {};
  if (str('cpu-request') !== undefined) out.cpuRequestMillis = cpuMillis('--cpu-request', str('cpu-request')!, false);
  if (str('cpu-limit') !== undefined) out.cpuLimitMillis = cpuMillis('--cpu-limit', str('cpu-limit')!, true);
  if (str('memory-request') !== undefined) out.memoryRequestMiB = memoryMiB('--memory-request', str('memory-request')!);
  if (str('memory-limit') !== undefined) out.memoryLimitMiB = memoryMiB('--memory-limit', str('memory-limit')!);
  return out;
}
