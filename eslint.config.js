// ESLint flat config. Module boundaries (docs/design.md §10) are enforced with no-restricted-imports:
// a wrong import fails lint with a message that says where the code belongs. In a flat config the last block that
// sets a rule for a file wins (patterns are not merged), so each block lists every pattern its files must respect.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The development tools (tools/local-apiserver, tools/capi-sim) are not product: controllers, the runtime and the
// contract run against any API server and a real Cluster API; only the CLI's wiring (src/cli), test/ and bench/ load them.
const noTools = {
  group: ['**/tools/**', '**/tools', '**/local-apiserver/**', '**/local-apiserver'],
  message:
    'Product code in src/ runs against any API server and a real Cluster API; only the CLI wiring (src/cli), test/ and bench/ may import tools/ (the local API server, the CAPI simulator).',
};
const noLocalApiserver = {
  group: ['**/local-apiserver/**', '**/local-apiserver'],
  message: 'The CAPI simulator is a client of any API server; only src/cli, test/ and bench/ wire in the local API server.',
};
const noControllers = (except) =>
  ['plan-controller', 'campaign-controller', 'machine-task-controller', 'mhc-extension', 'runtime-extension']
    .filter((c) => c !== except)
    .map((c) => ({
      group: [`**/${c}/**`, `**/${c}`],
      message: `Controllers talk to each other only through CRs; move shared code to src/api (pure) or src/runtime (generic) instead of importing ${c}.`,
    }));
const controllerPatterns = (c) => [
  noTools,
  ...noControllers(c),
  { group: ['**/cli/**', '**/sample-updaters/**'], message: 'Controllers import only src/runtime, src/api and src/contract.' },
];
const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

// Pure modules (decisions, validation, status setters, the plan preview, src/api, the pure contract) do no I/O and
// must stay importable without the API client: test/architecture/pure-modules.test.ts proves it transitively.
const noIo = [
  {
    group: ['@kubernetes/client-node', '@kubernetes/client-node/*', 'pino', 'pino-pretty', 'prom-client'],
    message: 'Pure modules do no I/O: decide from the snapshot and let controller.ts act (docs/architecture.md "Import graph").',
  },
  {
    regex: '/runtime(/(index|client|manager|informer|metrics|log|health|leader|events)(\\.js)?)?$',
    message:
      'Pure modules import only the pure runtime modules (conditions, labels, jsonpointer, patch, set-patch, errors, types), never the runtime barrel, the client, the manager or the informer.',
  },
  {
    group: ['**/contract/sdk*', '**/contract/sdk/**', '**/contract/conformance/**', '**/contract/conformance'],
    message: 'Pure modules import the pure contract entry (src/contract/index.ts), not the updater SDK or the conformance kit.',
  },
];
const contractPatterns = [
  noTools,
  ...noControllers(),
  {
    group: ['**/cli/**', '**/sample-updaters/**'],
    message: 'The contract module is used by updaters; it cannot depend on the CLI or the samples.',
  },
];
const capiSimPatterns = [
  noLocalApiserver,
  ...noControllers(),
  {
    group: ['../../src/*', '!../../src/runtime', '!../../src/api'],
    message: 'The CAPI simulator depends only on src/runtime and src/api.',
  },
];
const controllers = ['plan-controller', 'campaign-controller', 'machine-task-controller', 'mhc-extension', 'runtime-extension'];
/** The pure modules of a component folder (src/cli/status.ts is a CLI verb, not one). */
const pureFilesOf = (c, base = 'src') => ['decide', 'decisions', 'validate', 'status', 'preview'].map((f) => `${base}/${c}/${f}.ts`);

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
    // Plain-JS Node hooks (test/architecture/record-loads*.mjs) are outside the TypeScript project.
    files: ['**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { process: 'readonly' } },
  },
  {
    files: ['src/api/*.ts'],
    rules: restrict([
      { group: ['../*', '!../api/**'], message: 'src/api is pure: it imports nothing of ours.' },
      { group: ['@kubernetes/client-node', 'node:*'], message: 'src/api has no I/O.' },
      ...noIo,
    ]),
  },
  {
    files: ['src/api/capi/**/*.ts'],
    rules: restrict([
      { group: ['../../*', '!../../api/**'], message: 'src/api is pure: it imports nothing of ours.' },
      { group: ['@kubernetes/client-node', 'node:*'], message: 'src/api has no I/O.' },
      ...noIo,
    ]),
  },
  {
    files: ['src/runtime/**/*.ts'],
    rules: restrict([
      noTools,
      ...noControllers(),
      { group: ['**/contract/**', '**/sample-updaters/**', '**/cli/**'], message: 'src/runtime is generic: it imports no product code.' },
      {
        group: ['../api/*', '../api/**', '!../api/kube.js'],
        message:
          'src/runtime is generic: of src/api it imports only src/api/kube.ts (Kubernetes metadata, resource descriptors, built-in kinds, bounded messages).',
      },
    ]),
  },
  ...controllers.map((c) => ({
    files: [`src/${c}/**/*.ts`],
    ignores: [`src/${c}/**/*.test.ts`],
    rules: restrict(controllerPatterns(c)),
  })),
  ...controllers.map((c) => ({
    files: pureFilesOf(c),
    rules: restrict([...controllerPatterns(c), ...noIo]),
  })),
  {
    files: ['src/sample-updaters/**/*.ts'],
    ignores: ['src/sample-updaters/**/*.test.ts'],
    rules: restrict([
      noTools,
      ...noControllers(),
      {
        group: ['**/runtime/**', '**/cli/**'],
        message: 'Sample updaters are written as a third party would: use the updater SDK in src/contract only.',
      },
    ]),
  },
  {
    files: ['src/contract/**/*.ts'],
    ignores: ['src/contract/**/*.test.ts'],
    rules: restrict(contractPatterns),
  },
  {
    // The pure contract entry and what it re-exports: no I/O, nothing of src/runtime.
    files: ['src/contract/index.ts', 'src/contract/rules.ts', 'src/contract/accessors.ts', 'src/contract/task-kinds.ts'],
    rules: restrict([
      ...contractPatterns,
      ...noIo,
      {
        regex: '/runtime(/.*)?$',
        message: 'The pure contract (src/contract/index.ts) imports nothing of src/runtime; the SDK (src/contract/sdk/index.ts) does.',
      },
    ]),
  },
  {
    // The CAPI simulator stands in for CAPI's controllers and the workload cluster in local mode; a tool, not platform.
    files: ['tools/capi-sim/**/*.ts'],
    ignores: ['tools/capi-sim/**/*.test.ts'],
    rules: restrict(capiSimPatterns),
  },
  {
    files: pureFilesOf('capi-sim', 'tools'),
    rules: restrict([...capiSimPatterns, ...noIo]),
  },
  {
    files: ['tools/local-apiserver/**/*.ts'],
    ignores: ['tools/local-apiserver/**/*.test.ts'],
    rules: restrict([
      ...noControllers(),
      {
        group: ['../*', '**/runtime/**', '**/contract/**', '**/sample-updaters/**', '**/cli/**', '**/api/**'],
        message:
          'The local API server stands alone: it imports nothing of ours (it serves any CRD; copy a tiny helper rather than import one).',
      },
      { group: ['@kubernetes/client-node'], message: 'The local API server is a server; it does not use the client.' },
    ]),
  },
);
