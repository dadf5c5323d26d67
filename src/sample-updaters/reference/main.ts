// Entry point: `tsx src/sample-updaters/reference/main.ts (--names a,b | --catch-all) [--kubeconfig FILE] [--namespace NS] [--leader-elect]`.
import { reference } from './index.js';
import { runSampleMain } from '../main-helper.js';

await runSampleMain(reference, process.argv.slice(2));
