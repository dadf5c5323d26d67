// Module resolution hook (runs on the loader thread): records each resolved URL, one a line, in $RECORD_LOADS_FILE.
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  const file = process.env.RECORD_LOADS_FILE;
  if (file) appendFileSync(file, `${result.url}\n`);
  return result;
}
