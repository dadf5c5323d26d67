import { expect } from 'chai';
import {
  ConflictError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  isRetryable,
  KubeApiError,
  RetryableError,
  TerminalError,
} from './errors.js';

const apiErr = (code: number, reason?: string): KubeApiError =>
  new KubeApiError('patch machines.cluster.x-k8s.io ns/m1', code, reason ? { reason, code } : undefined);

describe('errors', () => {
  const retryable: [number, boolean][] = [
    [0, true],
    [409, true],
    [429, true],
    [500, true],
    [503, true],
    [504, true],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [415, false],
    [422, false],
  ];
  for (const [code, want] of retryable) {
    it(`treats HTTP ${code || 'network error'} as ${want ? 'retryable' : 'terminal'}`, () => {
      expect(apiErr(code).retryable).to.equal(want);
      expect(isRetryable(apiErr(code))).to.equal(want);
    });
  }

  it('names the operation and the server message', () => {
    const e = new KubeApiError('get things ns/n', 403, { reason: 'Forbidden', message: 'no access' });
    expect(e.message).to.equal('get things ns/n: 403 no access');
    expect(e.reason).to.equal('Forbidden');
  });

  it('classifies not found, conflict and already exists through cause chains', () => {
    const wrapped = new RetryableError('commit Machine/m1', apiErr(409, 'Conflict'));
    expect(isConflict(wrapped)).to.equal(true);
    expect(isAlreadyExists(wrapped)).to.equal(false);
    expect(isAlreadyExists(apiErr(409, 'AlreadyExists'))).to.equal(true);
    expect(isConflict(apiErr(409, 'AlreadyExists'))).to.equal(false);
    expect(isNotFound(new TerminalError('read template', apiErr(404, 'NotFound')))).to.equal(true);
    expect(isNotFound(new Error('x'))).to.equal(false);
    expect(isConflict(new ConflictError('patch x'))).to.equal(true);
  });

  it('wraps causes in terminal and retryable errors named after the operation', () => {
    const t = new TerminalError('validate Plan ns/p', 'sequence overlap');
    expect(t.message).to.equal('validate Plan ns/p: sequence overlap');
    expect(isRetryable(t)).to.equal(false);
    const r = new RetryableError('commit Machine/m1', new Error('timeout'));
    expect(r.message).to.equal('commit Machine/m1: timeout');
    expect(r.cause).to.be.instanceOf(Error);
    expect(isRetryable(r)).to.equal(true);
    expect(isRetryable(new Error('unknown'))).to.equal(true);
  });
});
