// The deployment, synthesized with cdk8s + cdk8s-plus-28: the CRDs, the controllers (one Deployment per component,
// Pod Security "restricted", least-privilege RBAC derived from each component's exported rules), a metrics Service,
// a NetworkPolicy, PodDisruptionBudgets for replicated workloads, and the sample updaters as an opt-in chart.
// Every value a platform team tunes is a DeploymentOptions prop, documented in docs/operations.md (Deploying).
// Charts and helpers take their inputs as named, readonly props (cdk8s's construct convention), never positionally.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiObject, Chart, Include, JsonPatch, Size, type App } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import { parseAllDocuments, stringify } from 'yaml';
import type { PolicyRule } from '../src/runtime/pure/types.js';
import {
  alertGateSecretsByNamespace,
  parseAlertGatePolicy,
  parseWritePolicy,
  type AlertGatePolicy,
  type WritePolicy,
} from '../src/api/index.js';
import { alertGateSecretRules } from '../src/plan-controller/rbac.js';
import { rbac as dashboardRbac } from '../src/dashboard/rbac.js';
import { componentsTaking } from '../src/components.js';
import { yamlFilesIn } from '../src/files.js';
import { METRICS_AUTH_RULES, isClusterScoped } from '../src/runtime/rbac.js';
import { LEADER_ELECTION_RULES, isOwnNamespaceRule, normalizeRules, ruleProblems, type FlatRule } from './rbac.js';

/** Ports every controller process listens on (see `inplace run --metrics-port/--health-port`). */
export const PORTS = { metrics: 8080, health: 8081 } as const;

/** A Kubernetes label selector, as a NetworkPolicy or an ExtensionConfig takes it. */
export interface LabelSelector {
  /** Labels that must all match. @default no label constraint */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Expressions that must all hold. @default no expression */
  readonly matchExpressions?: readonly { readonly key: string; readonly operator: string; readonly values?: readonly string[] }[];
}

/**
 * Requests and limits of every platform container. The controllers are single-threaded Node processes: a CPU limit
 * below one core throttles the event loop in bursts (watches read late, decisions on stale state), so the default
 * limit is one core and the request modest; the V8 heap is sized to a fixed share of the memory limit
 * (HEAP_LIMIT_FRACTION) so that Node collects garbage before the kernel kills the container.
 */
export interface ContainerResources {
  /** CPU the scheduler reserves, in millicores. @default 100 */
  readonly cpuRequestMillis: number;
  /** CPU limit in millicores; 0 = no CPU limit. @default 1000 (one core) */
  readonly cpuLimitMillis: number;
  /** Memory the scheduler reserves, in MiB. @default 256 */
  readonly memoryRequestMiB: number;
  /** Memory limit in MiB; `--max-old-space-size` is set from it (heapSizeMiB). @default 512 */
  readonly memoryLimitMiB: number;
}

/** Share of the memory limit given to the V8 heap: the rest is code, buffers, sockets and native memory. */
export const HEAP_LIMIT_FRACTION = 0.75;

/** The `--max-old-space-size` (MiB) for a memory limit of `memoryLimitMiB`. */
export const heapSizeMiB = (memoryLimitMiB: number): number => Math.floor(memoryLimitMiB * HEAP_LIMIT_FRACTION);

/** The smallest memory limit a Node controller starts with (below it the heap cannot hold the informer caches). */
export const MIN_MEMORY_LIMIT_MIB = 128;

/** Why `r` is not a usable set of requests and limits; undefined when it is. */
export function resourcesProblem(r: ContainerResources): string | undefined {
  const ints = Object.entries(r).filter(([, v]) => !Number.isSafeInteger(v) || v < 0);
  if (ints.length > 0) return `resources: ${ints.map(([k]) => k).join(', ')} must be whole non-negative numbers`;
  if (r.cpuRequestMillis < 1) return 'resources: the CPU request must be at least 1m';
  if (r.cpuLimitMillis !== 0 && r.cpuLimitMillis < r.cpuRequestMillis)
    return `resources: the CPU limit (${r.cpuLimitMillis}m) is below the request (${r.cpuRequestMillis}m)`;
  if (r.memoryLimitMiB < MIN_MEMORY_LIMIT_MIB) return `resources: the memory limit must be at least ${MIN_MEMORY_LIMIT_MIB}Mi`;
  if (r.memoryRequestMiB < 1 || r.memoryRequestMiB > r.memoryLimitMiB)
    return `resources: the memory request (${r.memoryRequestMiB}Mi) must be between 1Mi and the limit (${r.memoryLimitMiB}Mi)`;
  return undefined;
}

/**
 * What the synthesized manifests can be tuned with. Every prop is required here: synthesize() (cdk8s/synth.ts)
 * fills the defaults named below from DEFAULTS.
 */
export interface DeploymentOptions {
  /** Container image of the platform (the Dockerfile's output), with registry and tag or digest (`repo@sha256:…`). */
  readonly image: string;
  /** Namespace the controllers run in (leader-election Leases live here). @default "inplace-system" */
  readonly namespace: string;
  /** Replicas per controller Deployment; > 1 is safe (leader election) and adds a PodDisruptionBudget. @default 1 */
  readonly replicas: number;
  /** `app.kubernetes.io/instance` of every object: tells two installations apart in selectors. @default "inplace-capi" */
  readonly instance: string;
  /** priorityClassName of every pod; empty = none (the cluster's default). @default "system-cluster-critical" */
  readonly priorityClassName: string;
  /**
   * Where the API server is for the NetworkPolicy's egress rule: the ports its endpoints listen on (egress is matched
   * after the Service's DNAT, so 6443 for most clusters, 443 for some) and, optionally, their CIDRs (empty = any).
   * @default ports 443 and 6443, any address
   */
  readonly apiServer: { readonly ports: readonly number[]; readonly cidrs: readonly string[] };
  /** Requests and limits of every container. @default DEFAULTS.resources (cdk8s/synth.ts) */
  readonly resources: ContainerResources;
  /** Leave the NetworkPolicies out (a CNI without NetworkPolicy support, or policies managed elsewhere). @default false */
  readonly noNetworkPolicy?: boolean;
  /** Project root: where crds/ lives. @default the directory above cdk8s/ */
  readonly root: string;
  /**
   * Namespace-scoped mode: the components run with `--namespace <this>` (their informers list and watch only it) and
   * are granted Roles + RoleBindings there instead of ClusterRoles; only cluster-scoped kinds (CRDs, TokenReviews,
   * SubjectAccessReviews) keep a small ClusterRole. The CRDs stay cluster-scoped objects.
   * @default undefined (cluster-scoped: every namespace)
   */
  readonly watchNamespace?: string;
  /**
   * The write policy (allow/deny JSON-pointer prefixes per selectResource): a ConfigMap mounted into the components
   * that enforce it, passed as `--write-policy`.
   * @default undefined (the built-in policy, docs/operations.md)
   */
  readonly writePolicy?: WritePolicy;
  /**
   * The alert-gate policy (which alert endpoints plans may call, which Secrets they may send there): a ConfigMap
   * mounted into the components that enforce it, passed as `--alert-gate-policy`; and, per namespace it names Secrets
   * in, a Role granting the plan controller `get` on exactly those Secrets (resourceNames).
   * @default undefined (no endpoint allowed, no Secret readable: every spec.alertGate is Valid=False)
   */
  readonly alertGatePolicy?: AlertGatePolicy;
  /**
   * Deploy the runtime extension (opt-in, like `inplace run`): its Deployment, Service, serving certificate and
   * ExtensionConfig. Needs Cluster API's ExtensionConfig CRD and, unless `secretName` is given, cert-manager.
   * @default undefined (left out)
   */
  readonly runtimeExtension?: RuntimeExtensionOptions;
  /**
   * Deploy the read-only fleet dashboard (`inplace dashboard --auth kube`, docs/dashboard.md): its Deployment, a Service
   * and a NetworkPolicy opening its port; it may list and watch campaigns, plans and MachineUpdates, and ask TokenReviews
   * and SubjectAccessReviews about its viewers.
   * @default false (left out)
   */
  readonly dashboard?: boolean;
}

/** How the runtime extension is deployed. */
export interface RuntimeExtensionOptions {
  /**
   * A Secret of type kubernetes.io/tls (tls.crt, tls.key, ca.crt) you provide for the Service's DNS names.
   * @default undefined (a cert-manager self-signed Issuer and Certificate write `inplace-runtime-extension-cert`)
   */
  readonly secretName?: string;
  /**
   * The namespaces allowed to reach the hook port (9443): those of Cluster API's controllers that call the hooks
   * (core, KCP). Required unless the NetworkPolicies are left out — the port is never open to every namespace by
   * default. `callerNamespaces` builds this selector from namespace names.
   * @default undefined (synthesis refuses)
   */
  readonly callerNamespaceSelector?: LabelSelector;
}

/** The selector of the namespaces named `names` (by the `kubernetes.io/metadata.name` label every namespace has). */
export const callerNamespaces = (names: readonly string[]): LabelSelector => ({
  matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...names] }],
});

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

/** The dashboard's HTTPS port (self-signed certificate), its Service's port and its component name. */
export const DASHBOARD = { component: 'dashboard', port: 8443, servicePort: 443 } as const;

/** The dashboard as the manifests run it: viewers authenticated by the API server, HTTPS, on every pod address. */
export const dashboardWorkload = (): WorkloadSpec => ({
  name: DASHBOARD.component,
  description:
    'Serves the live, read-only fleet dashboard: campaigns, waves, plans and machines; viewers see what their RBAC lets them list.',
  args: ['dashboard', '--auth', 'kube', '--address', '0.0.0.0', '--port', String(DASHBOARD.port), '--self-signed'],
  rbac: dashboardRbac,
});

/** Where the write-policy ConfigMap is mounted in a controller container. */
export const WRITE_POLICY_PATH = '/etc/inplace/write-policy.yaml';
/** Where the alert-gate-policy ConfigMap is mounted in a controller container. */
export const ALERT_GATE_POLICY_PATH = '/etc/inplace-alert-gate/alert-gate-policy.yaml';

/** A component to deploy: what `inplace run <name>` (or `inplace updater <name>`) starts, and the rules it declares. */
export interface WorkloadSpec {
  /** Component or updater name: the Deployment is `inplace-<name>`. */
  readonly name: string;
  /** One line, written as an annotation on the Deployment. */
  readonly description: string;
  /** Arguments after `node dist/src/cli/main.js`. */
  readonly args: readonly string[];
  /** The rules it declares (runtime rules included). */
  readonly rbac: readonly PolicyRule[];
  /** Rules on the fleet's provider kinds: granted apart (`<name>-providers`). @default none */
  readonly providerRbac?: readonly PolicyRule[];
}

/** `app.kubernetes.io/part-of` of every object. */
export const PART_OF = 'inplace-capi';
const METRICS_LABEL = 'inplace.cluster.x-k8s.io/metrics';
/** The ClusterRole to bind a Prometheus ServiceAccount to, so that it may scrape the controllers' secure /metrics. */
export const METRICS_READER = 'inplace-metrics-reader';

/** The metrics reader ClusterRole of an install: `inplace-metrics-reader`, or `inplace-metrics-reader-<namespace>` when namespace-scoped. */
export const metricsReaderName = (o: { namespace: string; watchNamespace?: string }): string =>
  o.watchNamespace === undefined ? METRICS_READER : `${METRICS_READER}-${o.namespace}`;

/** The kinds a CRD file defines (group, plural, kind), e.g. to grant access to an updater's task kinds. */
export function crdKinds(file: string): { group: string; plural: string; kind: string }[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as { kind?: string; spec?: { group?: string; names?: { plural?: string; kind?: string } } } | null)
    .filter((d) => d?.kind === 'CustomResourceDefinition' && d.spec?.group && d.spec.names?.plural && d.spec.names.kind)
    .map((d) => ({ group: d!.spec!.group!, plural: d!.spec!.names!.plural!, kind: d!.spec!.names!.kind! }));
}

/** Props of CrdsChart. */
export interface CrdsChartProps {
  /** The CRD YAML files, included verbatim in this order. */
  readonly files: readonly string[];
}

/** Chart of CustomResourceDefinitions included verbatim from YAML files (crds/ is the source of truth). */
export class CrdsChart extends Chart {
  constructor(scope: Construct, id: string, props: CrdsChartProps) {
    super(scope, id, { disableResourceNameHashes: true });
    props.files.forEach((url, i) => new Include(this, `crd-${i}`, { url }));
  }
}

/** An IApiEndpoint for one flattened rule (kplus renders one PolicyRule per endpoint). */
const endpointOf = (r: FlatRule): kplus.IApiEndpoint => ({
  asApiResource: () => ({ apiGroup: r.apiGroup, resourceType: r.resource, ...(r.resourceName ? { resourceName: r.resourceName } : {}) }),
  asNonApiResource: () => undefined,
});

/** An IApiResource for one flattened rule (what a namespaced kplus.Role takes). */
const resourceOf = (r: FlatRule): kplus.IApiResource => ({
  apiGroup: r.apiGroup,
  resourceType: r.resource,
  ...(r.resourceName ? { resourceName: r.resourceName } : {}),
});

/** Label that adds a ClusterRole's rules to a component's aggregated ClusterRole. */
export const aggregateLabel = (component: string): string => `inplace.cluster.x-k8s.io/aggregate-to-${component}`;

/** Props of grantTo. */
export interface GrantProps {
  /** Construct id, unique in the chart. */
  readonly id: string;
  /** Name of the ClusterRole (cluster-scoped mode) or Role (namespace-scoped mode). */
  readonly name: string;
  /** The component granted the rules (its ServiceAccount is `inplace-<component>`). */
  readonly component: string;
  /** The rules, least-privilege (no wildcards). */
  readonly rules: readonly PolicyRule[];
  /** The deployment (its namespace-scoped mode decides the kind of role). */
  readonly deployment: DeploymentOptions;
}

/**
 * Grants `component` more rules, how an updater grants the platform access to the task and template kinds it brings
 * without the platform's roles naming every updater: a ClusterRole aggregated into the component's ClusterRole, or
 * in namespace-scoped mode a Role in the watched namespace bound to the component's ServiceAccount.
 */
export function grantTo(chart: Chart, p: GrantProps): void {
  const problems = ruleProblems(p.rules);
  if (problems.length > 0) throw new Error(`rules granted to ${p.component} are not least-privilege: ${problems.join('; ')}`);
  const o = p.deployment;
  if (o.watchNamespace === undefined) {
    const role = new kplus.ClusterRole(chart, p.id, {
      metadata: { name: p.name, labels: { 'app.kubernetes.io/part-of': PART_OF, [aggregateLabel(p.component)]: 'true' } },
    });
    for (const r of normalizeRules(p.rules)) role.allow(r.verbs, endpointOf(r));
    return;
  }
  const meta = { name: p.name, namespace: o.watchNamespace, labels: { 'app.kubernetes.io/part-of': PART_OF } };
  const role = new kplus.Role(chart, p.id, { metadata: meta });
  for (const r of normalizeRules(p.rules)) role.allow(r.verbs, resourceOf(r));
  const sa = kplus.ServiceAccount.fromServiceAccountName(chart, `${p.id}-sa`, `inplace-${p.component}`, { namespaceName: o.namespace });
  new kplus.RoleBinding(chart, `${p.id}-binding`, { metadata: meta, role }).addSubjects(sa);
}

/**
 * What a workload is to the platform: a controller (`inplace run`), an updater (`inplace updater`) or the dashboard
 * (`inplace dashboard`: no leader election, its own HTTPS port serves the probes).
 */
export type WorkloadRole = 'controller' | 'updater' | 'dashboard';

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

/** Props of addWorkload. */
export interface WorkloadProps {
  /** What to run and the rules it declares. */
  readonly workload: WorkloadSpec;
  /** A controller (`inplace run`, serves secure metrics), an updater (`inplace updater`) or the dashboard. */
  readonly role: WorkloadRole;
  /** The deployment's options. */
  readonly deployment: DeploymentOptions;
  /** Extra labels of the pods (not of the selector). @default none */
  readonly podLabels?: Readonly<Record<string, string>>;
}

/**
 * Adds one workload: ServiceAccount, its rules (a ClusterRole + binding, or in namespace-scoped mode a Role + binding in
 * the watched namespace and a ClusterRole for the cluster-scoped kinds only), a Role (+binding) for its leader-election
 * Lease, a restricted-profile Deployment spread over nodes and zones, and a PodDisruptionBudget when it has more
 * than one replica.
 */
export function addWorkload(chart: Chart, p: WorkloadProps): kplus.Deployment {
  const { workload: w, role, deployment: o } = p;
  const problems = ruleProblems([...w.rbac, ...(w.providerRbac ?? [])]);
  if (problems.length > 0) throw new Error(`component ${w.name} declares RBAC that is not least-privilege: ${problems.join('; ')}`);
  // Controllers serve /metrics behind TokenReview/SubjectAccessReview (--metrics-secure): those calls come with the
  // flag. Updaters serve no metrics in the manifests (only process metrics; their probe port serves the probes only).
  // The dashboard elects no leader (every replica serves pages) and answers the probes on its own HTTPS port.
  const controller = role === 'controller';
  const dashboard = role === 'dashboard';
  const rules = controller ? [...w.rbac, ...METRICS_AUTH_RULES] : w.rbac;
  const serving = dashboard
    ? []
    : [
        '--leader-elect',
        ...(controller ? ['--metrics-port', String(PORTS.metrics), '--metrics-secure'] : []),
        '--health-port',
        String(PORTS.health),
      ];
  const probe = (path: string): kplus.Probe =>
    dashboard
      ? kplus.Probe.fromHttpGet(path, { port: DASHBOARD.port, scheme: kplus.ConnectionScheme.HTTPS })
      : kplus.Probe.fromHttpGet(path, { port: PORTS.health });
  const name = `inplace-${w.name}`;
  const labels = selectorLabels(w.name, role, o.instance);
  const meta = (suffix = ''): { name: string; namespace: string; labels: Record<string, string> } => ({
    name: name + suffix,
    namespace: o.namespace,
    labels,
  });

  const sa = new kplus.ServiceAccount(chart, `${w.name}-sa`, { metadata: meta(), automountToken: true });

  // The component's rules already carry the runtime's (Events, Lease: src/runtime/rbac.ts); the Lease goes to the
  // namespaced Role below, never cluster-wide.
  const own = normalizeRules(rules).filter((x) => !isOwnNamespaceRule(x));
  const providers = normalizeRules(w.providerRbac ?? []);
  if (o.watchNamespace === undefined) {
    // The bound ClusterRole aggregates every ClusterRole labelled for this component: the component's own rules
    // (below) and rules that updaters bring for their task kinds (see grantTo), as CAPI providers do.
    const clusterRole = new kplus.ClusterRole(chart, `${w.name}-clusterrole`, {
      metadata: { name, labels },
      aggregationLabels: { [aggregateLabel(w.name)]: 'true' },
    });
    const base = new kplus.ClusterRole(chart, `${w.name}-clusterrole-rules`, {
      metadata: { name: `${name}-rules`, labels: { ...labels, [aggregateLabel(w.name)]: 'true' } },
    });
    for (const r of own) base.allow(r.verbs, endpointOf(r));
    // Provider kinds apart, so that what the provider list granted is visible (and what a provider's own ClusterRole
    // with the same label adds, see docs/operations.md, sits next to it).
    if (providers.length) {
      const pr = new kplus.ClusterRole(chart, `${w.name}-clusterrole-providers`, {
        metadata: { name: `${name}-providers`, labels: { ...labels, [aggregateLabel(w.name)]: 'true' } },
      });
      for (const r of providers) pr.allow(r.verbs, endpointOf(r));
    }
    new kplus.ClusterRoleBinding(chart, `${w.name}-clusterrolebinding`, { metadata: { name, labels }, role: clusterRole }).addSubjects(sa);
  } else {
    // Namespace-scoped: everything namespaced in a Role of the watched namespace (a Role cannot aggregate, so the
    // provider rules join it); cluster-scoped kinds, which no Role can grant, in a ClusterRole named after the
    // install namespace (two installations must not overwrite each other's binding).
    const inNs = { name, namespace: o.watchNamespace, labels };
    const nsRole = new kplus.Role(chart, `${w.name}-role-watched`, { metadata: inNs });
    for (const r of [...own, ...providers].filter((x) => !isClusterScoped(x.apiGroup, x.resource))) nsRole.allow(r.verbs, resourceOf(r));
    new kplus.RoleBinding(chart, `${w.name}-rolebinding-watched`, { metadata: inNs, role: nsRole }).addSubjects(sa);
    const clusterScoped = own.filter((x) => isClusterScoped(x.apiGroup, x.resource));
    if (clusterScoped.length) {
      const clusterMeta = { name: `${name}-${o.namespace}-cluster-scoped`, labels };
      const cr = new kplus.ClusterRole(chart, `${w.name}-clusterrole-cluster-scoped`, { metadata: clusterMeta });
      for (const r of clusterScoped) cr.allow(r.verbs, endpointOf(r));
      new kplus.ClusterRoleBinding(chart, `${w.name}-clusterrolebinding-cluster-scoped`, { metadata: clusterMeta, role: cr }).addSubjects(
        sa,
      );
    }
  }

  // Every workload but the dashboard runs with --leader-elect (below): the Lease rules come with that flag.
  if (!dashboard) {
    const leaseRole = new kplus.Role(chart, `${w.name}-role`, { metadata: meta('-leader-election') });
    for (const r of normalizeRules([...LEADER_ELECTION_RULES, ...w.rbac]).filter(isOwnNamespaceRule)) {
      leaseRole.allow(r.verbs, kplus.ApiResource.custom({ apiGroup: r.apiGroup, resourceType: r.resource }));
    }
    new kplus.RoleBinding(chart, `${w.name}-rolebinding`, { metadata: meta('-leader-election'), role: leaseRole }).addSubjects(sa);
  }

  const res = o.resources;
  const deployment = new kplus.Deployment(chart, `${w.name}-deployment`, {
    metadata: { ...meta(), annotations: { 'inplace.cluster.x-k8s.io/description': w.description } },
    replicas: o.replicas,
    // No generated selector: the selector is the stable labels above (selectorLabels).
    select: false,
    serviceAccount: sa,
    automountServiceAccountToken: true,
    podMetadata: { labels: { ...labels, ...p.podLabels } },
    securityContext: { ensureNonRoot: true, user: 65532, group: 65532, fsGroup: 65532 },
    containers: [
      {
        name: 'manager',
        image: o.image,
        imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
        workingDir: '/app',
        command: ['node', 'dist/src/cli/main.js'],
        args: [...w.args, ...(o.watchNamespace !== undefined ? ['--namespace', o.watchNamespace] : []), ...serving],
        ports: dashboard
          ? [{ name: 'https', number: DASHBOARD.port }]
          : [...(controller ? [{ name: 'metrics', number: PORTS.metrics }] : []), { name: 'health', number: PORTS.health }],
        envVariables: {
          POD_NAMESPACE: kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_NAMESPACE),
          POD_NAME: kplus.EnvValue.fromFieldRef(kplus.EnvFieldPaths.POD_NAME),
          NODE_ENV: kplus.EnvValue.fromValue('production'),
          // The heap within the container's memory limit: without it V8 sizes the heap from the node's memory and
          // the kernel kills the container before a collection would have run.
          NODE_OPTIONS: kplus.EnvValue.fromValue(`--max-old-space-size=${heapSizeMiB(res.memoryLimitMiB)}`),
        },
        liveness: probe('/healthz'),
        readiness: probe('/readyz'),
        resources: {
          cpu: {
            request: kplus.Cpu.millis(res.cpuRequestMillis),
            ...(res.cpuLimitMillis > 0 ? { limit: kplus.Cpu.millis(res.cpuLimitMillis) } : {}),
          },
          memory: { request: Size.mebibytes(res.memoryRequestMiB), limit: Size.mebibytes(res.memoryLimitMiB) },
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

/** Props of addRuntimeExtension. */
export interface RuntimeExtensionProps {
  /** The extension's Deployment (from addWorkload), completed here. */
  readonly workload: kplus.Deployment;
  /** The deployment's options. */
  readonly deployment: DeploymentOptions;
  /** How the extension is deployed. */
  readonly extension: RuntimeExtensionOptions;
}

/** The message synthesis refuses a runtime extension with when nobody said who may call its hooks. */
export const CALLERS_REQUIRED =
  "the runtime extension's NetworkPolicy opens its hook port (9443) only to the namespaces of Cluster API's controllers that call the hooks: name them (npm run synth -- --runtime-extension-caller-namespace capi-system --runtime-extension-caller-namespace capi-kubeadm-control-plane-system; the callerNamespaceSelector prop of runtimeExtension), or leave the NetworkPolicies out with --no-network-policy";

/**
 * Completes the runtime extension's Deployment with what Cluster API needs to call it: the serving port, the
 * certificate Secret mounted at --cert-dir, a Service (443 → 9443), the Secret's issuer (cert-manager, self-signed)
 * unless one is brought, a NetworkPolicy letting only the callers' namespaces reach 9443, and the ExtensionConfig that
 * registers it (CAPI injects the caBundle from the Secret named by the inject-ca-from-secret annotation). Throws
 * CALLERS_REQUIRED when the NetworkPolicy is on and the callers' namespaces are not given.
 */
export function addRuntimeExtension(chart: Chart, p: RuntimeExtensionProps): void {
  const { workload: d, deployment: o, extension: x } = p;
  if (!o.noNetworkPolicy && x.callerNamespaceSelector === undefined) throw new Error(CALLERS_REQUIRED);
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

  if (!o.noNetworkPolicy && x.callerNamespaceSelector !== undefined) {
    // The callers are Cluster API's controllers (core, KCP) in the namespaces they were installed in, named
    // explicitly: the hook port is never open to every peer. The platform's policy keeps covering the other ports.
    new ApiObject(chart, 'runtime-extension-network-policy', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: o.namespace, labels },
      spec: {
        podSelector: { matchLabels: labels },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ namespaceSelector: x.callerNamespaceSelector }], ports: [{ protocol: 'TCP', port: EXTENSION.port }] }],
      },
    });
  }

  new ApiObject(chart, 'runtime-extension-config', {
    apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
    kind: 'ExtensionConfig',
    metadata: {
      // Cluster-scoped: one installation per watched namespace must not overwrite another's registration.
      name: o.watchNamespace === undefined ? 'inplace' : `inplace-${o.watchNamespace}`,
      labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance },
      annotations: { 'runtime.cluster.x-k8s.io/inject-ca-from-secret': `${o.namespace}/${secretName}` },
    },
    spec: {
      clientConfig: { service: { name, namespace: o.namespace, port: EXTENSION.servicePort } },
      // Cluster-scoped: every namespace (narrow it to the fleets this installation serves); namespace-scoped: the
      // watched namespace only, the one the extension's Roles cover.
      namespaceSelector: o.watchNamespace === undefined ? {} : { matchLabels: { 'kubernetes.io/metadata.name': o.watchNamespace } },
    },
  });
}

/**
 * The read-only fleet dashboard (opt-in): its workload (ServiceAccount, roles from src/dashboard/rbac.ts, a
 * restricted-profile Deployment probed on its HTTPS port), a Service (443 → 8443) and, unless the NetworkPolicies are
 * left out, a NetworkPolicy opening its port to every peer: each viewer is authenticated and authorized by the API
 * server (TokenReview, SubjectAccessReview), as the metrics port is. The platform's policy keeps its egress to the API
 * server only.
 */
export function addDashboard(chart: Chart, o: DeploymentOptions): kplus.Deployment {
  const d = addWorkload(chart, { workload: dashboardWorkload(), role: 'dashboard', deployment: o });
  const name = `inplace-${DASHBOARD.component}`;
  const labels = selectorLabels(DASHBOARD.component, 'dashboard', o.instance);
  const svc = new kplus.Service(chart, 'dashboard-service', {
    metadata: { name, namespace: o.namespace, labels },
    type: kplus.ServiceType.CLUSTER_IP,
    ports: [{ name: 'https', port: DASHBOARD.servicePort, targetPort: DASHBOARD.port }],
  });
  for (const [k, v] of Object.entries(labels)) svc.selectLabel(k, v);
  if (!o.noNetworkPolicy)
    new ApiObject(chart, 'dashboard-network-policy', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace: o.namespace, labels },
      spec: {
        podSelector: { matchLabels: labels },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ protocol: 'TCP', port: DASHBOARD.port }] }],
      },
    });
  return d;
}

/**
 * The plan controller's only access to Secrets: per namespace the alert-gate policy names Secrets in, a Role with `get`
 * on exactly those (resourceNames) bound to its ServiceAccount. None without a policy. In namespace-scoped mode a
 * Secret outside the watched namespace could never be used by a plan (a plan names a Secret of its own namespace), so
 * synthesis refuses it rather than grant it.
 */
function addAlertGateSecretRoles(chart: Chart, o: DeploymentOptions, policy: AlertGatePolicy | undefined): void {
  const component = 'plan-controller';
  for (const [ns, names] of alertGateSecretsByNamespace(policy)) {
    if (o.watchNamespace !== undefined && ns !== o.watchNamespace)
      throw new Error(
        `alert-gate policy names Secret(s) ${names.map((n) => `${ns}/${n}`).join(', ')} outside the watched namespace ${o.watchNamespace}: no plan could use them`,
      );
    const meta = {
      name: `inplace-${component}-alert-gate-credentials`,
      namespace: ns,
      labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance },
    };
    // One rule naming every Secret (kplus would split resourceNames into a rule each).
    new ApiObject(chart, `${component}-alert-gate-credentials-${ns}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta,
      rules: alertGateSecretRules(names),
    });
    new ApiObject(chart, `${component}-alert-gate-credentials-binding-${ns}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: meta.name },
      subjects: [{ kind: 'ServiceAccount', name: `inplace-${component}`, namespace: o.namespace }],
    });
  }
}

/** Props of PlatformChart. */
export interface PlatformChartProps {
  /** The controller workloads, one Deployment each. */
  readonly components: readonly WorkloadSpec[];
  /** The deployment's options. */
  readonly deployment: DeploymentOptions;
}

/** The platform: namespace, one Deployment + ServiceAccount + least-privilege RBAC per component, a metrics Service. */
export class PlatformChart extends Chart {
  constructor(scope: Construct, id: string, props: PlatformChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'app.kubernetes.io/part-of': PART_OF } });
    const { components, deployment: o } = props;
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
    const gatePolicy = o.alertGatePolicy ? parseAlertGatePolicy(o.alertGatePolicy) : undefined;
    const gateCm = gatePolicy
      ? new kplus.ConfigMap(this, 'alert-gate-policy', {
          metadata: { name: 'inplace-alert-gate-policy', namespace: o.namespace },
          data: { 'alert-gate-policy.yaml': stringify(gatePolicy) },
        })
      : undefined;
    const gating = componentsTaking('alertGatePolicy');
    for (const c of components) {
      const enforces = cm && enforcing.includes(c.name);
      const gates = gateCm && gating.includes(c.name);
      const args = [
        ...c.args,
        ...(enforces ? ['--write-policy', WRITE_POLICY_PATH] : []),
        ...(gates ? ['--alert-gate-policy', ALERT_GATE_POLICY_PATH] : []),
      ];
      const d = addWorkload(this, {
        workload: { ...c, args },
        role: 'controller',
        deployment: o,
        podLabels: { [METRICS_LABEL]: 'true' },
      });
      if (enforces)
        d.containers[0]?.mount('/etc/inplace', kplus.Volume.fromConfigMap(this, `${c.name}-write-policy`, cm), { readOnly: true });
      if (gates)
        d.containers[0]?.mount('/etc/inplace-alert-gate', kplus.Volume.fromConfigMap(this, `${c.name}-alert-gate-policy`, gateCm), {
          readOnly: true,
        });
      if (c.name === 'plan-controller') addAlertGateSecretRoles(this, o, gatePolicy);
      if (c.name === EXTENSION.component && o.runtimeExtension)
        addRuntimeExtension(this, { workload: d, deployment: o, extension: o.runtimeExtension });
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
      // Cluster-scoped: in namespace-scoped mode one per install (named after its namespace), so that deleting one
      // team's install does not take the scrape permission from another's.
      metadata: { name: metricsReaderName(o), labels: { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/instance': o.instance } },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    });
    if (o.dashboard) addDashboard(this, o);
    if (!o.noNetworkPolicy) addNetworkPolicy(this, o);
  }
}

/** A sample updater to deploy: its workload plus the CRDs it brings. */
export interface SampleWorkloadSpec extends WorkloadSpec {
  /** CRD files (absolute paths) of its task and template kinds. */
  readonly crds: readonly string[];
}

/** Props of SampleUpdatersChart. */
export interface SampleUpdatersChartProps {
  /** The sample updaters. */
  readonly updaters: readonly SampleWorkloadSpec[];
  /** The deployment's options. */
  readonly deployment: DeploymentOptions;
}

/**
 * Opt-in chart, written apart from the platform (samples/): the sample updaters' CRDs and Deployments (in the platform
 * namespace) and the grants of their kinds to the platform. Samples, not products: the node-simulating ones run only
 * against the embedded API server (docs/operations.md).
 */
export class SampleUpdatersChart extends Chart {
  constructor(scope: Construct, id: string, props: SampleUpdatersChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'app.kubernetes.io/part-of': PART_OF } });
    const { updaters, deployment: o } = props;
    const crds = [...new Set(updaters.flatMap((u) => u.crds))].sort();
    crds.forEach((url, i) => new Include(this, `crd-${i}`, { url }));
    for (const u of updaters) addWorkload(this, { workload: { ...u, name: `updater-${u.name}` }, role: 'updater', deployment: o });
    // The platform creates, watches, aborts and garbage-collects the task kinds and reads the templates.
    const kinds = crds.flatMap(crdKinds);
    const tasks = kinds.filter((k) => !k.kind.endsWith('Template'));
    const templates = kinds.filter((k) => k.kind.endsWith('Template'));
    const rule = (ks: typeof kinds, verbs: string[]): PolicyRule[] =>
      ks.length ? [{ apiGroups: [...new Set(ks.map((k) => k.group))], resources: ks.map((k) => k.plural), verbs }] : [];
    grantTo(this, {
      id: 'tasks-for-machine-task-controller',
      name: 'inplace-sample-updaters-for-machine-task-controller',
      component: 'machine-task-controller',
      rules: [...rule(tasks, ['get', 'list', 'watch', 'create', 'patch', 'delete']), ...rule(templates, ['get', 'list', 'watch'])],
      deployment: o,
    });
    grantTo(this, {
      id: 'templates-for-plan-controller',
      name: 'inplace-sample-updaters-for-plan-controller',
      component: 'plan-controller',
      rules: rule(templates, ['get', 'list', 'watch']),
      deployment: o,
    });
    // A campaign checks its updater template objects per cluster before it creates a plan (watched, like the plan's).
    grantTo(this, {
      id: 'templates-for-campaign-controller',
      name: 'inplace-sample-updaters-for-campaign-controller',
      component: 'campaign-controller',
      rules: rule(templates, ['get', 'list', 'watch']),
      deployment: o,
    });
  }
}

/** Props of addCharts. */
export interface ChartsProps {
  /** The deployment's options. */
  readonly deployment: DeploymentOptions;
  /** The controller workloads. */
  readonly components: readonly WorkloadSpec[];
  /** Sample updaters: the opt-in samples chart. @default undefined (no samples chart) */
  readonly updaters?: readonly SampleWorkloadSpec[];
}

/** Adds all charts to an app; returns them in apply order (CRDs, platform, then the opt-in samples). */
export function addCharts(app: App, p: ChartsProps): Chart[] {
  const o = p.deployment;
  const charts: Chart[] = [
    new CrdsChart(app, 'crds', { files: yamlFilesIn(join(o.root, 'crds')) }),
    new PlatformChart(app, 'platform', { components: p.components, deployment: o }),
  ];
  if (p.updaters) charts.push(new SampleUpdatersChart(app, 'sample-updaters', { updaters: p.updaters, deployment: o }));
  return charts;
}
