// The deployment, synthesized with cdk8s + cdk8s-plus-28: the CRDs, the controllers (one Deployment per component,
// Pod Security "restricted", least-privilege RBAC derived from each component's exported rules), a metrics Service,
// a NetworkPolicy, PodDisruptionBudgets for replicated workloads, and the sample updaters as an optional chart.
// Every value a platform team tunes is a DeploymentOptions prop, documented in docs/operations.md (Deploying).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiObject, Chart, Include, JsonPatch, Size, type App } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { parseAllDocuments, stringify } from 'yaml';
import type { PolicyRule } from '../src/runtime/pure/types.js';
import { parseWritePolicy, type WritePolicy } from '../src/api/index.js';
import { componentsTaking } from '../src/components.js';
import { METRICS_AUTH_RULES } from '../src/runtime/rbac.js';
import { LEADER_ELECTION_RULES, isOwnNamespaceRule, normalizeRules, ruleProblems, type FlatRule } from './rbac.js';

/** Ports every controller process listens on (see `inplace run --metrics-port/--health-port`). */
export const PORTS = { metrics: 8080, health: 8081 } as const;

/** What the synthesized manifests can be tuned with. */
export interface DeploymentOptions {
  /** Container image of the platform (the Dockerfile's output), with registry and tag: required, nothing is guessed. */
  image: string;
  /** Namespace the controllers run in (leader-election Leases live here). */
  namespace: string;
  /** Replicas per controller Deployment; > 1 is safe (leader election) and adds a PodDisruptionBudget. */
  replicas: number;
  /** `app.kubernetes.io/instance` of every object: tells two installations apart in selectors. */
  instance: string;
  /** priorityClassName of every pod (e.g. `system-cluster-critical`); empty = none (the cluster's default). */
  priorityClassName: string;
  /**
   * Where the API server is for the NetworkPolicy's egress rule: the ports its endpoints listen on (egress is matched
   * after the Service's DNAT, so 6443 for most clusters, 443 for some) and, optionally, their CIDRs (empty = any).
   */
  apiServer: { ports: readonly number[]; cidrs: readonly string[] };
  /** Leave the NetworkPolicy out (for a CNI without NetworkPolicy support, or a policy managed elsewhere). */
  noNetworkPolicy?: boolean;
  /** Project root: where crds/ lives. */
  root: string;
  /**
   * The write policy (allow/deny JSON-pointer prefixes per selectResource): a ConfigMap mounted into the components
   * that enforce it, passed as `--write-policy`. Absent = the built-in default (docs/operations.md).
   */
  writePolicy?: WritePolicy;
  /**
   * Deploy the runtime extension (opt-in, like `inplace run`): its Deployment, Service, serving certificate and
   * ExtensionConfig. Needs Cluster API's ExtensionConfig CRD and, unless `secretName` is given, cert-manager.
   */
  runtimeExtension?: RuntimeExtensionOptions;
}

/** How the runtime extension is deployed. */
export interface RuntimeExtensionOptions {
  /**
   * A Secret of type kubernetes.io/tls (tls.crt, tls.key, ca.crt) you provide for the Service's DNS names; absent =
   * a cert-manager self-signed Issuer and Certificate write `inplace-runtime-extension-cert`.
   */
  secretName?: string;
}

/** The runtime extension's serving port, Service port and certificate directory (controller-runtime's defaults). */
export const EXTENSION = {
  component: 'runtime-extension',
  port: 9443,
  servicePort: 443,
  certDir: '/tmp/k8s-webhook-server/serving-certs',
  defaultSecret: 'inplace-runtime-extension-cert',
} as const;

/** The `inplace run runtime-extension` flags of the deployed extension. */
export const extensionArgs = (): string[] => ['--extension-port', String(EXTENSION.port), '--cert-dir', EXTENSION.certDir];

/** Where the write-policy ConfigMap is mounted in a controller container. */
export const WRITE_POLICY_PATH = '/etc/inplace/write-policy.yaml';

/** A component to deploy: what `inplace run <name>` (or `inplace updater <name>`) starts, and the rules it declares. */
export interface WorkloadSpec {
  name: string;
  description: string;
  /** Arguments after `node dist/src/cli/main.js`. */
  args: string[];
  rbac: readonly PolicyRule[];
  /** Rules on the fleet's provider kinds: a ClusterRole of their own (`<name>-providers`), aggregated like the rest. */
  providerRbac?: readonly PolicyRule[];
}

/** `app.kubernetes.io/part-of` of every object. */
export const PART_OF = 'inplace-capi';
const METRICS_LABEL = 'inplace.cluster.x-k8s.io/metrics';
/** The ClusterRole to bind a Prometheus ServiceAccount to, so that it may scrape the controllers' secure /metrics. */
export const METRICS_READER = 'inplace-metrics-reader';

/** YAML files directly in `dir`, sorted (deterministic order); none when the directory does not exist. */
function yamlFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => join(dir, e.name))
    .sort();
}

/** The kinds a CRD file defines (group, plural, kind), e.g. to grant access to an updater's task kinds. */
export function crdKinds(file: string): { group: string; plural: string; kind: string }[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as { kind?: string; spec?: { group?: string; names?: { plural?: string; kind?: string } } } | null)
    .filter((d) => d?.kind === 'CustomResourceDefinition' && d.spec?.group && d.spec.names?.plural && d.spec.names.kind)
    .map((d) => ({ group: d!.spec!.group!, plural: d!.spec!.names!.plural!, kind: d!.spec!.names!.kind! }));
}

/** Chart of CustomResourceDefinitions included verbatim from YAML files (crds/ is the source of truth). */
export class CrdsChart extends Chart {
  constructor(scope: Construct, id: string, files: readonly string[]) {
    super(scope, id, { disableResourceNameHashes: true });
    files.forEach((url, i) => new Include(this, `crd-${i}`, { url }));
  }
}

/** An IApiEndpoint for one flattened rule (kplus renders one PolicyRule per endpoint). */
const endpointOf = (r: FlatRule): kplus.IApiEndpoint => ({
  asApiResource: () => ({ apiGroup: r.apiGroup, resourceType: r.resource, ...(r.resourceName ? { resourceName: r.resourceName } : {}) }),
  asNonApiResource: () => undefined,
});

/** Label that adds a ClusterRole's rules to a component's aggregated ClusterRole. */
export const aggregateLabel = (component: string): string => `inplace.cluster.x-k8s.io/aggregate-to-${component}`;

/**
 * Adds a ClusterRole whose rules are aggregated into `component`'s ClusterRole: how an updater grants the platform
 * access to the task and template kinds it brings, without the platform's roles naming every updater.
 */
export function aggregateTo(chart: Chart, id: string, name: string, component: string, rules: readonly PolicyRule[]): kplus.ClusterRole {
  const problems = ruleProblems(rules);
  if (problems.length > 0) throw new Error(`rules aggregated to ${component} are not least-privilege: ${problems.join('; ')}`);
  const role = new kplus.ClusterRole(chart, id, {
    metadata: { name, labels: { 'app.kubernetes.io/part-of': PART_OF, [aggregateLabel(component)]: 'true' } },
  });
  for (const r of normalizeRules(rules)) role.allow(r.verbs, endpointOf(r));
  return role;
}

/** What a workload is to the platform: a controller (`inplace run`) or an updater (`inplace updater`). */
export type WorkloadRole = 'controller' | 'updater';

/**
 * The hand-written labels that select a workload's pods. Deployment selectors are immutable, so they are built only
 * from these stable values — never from the cdk8s construct path, which would break `kubectl apply` on upgrade.
 */
export const selectorLabels = (name: string, role: WorkloadRole, instance: string): Record<string, string> => ({
  'app.kubernetes.io/name': name,
  'app.kubernetes.io/component': role,
  'app.kubernetes.io/part-of': PART_OF,
  'app.kubernetes.io/instance': instance,
});

/**
 * Adds one workload: ServiceAccount, ClusterRole (+binding) from its declared rules, Role (+binding) for its
 * leader-election Lease, a restricted-profile Deployment spread over nodes and zones, and a PodDisruptionBudget
 * when it has more than one replica.
 */
export function addWorkload(
  chart: Chart,
  w: WorkloadSpec,
  role: WorkloadRole,
  o: DeploymentOptions,
  podLabels: Record<string, string> = {},
): kplus.Deployment {
  const problems = ruleProblems([...w.rbac, ...(w.providerRbac ?? [])]);
  if (problems.length > 0) throw new Error(`component ${w.name} declares RBAC that is not least-privilege: ${problems.join('; ')}`);
  // Controllers serve /metrics behind TokenReview/SubjectAccessReview (--metrics-secure): those calls come with the
  // flag. Updaters serve no metrics in the manifests (only process metrics; their probe port serves the probes only).
  const controller = role === 'controller';
  const rules = controller ? [...w.rbac, ...METRICS_AUTH_RULES] : w.rbac;
  const serving = controller
    ? ['--metrics-port', String(PORTS.metrics), '--metrics-secure', '--health-port', String(PORTS.health)]
    : ['--health-port', String(PORTS.health)];
  const name = `inplace-${w.name}`;
  const labels = selectorLabels(w.name, role, o.instance);
  const meta = (suffix = ''): { name: string; namespace: string; labels: Record<string, string> } => ({
    name: name + suffix,
    namespace: o.namespace,
    labels,
  });

  const sa = new kplus.ServiceAccount(chart, `${w.name}-sa`, { metadata: meta(), automountToken: true });

  // The bound ClusterRole aggregates every ClusterRole labelled for this component: the component's own rules
  // (below) and rules that updaters bring for their task kinds (see aggregateTo), as CAPI providers do.
  const clusterRole = new kplus.ClusterRole(chart, `${w.name}-clusterrole`, {
    metadata: { name, labels },
    aggregationLabels: { [aggregateLabel(w.name)]: 'true' },
  });
  const base = new kplus.ClusterRole(chart, `${w.name}-clusterrole-rules`, {
    metadata: { name: `${name}-rules`, labels: { ...labels, [aggregateLabel(w.name)]: 'true' } },
  });
  // The component's rules already carry the runtime's (Events, Lease: src/runtime/rbac.ts); the Lease goes to the
  // namespaced Role below, never cluster-wide.
  for (const r of normalizeRules(rules).filter((x) => !isOwnNamespaceRule(x))) base.allow(r.verbs, endpointOf(r));
  // Provider kinds apart, so that what the provider list granted is visible (and what a provider's own ClusterRole
  // with the same label adds, see docs/operations.md, sits next to it).
  if (w.providerRbac?.length) {
    const providers = new kplus.ClusterRole(chart, `${w.name}-clusterrole-providers`, {
      metadata: { name: `${name}-providers`, labels: { ...labels, [aggregateLabel(w.name)]: 'true' } },
    });
    for (const r of normalizeRules(w.providerRbac)) providers.allow(r.verbs, endpointOf(r));
  }
  new kplus.ClusterRoleBinding(chart, `${w.name}-clusterrolebinding`, { metadata: { name, labels }, role: clusterRole }).addSubjects(sa);

  // Every workload runs with --leader-elect (below): the Lease rules come with that flag.
  const leaseRole = new kplus.Role(chart, `${w.name}-role`, { metadata: meta('-leader-election') });
  for (const r of normalizeRules([...LEADER_ELECTION_RULES, ...w.rbac]).filter(isOwnNamespaceRule)) {
    leaseRole.allow(r.verbs, kplus.ApiResource.custom({ apiGroup: r.apiGroup, resourceType: r.resource }));
  }
  new kplus.RoleBinding(chart, `${w.name}-rolebinding`, { metadata: meta('-leader-election'), role: leaseRole }).addSubjects(sa);

  const deployment = new kplus.Deployment(chart, `${w.name}-deployment`, {
    metadata: { ...meta(), annotations: { 'inplace.cluster.x-k8s.io/description': w.description } },
    replicas: o.replicas,
    // No generated selector: the selector is the stable labels above (selectorLabels).
    select: false,
    serviceAccount: sa,
    automountServiceAccountToken: true,
    podMetadata: { labels: { ...labels, ...podLabels } },
    securityContext: { ensureNonRoot: true, user: 65532, group: 65532, fsGroup: 65532 },
    containers: [
      {
        name: 'manager',
        image: o.image,
        imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
        workingDir: '/app',
        command: ['node', 'dist/src/cli/main.js'],
        args: [...w.args, '--leader-elect', ...serving],
        ports: [...(controller ? [{ name: 'metrics', number: PORTS.metrics }] : []), { name: 'health', number: PORTS.health }],
        envVariables: {
          POD_NAMESPACE: kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_NAMESPACE),
          POD_NAME: kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_NAME),
          NODE_ENV: kplus.EnvValue.fromValue('production'),
        },
        liveness: kplus.Probe.fromHttpGet('/healthz', { port: PORTS.health }),
        readiness: kplus.Probe.fromHttpGet('/readyz', { port: PORTS.health }),
        resources: {
          cpu: { request: kplus.Cpu.millis(50), limit: kplus.Cpu.millis(500) },
          memory: { request: Size.mebibytes(128), limit: Size.mebibytes(512) },
        },
        securityContext: {
          ensureNonRoot: true,
          user: 65532,
          group: 65532,
          privileged: false,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: [kplus.Capability.ALL] },
          seccompProfile: { type: kplus.SeccompProfileType.RUNTIME_DEFAULT },
        },
      },
    ],
  });
  deployment.select(kplus.LabelSelector.of({ labels }));
  // Node writes nothing but temp files; give it a writable /tmp on a read-only root filesystem.
  const tmp = kplus.Volume.fromEmptyDir(chart, `${w.name}-tmp`, 'tmp', { sizeLimit: Size.mebibytes(64) });
  deployment.containers[0]?.mount('/tmp', tmp);
  const obj = ApiObject.of(deployment);
  // kplus labels every pod with its construct path; that label would change the pod template whenever the construct
  // tree does (a needless rollout), and nothing selects on it.
  obj.addJsonPatch(JsonPatch.remove('/spec/template/metadata/labels/cdk8s.io~1metadata.addr'));
  // The pod-level seccomp profile is what Pod Security "restricted" checks first; kplus only sets it per container.
  obj.addJsonPatch(JsonPatch.add('/spec/template/spec/securityContext/seccompProfile', { type: 'RuntimeDefault' }));
  if (o.priorityClassName) obj.addJsonPatch(JsonPatch.add('/spec/template/spec/priorityClassName', o.priorityClassName));
  // Replicas on different nodes (and zones where there are any): one node going down must not take the standby too.
  // ScheduleAnyway: a one-node or zoneless cluster still runs every replica.
  obj.addJsonPatch(
    JsonPatch.add(
      '/spec/template/spec/topologySpreadConstraints',
      ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((topologyKey) => ({
        maxSkew: 1,
        topologyKey,
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: labels },
      })),
    ),
  );
  // A drain may take one replica at a time; with a single replica a budget would block every drain, so none.
  if (o.replicas > 1) {
    new ApiObject(chart, `${w.name}-pdb`, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(),
      spec: { maxUnavailable: 1, selector: { matchLabels: labels } },
    });
  }
  return deployment;
}

/**
 * The NetworkPolicy of the platform's pods (controllers and updaters): ingress only to the metrics and health ports,
 * egress only to the API server (the only peer any of them has; the in-cluster config names it by IP, so no DNS).
 */
export function addNetworkPolicy(chart: Chart, o: DeploymentOptions): ApiObject {
  const tcp = (port: number): { protocol: string; port: number } => ({ protocol: 'TCP', port });
  return new ApiObject(chart, 'network-policy', {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: 'inplace-capi',
      namespace: o.namespace,
      labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance },
    },
    spec: {
      podSelector: { matchLabels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance } },
      policyTypes: ['Ingress', 'Egress'],
      // From anywhere, as probes come from the kubelet and scrapes from wherever Prometheus runs (/metrics asks for a
      // token allowed by inplace-metrics-reader); nothing else listens.
      ingress: [{ ports: [tcp(PORTS.metrics), tcp(PORTS.health)] }],
      egress: [
        {
          ports: o.apiServer.ports.map(tcp),
          ...(o.apiServer.cidrs.length ? { to: o.apiServer.cidrs.map((cidr) => ({ ipBlock: { cidr } })) } : {}),
        },
      ],
    },
  });
}

/**
 * Completes the runtime extension's Deployment `d` with what Cluster API needs to call it: the serving port, the
 * certificate Secret mounted at --cert-dir, a Service (443 → 9443), the Secret's issuer (cert-manager, self-signed)
 * unless one is brought, a NetworkPolicy letting callers reach 9443, and the ExtensionConfig that registers it (CAPI
 * injects the caBundle from the Secret named by the inject-ca-from-secret annotation).
 */
export function addRuntimeExtension(chart: Chart, d: kplus.Deployment, o: DeploymentOptions, x: RuntimeExtensionOptions): void {
  const name = `inplace-${EXTENSION.component}`;
  const labels = selectorLabels(EXTENSION.component, 'controller', o.instance);
  const secretName = x.secretName ?? EXTENSION.defaultSecret;
  const ctr = d.containers[0];
  if (!ctr) throw new Error(`${name}: the Deployment has no container`);
  ctr.addPort({ name: 'https', number: EXTENSION.port });
  const secret = kplus.Secret.fromSecretName(chart, 'runtime-extension-cert-ref', secretName);
  ctr.mount(EXTENSION.certDir, kplus.Volume.fromSecret(chart, 'runtime-extension-cert', secret, { name: 'serving-cert' }), {
    readOnly: true,
  });

  const svc = new kplus.Service(chart, 'runtime-extension-service', {
    metadata: { name, namespace: o.namespace, labels },
    type: kplus.ServiceType.CLUSTER_IP,
    ports: [{ name: 'https', port: EXTENSION.servicePort, targetPort: EXTENSION.port }],
  });
  for (const [k, v] of Object.entries(labels)) svc.selectLabel(k, v);

  if (x.secretName === undefined) {
    const issuer = `${name}-selfsigned`;
    new ApiObject(chart, 'runtime-extension-issuer', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: issuer, namespace: o.namespace, labels },
      spec: { selfSigned: {} },
    });
    new ApiObject(chart, 'runtime-extension-certificate', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name, namespace: o.namespace, labels },
      spec: {
        secretName,
        // The names Cluster API dials: <service>.<namespace>.svc (and the short forms, for tools inside the cluster).
        dnsNames: [`${name}.${o.namespace}.svc`, `${name}.${o.namespace}.svc.cluster.local`],
        issuerRef: { kind: 'Issuer', name: issuer },
      },
    });
  }

  if (!o.noNetworkPolicy) {
    // The callers are Cluster API's controllers (KCP, MachineSet), in whatever namespace they were installed: the
    // port is open to any peer, like a webhook port; the platform's policy above keeps covering the other ports.
    new ApiObject(chart, 'runtime-extension-network-policy', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: o.namespace, labels },
      spec: {
        podSelector: { matchLabels: labels },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ protocol: 'TCP', port: EXTENSION.port }] }],
      },
    });
  }

  new ApiObject(chart, 'runtime-extension-config', {
    apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
    kind: 'ExtensionConfig',
    metadata: {
      name: 'inplace',
      labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance },
      annotations: { 'runtime.cluster.x-k8s.io/inject-ca-from-secret': `${o.namespace}/${secretName}` },
    },
    spec: {
      clientConfig: { service: { name, namespace: o.namespace, port: EXTENSION.servicePort } },
      // Every namespace: narrow it to the fleets this installation serves.
      namespaceSelector: {},
    },
  });
}

/** The platform: namespace, one Deployment + ServiceAccount + least-privilege RBAC per component, a metrics Service. */
export class PlatformChart extends Chart {
  constructor(scope: Construct, id: string, components: readonly WorkloadSpec[], o: DeploymentOptions) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'app.kubernetes.io/part-of': PART_OF } });
    new kplus.Namespace(this, 'namespace', {
      metadata: {
        name: o.namespace,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    });
    // Checked here too: a policy the controllers would refuse at start must not synthesize.
    const policy = o.writePolicy ? parseWritePolicy(o.writePolicy) : undefined;
    const cm = policy
      ? new kplus.ConfigMap(this, 'write-policy', {
          metadata: { name: 'inplace-write-policy', namespace: o.namespace },
          data: { 'write-policy.yaml': stringify(policy) },
        })
      : undefined;
    const enforcing = componentsTaking('writePolicy');
    for (const c of components) {
      const enforces = cm && enforcing.includes(c.name);
      const d = addWorkload(this, enforces ? { ...c, args: [...c.args, '--write-policy', WRITE_POLICY_PATH] } : c, 'controller', o, {
        [METRICS_LABEL]: 'true',
      });
      if (enforces)
        d.containers[0]?.mount('/etc/inplace', kplus.Volume.fromConfigMap(this, `${c.name}-write-policy`, cm), { readOnly: true });
      if (c.name === EXTENSION.component && o.runtimeExtension) addRuntimeExtension(this, d, o, o.runtimeExtension);
    }
    const svc = new kplus.Service(this, 'metrics', {
      metadata: {
        name: 'inplace-controller-metrics',
        namespace: o.namespace,
        labels: { 'app.kubernetes.io/name': 'inplace-controller-metrics', 'app.kubernetes.io/instance': o.instance },
      },
      type: kplus.ServiceType.CLUSTER_IP,
      ports: [{ name: 'metrics', port: PORTS.metrics, targetPort: PORTS.metrics }],
    });
    svc.selectLabel(METRICS_LABEL, 'true');
    svc.selectLabel('app.kubernetes.io/instance', o.instance);
    // What a scraper's ServiceAccount is bound to: the controllers' SubjectAccessReview asks for exactly this.
    new ApiObject(this, 'metrics-reader', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: METRICS_READER, labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance } },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    });
    if (!o.noNetworkPolicy) addNetworkPolicy(this, o);
  }
}

/** Optional chart: the sample updaters' CRDs and Deployments (in the platform namespace). */
export class SampleUpdatersChart extends Chart {
  constructor(scope: Construct, id: string, updaters: readonly (WorkloadSpec & { crds: readonly string[] })[], o: DeploymentOptions) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'app.kubernetes.io/part-of': PART_OF } });
    const crds = [...new Set(updaters.flatMap((u) => u.crds))].sort();
    crds.forEach((url, i) => new Include(this, `crd-${i}`, { url }));
    for (const u of updaters) addWorkload(this, { ...u, name: `updater-${u.name}` }, 'updater', o);
    // The platform creates, watches, aborts and garbage-collects the task kinds and reads the templates.
    const kinds = crds.flatMap(crdKinds);
    const tasks = kinds.filter((k) => !k.kind.endsWith('Template'));
    const templates = kinds.filter((k) => k.kind.endsWith('Template'));
    const rule = (ks: typeof kinds, verbs: string[]): PolicyRule[] =>
      ks.length ? [{ apiGroups: [...new Set(ks.map((k) => k.group))], resources: ks.map((k) => k.plural), verbs }] : [];
    aggregateTo(
      this,
      'tasks-for-machine-task-controller',
      'inplace-sample-updaters-for-machine-task-controller',
      'machine-task-controller',
      [...rule(tasks, ['get', 'list', 'watch', 'create', 'patch', 'delete']), ...rule(templates, ['get', 'list', 'watch'])],
    );
    aggregateTo(
      this,
      'templates-for-plan-controller',
      'inplace-sample-updaters-for-plan-controller',
      'plan-controller',
      rule(templates, ['get', 'list', 'watch']),
    );
  }
}

/** Adds all charts to an app; returns them in apply order. */
export function addCharts(
  app: App,
  o: DeploymentOptions,
  components: readonly WorkloadSpec[],
  updaters: readonly (WorkloadSpec & { crds: readonly string[] })[] | undefined,
): Chart[] {
  const charts: Chart[] = [
    new CrdsChart(app, 'crds', yamlFilesIn(join(o.root, 'crds'))),
    new PlatformChart(app, 'platform', components, o),
  ];
  if (updaters) charts.push(new SampleUpdatersChart(app, 'sample-updaters', updaters, o));
  return charts;
}
