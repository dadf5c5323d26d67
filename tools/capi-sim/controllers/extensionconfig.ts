// The simulated ExtensionConfig controller (upstream: exp/runtime/internal/controllers).
import { setCondition } from '../../../src/runtime/pure/conditions.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import { ExtensionConfigs, discover, type ExtensionConfig } from '../extension-client.js';
import { type SimWorld } from './world.js';

/** The runtime SDK's ExtensionConfig controller: discovery, handlers written to status (condition Discovered). */
export class ExtensionConfigController {
  constructor(private readonly world: SimWorld) {}

  /** ExtensionConfig controller: discovery, handlers written to status.handlers (condition Discovered). */
  async reconcile(key: ObjectKey): Promise<Action> {
    const ec = this.world.mgr.informer<ExtensionConfig>(ExtensionConfigs).store.get(undefined, key.name);
    if (!ec || ec.metadata.deletionTimestamp) return Action.awaitChange();
    try {
      const handlers = await discover(ec);
      const conditions = setCondition(
        ec.status?.conditions as never,
        { type: 'Discovered', status: 'True', reason: 'Discovered' },
        ec.metadata.generation,
      );
      await this.world.patchStatusIfChanged(ExtensionConfigs, ec, { handlers, conditions });
      return Action.awaitChange();
    } catch (err) {
      const message = (err as Error).message;
      this.world.mgr.log.info({ extensionConfig: key.name, err: message }, 'capi-sim: discovery failed');
      const conditions = setCondition(
        ec.status?.conditions as never,
        { type: 'Discovered', status: 'False', reason: 'DiscoveryFailed', message },
        ec.metadata.generation,
      );
      await this.world.patchStatusIfChanged(ExtensionConfigs, ec, { conditions });
      return Action.requeue(2000);
    }
  }
}
