// `inplace preview` of a proposed Cluster API change (a KubeadmControlPlane or MachineDeployment from a file, or a live
// one with --version / --set): reads the owner, its machines and their objects, the InPlaceUpdaters (get/list only)
// and shows per machine what Cluster API would do (src/cli/preview-capi-decide.ts). Exit 1 when any machine would be
// replaced: a CI gate before the change is applied.
import { parse as parseYaml } from 'yaml';
import {
  Clusters,
  CustomResourceDefinitions,
  InPlaceUpdaters,
  KubeadmControlPlanes,
  Labels,
  MachineDeployments,
  MachineSets,
  Machines,
  parseApiVersion,
  type InPlaceUpdater,
  type KubeObject,
  type ResourceType,
} from '../api/index.js';
import type { KubeadmControlPlane, Machine, MachineDeployment, MachineSet, ObjectRef } from '../api/capi/index.js';
import { parsePointer } from '../runtime/pure/jsonpointer.js';
import { parseVersion } from '../rules/upgrade-rules.js';
import { clusterNameOf, machineSetSubject, machineSubject, needsClusterLabels, updatersServing } from '../runtime-extension/validate.js';
import { call, connect, explainApiError, type Connection } from './kube.js';
import { previewCapiChange, type CapiOwnerKind, type CapiPreview } from './preview-capi-decide.js';
import { safeJson, safeText } from './safe-text.js';
import { CliError, ExitCode, str, type Io, type ParsedArgs } from './verb.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The owner kinds and how a positional names them (kind/NAME). */
const OWNERS: Record<CapiOwnerKind, { res: ResourceType; aliases: string[]; machineLabel: string }> = {
  KubeadmControlPlane: { res: KubeadmControlPlanes, aliases: ['kubeadmcontrolplane', 'kcp'], machineLabel: Labels.controlPlaneName },
  MachineDeployment: { res: MachineDeployments, aliases: ['machinedeployment', 'md'], machineLabel: Labels.deploymentName },
};

/** Bad input of a Cluster API preview: exit 2, nothing read further. */
const badInput = (message: string, hint: string): CliError => new CliError(message, hint, ExitCode.usage);

/** The owner kind a positional `kind/NAME` names, or undefined when it names none. */
export function ownerOfPositional(arg: string): { kind: CapiOwnerKind; name: string } | undefined {
  const m = /^([A-Za-z.]+)\/(.+)$/.exec(arg);
  if (!m) return undefined;
  const alias = m[1]!.toLowerCase().replace(/\.(controlplane\.)?cluster\.x-k8s\.io$/, '');
  for (const [kind, o] of Object.entries(OWNERS) as [CapiOwnerKind, (typeof OWNERS)[CapiOwnerKind]][])
    if (o.aliases.includes(alias) || o.aliases.includes(alias.replace(/s$/, ''))) return { kind, name: m[2]! };
  return undefined;
}

/** True when a file's documents are a Cluster API owner change (and not a plan or campaign). */
export const isOwnerFile = (docs: readonly KubeObject[]): boolean =>
  docs.some((d) => d.kind === 'KubeadmControlPlane' || d.kind === 'MachineDeployment');

/** RFC 7386 merge of `patch` over `target`: the file's fields replace the live object's, as `kubectl apply` does for the fields it names. */
function mergeOver(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Json = isObject(target) ? structuredClone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergeOver(out[k], v);
  }
  return out;
}

/** A `--set` path (`spec.version` or `/spec/version`) as JSON pointer tokens. */
function setTokens(path: string): string[] {
  if (path.startsWith('/')) return parsePointer(path);
  return path.split('.').filter((t) => t !== '');
}

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** Why `tokens` is not a field of the kind's schema (undefined: it is). */
function unknownInSchema(schema: Schema, tokens: readonly string[]): string | undefined {
  let s: Schema | undefined = schema;
  for (const [i, t] of tokens.entries()) {
    if (!s || s['x-kubernetes-preserve-unknown-fields'] === true) return undefined;
    const at = tokens.slice(0, i).join('.') || '(root)';
    if (s.type === 'array') {
      if (!/^(0|[1-9]\d*)$/.test(t)) return `${at} is a list: "${t}" is not an index`;
      s = s.items;
      continue;
    }
    if (s.properties?.[t]) {
      s = s.properties[t];
      continue;
    }
    if (isObject(s.additionalProperties)) {
      s = s.additionalProperties as Schema;
      continue;
    }
    if (s.additionalProperties === true) return undefined;
    const known = Object.keys(s.properties ?? {}).sort();
    return `${at} has no field "${t}"${known.length ? ` (its fields: ${known.join(', ')})` : ''}`;
  }
  return undefined;
}

/** Sets `value` at `tokens` of `obj`, creating objects on the way. */
function setAt(obj: Json, tokens: readonly string[], value: unknown): void {
  let cur: unknown = obj;
  for (const [i, t] of tokens.entries()) {
    const last = i === tokens.length - 1;
    if (Array.isArray(cur)) {
      const idx = Number(t);
      if (last) cur[idx] = value;
      else cur = cur[idx] ??= {};
    } else if (isObject(cur)) {
      if (last) cur[t] = value;
      else cur = cur[t] = isObject(cur[t]) || Array.isArray(cur[t]) ? cur[t] : {};
    }
  }
}

/** The openAPIV3Schema of the served version of a kind, when the caller may read CRDs. */
async function schemaOf(conn: Connection, res: ResourceType): Promise<Schema | undefined> {
  try {
    const crd = await conn.client.get(CustomResourceDefinitions, undefined, `${res.plural}.${res.group}`);
    const versions =
      (crd?.['spec'] as { versions?: { name: string; schema?: { openAPIV3Schema?: Schema } }[] } | undefined)?.versions ?? [];
    return versions.find((v) => v.name === res.version)?.schema?.openAPIV3Schema;
  } catch {
    return undefined; // without CRD read access the paths are checked against the live object instead
  }
}

/** Applies --version and every --set to the proposed owner; an unknown path is bad input. */
async function applySets(conn: Connection, kind: CapiOwnerKind, proposed: Json, live: Json, args: ParsedArgs): Promise<void> {
  const version = str(args, 'version');
  const sets = Array.isArray(args.values['set']) ? (args.values['set'] as string[]) : [];
  checkVersionOption(version);
  const all: [string, unknown][] = [];
  if (version !== undefined) all.push([kind === 'KubeadmControlPlane' ? 'spec.version' : 'spec.template.spec.version', version]);
  for (const s of sets) {
    const eq = s.indexOf('=');
    if (eq <= 0)
      throw badInput(`--set "${s}" is not PATH=VALUE`, 'for example --set spec.template.spec.infrastructureRef.name=new-template');
    const raw = s.slice(eq + 1);
    let value: unknown;
    try {
      value = parseYaml(raw);
    } catch {
      value = raw;
    }
    all.push([s.slice(0, eq), value ?? raw]);
  }
  if (all.length === 0) return;
  const schema = await schemaOf(conn, OWNERS[kind].res);
  for (const [path, value] of all) {
    const tokens = setTokens(path);
    if (tokens[0] !== 'spec' || tokens.length < 2)
      throw badInput(`--set ${path}: only fields under spec change what Cluster API does`, 'name a field such as spec.version');
    const why = schema ? unknownInSchema(schema, tokens) : parentMissing(live, tokens);
    if (why) throw badInput(`--set ${path}: unknown path for ${kind}: ${why}`, `kubectl explain ${kind.toLowerCase()}.${tokens.join('.')}`);
    setAt(proposed, tokens, value);
  }
}

/**
 * `--version` is a Kubernetes version (vMAJOR.MINOR.PATCH, the plan controller's own upgrade rule): anything else
 * would be previewed as a change Cluster API then refuses, or worse, rolls out.
 */
export function checkVersionOption(version: string | undefined): void {
  if (version !== undefined && !parseVersion(version))
    throw badInput(`--version "${version}" is not a Kubernetes version`, 'pass vMAJOR.MINOR.PATCH, for example --version v1.30.1');
}

/** Without the schema: the parent of the path must exist in the live object. */
function parentMissing(live: Json, tokens: readonly string[]): string | undefined {
  let cur: unknown = live;
  for (const [i, t] of tokens.slice(0, -1).entries()) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObject(cur) ? cur[t] : undefined;
    if (cur === undefined) return `${tokens.slice(0, i + 1).join('.')} does not exist in the live object`;
  }
  return undefined;
}

/** What the preview is about: an owner document of the file, or a live `kind/NAME`. */
type PreviewSource = { file: string; docs: readonly KubeObject[] } | { target: string };

/** The owner a preview is for, and its changed document when it came from a file. */
interface PreviewTarget {
  kind: CapiOwnerKind;
  name: string;
  fileDoc?: KubeObject | undefined;
  nsFromFile?: string | undefined;
}

/** Runs the Cluster API preview of `inplace preview`: from the file's owner document, or a live `kind/NAME`. */
export async function runCapiPreview(args: ParsedArgs, io: Io, source: PreviewSource, output: 'text' | 'json'): Promise<number> {
  checkVersionOption(str(args, 'version')); // bad input is refused before the cluster is read
  const target = previewTarget(args, source);
  const { kind, name, fileDoc } = target;
  const conn = connect(args);
  try {
    const ns = target.nsFromFile ?? str(args, 'namespace') ?? conn.contextNamespace ?? 'default';
    const live = await readLiveOwner(conn, target, ns);
    const proposed = (
      fileDoc ? mergeOver(live, { ...fileDoc, metadata: { ...fileDoc.metadata, namespace: ns } }) : structuredClone(live)
    ) as Json;
    await applySets(conn, kind, proposed, live as unknown as Json, args);
    const owned = await readOwned(conn, target, ns);
    const found = await readReferences(conn, { source, ns, refs: referencesOf(kind, proposed, owned) });
    // The extension's scope (InPlaceUpdater spec.scope): an updater that does not serve the cluster or the provider
    // kinds is as if not registered for that request. A cluster selector needs the Cluster's labels.
    const clusterName = clusterNameOf(proposed) ?? owned.machines[0]?.spec.clusterName ?? '';
    const cluster = needsClusterLabels(owned.updaters)
      ? await call(conn, Clusters, () => conn.client.get<KubeObject>(Clusters, ns, clusterName))
      : undefined;
    const labels = cluster ? (cluster.metadata.labels ?? {}) : undefined;
    const { preview, problems } = previewCapiChange({
      owner: proposed as unknown as KubeadmControlPlane | MachineDeployment,
      kind,
      ...owned,
      lookup: (r) => found.get(refKey(r)),
      serving: (side) =>
        updatersServing(owned.updaters, {
          ...('machineSet' in side ? machineSetSubject(side) : machineSubject(side)),
          clusterLabels: labels,
        }),
    });
    if (problems.length > 0)
      throw badInput(
        `the proposed ${kind} ${ns}/${name} cannot be previewed:\n  ${problems.join('\n  ')}`,
        'create what it points at first, or put it in the same file',
      );
    if (output === 'json') io.out(`${safeJson(preview)}\n`);
    else io.out(renderCapiPreview(preview));
    return preview.replaces ? ExitCode.failure : ExitCode.ok;
  } finally {
    conn.client.close();
  }
}

/** The owner named by the file's one KubeadmControlPlane/MachineDeployment or by the positional `kind/NAME`. */
function previewTarget(args: ParsedArgs, source: PreviewSource): PreviewTarget {
  if ('file' in source) {
    const owners = source.docs.filter((d) => d.kind === 'KubeadmControlPlane' || d.kind === 'MachineDeployment');
    if (owners.length !== 1)
      throw badInput(
        `"${source.file}" must contain exactly one KubeadmControlPlane or MachineDeployment, found ${owners.length}`,
        'preview one owner change at a time (templates it points at may be in the same file)',
      );
    const fileDoc = owners[0]!;
    const kind = fileDoc.kind as CapiOwnerKind;
    const name = fileDoc.metadata?.name ?? '';
    if (!name) throw badInput(`the ${kind} in "${source.file}" has no metadata.name`, 'name the live object the change is for');
    return { kind, name, fileDoc, nsFromFile: fileDoc.metadata?.namespace };
  }
  const o = ownerOfPositional(source.target);
  if (!o)
    throw badInput(
      `"${source.target}" names no KubeadmControlPlane or MachineDeployment`,
      'use kubeadmcontrolplane/NAME (kcp/NAME) or machinedeployment/NAME (md/NAME), or -f FILE (a plan, a campaign, or the changed object)',
    );
  if (str(args, 'version') === undefined && !Array.isArray(args.values['set']))
    throw badInput(
      `nothing to preview for ${o.kind} ${o.name}`,
      'pass --version VERSION and/or --set PATH=VALUE (or -f with the changed object)',
    );
  return { kind: o.kind, name: o.name };
}

/** The live owner; a clear error when Cluster API is not served or the owner does not exist. */
async function readLiveOwner(conn: Connection, { kind, name }: PreviewTarget, ns: string): Promise<KubeObject> {
  const c = conn.client;
  const ownerRes = OWNERS[kind].res;
  let live: KubeObject | undefined;
  try {
    live = await c.get<KubeObject>(ownerRes, ns, name);
  } catch (e) {
    const served = await c.resolve(ownerRes.group, ownerRes.kind).then(
      () => true,
      () => false,
    );
    if (!served)
      throw badInput(`the API server does not serve ${ownerRes.plural}.${ownerRes.group}`, 'is Cluster API installed in this cluster?');
    throw explainApiError(e, conn, ownerRes);
  }
  if (!live)
    throw badInput(
      `${kind} ${ns}/${name} does not exist`,
      `a preview compares a change with the live object: kubectl get ${ownerRes.plural} -n ${ns}`,
    );
  return live;
}

/** What the owner owns and who could update it in place, without objects being deleted. */
interface Owned {
  machines: Machine[];
  machineSets: MachineSet[];
  updaters: (InPlaceUpdater & KubeObject)[];
}

/** The owner's machines (and a MachineDeployment's MachineSets) and the namespace's InPlaceUpdaters. */
async function readOwned(conn: Connection, { kind, name }: PreviewTarget, ns: string): Promise<Owned> {
  const c = conn.client;
  const list = async <T extends KubeObject>(res: ResourceType, labelSelector: string): Promise<T[]> =>
    (await call(conn, res, () => c.list<T>(res, ns, { labelSelector }))).items.filter((o) => !o.metadata.deletionTimestamp);
  const machines = await list<Machine>(Machines, `${OWNERS[kind].machineLabel}=${name}`);
  const machineSets = kind === 'MachineDeployment' ? await list<MachineSet>(MachineSets, `${Labels.deploymentName}=${name}`) : [];
  const updaters = (await call(conn, InPlaceUpdaters, () => c.list<InPlaceUpdater & KubeObject>(InPlaceUpdaters, ns))).items.filter(
    (u) => !u.metadata.deletionTimestamp,
  );
  return { machines, machineSets, updaters };
}

/** Every object a machine, a MachineSet's template or the proposed owner's template points at. */
function referencesOf(kind: CapiOwnerKind, proposed: Json, { machines, machineSets }: Owned): ObjectRef[] {
  const refs: ObjectRef[] = [];
  const addRef = (r: unknown): void => {
    if (isObject(r) && typeof r['kind'] === 'string' && typeof r['name'] === 'string')
      refs.push({ apiGroup: String(r['apiGroup'] ?? ''), kind: r['kind'], name: r['name'] });
  };
  for (const m of machines) {
    addRef(m.spec.infrastructureRef);
    addRef(m.spec.bootstrap?.configRef);
  }
  for (const s of [...machineSets, proposed as unknown as MachineSet]) {
    addRef(s.spec?.template?.spec?.infrastructureRef);
    addRef(s.spec?.template?.spec?.bootstrap?.configRef);
  }
  if (kind === 'KubeadmControlPlane') addRef((proposed as unknown as KubeadmControlPlane).spec?.machineTemplate?.spec?.infrastructureRef);
  return refs;
}

const refKey = (r: ObjectRef): string => `${r.apiGroup}/${r.kind}/${r.name}`;

/** Every referenced object, read once (by `refKey`); documents of the file count as present (applied together). */
async function readReferences(
  conn: Connection,
  { source, ns, refs }: { source: PreviewSource; ns: string; refs: readonly ObjectRef[] },
): Promise<Map<string, KubeObject | undefined>> {
  const c = conn.client;
  const found = new Map<string, KubeObject | undefined>();
  for (const r of refs) {
    if (found.has(refKey(r))) continue;
    const inFile =
      'docs' in source
        ? source.docs.find(
            (d) =>
              d.kind === r.kind &&
              parseApiVersion(d.apiVersion ?? '').group === r.apiGroup &&
              d.metadata?.name === r.name &&
              (d.metadata.namespace ?? ns) === ns,
          )
        : undefined;
    if (inFile) {
      found.set(refKey(r), inFile);
      continue;
    }
    let res: ResourceType;
    try {
      res = await c.resolve(r.apiGroup, r.kind);
    } catch {
      found.set(refKey(r), undefined);
      continue;
    }
    found.set(refKey(r), (await call(conn, res, () => c.get<KubeObject>(res, ns, r.name))) ?? undefined);
  }
  return found;
}

const VERDICT: Record<CapiPreview['machines'][number]['verdict'], string> = {
  unchanged: 'unchanged',
  'in-place': 'in place',
  replaced: 'REPLACED',
};

/** Renders a Cluster API preview for people. */
export function renderCapiPreview(p: CapiPreview): string {
  const count = (v: string): number => p.machines.filter((m) => m.verdict === v).length;
  const L: string[] = [
    `${p.kind} ${p.namespace}/${p.name}: ${p.machines.length} machine${p.machines.length === 1 ? '' : 's'} — ${count('in-place')} in place, ${count('replaced')} replaced, ${count('unchanged')} unchanged`,
    '',
  ];
  const w = Math.max(8, ...p.machines.map((m) => m.name.length));
  for (const m of p.machines) {
    L.push(`  ${m.name.padEnd(w)}  ${VERDICT[m.verdict]}`);
    if (m.verdict === 'in-place')
      m.updaters.forEach((u, i) => L.push(`      ${i + 1}. ${u.name} (sequence ${u.sequence}): ${u.fields.join(', ')}`));
    if (m.verdict === 'replaced') for (const x of m.uncovered) L.push(`      not covered: ${x}`);
    if (m.reason) L.push(`      replaced: ${m.reason}`);
    if (m.verdict !== 'unchanged' && m.outOfDate.length > 0) L.push(`      out of date: ${m.outOfDate.join('; ')}`);
  }
  if (p.machines.length === 0) L.push('  (no machines)');
  if (p.notes.length > 0) {
    L.push('', 'Notes:');
    for (const n of p.notes) L.push(`  ! ${n}`);
  }
  L.push(
    '',
    p.replaces
      ? `Result: NOT IN PLACE — Cluster API would replace ${count('replaced')} machine${count('replaced') === 1 ? '' : 's'}; nothing was changed.`
      : `Result: OK — ${count('in-place') > 0 ? 'every changed machine is updated in place' : 'no machine changes'}; nothing was changed.`,
  );
  return L.map(safeText).join('\n') + '\n';
}
