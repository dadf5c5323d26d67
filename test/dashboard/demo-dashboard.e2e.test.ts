// End to end: `npm start -- --fleet --dashboard` as a user runs it (through bin/inplace.mjs): the demo prints the
// dashboard's URL before it applies the campaign, and a headless Chromium on that URL follows the campaign from the
// canaries to the last wave; the demo then stays up until Ctrl-C.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { projectRoot } from '../../src/cli/procs.js';
import { chromiumMissing, launch, screenshot, textOf } from './browser.js';

describe('npm start -- --fleet --dashboard', function () {
  this.timeout(600_000);
  let browser: Browser | undefined;

  before(async function () {
    const missing = chromiumMissing();
    if (missing) {
      console.log(`    skipped: ${missing}`);
      this.skip();
    }
    browser = await launch();
  });
  after(async () => browser?.close());

  it('prints the dashboard URL; the page follows the campaign from the canaries to the last wave; Ctrl-C ends it', async () => {
    const root = projectRoot();
    const dir = mkdtempSync(join(tmpdir(), 'demo-dashboard-'));
    const proc = spawn(process.execPath, [join(root, 'bin', 'inplace.mjs'), 'demo', '--fleet', '--dashboard', '--work-dir', dir], {
      cwd: root,
      env: { ...process.env, INPLACE_FROM_SOURCE: '0', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const t = setInterval(() => {
          const m = /✔ dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
          if (m) {
            clearInterval(t);
            resolve(m[1]!);
          } else if (proc.exitCode !== null) {
            clearInterval(t);
            reject(new Error(`the demo exited before printing the dashboard's URL:\n${out}\n${err}`));
          }
        }, 100);
      });
      const page = await browser!.newPage();
      await page.goto(url);
      const card = '[data-campaign="fleet-edge/edge-v1-30-1"]';
      // The URL is printed before the campaign is applied: the page sees the canaries while the campaign runs.
      await page.waitForSelector(`${card} [data-wave="0"] .cluster`, { timeout: 300_000 });
      const sawUpdatedCampaignAtCanary = await page.$(`${card}[data-state="updated"]`);
      expect(sawUpdatedCampaignAtCanary).to.equal(null);
      await page.waitForSelector(`${card}[data-state="updated"]`, { timeout: 300_000 });
      for (let w = 0; w <= 4; w++) await page.waitForSelector(`${card} [data-wave="${w}"]`);
      expect(await page.$$(`${card} .cluster[data-state="updated"]`)).to.have.length(24);
      expect(await textOf(page, `${card} .summary`)).to.match(/clusters 24\/24 done \(24 updated/);
      // The docs' picture of the demo: the last cluster's plan opened, its machines listed.
      await page.click(`${card} .cluster[data-cluster="edge-023"]`);
      await page.waitForSelector(`${card} .detail tr[data-machine]`);
      await screenshot(page, 'dashboard-demo');
      await page.close();
      // It stays up with the dashboard until Ctrl-C.
      await new Promise((r) => setTimeout(r, 1000));
      expect(proc.exitCode).to.equal(null);
      proc.kill('SIGINT');
      expect(await exited, `${out}\n${err}`).to.equal(0);
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
