// Entry point: `tsx src/sample-updaters/reference/main.ts [--kubeconfig FILE] [--namespace NS] [--names a,b] [--leader-elect]`.
import { reference } from './index.js';
import { runSampleMain } from '../main-helper.js';

await runSampleMain(reference, process.argv.slice(2));
