// Synthesis entry points shared by `npm run synth` and the tests: build the app, render each chart to YAML.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Yaml } from 'cdk8s';
import { EXTENSION, addCharts, extensionArgs, type DeploymentOptions, type WorkloadSpec } from './charts.js';
import { COMPONENTS } from './components.js';
import { DEFAULT_PROVIDERS, providerProblems, providerRules, type ProviderResource } from '../src/runtime/rbac.js';

/** Project root (cdk8s/ lives directly under it, also in dist/). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', ...(import.meta.url.includes('/dist/') ? ['..'] : []));

/** A sample updater as the samples chart needs it (a subset of SampleUpdater from src/sample-updaters). */
export interface UpdaterWorkload {
  name: string;
  description: string;
  rbac: WorkloadSpec['rbac'];
  crds: readonly string[];
}

/** Options of a synthesis run; everything has a default (DEFAULTS; the image's default is warned about by main.ts). */
export interface SynthOptions extends Partial<DeploymentOptions> {
  /** Sample updaters to add as the optional chart; omitted = no samples chart. */
  updaters?: readonly UpdaterWorkload[];
  /**
   * The provider kinds the controllers may read and write (InfraMachines, BootstrapConfigs, control planes and their
   * templates); default DEFAULT_PROVIDERS (DevMachine + kubeadm). More can be added later without re-synthesizing: a
   * ClusterRole labelled `inplace.cluster.x-k8s.io/aggregate-to-<component>: "true"` (docs/operations.md).
   */
  providers?: readonly ProviderResource[];
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
} as const;

/**
 * Why an image reference is unlikely to be pullable by a cluster (the default, no registry host, no tag or digest);
 * undefined when it looks fine. A registry host is the first path segment when it has a dot or a port, or is localhost.
 */
export function imageWarning(image: string): string | undefined {
  if (image === DEFAULT_IMAGE) {
    return `no --image given: the manifests use ${DEFAULT_IMAGE}, which names no registry and cannot be pulled by a cluster; push the image (docker build -t REGISTRY/inplace-capi:TAG .) and pass --image REGISTRY/inplace-capi:TAG (or set INPLACE_IMAGE)`;
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
  name: string;
  content: string;
}

/**
 * The workloads of the platform chart: one per component, running `inplace run <component>`, granted these provider
 * kinds; the opt-in components (the runtime extension) only when `optIn` is true.
 */
export const componentWorkloads = (providers: readonly ProviderResource[] = DEFAULT_PROVIDERS, optIn = false): WorkloadSpec[] =>
  COMPONENTS.filter((c) => optIn || !c.optIn).map((c) => ({
    name: c.name,
    description: c.description,
    args: ['run', c.name, ...(c.name === EXTENSION.component ? extensionArgs() : [])],
    rbac: c.baseRbac,
    providerRbac: providerRules(providers, c.providerVerbs),
  }));

/** Synthesizes every chart to YAML in memory, in apply order (CRDs first). */
export function synthesize(opts: SynthOptions = {}): ManifestFile[] {
  const root = opts.root ?? PROJECT_ROOT;
  const providers = opts.providers ?? DEFAULT_PROVIDERS;
  const problems = providerProblems(providers);
  if (problems.length > 0) throw new Error(`invalid provider list: ${problems.join('; ')}`);
  const o: DeploymentOptions = {
    image: opts.image ?? DEFAULT_IMAGE,
    namespace: opts.namespace ?? DEFAULTS.namespace,
    replicas: opts.replicas ?? DEFAULTS.replicas,
    instance: opts.instance ?? DEFAULTS.instance,
    priorityClassName: opts.priorityClassName ?? DEFAULTS.priorityClassName,
    apiServer: opts.apiServer ?? DEFAULTS.apiServer,
    ...(opts.noNetworkPolicy ? { noNetworkPolicy: true } : {}),
    root,
    ...(opts.writePolicy ? { writePolicy: opts.writePolicy } : {}),
    ...(opts.runtimeExtension ? { runtimeExtension: opts.runtimeExtension } : {}),
  };
  const updaters = opts.updaters?.map((u) => ({
    name: u.name,
    description: u.description,
    args: ['updater', u.name],
    rbac: u.rbac,
    crds: u.crds.map((p) => (isAbsolute(p) ? p : join(root, p))),
  }));
  const app = new App();
  const charts = addCharts(app, o, componentWorkloads(providers, opts.runtimeExtension !== undefined), updaters);
  return charts.map((chart, i) => ({
    name: `${String(i * 10).padStart(2, '0')}-${chart.node.id}.yaml`,
    content: Yaml.stringify(...chart.toJson()),
  }));
}

/** Writes synthesized files to `outdir` (created if needed); returns their paths. */
export function writeManifests(files: readonly ManifestFile[], outdir: string): string[] {
  mkdirSync(outdir, { recursive: true });
  return files.map((f) => {
    const p = join(outdir, f.name);
    writeFileSync(p, f.content);
    return p;
  });
}
