// Entry point: `tsx src/sample-updaters/kubernetes-version/main.ts [--kubeconfig FILE] [--namespace NS] [--allow-real-cluster] [--leader-elect]`.
import { kubernetesVersion } from './index.js';
import { runSampleMain } from '../main-helper.js';

await runSampleMain(kubernetesVersion, process.argv.slice(2));
