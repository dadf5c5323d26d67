// Documentation generated from the code, so that it cannot drift: the provider grant table of docs/operations.md
// ("Your providers") is this function's output, and test/cli/synth.test.ts fails when the two differ.
import { COMPONENTS } from './components.js';
import { PROVIDER_ROLES, TEMPLATE_ROLE_OF, type ProviderRole } from '../src/runtime/rbac.js';

/** What each provider role is, for the table. */
const ROLE_DESCRIPTIONS: Readonly<Record<ProviderRole, string>> = {
  InfraMachine: "the kind a Machine's `spec.infrastructureRef` names (DevMachine, Metal3Machine, VSphereMachine, ...)",
  InfraMachineTemplate: 'the template the InfraMachines are cloned from (DevMachineTemplate, Metal3MachineTemplate, ...)',
  BootstrapConfig: 'the kind of `spec.bootstrap.configRef` (KubeadmConfig, ...)',
  BootstrapConfigTemplate: 'the template the BootstrapConfigs are cloned from (KubeadmConfigTemplate, ...)',
  ControlPlane: "the kind a Cluster's `spec.controlPlaneRef` names (KubeadmControlPlane, ...)",
};

/** The markdown table of what each provider role grants to which component, from the components' PROVIDER_VERBS. */
export function providerGrantTable(): string {
  const templateOf = Object.entries(TEMPLATE_ROLE_OF) as [ProviderRole, ProviderRole][];
  const rows = PROVIDER_ROLES.map((role) => {
    const grants = COMPONENTS.filter((c) => (c.providerVerbs[role]?.length ?? 0) > 0).map(
      (c) => `${c.name}: ${c.providerVerbs[role]!.join(', ')}`,
    );
    const machine = templateOf.find(([, t]) => t === role)?.[0];
    const derived = machine
      ? ` Granted with every ${machine} listed (\`<plural without s>templates\`, same group) unless the list names one in that group.`
      : '';
    return `| \`${role}\` | ${ROLE_DESCRIPTIONS[role]}.${derived} | ${grants.length ? grants.join('<br>') : '(none)'} |`;
  });
  return ['| Role | What it is | Granted to: verbs |', '|---|---|---|', ...rows].join('\n');
}
