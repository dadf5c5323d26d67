// ESLint flat config. Module boundaries (DESIGN §10) are enforced with no-restricted-imports:
// a wrong import fails lint with a message that says where the code belongs.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noLocalApiserver = {
  group: ['**/local-apiserver/**', '**/local-apiserver'],
  message: 'Controllers and the runtime run against any API server; only src/cli, test/ and bench/ may wire in the local API server.',
};
const noControllers = (except) =>
  ['plan-controller', 'machine-task-controller', 'mhc-extension']
    .filter((c) => c !== except)
    .map((c) => ({
      group: [`**/${c}/**`, `**/${c}`],
      message: `Controllers talk to each other only through CRs; move shared code to src/api (pure) or src/runtime (generic) instead of importing ${c}.`,
    }));
const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'src/api/generated/**', 'bin/**', 'eslint.config.js', '.inplace/**'] },
  { ignores: ['.mocharc.cjs'] }, // CommonJS config outside the TypeScript project (computes mocha's spec)
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['src/api/*.ts'],
    rules: restrict([
      { group: ['../*', '!../api/**'], message: 'src/api is pure: it imports nothing of ours.' },
      { group: ['@kubernetes/client-node', 'node:*'], message: 'src/api has no I/O.' },
    ]),
  },
  {
    files: ['src/api/capi/**/*.ts'],
    rules: restrict([
      { group: ['../../*', '!../../api/**'], message: 'src/api is pure: it imports nothing of ours.' },
      { group: ['@kubernetes/client-node', 'node:*'], message: 'src/api has no I/O.' },
    ]),
  },
  {
    files: ['src/runtime/**/*.ts'],
    rules: restrict([
      noLocalApiserver,
      ...noControllers(),
      { group: ['**/contract/**', '**/sample-updaters/**', '**/cli/**'], message: 'src/runtime is generic: it imports no product code.' },
    ]),
  },
  ...['plan-controller', 'machine-task-controller', 'mhc-extension'].map((c) => ({
    files: [`src/${c}/**/*.ts`],
    ignores: [`src/${c}/**/*.test.ts`],
    rules: restrict([noLocalApiserver, ...noControllers(c), { group: ['**/cli/**', '**/sample-updaters/**'], message: 'Controllers import only src/runtime, src/api and src/contract.' }]),
  })),
  {
    files: ['src/sample-updaters/**/*.ts'],
    ignores: ['src/sample-updaters/**/*.test.ts'],
    rules: restrict([
      noLocalApiserver,
      ...noControllers(),
      { group: ['**/runtime/**', '**/cli/**'], message: 'Sample updaters are written as a third party would: use the updater SDK in src/contract only.' },
    ]),
  },
  {
    files: ['src/contract/**/*.ts'],
    ignores: ['src/contract/**/*.test.ts'],
    rules: restrict([noLocalApiserver, ...noControllers(), { group: ['**/cli/**', '**/sample-updaters/**'], message: 'The contract module is used by updaters; it cannot depend on the CLI or the samples.' }]),
  },
  {
    // The CAPI simulator stands in for CAPI's controllers and the workload cluster in local mode; it is wiring, not platform.
    files: ['src/capi-sim/**/*.ts'],
    ignores: ['src/capi-sim/**/*.test.ts'],
    rules: restrict([noLocalApiserver, ...noControllers(), { group: ['**/contract/**', '**/sample-updaters/**', '**/cli/**'], message: 'The CAPI simulator depends only on src/runtime and src/api.' }]),
  },
  {
    files: ['src/local-apiserver/**/*.ts'],
    ignores: ['src/local-apiserver/**/*.test.ts'],
    rules: restrict([
      ...noControllers(),
      { group: ['**/runtime/**', '**/contract/**', '**/sample-updaters/**', '**/cli/**', '**/api/**'], message: 'The local API server stands alone (share only tiny pure helpers through src/shared).' },
      { group: ['@kubernetes/client-node'], message: 'The local API server is a server; it does not use the client.' },
    ]),
  },
);
