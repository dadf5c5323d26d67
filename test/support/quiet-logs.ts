// Mocha root hook plugin (.mocharc.json `require`, and `npm run test:file`): the logs of the components a test
// runs in-process go to a buffer instead of mocha's output, and are printed only when the test fails, under its
// name. Loggers are created once per setup and live across tests, so they all write to one capture stream whose
// buffer is emptied before each test (logs of before/after hooks count towards the next test).
import { Writable } from 'node:stream';
import type { Context } from 'mocha';
import { setDefaultLogDestination } from '../../src/runtime/log.js';

/** Whether logs go straight to stdout (INPLACE_TEST_LOGS=1: to watch a test live). */
const passThrough = process.env['INPLACE_TEST_LOGS'] === '1';
/** Cap of the buffer per test: the end of a long test's log is what explains its failure. */
const MAX_CHARS = 200_000;

let buffer: string[] = [];
let size = 0;

const capture = new Writable({
  write(chunk: Buffer | string, _enc, done) {
    const s = chunk.toString();
    buffer.push(s);
    size += s.length;
    while (size > MAX_CHARS && buffer.length > 1) size -= buffer.shift()!.length;
    done();
  },
});

if (!passThrough) setDefaultLogDestination(capture);

/** The root hooks mocha runs around every test. */
export const mochaHooks = {
  beforeEach(): void {
    buffer = [];
    size = 0;
  },
  afterEach(this: Context): void {
    const t = this.currentTest;
    if (passThrough || t?.state !== 'failed' || buffer.length === 0) return;
    process.stderr.write(`\n----- logs of the components during "${t.fullTitle()}" -----\n${buffer.join('')}----- end of logs -----\n`);
  },
};
