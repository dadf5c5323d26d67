// The house shape: every controller folder is built from the same files (docs/architecture.md "One controller, one
// shape"), so a newcomer finds any behaviour by its name, and `controller.ts` exports the top-level `reconcile`.
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The controller folders under src/ and the files each must have. */
const CONTROLLERS = ['plan-controller', 'campaign-controller', 'machine-task-controller', 'mhc-extension', 'runtime-extension'];
const TEMPLATE = ['index.ts', 'controller.ts', 'scope.ts', 'decide.ts', 'status.ts', 'rbac.ts'];

describe('architecture: one shape for every controller folder', () => {
  for (const c of CONTROLLERS) {
    it(`src/${c} has ${TEMPLATE.join(', ')}, a test folder, and exports reconcile from controller.ts`, () => {
      const missing = TEMPLATE.filter((f) => !existsSync(path.join(root, 'src', c, f)));
      expect(missing, `src/${c} lacks`).to.deep.equal([]);
      expect(existsSync(path.join(root, 'test', c)), `test/${c}/ (integration tests)`).to.equal(true);
      const controller = readFileSync(path.join(root, 'src', c, 'controller.ts'), 'utf8');
      expect(controller).to.match(/export (async )?function reconcile\(/);
    });
  }
});
