// Mocha configuration. `npm test` runs every spec; `npm test -- <file|dir|glob> ...` runs only those (mocha would
// otherwise add the files named on the command line to the configured spec, running everything anyway).
const { existsSync } = require('node:fs');

const named = process.argv.slice(2).filter((a) => !a.startsWith('-') && (existsSync(a) || a.includes('*')));

module.exports = {
  'node-option': ['import=tsx'],
  // Component logs are captured per test and printed only for failed tests (INPLACE_TEST_LOGS=1: print them live).
  require: ['test/support/quiet-logs.ts'],
  spec: named.length > 0 ? [] : ['src/**/*.test.ts', 'tools/**/*.test.ts', 'test/**/*.test.ts'],
  timeout: 60000,
  exit: true,
  reporter: 'dot',
};
