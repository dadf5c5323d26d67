// A checker of the Kubernetes Pod Security Standards, "restricted" profile (which includes "baseline"), over a pod
// spec: the controls of https://kubernetes.io/docs/concepts/security/pod-security-standards/ as of v1.28+. Pure.

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Volume types the restricted profile allows. */
export const RESTRICTED_VOLUME_TYPES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
];
/** Capabilities baseline allows adding (restricted allows NET_BIND_SERVICE only). */
const RESTRICTED_ADD_CAPS = ['NET_BIND_SERVICE'];
/** Sysctls baseline calls safe. */
const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
];
const SELINUX_TYPES = ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'];

/** Every violation of the restricted profile in a pod spec, as sentences naming the field; empty = compliant. */
export function restrictedViolations(podSpec: Obj, annotations: Record<string, string> = {}): string[] {
  const v: string[] = [];
  const psc = obj(podSpec['securityContext']) ?? {};
  // Baseline: host namespaces, host ports, hostPath, privileged, capabilities, sysctls, SELinux, /proc mount, AppArmor.
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (podSpec[f] === true) v.push(`spec.${f} is true`);
  if (podSpec['hostUsers'] === true) v.push('spec.hostUsers is true');
  for (const [i, vol] of arr(podSpec['volumes']).entries()) {
    const types = Object.keys(obj(vol) ?? {}).filter((k) => k !== 'name');
    for (const t of types) if (!RESTRICTED_VOLUME_TYPES.includes(t)) v.push(`spec.volumes[${i}] uses the ${t} volume type`);
  }
  for (const s of arr(psc['sysctls'])) {
    const name = String(obj(s)?.['name'] ?? '');
    if (!SAFE_SYSCTLS.includes(name)) v.push(`spec.securityContext.sysctls sets unsafe sysctl ${name}`);
  }
  const podSeLinux = obj(psc['seLinuxOptions']);
  if (podSeLinux) v.push(...seLinuxProblems(podSeLinux, 'spec.securityContext.seLinuxOptions'));
  if (obj(psc['windowsOptions'])?.['hostProcess'] === true) v.push('spec.securityContext.windowsOptions.hostProcess is true');
  const podSeccomp = obj(psc['seccompProfile'])?.['type'];
  if (podSeccomp !== undefined && !['RuntimeDefault', 'Localhost'].includes(String(podSeccomp)))
    v.push(`spec.securityContext.seccompProfile.type is ${String(podSeccomp)}`);
  const podAppArmor = obj(psc['appArmorProfile'])?.['type'];
  if (podAppArmor === 'Unconfined') v.push('spec.securityContext.appArmorProfile.type is Unconfined');
  for (const [k, val] of Object.entries(annotations)) {
    if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') && val === 'unconfined') v.push(`annotation ${k} is unconfined`);
  }
  if (psc['runAsUser'] === 0) v.push('spec.securityContext.runAsUser is 0 (root)');

  const containers = [
    ...arr(podSpec['containers']).map((c) => ['containers', c] as const),
    ...arr(podSpec['initContainers']).map((c) => ['initContainers', c] as const),
    ...arr(podSpec['ephemeralContainers']).map((c) => ['ephemeralContainers', c] as const),
  ];
  if (containers.length === 0) v.push('spec.containers is empty');
  const counters = new Map<string, number>();
  for (const [field, raw] of containers) {
    const c = obj(raw) ?? {};
    const idx = counters.get(field) ?? 0;
    counters.set(field, idx + 1);
    const at = `spec.${field}[${idx}] (${String(c['name'] ?? '?')})`;
    const sc = obj(c['securityContext']) ?? {};
    for (const [j, p] of arr(c['ports']).entries())
      if (obj(p)?.['hostPort'] !== undefined && obj(p)?.['hostPort'] !== 0) v.push(`${at}.ports[${j}].hostPort is set`);
    if (sc['privileged'] === true) v.push(`${at}.securityContext.privileged is true`);
    if (sc['allowPrivilegeEscalation'] !== false) v.push(`${at}.securityContext.allowPrivilegeEscalation is not false`);
    const caps = obj(sc['capabilities']) ?? {};
    if (!arr(caps['drop']).includes('ALL')) v.push(`${at}.securityContext.capabilities.drop does not include ALL`);
    for (const a of arr(caps['add']))
      if (!RESTRICTED_ADD_CAPS.includes(String(a))) v.push(`${at}.securityContext.capabilities.add includes ${String(a)}`);
    const runAsNonRoot = sc['runAsNonRoot'] ?? psc['runAsNonRoot'];
    if (runAsNonRoot !== true) v.push(`${at}: runAsNonRoot is not true (container or pod)`);
    if (sc['runAsUser'] === 0) v.push(`${at}.securityContext.runAsUser is 0 (root)`);
    const seccomp = obj(sc['seccompProfile'])?.['type'] ?? podSeccomp;
    if (!['RuntimeDefault', 'Localhost'].includes(String(seccomp)))
      v.push(
        `${at}: seccompProfile.type is ${seccomp === undefined ? 'unset' : String(seccomp)} (container or pod); RuntimeDefault or Localhost required`,
      );
    if (sc['procMount'] !== undefined && sc['procMount'] !== 'Default')
      v.push(`${at}.securityContext.procMount is ${String(sc['procMount'])}`);
    const seLinux = obj(sc['seLinuxOptions']);
    if (seLinux) v.push(...seLinuxProblems(seLinux, `${at}.securityContext.seLinuxOptions`));
    if (obj(sc['windowsOptions'])?.['hostProcess'] === true) v.push(`${at}.securityContext.windowsOptions.hostProcess is true`);
    if (obj(sc['appArmorProfile'])?.['type'] === 'Unconfined') v.push(`${at}.securityContext.appArmorProfile.type is Unconfined`);
  }
  return v;
}

function seLinuxProblems(o: Obj, at: string): string[] {
  const v: string[] = [];
  if (!SELINUX_TYPES.includes(String(o['type'] ?? ''))) v.push(`${at}.type is ${String(o['type'])}`);
  if (o['user'] !== undefined && o['user'] !== '') v.push(`${at}.user is set`);
  if (o['role'] !== undefined && o['role'] !== '') v.push(`${at}.role is set`);
  return v;
}
