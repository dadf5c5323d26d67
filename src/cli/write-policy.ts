// `--write-policy FILE` (run, preview): the platform team's write policy, YAML or JSON, one map per selectResource:
//   Machine: {allow: [/spec/version, /metadata/labels/example.com~1team], deny: [/spec/taints]}
// An unreadable or invalid file stops the command: a controller must never run with a policy other than the one meant.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseWritePolicy, type WritePolicy } from '../api/index.js';
import { CliError } from './verb.js';

/** Reads and checks a write-policy file; a CliError names the file and every problem. */
export function loadWritePolicy(path: string): WritePolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read the write policy "${path}": ${(e as Error).message}`, 'check the path given to --write-policy');
  }
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (e) {
    throw new CliError(`the write policy "${path}" is not valid YAML: ${(e as Error).message.split('\n')[0]}`, 'fix the YAML syntax');
  }
  try {
    return parseWritePolicy(raw);
  } catch (e) {
    throw new CliError(
      `"${path}": ${(e as Error).message}`,
      'a write policy maps Machine, InfraMachine, BootstrapConfig to {allow: [JSON pointers], deny: [JSON pointers]}; see docs/operations.md',
    );
  }
}
