// `inplace demo` (= npm start): the whole platform on the local API server, updating a demo CAPI cluster,
// with live progress and a summary. Components run as separate processes, as they would in a cluster.
import { writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { finalState, followPlan } from './demo-follow.js';
import { HOOKS_TARGET, runHooksDemo } from './demo-hooks.js';
import { runFleetDemo } from './demo-fleet.js';
import {
  DEMO,
  INTERRUPTED,
  demoControllerArgs,
  exitedUnexpectedly,
  freePort,
  reportExit,
  serveOn,
  startComponents,
  startLocalPlatform,
  stayUp,
  type ComponentSpec,
} from './demo-platform.js';
import { applyFile, readYamlDocs } from './install.js';
import { loadWritePolicy } from './write-policy.js';
import { projectRoot } from './procs.js';
import { renderSummary, secs } from './progress.js';
import { safeText } from './safe-text.js';
import { CliError, ExitCode, flag, secondsOption, str, UsageError, type Io, type Verb } from './verb.js';

export { DEMO } from './demo-platform.js';

/**
 * The controllers the single-plan demo starts: no campaign controller (the demo applies a plan, not a campaign; the
 * fleet demo starts it) and no runtime extension (the --hooks demo's). The README's process count follows this list.
 */
export const DEMO_CONTROLLERS = ['plan-controller', 'machine-task-controller', 'mhc-extension'] as const;

/** `inplace demo`. */
export const demoVerb: Verb = {
  name: 'demo',
  summary: 'Run the whole platform on a local API server and update a demo cluster',
  help: `Usage: inplace demo [--plan FILE | --hooks | --fleet] [--keep-running] [--no-reference-updater | --reference-names a,b]
                   [--write-policy FILE] [--state-out FILE] [--timeout SECONDS]   (npm start)

Starts the local API server (HTTPS on loopback), writes a kubeconfig to .inplace/demo/kubeconfig,
installs the CRDs and a demo CAPI inventory (namespace ${DEMO.namespace}: cluster ${DEMO.clusterName}, control plane
${DEMO.controlPlane.name} x3, MachineDeployments ${DEMO.machineDeployments.map((m) => m.name).join(', ')} x3, a MachineHealthCheck), starts every
controller, the sample updaters and a CAPI simulator as separate processes, applies the plan and
shows live progress until the plan is terminal, then a summary.
Exit code 0 when the plan ended updated with every change committed, 1 otherwise (also when a component exits
unexpectedly, with --keep-running too: the reason and its last log lines are printed), 130 on Ctrl-C.

The reference updater (a simulation: it changes nothing) serves every generic updater name in the demo
(--catch-all); with --fleet, exactly the generic updater names of the campaign file. To run your own updater in the demo instead, leave it out (--no-reference-updater) or narrow it to
the names it should still serve (--reference-names ntp-config); see the README, "Run your own updater in the demo".

With --hooks (npm start -- --hooks) it plays an operator of Cluster API >= 1.12 with the InPlaceUpdates gate
instead (docs/hooks.md): maxSurge 0 on the KCP and the MachineDeployments, the InPlaceUpdaters of
examples/hooks/updaters.yaml, the simulator with --in-place-updates, the runtime extension (a self-signed
certificate in <work dir>/extension-certs) registered through an ExtensionConfig; no plan controller. Once the
simulator knows the extension's handlers it changes the KCP version to ${HOOKS_TARGET.version} and points each
MachineDeployment at a new DevMachineTemplate (image ${HOOKS_TARGET.image}, version ${HOOKS_TARGET.version}), prints each
machine's in-place update as Cluster API starts and ends it, then a summary. Exit code 0 only when every machine
was updated in place and none replaced.

Options:
  --plan FILE         plan (and templates) to apply (default: examples/plan.yaml)
  --hooks             Cluster API's in-place update hooks through the runtime extension instead of a plan
  --fleet             a fleet campaign (examples/campaign.yaml, or --plan FILE) over 24 simulated clusters
  --dashboard         with --fleet: also start the live dashboard (inplace dashboard), print its URL, stay up at the end
  --keep-running      stay up after the plan finished (explore with kubectl; Ctrl-C to stop)
  --no-reference-updater
                      do not start the reference updater (run your own updater for the plan's generic names)
  --reference-names a,b
                      the reference updater serves only these generic updater names (default: every name)
  --write-policy FILE the write policy of the plan-controller and machine-task-controller (as inplace run
                      --write-policy), e.g. examples/write-policy.yaml for examples/gated-plan.yaml
  --state-out FILE    write the final plan, MachineUpdates and Machines as JSON
  --timeout SECONDS   give up when the plan is not terminal (--hooks: the machines not updated) after this long (default: 300)
  --work-dir DIR      where the kubeconfig and logs go (default: .inplace/demo)`,
  options: {
    plan: { type: 'string' },
    hooks: { type: 'boolean' },
    fleet: { type: 'boolean' },
    dashboard: { type: 'boolean' },
    'keep-running': { type: 'boolean' },
    'state-out': { type: 'string' },
    timeout: { type: 'string' },
    'work-dir': { type: 'string' },
    'no-reference-updater': { type: 'boolean' },
    'reference-names': { type: 'string' },
    'write-policy': { type: 'string' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const root = projectRoot();
    const common = {
      root,
      // The dashboard is for following the campaign, also once it ended: the demo stays up until Ctrl-C.
      keepRunning: flag(args, 'keep-running') || flag(args, 'dashboard'),
      stateOut: str(args, 'state-out'),
      timeoutMs: secondsOption(args, 'timeout', 300) * 1000,
      workDir: resolve(str(args, 'work-dir') ?? join(root, '.inplace', 'demo')),
    };
    const policyPath = str(args, 'write-policy');
    if (policyPath !== undefined) {
      if (flag(args, 'hooks')) throw new UsageError('--write-policy applies to the controllers of a plan; --hooks runs none');
      // Read and checked now: a wrong file fails in a second, not after the setup (and the controllers read it again).
      loadWritePolicy(policyPath);
    }
    const writePolicy = policyPath !== undefined ? resolve(policyPath) : undefined;
    if (flag(args, 'dashboard') && !flag(args, 'fleet')) throw new UsageError('--dashboard shows a fleet campaign: add --fleet');
    if (flag(args, 'fleet')) {
      if (flag(args, 'hooks')) throw new UsageError('--fleet and --hooks are two demos: pick one');
      if (flag(args, 'no-reference-updater') || str(args, 'reference-names') !== undefined)
        throw new UsageError('--no-reference-updater and --reference-names apply to the single-plan demo, not to --fleet');
      // --plan names the campaign file here (default examples/campaign.yaml).
      const campaignPath = str(args, 'plan');
      return runFleetDemo(
        {
          ...common,
          ...(campaignPath ? { campaignPath: resolve(campaignPath) } : {}),
          ...(writePolicy ? { writePolicy } : {}),
          dashboard: flag(args, 'dashboard'),
        },
        io,
      );
    }
    const referenceNames = str(args, 'reference-names')
      ?.split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (referenceNames !== undefined && referenceNames.length === 0)
      throw new UsageError('--reference-names needs at least one updater name, e.g. --reference-names ntp-config');
    if (referenceNames && flag(args, 'no-reference-updater'))
      throw new UsageError('pass either --no-reference-updater or --reference-names, not both');
    const reference: ReferenceMode = flag(args, 'no-reference-updater') ? 'none' : (referenceNames ?? 'catch-all');
    if (flag(args, 'hooks')) {
      if (str(args, 'plan') !== undefined) throw new UsageError('--hooks applies no plan: drop --plan');
      if (reference !== 'catch-all')
        throw new UsageError(
          '--hooks runs the updaters of examples/hooks/updaters.yaml: --no-reference-updater and --reference-names apply to a plan',
        );
      return runHooksDemo(common, io);
    }
    const planPath = resolve(str(args, 'plan') ?? join(root, 'examples', 'plan.yaml'));
    // Read and check the plan before starting anything: a wrong file fails in a second, not after the setup.
    const planDoc = readYamlDocs(planPath).find((d) => d.kind === 'InPlaceUpdatePlan');
    if (!planDoc?.metadata?.name)
      throw new CliError(
        `"${planPath}" contains no InPlaceUpdatePlan with a name`,
        'pass a file with an InPlaceUpdatePlan (see examples/plan.yaml)',
      );
    return runDemo(
      {
        ...common,
        planPath,
        planName: planDoc.metadata.name,
        planNamespace: planDoc.metadata.namespace ?? DEMO.namespace,
        reference,
        ...(writePolicy ? { writePolicy } : {}),
      },
      io,
    );
  },
};

/** Which generic updater names the demo's reference updater serves: every name, the ones listed, or it is not started. */
export type ReferenceMode = 'catch-all' | 'none' | string[];

/** The `inplace updater reference` arguments of a reference mode; undefined when the reference updater is left out. */
export function referenceArgs(mode: ReferenceMode): string[] | undefined {
  if (mode === 'none') return undefined;
  return mode === 'catch-all' ? ['--catch-all'] : ['--names', mode.join(',')];
}

interface DemoOptions {
  reference: ReferenceMode;
  root: string;
  planPath: string;
  planName: string;
  planNamespace: string;
  keepRunning: boolean;
  stateOut: string | undefined;
  timeoutMs: number;
  workDir: string;
  /** The write policy file the controllers that take one run with (`--write-policy`). */
  writePolicy?: string;
}

/**
 * The demo's processes: the CAPI simulator, the controllers and the sample updaters. Each controller and updater
 * serves its probes and metrics on a free loopback port (the API server is loopback-only too), so the demo waits for
 * /readyz as a kubelet would and prints where to scrape.
 */
async function demoComponents(o: DemoOptions, kubeconfig: string): Promise<ComponentSpec[]> {
  const kc = ['--kubeconfig', kubeconfig];
  const { sampleUpdaters } = await import('../sample-updaters/index.js');
  const specs: ComponentSpec[] = [{ name: 'capi-sim', args: ['capi-sim', ...kc] }];
  for (const c of DEMO_CONTROLLERS) {
    const port = await freePort();
    specs.push({ name: c, args: ['run', c, ...kc, ...serveOn(port), ...demoControllerArgs(c, o.writePolicy)], port });
  }
  for (const u of Object.keys(sampleUpdaters)) {
    const serves = sampleUpdaters[u as keyof typeof sampleUpdaters].generic ? referenceArgs(o.reference) : [];
    if (!serves) continue;
    const port = await freePort();
    specs.push({ name: `updater-${u}`, args: ['updater', u, ...serves, ...kc, ...serveOn(port)], port });
  }
  return specs;
}

async function runDemo(o: DemoOptions, io: Io): Promise<number> {
  const started = Date.now();
  let close: (() => Promise<void>) | undefined;
  try {
    const p = await startLocalPlatform(
      o,
      io,
      (rel) => watchHints(rel, o.planName, o.planNamespace),
      (c) => (close = c),
    );
    if (!p) return INTERRUPTED;
    const { client, say, rel } = p;

    const specs = await demoComponents(o, p.kubeconfig);
    const ready = await startComponents(p, specs, io);
    if (ready !== true) return ready;
    if (o.reference === 'none') say("  (no reference updater: the plan's generic updater names wait for your updater)");
    else if (o.reference !== 'catch-all') say(`  (the reference updater serves only: ${o.reference.join(', ')})`);

    await applyFile(client, o.planPath, DEMO.namespace);
    say(`✔ applied ${relative(process.cwd(), o.planPath) || o.planPath}: InPlaceUpdatePlan ${o.planNamespace}/${o.planName}`);
    say('');

    const outcome = await followPlan(client, o, p.children, io, started);
    if (outcome.kind === 'interrupted') {
      say('\ninterrupted: stopping every process');
      return INTERRUPTED;
    }
    if (outcome.kind === 'childExited') {
      reportExit(outcome, io);
      return ExitCode.failure;
    }
    // A component that died as the plan ended is as much a failure as one that died while it ran.
    const died = exitedUnexpectedly(p.children);
    if (died) {
      reportExit(died, io);
      return ExitCode.failure;
    }
    const state = await finalState(client, o, outcome.plan);
    if (o.stateOut) writeFileSync(o.stateOut, JSON.stringify(state, null, 2));
    io.out(
      renderSummary({
        view: outcome.view,
        plan: state.plan,
        mus: state.machineUpdates,
        wallMs: Date.now() - started,
        stillLabelled: state.stillLabelled,
        committed: state.committed,
      }),
    );
    if (outcome.kind === 'invalid')
      io.err(
        `\nerror: the plan is invalid and will not start: ${safeText(outcome.message)}\n  fix ${o.planPath} (check it first with: inplace preview -f ${o.planPath} --kubeconfig ${rel})\n`,
      );
    if (outcome.kind === 'timeout')
      io.err(
        `\nerror: the plan is still ${outcome.view.status} after ${secs(o.timeoutMs)}; see inplace status ${o.planName} -n ${o.planNamespace} and the logs in ${p.logDir}\n`,
      );

    const ok =
      outcome.kind === 'terminal' &&
      state.plan.status?.updateStatus === 'updated' &&
      state.committed.ok === state.committed.total &&
      state.stillLabelled.length === 0;
    if (o.keepRunning) {
      const gone = await stayUp(p, io, `kubectl --kubeconfig ${rel} get iup,mu -A`);
      if (gone) {
        reportExit(gone, io);
        return ExitCode.failure;
      }
    }
    return ok ? ExitCode.ok : ExitCode.failure;
  } finally {
    await close?.();
  }
}

/**
 * The commands the demo suggests for watching from another terminal (a test runs each of them). kubectl ≥ 1.32 watches
 * one resource type per command (`get a,b -w` is refused), hence one line per kind.
 */
export function watchHints(kubeconfig: string, planName: string, namespace: string): string[] {
  return [
    `kubectl --kubeconfig ${kubeconfig} get inplaceupdateplans -A -w`,
    `kubectl --kubeconfig ${kubeconfig} get machineupdates -n ${namespace} -w`,
    `npx inplace status ${planName} -n ${namespace} -w --kubeconfig ${kubeconfig}`,
  ];
}

export type { DemoState } from './demo-follow.js';
