// `npm start` is honest about its components (issue 30): one that exits unexpectedly makes the demo exit non-zero
// with the reason, also with --keep-running; the reference updater can be narrowed or left out for updater authors.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../src/cli/procs.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const PROJECT_ROOT = projectRoot();

describe('npm start (inplace demo): components and the reference updater', function () {
  this.timeout(300_000);

  describe('reference updater options: misuse exits 2 before anything starts', () => {
    const cases: [string[], string][] = [
      [['--no-reference-updater', '--reference-names', 'motd'], 'pass either --no-reference-updater or --reference-names, not both'],
      [['--reference-names', ' , '], '--reference-names needs at least one updater name'],
      [['--hooks', '--no-reference-updater'], '--no-reference-updater and --reference-names apply to a plan'],
    ];
    for (const [argv, message] of cases) {
      it(`demo ${argv.join(' ')}`, async () => {
        const r = await cli('demo', ...argv);
        expect(r.code, r.err).to.equal(2);
        expect(r.err).to.contain(message);
      });
    }

    it('documents the options and the exit code of a component that dies', async () => {
      const r = await cli('demo', '--help');
      expect(r.out).to.contain('--no-reference-updater');
      expect(r.out).to.contain('--reference-names a,b');
      expect(r.out).to.contain('also when a component exits');
    });
  });

  describe('--keep-running, narrowed reference updater, then a component dies', () => {
    const dir = mkdtempSync(join(tmpdir(), 'inplace-demo-exit-'));
    let code: number | null = null;
    let out = '';
    let err = '';
    let killed: number | undefined;
    before(async () => {
      const proc = spawn(
        process.execPath,
        [
          join(PROJECT_ROOT, 'bin', 'inplace.mjs'),
          'demo',
          '--keep-running',
          '--reference-names',
          'ntp-config',
          '--work-dir',
          join(dir, 'work'),
          '--timeout',
          '240',
        ],
        { cwd: PROJECT_ROOT, env: { ...process.env, INPLACE_FROM_SOURCE: '0', LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const ended = new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
      try {
        await waitFor(() => out.includes('still running (--keep-running)') || proc.exitCode !== null, {
          timeoutMs: 280_000,
          intervalMs: 200,
          message: 'the demo to finish its plan and stay up',
        });
        const pid = /updater-os-image \(pid (\d+)\)/.exec(out)?.[1];
        if (proc.exitCode === null && pid) {
          killed = Number(pid);
          process.kill(killed, 'SIGKILL');
        }
      } finally {
        // Whatever happened, never leave the demo running: Ctrl-C after a grace period.
        const t = setTimeout(() => proc.kill('SIGINT'), 60_000);
        code = await ended;
        clearTimeout(t);
      }
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('ran the plan with the reference updater serving only the names given', () => {
      expect(out, err).to.contain('(the reference updater serves only: ntp-config)');
      const log = readFileSync(join(dir, 'work', 'logs', 'updater-reference.log'), 'utf8');
      expect(log).to.contain('sample updater reference running (names: ntp-config)');
      expect(out).to.match(/still running \(--keep-running\)/);
    });

    it('exits 1 when a component dies while it stays up, naming the component and how it ended', () => {
      expect(killed, `stdout:\n${out}\nstderr:\n${err}`).to.be.a('number');
      expect(code, `stdout:\n${out}\nstderr:\n${err}`).to.equal(1);
      expect(err).to.contain('error: updater-os-image exited unexpectedly (signal SIGKILL); its last log lines:');
      expect(out).to.contain('updater-os-image exited: stopping every process');
    });
  });
});
