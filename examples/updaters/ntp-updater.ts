// An updater written from docs/contract.md with the SDK: it serves the generic updater name `ntp-config` (the updater
// of examples/workers-only-plan.yaml) and nothing else. A real one would write chrony.conf on the machine's host
// (through the workload cluster, a node agent or the BMC); this example has no host to reach, so it says what it
// would write and reports done — and the platform then commits the plan's BootstrapConfig /spec/ntp value (C8).
//
//   KUBECONFIG=.inplace/demo/kubeconfig npx tsx examples/updaters/ntp-updater.ts   (README: "Run your own updater in the demo")
import { aborted, defineUpdater, done, failed, progress } from '@inplace-capi/updater-sdk';

const ntp = defineUpdater({
  name: 'example-ntp-updater',
  names: ['ntp-config'], // the generic updater names served: only these (never every name)
  async update(task, ctx) {
    const r = task.spec.responsibilities?.find((x) => x.selectResource === 'BootstrapConfig' && x.path === '/spec/ntp');
    const servers = (r?.value as { servers?: unknown } | undefined)?.servers;
    if (!Array.isArray(servers) || servers.length === 0)
      return failed('the task has no BootstrapConfig /spec/ntp responsibility with servers: nothing to configure');
    const left = ctx.startTime.getTime() + 1_000 - ctx.now().getTime(); // startTime survives restarts (C7)
    if (left > 0) return progress(left, `writing chrony.conf on ${task.spec.machineRef.name}: servers ${servers.join(', ')}`);
    return done(`NTP servers ${servers.join(', ')} configured on ${task.spec.machineRef.name}`);
  },
  async abort() {
    return aborted('stopped before chrony was restarted');
  },
});

const running = await ntp.start({ ...(process.env['KUBECONFIG'] ? { kubeconfigPath: process.env['KUBECONFIG'] } : {}) });
process.stderr.write('example-ntp-updater running: serving updater name ntp-config (Ctrl-C to stop)\n');
const stop = (): void => void running.stop().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
