import { expect } from 'chai';
import { readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { generateAll } from '../../scripts/generate-types.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('generated API types', () => {
  it('are current with the CRD YAML under crds/ (run `npm run generate` when this fails)', async () => {
    const files = await generateAll();
    const stale = [...files]
      .filter(([name, text]) => {
        const p = join(root, 'src', 'api', 'generated', name);
        return !existsSync(p) || readFileSync(p, 'utf8') !== text;
      })
      .map(([name]) => name);
    expect(stale, `stale generated files: ${stale.join(', ')}`).to.deep.equal([]);
  });

  it('map int-or-string, preserve-unknown-fields and metadata to sensible TypeScript', async () => {
    const { toJsonSchema } = await import('../../scripts/generate-types.js');
    expect(toJsonSchema({ 'x-kubernetes-int-or-string': true })).to.deep.equal({ tsType: 'number | string' });
    expect(toJsonSchema({ 'x-kubernetes-preserve-unknown-fields': true })).to.deep.equal({ tsType: 'unknown' });
    expect(toJsonSchema({ type: 'object' }, ['metadata'])).to.deep.equal({ tsType: 'ObjectMeta' });
    expect(toJsonSchema({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }).additionalProperties).to.deep.equal({
      tsType: 'unknown',
    });
    expect(toJsonSchema({ type: 'object', properties: { a: { type: 'integer' } } }).additionalProperties).to.equal(false);
  });
});

describe('zod schemas', () => {
  // Type-checks a small program in memory; a zod schema that drifts from the generated type must fail to compile.
  function diagnosticsFor(source: string): string[] {
    const file = join(root, 'src', 'api', '__drift_check__.ts');
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      types: [],
    };
    const host = ts.createCompilerHost(options);
    const original = host.getSourceFile.bind(host);
    host.getSourceFile = (name, lang, onError, create) =>
      name === file ? ts.createSourceFile(name, source, lang) : original(name, lang, onError, create);
    const orig = host.fileExists.bind(host);
    host.fileExists = (name) => name === file || orig(name);
    const program = ts.createProgram([file], options, host);
    return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  }
  const prelude = `import { z } from 'zod';
import { PlanSpecSchema } from './schemas.js';
import type { InPlaceUpdatePlanSpec } from './generated/index.js';
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
`;

  it('match the generated types (the real schema compiles)', function () {
    this.timeout(120_000);
    expect(
      diagnosticsFor(prelude + 'export type Ok = Assert<Same<z.infer<typeof PlanSpecSchema>, InPlaceUpdatePlanSpec>>;\n'),
    ).to.deep.equal([]);
  });

  it('fail to compile when a schema drifts from the CRD (an extra field)', function () {
    this.timeout(120_000);
    const drift =
      prelude +
      'const Drifted = PlanSpecSchema.extend({ rogue: z.string() });\nexport type Bad = Assert<Same<z.infer<typeof Drifted>, InPlaceUpdatePlanSpec>>;\n';
    expect(diagnosticsFor(drift).join('\n')).to.match(/does not satisfy the constraint 'true'/);
  });
});
