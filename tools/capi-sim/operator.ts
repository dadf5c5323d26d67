// What an operator does to change a MachineDeployment's machines the Cluster API way: infrastructure templates are
// immutable by convention, so the new image goes into a new DevMachineTemplate copied from the current one, and the
// deployment's template points at it (plus a version, when it changes too). Used by the hooks demo, the e2e tests
// and the benchmarks alike.
import { MachineDeployments, type KubeObject } from '../../src/api/index.js';
import { isAlreadyExists } from '../../src/runtime/pure/errors.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import { DevMachineTemplates } from './builders.js';

type Json = Record<string, unknown>;
type Md = KubeObject & { spec: { template: { spec: { infrastructureRef: { name: string } } } } };
type Template = KubeObject & { spec: { template: { spec: Json } } };

/** The MachineDeployment has no DevMachineTemplate to copy. */
export class ChangeMachineDeploymentImageError extends Error {
  override readonly name = 'ChangeMachineDeploymentImageError';
}

/** The name of the DevMachineTemplate carrying `image` for `md` (a DNS label, at most 63 characters). */
export const imageTemplateName = (md: string, image: string): string =>
  `${md}-${image.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 63).replace(/-+$/, '');

/**
 * Points MachineDeployment `namespace/md` at a copy of its current DevMachineTemplate with `image` (and at `version`
 * when given), in one patch of the deployment. An existing template of that name is replaced. Returns its name.
 */
export async function changeMachineDeploymentImage(
  client: KubeClient,
  namespace: string,
  md: string,
  image: string,
  opts: { version?: string } = {},
): Promise<string> {
  const d = await client.get<Md>(MachineDeployments, namespace, md);
  const current = d?.spec.template.spec.infrastructureRef.name;
  const tpl = current ? await client.get<Template>(DevMachineTemplates, namespace, current) : undefined;
  if (!tpl) throw new ChangeMachineDeploymentImageError(`MachineDeployment ${namespace}/${md} has no DevMachineTemplate to copy`);
  const spec = structuredClone(tpl.spec);
  const backend = (spec.template.spec['backend'] ??= {}) as Json;
  backend['docker'] = { ...((backend['docker'] as Json | undefined) ?? {}), customImage: image };
  const name = imageTemplateName(md, image);
  const obj: Template = { apiVersion: tpl.apiVersion, kind: tpl.kind, metadata: { name, namespace }, spec };
  try {
    await client.create(DevMachineTemplates, obj);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await client.get(DevMachineTemplates, namespace, name);
    await client.update(DevMachineTemplates, {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: existing?.metadata.resourceVersion },
    });
  }
  const template = { spec: { infrastructureRef: { name }, ...(opts.version ? { version: opts.version } : {}) } };
  await client.patch(MachineDeployments, namespace, md, { spec: { template } }, { type: 'merge' });
  return name;
}
