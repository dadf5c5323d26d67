// The deployable components come from the one component list (src/components.ts), which `inplace run` uses too:
// cdk8s takes each component's RBAC from what that component's rbac.ts exports, so a new API call without a rule
// fails the RBAC tests (docs/design.md §10). Rules on provider kinds are not fixed: each component declares the verbs it needs per
// provider role and the deployment supplies the provider list.
import type { ComponentSpec } from '../src/components.js';

export { COMPONENTS } from '../src/components.js';

/** A controller component as deployed: one Deployment running `inplace run <name>`. */
export type DeployedComponent = ComponentSpec;
