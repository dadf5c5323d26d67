// The `npx inplace …` command lines a document shows, as argument lists, so that tests run exactly what the docs tell
// users to run (a documented command that no longer parses or passes fails the test).
import { readFileSync } from 'node:fs';

/**
 * The `npx inplace <verb> …` lines of `file` whose text contains `contains` (continuation lines joined, trailing
 * `# comments` and a `$ ` prompt dropped), split into words after `npx inplace`: single quotes keep their content whole, double quotes
 * are removed.
 */
export function documentedCommands(file: string, verb: string, contains: string): string[][] {
  const text = readFileSync(file, 'utf8').replace(/\\\n\s*/g, ' ');
  return (
    text
      .split('\n')
      // A shown prompt (`$ npx inplace …`) is not part of the command.
      .map((l) => l.trim().replace(/^\$ /, ''))
      .filter((l) => l.startsWith(`npx inplace ${verb} `) && l.includes(contains))
      .map((l) => [...l.replace(/\s+#.*$/, '').matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!).slice(2))
  );
}

/** `argv` with `--name VALUE` pairs removed (e.g. a documented --kubeconfig a test replaces with its own). */
export function withoutOption(argv: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === name) i++;
    else if (!argv[i]!.startsWith(`${name}=`)) out.push(argv[i]!);
  }
  return out;
}
