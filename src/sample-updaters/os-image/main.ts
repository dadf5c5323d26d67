// Entry point: `tsx src/sample-updaters/os-image/main.ts [--kubeconfig FILE] [--namespace NS] [--allow-real-cluster] [--leader-elect]`.
import { osImage } from './index.js';
import { runSampleMain } from '../main-helper.js';

await runSampleMain(osImage, process.argv.slice(2));
