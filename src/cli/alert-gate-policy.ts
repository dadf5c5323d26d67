// `--alert-gate-policy FILE` (run, preview, demo): the operator's allow-list of alert endpoints and the Secrets usable
// with each, YAML or JSON:
//   endpoints:
//     - url: https://prometheus.monitoring:9090
//       secrets: [fleet-a/prometheus-gate]
// An unreadable or invalid file stops the command: a controller must never run with a policy other than the one meant.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseAlertGatePolicy, type AlertGatePolicy } from '../api/index.js';
import { CliError, str, type ParsedArgs } from './verb.js';

/** Reads and checks an alert-gate policy file; a CliError names the file and every problem. */
export function loadAlertGatePolicy(path: string): AlertGatePolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(
      `cannot read the alert-gate policy "${path}": ${(e as Error).message}`,
      'check the path given to --alert-gate-policy',
    );
  }
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (e) {
    throw new CliError(`the alert-gate policy "${path}" is not valid YAML: ${(e as Error).message.split('\n')[0]}`, 'fix the YAML syntax');
  }
  try {
    return parseAlertGatePolicy(raw);
  } catch (e) {
    throw new CliError(
      `"${path}": ${(e as Error).message}`,
      'an alert-gate policy is {endpoints: [{url: http(s)://host:port[/path], secrets: [namespace/name]}]}; see docs/operations.md "Alert gate"',
    );
  }
}

/** `--alert-gate-policy FILE`, loaded (a CliError names every problem), or undefined when not given. */
export function gatePolicyOf(args: ParsedArgs): AlertGatePolicy | undefined {
  const file = str(args, 'alert-gate-policy');
  return file !== undefined ? loadAlertGatePolicy(file) : undefined;
}
