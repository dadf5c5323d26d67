// clusterctl packaging (docs/operations.md, "Installing with clusterctl"): the platform as a provider release that
// `clusterctl init --runtime-extension inplace` installs from a repository: metadata.yaml (release series → Cluster API
// contract) and one components YAML whose image, namespace and options are clusterctl variables (`${VAR:=default}`).
// The type is RuntimeExtensionProvider: what Cluster API calls is the runtime extension (the in-place update hooks),
// and its controllers and CRDs are what that extension needs; it is none of core/bootstrap/control-plane/infra/IPAM,
// and an AddonProvider installs add-ons into workload clusters, which this does not.
// The components are synthesized by the same charts as `npm run synth`, with sentinel values where the variables go,
// then each sentinel is replaced by its variable: substituting the defaults gives back exactly what synthesize()
// writes for those values (test/cli/clusterctl.test.ts checks it).
// A release carries two components files of the one provider: the full one, and a plans-only one without the runtime
// extension (so without cert-manager's Issuer and Certificate and without the ExtensionConfig) for users who drive
// updates with plans only. One provider with two files, not two providers: the clusterctl.yaml URL picks the file,
// so moving between them is `clusterctl upgrade apply` of the same provider, never two installs owning one CRD.
import { stringify } from 'yaml';
import { callerNamespaces } from './charts.js';
import { DEFAULTS, DEFAULT_IMAGE, synthesize, type ManifestFile, type SynthOptions } from './synth.js';

/** The provider's name in clusterctl (`clusterctl init --runtime-extension inplace`). */
export const CLUSTERCTL_PROVIDER = 'inplace';
/** clusterctl's provider label of a RuntimeExtensionProvider: the directory of a local repository. */
export const CLUSTERCTL_PROVIDER_LABEL = `runtime-extension-${CLUSTERCTL_PROVIDER}`;
/** The components file clusterctl looks for next to metadata.yaml for a RuntimeExtensionProvider. */
export const CLUSTERCTL_COMPONENTS_FILE = 'runtime-extension-components.yaml';
/** The plans-only components file of the same release: no runtime extension, so no cert-manager objects either. */
export const CLUSTERCTL_PLANS_ONLY_FILE = 'runtime-extension-components-plans-only.yaml';
/** The Cluster API contract the hooks and objects follow (v1beta2 objects in hook requests: CAPI 1.11+). */
export const CAPI_CONTRACT = 'v1beta2';

/** One clusterctl variable of the components YAML. */
export interface ClusterctlVariable {
  /** The variable's name, as set in the environment or clusterctl.yaml. */
  readonly name: string;
  /** Its default (the value synth was given, else the synth default). */
  readonly default: string;
  /** What it sets, one line (docs/operations.md lists these). */
  readonly what: string;
}

/** Options of clusterctlRelease: the synth options that have no variable, plus the defaults of those that do. */
export interface ClusterctlOptions extends Pick<
  SynthOptions,
  'providers' | 'writePolicy' | 'alertGatePolicy' | 'resources' | 'instance' | 'apiServer'
> {
  /** Release version, semver with a leading v (the repository's version directory). */
  readonly version: string;
  /** Default of INPLACE_IMAGE. @default DEFAULT_IMAGE */
  readonly image?: string;
  /** Default of INPLACE_NAMESPACE. @default DEFAULTS.namespace */
  readonly namespace?: string;
  /** Default of INPLACE_PRIORITY_CLASS. @default DEFAULTS.priorityClassName */
  readonly priorityClassName?: string;
  /** Replicas per Deployment (with > 1 a PodDisruptionBudget each, so not a variable). @default 1 */
  readonly replicas?: number;
  /**
   * Earlier release versions whose series metadata.yaml lists too: clusterctl reads the contract of an installed
   * version from the newest release's metadata, so that file must name every series. @default [] (this series only)
   */
  readonly previousVersions?: readonly string[];
}

// Sentinels: values synthesize() accepts (a namespace must be a DNS label) that occur nowhere else in the output;
// clusterctlRelease checks both before and after replacing.
const SENTINEL = {
  image: 'clusterctl-sentinel.invalid/inplace-image:sentinel',
  namespace: 'clusterctl-sentinel-namespace',
  priorityClassName: 'clusterctl-sentinel-priority-class',
  coreNamespace: 'clusterctl-sentinel-capi-namespace',
  kcpNamespace: 'clusterctl-sentinel-kcp-namespace',
} as const;

/**
 * The variables of the components YAML with the defaults `o` gives them, in the order they are documented; without
 * the runtime extension (the plans-only file) the callers' namespaces, which only its NetworkPolicy uses, are left out.
 */
export function clusterctlVariables(
  o: Pick<ClusterctlOptions, 'image' | 'namespace' | 'priorityClassName'> = {},
  runtimeExtension = true,
): ClusterctlVariable[] {
  return [
    { name: 'INPLACE_IMAGE', default: o.image ?? DEFAULT_IMAGE, what: 'the platform image of every Deployment' },
    {
      name: 'INPLACE_NAMESPACE',
      default: o.namespace ?? DEFAULTS.namespace,
      what: 'the namespace of the controllers, the Service the ExtensionConfig names and the certificate (use this, not --target-namespace)',
    },
    // `:=` takes the default for an empty value too, so "none" cannot be a value: synthesize with --priority-class "".
    ...(o.priorityClassName === ''
      ? []
      : [
          {
            name: 'INPLACE_PRIORITY_CLASS',
            default: o.priorityClassName ?? DEFAULTS.priorityClassName,
            what: 'priorityClassName of the pods (none: synthesize with --priority-class "", which drops this variable)',
          },
        ]),
    ...(runtimeExtension ? callerVariables : []),
  ];
}

/** The variables of the hook callers' namespaces (the runtime extension's NetworkPolicy). */
const callerVariables: readonly ClusterctlVariable[] = [
  {
    name: 'INPLACE_CAPI_NAMESPACE',
    default: 'capi-system',
    what: "namespace of Cluster API's core controller, allowed to call the hooks (NetworkPolicy)",
  },
  {
    name: 'INPLACE_KCP_NAMESPACE',
    default: 'capi-kubeadm-control-plane-system',
    what: 'namespace of the KubeadmControlPlane controller, allowed to call the hooks (NetworkPolicy)',
  },
];

/** `major.minor` of a release version `vX.Y.Z` (pre-release and build suffixes allowed); throws on anything else. */
export function releaseSeriesOf(version: string): { major: number; minor: number } {
  const m = /^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.exec(version);
  if (!m) throw new Error(`clusterctl release version must be a semantic version with a leading v (e.g. v0.1.0), got "${version}"`);
  return { major: Number(m[1]), minor: Number(m[2]) };
}

/**
 * The metadata.yaml of a release: its release series and those of `previous` versions (deduplicated, newest first)
 * mapped to the Cluster API contract (clusterctl's Metadata kind). Every series maps to v1beta2: the platform has
 * only ever spoken Cluster API's v1beta2 objects (in-place updates exist from CAPI 1.11, the first v1beta2 release),
 * and clusterctl refuses a provider whose series names another contract than the core provider's.
 */
export function clusterctlMetadata(version: string, previous: readonly string[] = []): string {
  const series = new Map<string, { major: number; minor: number }>();
  for (const v of [version, ...previous]) {
    const s = releaseSeriesOf(v);
    series.set(`${s.major}.${s.minor}`, s);
  }
  const sorted = [...series.values()].sort((a, b) => b.major - a.major || b.minor - a.minor);
  return stringify({
    apiVersion: 'clusterctl.cluster.x-k8s.io/v1alpha3',
    kind: 'Metadata',
    releaseSeries: sorted.map(({ major, minor }) => ({ major, minor, contract: CAPI_CONTRACT })),
  });
}

/** `${NAME:=default}`: the form clusterctl substitutes with the value when set, else the default. */
const variableRef = (v: ClusterctlVariable): string => `\${${v.name}:=${v.default}}`;

/**
 * The provider release (metadata.yaml and the two components files) as files relative to the version directory of a
 * local repository (`<repo>/runtime-extension-inplace/<version>/`). Throws on invalid options, naming them; a default
 * containing `}` or `$` (which clusterctl would misread) is refused.
 */
export function clusterctlRelease(o: ClusterctlOptions): ManifestFile[] {
  releaseSeriesOf(o.version);
  for (const v of clusterctlVariables(o))
    if (/[$}\n]/.test(v.default)) throw new Error(`the default of ${v.name} must not contain "$", "}" or a newline: "${v.default}"`);
  return [
    { name: 'metadata.yaml', content: clusterctlMetadata(o.version, o.previousVersions) },
    { name: CLUSTERCTL_COMPONENTS_FILE, content: componentsYaml(o, true) },
    { name: CLUSTERCTL_PLANS_ONLY_FILE, content: componentsYaml(o, false) },
  ];
}

/** One components file: the synthesized platform, with or without the runtime extension, its values as variables. */
function componentsYaml(o: ClusterctlOptions, runtimeExtension: boolean): string {
  const vars = clusterctlVariables(o, runtimeExtension);
  const files = synthesize({
    ...(o.providers ? { providers: o.providers } : {}),
    ...(o.writePolicy ? { writePolicy: o.writePolicy } : {}),
    ...(o.alertGatePolicy ? { alertGatePolicy: o.alertGatePolicy } : {}),
    ...(o.resources ? { resources: o.resources } : {}),
    ...(o.instance !== undefined ? { instance: o.instance } : {}),
    ...(o.apiServer ? { apiServer: o.apiServer } : {}),
    replicas: o.replicas ?? DEFAULTS.replicas,
    image: SENTINEL.image,
    namespace: SENTINEL.namespace,
    priorityClassName: o.priorityClassName === '' ? '' : SENTINEL.priorityClassName,
    ...(runtimeExtension
      ? { runtimeExtension: { callerNamespaceSelector: callerNamespaces([SENTINEL.coreNamespace, SENTINEL.kcpNamespace]) } }
      : {}),
  });
  let components = files.map((f) => f.content).join('---\n');
  const byName = new Map(vars.map((v) => [v.name, v]));
  const candidates: [string, ClusterctlVariable | undefined][] = [
    [SENTINEL.image, byName.get('INPLACE_IMAGE')],
    [SENTINEL.namespace, byName.get('INPLACE_NAMESPACE')],
    [SENTINEL.priorityClassName, byName.get('INPLACE_PRIORITY_CLASS')],
    [SENTINEL.coreNamespace, byName.get('INPLACE_CAPI_NAMESPACE')],
    [SENTINEL.kcpNamespace, byName.get('INPLACE_KCP_NAMESPACE')],
  ];
  const replacements = candidates.filter((r): r is [string, ClusterctlVariable] => r[1] !== undefined);
  for (const [sentinel, v] of replacements) {
    // Each variable must land somewhere, or the documented variable would silently do nothing.
    if (!components.includes(sentinel)) throw new Error(`internal: ${v.name} has no place in the components`);
    components = components.split(sentinel).join(variableRef(v));
  }
  if (components.includes('clusterctl-sentinel')) throw new Error('internal: a sentinel was left in the components');
  const header = [
    runtimeExtension
      ? `# inplace-capi ${o.version} as a clusterctl RuntimeExtensionProvider (docs/operations.md, "Installing with clusterctl").`
      : `# inplace-capi ${o.version}, plans only: no runtime extension, no cert-manager objects (docs/operations.md, "Installing with clusterctl").`,
    `# Variables (environment or clusterctl.yaml): ${vars.map((v) => v.name).join(', ')}.`,
    '',
  ].join('\n');
  return header + components;
}
