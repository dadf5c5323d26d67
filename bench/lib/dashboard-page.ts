// A viewer for `npm run bench -- --campaign --dashboard`: a headless Chromium (Debian's, through puppeteer-core) with
// the dashboard page open for the whole case, so the dashboard's figures include serving a live page. Without the
// browser the case still runs and says so.
import { existsSync } from 'node:fs';

/** Opens the page and waits until it has the dashboard's first state; `close` ends the browser. */
export async function openDashboardPage(url: string, say: (s: string) => void): Promise<{ close(): Promise<void> }> {
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) {
    say(`  dashboard: ${url} (no Chromium at ${chromium}: no page open; apt-get install -y chromium)`);
    return { close: async () => {} };
  }
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    defaultViewport: { width: 1200, height: 900 },
  });
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForSelector('body[data-synced="true"]', { timeout: 120_000 });
  say(`  dashboard: ${url} open in headless Chromium`);
  return { close: () => browser.close() };
}
