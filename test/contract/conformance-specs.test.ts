// What the conformance kit sends is what the user says (issue 42, item 4): responsibilities parsed from the command
// line, scenario specs merged over the task spec, and the fields only the platform sets refused (exit 2 on the CLI).
import { expect } from 'chai';
import { parseResponsibility, scenarioSpec, taskSpecProblem } from '../../src/contract/conformance/specs.js';
import { cli } from '../support/cli.js';

describe('conformance kit: task specs and responsibilities from the user', () => {
  it('parses SELECT /pointer=VALUE with a JSON value, or else the text as a string', () => {
    expect(parseResponsibility('BootstrapConfig /spec/ntp={"servers":["time.example.com"]}')).to.deep.equal({
      selectResource: 'BootstrapConfig',
      path: '/spec/ntp',
      value: { servers: ['time.example.com'] },
    });
    expect(parseResponsibility('Machine /spec/version=v1.30.1')).to.deep.equal({
      selectResource: 'Machine',
      path: '/spec/version',
      value: 'v1.30.1',
    });
    // The first = ends the pointer; the value may hold more.
    expect(parseResponsibility('InfraMachine /spec/image=a=b').value).to.equal('a=b');
    for (const bad of ['Pod /spec/x=1', 'Machine spec/version=1', 'Machine /spec/version', ''])
      expect(() => parseResponsibility(bad), bad).to.throw(/a responsibility is 'SELECT \/json\/pointer=VALUE'/);
  });

  it('merges a scenario spec over the task spec as a JSON merge patch, and splits the responsibilities off', () => {
    const fallback = [{ selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' }];
    const base = { parameters: { durationSeconds: 1, mode: 'fast' }, extra: true };
    expect(scenarioSpec(base, { parameters: { durationSeconds: 3600, mode: null } }, fallback)).to.deep.equal({
      spec: { parameters: { durationSeconds: 3600 }, extra: true },
      responsibilities: fallback,
    });
    const theirs = [{ selectResource: 'BootstrapConfig' as const, path: '/spec/ntp', value: {} }];
    expect(scenarioSpec({ ...base, responsibilities: fallback }, { responsibilities: theirs }, []).responsibilities).to.deep.equal(theirs);
    expect(scenarioSpec(undefined, undefined, fallback)).to.deep.equal({ spec: {}, responsibilities: fallback });
    // The inputs are not changed.
    expect(base).to.deep.equal({ parameters: { durationSeconds: 1, mode: 'fast' }, extra: true });
  });

  it('refuses what only the platform sets, and malformed responsibilities', () => {
    expect(taskSpecProblem('taskSpec', { parameters: {} }, true)).to.equal(undefined);
    expect(taskSpecProblem('taskSpec', { machineRef: { name: 'gone' } }, false)).to.equal(undefined);
    expect(taskSpecProblem('taskSpec', { updatePhase: 'aborting' }, false)).to.match(/updatePhase is the platform's to set \(C2\)/);
    expect(taskSpecProblem('taskSpec', { updaterName: 'x' }, true)).to.match(/--updater-name/);
    expect(taskSpecProblem('taskSpec', { updaterName: 'x' }, false)).to.equal(undefined);
    expect(taskSpecProblem('taskSpec', [], true)).to.match(/must be an object/);
    expect(taskSpecProblem('taskSpec', { responsibilities: [] }, true)).to.match(/must not be empty/);
    expect(taskSpecProblem('taskSpec', { responsibilities: [{ selectResource: 'Machine', path: '/spec/version' }] }, true)).to.match(
      /responsibility 1 .* must be \{selectResource/,
    );
  });

  it('the CLI answers a bad spec, file or responsibility with exit 2 before connecting', async () => {
    const kc = ['--kubeconfig', '/nonexistent/kubeconfig'];
    const cases: [string[], RegExp][] = [
      [['--responsibility', 'Pod /x=1'], /--responsibility: a responsibility is/],
      [['--task-spec', '{"updatePhase":"aborting"}'], /--task-spec: spec.updatePhase is the platform's to set/],
      [['--failing-task-spec', '{"updaterName":"x"}'], /--failing-task-spec: spec.updaterName routes a generic task/],
      [['--slow-task-spec', '/nonexistent/slow.yaml'], /--slow-task-spec: cannot read \/nonexistent\/slow.yaml/],
      [['--failing-task-spec', '{"a":1}', '--failure-spec', '{"a":1}'], /--failing-task-spec and --failure-spec are the same option/],
      [
        [
          '--responsibility',
          'Machine /spec/version=v1',
          '--task-spec',
          '{"responsibilities":[{"selectResource":"Machine","path":"/spec/version","value":"v1"}]}',
        ],
        /responsibilities are given twice/,
      ],
    ];
    for (const [args, re] of cases) {
      const r = await cli('conformance', '--kind', 'UpdaterUpdateTask', ...args, ...kc);
      expect(r.code, `${args.join(' ')}: ${r.err}`).to.equal(2);
      expect(r.err).to.match(re);
    }
  });
});
