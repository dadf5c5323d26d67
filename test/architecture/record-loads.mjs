// A `node --import` hook for test/architecture/pure-modules.test.ts: registers record-loads-hooks.mjs, which appends
// every module URL the process resolves to the file named by $RECORD_LOADS_FILE.
import { register } from 'node:module';

register('./record-loads-hooks.mjs', import.meta.url);
