// The dashboard tests' browser: Debian's chromium (apt-get install -y chromium) driven by puppeteer-core, which
// downloads no browser. Where the binary is missing the tests skip, saying so.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { projectRoot } from '../../src/cli/procs.js';

/** The browser binary (CHROMIUM_PATH overrides Debian's). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
}

/** Launches headless Chromium. */
export async function launch(): Promise<Browser> {
  const { default: puppeteer } = await import('puppeteer-core');
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in a container has no user namespace for Chromium's sandbox; /dev/shm is small there.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    defaultViewport: { width: 1200, height: 900 },
  });
}

/** Writes a screenshot of the page to docs/img/<name>.png when DASHBOARD_SCREENSHOTS=1 (the docs' pictures). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.DASHBOARD_SCREENSHOTS !== '1') return;
  const dir = join(projectRoot(), 'docs', 'img');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`) as `${string}.png`, fullPage: true });
}

/** The text of the first element matching `selector`, or '' (waits for nothing). */
export async function textOf(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => el.textContent ?? '').catch(() => '');
}
