// The sample updaters (docs/design.md §2.3, issue 4), written as third parties would write them: the contract SDK and
// the API types only. Each has its own folder and entry point (main.ts).
import { kubernetesVersion } from './kubernetes-version/index.js';
import { osImage } from './os-image/index.js';
import { reference } from './reference/index.js';
import type { SampleUpdater } from './types.js';

export type { SampleUpdater, SampleStartOptions } from './types.js';
export { servedNamesProblem } from './types.js';
export { EMBEDDED_SERVER_VERSION_SUFFIX, isEmbeddedServer, serverGitVersion, simulationProblem } from './simulation.js';

/** Every sample updater by name (`inplace updater <name>`). */
export const sampleUpdaters: Record<'reference' | 'kubernetes-version' | 'os-image', SampleUpdater> = {
  reference,
  'kubernetes-version': kubernetesVersion,
  'os-image': osImage,
};
