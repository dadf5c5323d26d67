import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger, errorFields } from './log.js';

const sink = (): { stream: Writable; lines: string[] } => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { stream, lines };
};

describe('logger', () => {
  it('writes JSON lines with the bound name and child bindings', async () => {
    const { stream, lines } = sink();
    const log = createLogger({ name: 'plan-controller', pretty: false, destination: stream, level: 'info' });
    log.child({ key: 'ns/p1' }).info({ n: 1 }, 'reconciled');
    log.debug('hidden below the level');
    await new Promise((r) => setImmediate(r));
    expect(lines.length).to.equal(1);
    expect(JSON.parse(lines[0]!)).to.deep.include({ name: 'plan-controller', key: 'ns/p1', n: 1, msg: 'reconciled' });
  });

  it('writes human-readable lines in pretty mode', async () => {
    const { stream, lines } = sink();
    createLogger({ pretty: true, destination: stream }).warn('careful');
    await new Promise((r) => setImmediate(r));
    expect(lines.join('\n')).to.match(/WARN.*careful/);
    expect(() => JSON.parse(lines[0]!)).to.throw();
  });

  it('summarises an error and its cause', () => {
    expect(errorFields(new Error('outer', { cause: new Error('inner') }))).to.deep.equal({ err: 'outer', cause: 'inner' });
    expect(errorFields('x')).to.deep.equal({ err: 'x' });
  });
});
